"""The errors compliant_actuator_gazebo raises on purpose."""
from __future__ import annotations


class CompliantError(ValueError):
    """The package's one base error: a user-facing problem with an input (a robot description,
    a manager layout, a node's or a tool's parameters); the message is one line, which the tools
    print as ``PROG: error: ...`` with exit code 2 and the nodes as one [FATAL] line with exit
    status 1. Its subclasses are :class:`~compliant_actuator_gazebo.description.DescriptionError`,
    :class:`~compliant_actuator_gazebo.manager.LayoutError` and :class:`ParameterError`."""


class ParameterError(CompliantError):
    """A node's ROS parameter (``~name``) is missing, of the wrong type or out of range; the
    message names it."""
