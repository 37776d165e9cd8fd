"""The Panda's Gazebo plugin core for Python (``panda_gazebo._core``): the trajectory validation
and execution and the effort PID that ``libpanda_effort_plugin.so`` runs in gzserver, so that
tests compare them with panda_sim2real's simulator. The model and the lock-step driving are
panda_sim2real's (gazebo_model.py, gazebo_robot.py)."""
from . import _core
from ._core import (JointLimits, PidController, PlannedTrajectory, SigmoidFriction,  # noqa: F401
                    TrajectoryExecutor, effort_step, validate_trajectory)

__all__ = ["JointLimits", "PidController", "PlannedTrajectory", "SigmoidFriction",
           "TrajectoryExecutor", "effort_step", "validate_trajectory", "_core"]
