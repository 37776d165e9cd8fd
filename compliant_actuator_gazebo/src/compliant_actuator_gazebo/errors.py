"""The errors compliant_actuator_gazebo raises on purpose."""
from __future__ import annotations


class CompliantError(ValueError):
    """The package's one base error: a user-facing problem with an input (a robot description,
    a manager layout, a tool's parameters); the message is one line, which the tools print as
    ``PROG: error: ...`` with exit code 2. Its subclasses are
    :class:`~compliant_actuator_gazebo.description.DescriptionError` and
    :class:`~compliant_actuator_gazebo.manager.LayoutError`."""
