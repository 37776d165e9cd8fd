"""roslaunch compliant_actuator_gazebo gazebo.launch as a user runs it (issue 35): gzserver in the
container with sim time on /clock and gazebo_ros's physics services, the README's `rostopic pub`
outcomes, the manager working unchanged against Gazebo, and ending the launch stopping the
container within 10 s."""
import os
import signal
import subprocess
import time

import pytest

from sim2real_gazebo import LOGS


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout:g} s")


class Launch:
    def __init__(self, name: str, *args: str) -> None:
        if CLOCK:
            CLOCK[0].value = None                # a new gzserver: its own clock
        self.log = open(os.path.join(LOGS, f"launch_{name}.log"), "w")
        self.proc = subprocess.Popen(["roslaunch", "compliant_actuator_gazebo", "gazebo.launch", *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> float:
        """SIGINT as Ctrl-C does; the seconds until roslaunch and the container are gone."""
        start = time.monotonic()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        return time.monotonic() - start


def clear_sim_time() -> None:
    """The launch's /use_sim_time off the shared master (the next test's nodes run on wall time)."""
    import rospy
    if rospy.has_param("/use_sim_time"):
        rospy.delete_param("/use_sim_time")


def containers(node_pid: int) -> list[str]:
    """The running containers of the gzserver_container node with this pid (their names carry
    it; other runs on the machine may have theirs)."""
    from sim2real_gazebo import engine
    done = subprocess.run([engine(), "ps", "--format", "{{.Names}}"], capture_output=True, text=True)
    return [n for n in done.stdout.split() if n.startswith(f"sim2real-gzserver-{node_pid}-")]


def latest(topic: str, msg_type, timeout: float = 30.0):
    import rospy
    return rospy.wait_for_message(topic, msg_type, timeout=timeout)


class Pub:
    """`rostopic pub TOPIC std_msgs/Float64 "data: V"` as in the README: latched, left running
    until the test has waited (a one-shot publish is lost if the subscriber connects late)."""

    def __init__(self, topic: str, value: float) -> None:
        self.proc = subprocess.Popen(["rostopic", "pub", topic, "std_msgs/Float64", f"data: {value}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self) -> "Pub":
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class ClockWatch:
    """The newest /clock (a paused world publishes none: the last one stays)."""

    def __init__(self) -> None:
        import rospy
        from rosgraph_msgs.msg import Clock
        self.value = None
        self.sub = rospy.Subscriber("/clock", Clock, self._on, queue_size=1)

    def _on(self, msg) -> None:
        self.value = msg.clock.to_sec()


CLOCK: list = []


def sim_time() -> float:
    if not CLOCK:
        CLOCK.append(ClockWatch())
    wait_for(lambda: CLOCK[0].value is not None, 30.0, "/clock")
    return CLOCK[0].value


def settle_for(seconds: float) -> None:
    start = sim_time()
    wait_for(lambda: sim_time() - start >= seconds, 60.0, f"{seconds} s of sim time")


@pytest.fixture
def one_dof():
    launch = Launch("one_dof", "model:=one_dof", "actuator:=qbmove")
    try:
        from compliant_actuator_gazebo.msg import LinkState
        latest("/one_dof/joint_1/link_state", LinkState, timeout=90.0)
        yield launch
    finally:
        launch.stop()
        clear_sim_time()


def test_the_readme_rostopic_pub_outcomes_in_gazebo(one_dof):
    from compliant_actuator_gazebo.msg import LinkState
    with Pub("/one_dof/joint_1/equilibrium_position", 0.5):
        settle_for(5.0)
        state = latest("/one_dof/joint_1/link_state", LinkState)
        assert state.position == pytest.approx(0.33, abs=0.02)    # soft preset: gravity sags it
        with Pub("/one_dof/joint_1/stiffness_preset", 0.6):
            settle_for(5.0)
            assert latest("/one_dof/joint_1/link_state", LinkState).position == pytest.approx(0.49, abs=0.02)


def test_clock_and_the_physics_services(one_dof):
    import rospy
    from std_srvs.srv import Empty
    t0 = sim_time()
    wait_for(lambda: sim_time() > t0 + 0.5, 30.0, "advancing /clock")
    rospy.ServiceProxy("/gazebo/pause_physics", Empty)()
    time.sleep(0.5)                                               # /clock still in flight
    paused = sim_time()
    time.sleep(1.0)
    assert sim_time() == paused                                   # frozen
    rospy.ServiceProxy("/gazebo/unpause_physics", Empty)()
    wait_for(lambda: sim_time() > paused + 0.5, 30.0, "/clock after unpausing")
    before = sim_time()
    rospy.ServiceProxy("/gazebo/reset_simulation", Empty)()
    wait_for(lambda: sim_time() < before - 0.4, 30.0, "/clock back after the reset")


def test_ending_the_launch_stops_the_container_within_10_s():
    launch = Launch("stop", "model:=two_dof_qbmove")
    try:
        from compliant_actuator_gazebo.msg import LinkState
        latest("/two_dof_qbmove/joint_2/link_state", LinkState, timeout=90.0)
        found = subprocess.run(["pgrep", "-P", str(launch.proc.pid), "-f", "gzserver_container"],
                               capture_output=True, text=True).stdout.split()
        assert len(found) == 1, found
        node = int(found[0])
        assert containers(node)
    finally:
        seconds = launch.stop()
        clear_sim_time()
    assert seconds <= 10.0, seconds
    assert not containers(node)


def test_the_manager_works_unchanged_against_gazebo():
    import rospy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from compliant_actuator_gazebo.msg import LinkState
    launch = Launch("manager", "model:=five_dof_arm", "manager:=true")
    try:
        state = latest("/five_dof_arm/robot_state", JointState, timeout=90.0)
        assert list(state.name) == [f"joint_{i}" for i in range(1, 6)]
        pub_ = rospy.Publisher("/five_dof_arm/reference_1", Float64MultiArray, queue_size=1)
        start = sim_time()
        while sim_time() - start < 3.0:          # a command stream, as a controller sends it
            pub_.publish(Float64MultiArray(data=[0.3, 0.2, 0.1, 0.0, -0.2]))
            time.sleep(0.05)
        link = latest("/five_dof_arm/joint_1/link_state", LinkState)
        assert link.position == pytest.approx(0.3, abs=0.05)
        pub_.unregister()
    finally:
        launch.stop()
        clear_sim_time()
