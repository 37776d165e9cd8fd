"""Shared by the pair rostests: run `rosbag record` (node name RECORDER, which the tests' pair
runner watches with ~recorder) on the pair topics while the pair runner drives both robots, and
return the closed bag once N pairs have ended."""
import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import Callable, Optional

import rosgraph
import rospy

from panda_sim2real.msg import PairEvent

RECORDER = "pair_recorder"   # not the test node's name (rostest names it after test-name)
TOPICS = ["/sim/joint_states", "/real/joint_states", "/sim/joint_trajectory_controller/command",
          "/real/joint_trajectory_controller/command", "/pairs/event", "/real/label"]


def record_pairs(count: int, timeout: float = 200.0,
                 on_start: Optional[Callable[[int], None]] = None,
                 finished: Optional[Callable[[], bool]] = None) -> tuple[str, list[int]]:
    """(bag path, ids of the pairs that ended) once ``count`` pairs ended or ``finished()`` is
    true. ``on_start(trajectory_id)`` is called at each START (in rospy's thread). The caller
    has called rospy.init_node."""
    ends = []
    lock = threading.Lock()

    def on_event(msg):
        if msg.event == PairEvent.END:
            with lock:
                ends.append(msg.trajectory_id)
        elif on_start is not None:
            on_start(msg.trajectory_id)

    bag = os.path.join(tempfile.mkdtemp(prefix="sim2real_rostest_"), "pairs.bag")
    # `rosrun` execs the C++ recorder itself (the `rosbag` wrapper would exit on SIGINT before
    # the recorder has closed the bag), in its own process group
    recorder = subprocess.Popen(["rosrun", "rosbag", "record", "-O", bag, *TOPICS,
                                 f"__name:={RECORDER}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    # the runner (wait_for_recorder) starts once /pairs/event has a subscriber: let the
    # recorder be that first subscriber, on every topic, before the test listens too
    master = rosgraph.Master(rospy.get_name())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        subscribers = dict(master.getSystemState()[1])
        if all(any(n != rospy.get_name() for n in subscribers.get(t, [])) for t in TOPICS):
            break
        time.sleep(0.05)
    rospy.Subscriber("/pairs/event", PairEvent, on_event, queue_size=10)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(ends) < count and not (finished and finished()):
            time.sleep(0.1)
        time.sleep(1.0)
    finally:
        os.killpg(recorder.pid, signal.SIGINT)
        recorder.wait(timeout=30)
    return bag, sorted(ends)
