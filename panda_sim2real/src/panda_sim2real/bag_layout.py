"""The pair bag's layout: topic names shared by the recorders (``pairs``, ``pair_runner``, the
robot nodes) and the readers (``pair_bag``, ``joint_state_bag``). See panda_pairs/README.md,
"Bag layout"."""

SIM_NS = "/sim"
REAL_NS = "/real"
JOINT_STATES = "joint_states"
REALISTIC = "joint_states_realistic"   # corrected sim joint states (X + NN(X), paper 000 eq. 9)
COMMAND = "joint_trajectory_controller/command"
EVENTS = "/pairs/event"
LABEL = "/real/label"
# PairEvent.event values (msg/PairEvent.msg), for readers that do not load the message module
EVENT_START, EVENT_END = 0, 1
DEFAULT_LABEL = "reality stand-in"


def topic(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def label_topic(joint_states_topic: str) -> str:
    """The std_msgs/String topic naming the robot that published ``joint_states_topic``, in its
    namespace (``/real/label`` for ``/real/joint_states``)."""
    return topic(joint_states_topic.rsplit("/", 1)[0], "label")
