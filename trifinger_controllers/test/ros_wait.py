"""The rostests' poll: wait (wall time) until a condition holds."""
import time

import rospy


def wait_for(predicate, timeout):
    """True once ``predicate()`` holds; False after ``timeout`` wall s or at shutdown."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline or rospy.is_shutdown():
            return False
        time.sleep(0.02)
    return True
