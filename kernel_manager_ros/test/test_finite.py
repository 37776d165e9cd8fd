"""The publish-side check for non-finite values in any float field of a message."""
import math

from geometry_msgs.msg import PoseArray, Pose
from sensor_msgs.msg import JointState

from kernel_manager_ros.finite import non_finite_fields


def test_finite_messages_pass_and_every_non_finite_field_is_named():
    ok = JointState(name=["a", "b"], position=[0.1, 0.2], velocity=[0.0, 0.0], effort=[1.0, 2.0])
    assert non_finite_fields(ok) == []
    bad = JointState(name=["a", "b"], position=[0.1, 0.2], velocity=[0.0, math.inf],
                     effort=[math.nan, 2.0])
    assert non_finite_fields(bad) == ["velocity[1]", "effort[0]"]
    poses = PoseArray(poses=[Pose(), Pose()])
    poses.poses[1].position.z = math.nan
    assert non_finite_fields(poses) == ["poses[1].position.z"]
