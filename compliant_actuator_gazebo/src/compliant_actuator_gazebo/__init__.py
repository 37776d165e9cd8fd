"""Compliant actuators for articulated soft robots (paper 003): the C++ core and its bindings.

Everything of the compiled module ``compliant_actuator_gazebo._core`` is re-exported here:
compliance models (Sea, QbMove, Bavs, Awas, TemplateActuator, and the Actuator base class for
Python models), Motor, Pid, CompliantJoint (operation modes 0-6), the factory
(make_actuator, make_joint_params; load_actuator_library for a user's actuator types), the
plugin-block parser that the Gazebo plugin shares
(parse_plugin_block, BlockTag, PluginSettings) and the 1-DoF pendulum (simulate_one_dof); of the
Python library, the names below (loaded on first use).

In the catkin devel space this file is executed by the generated
``devel/lib/python3/dist-packages/compliant_actuator_gazebo/__init__.py``, whose ``__path__``
covers both the devel folder (``_core*.so``, the generated ``msg`` package) and this source
folder; ``from compliant_actuator_gazebo.msg import LinkState`` therefore works next to
``import compliant_actuator_gazebo``.
"""
from sim2real_checks import lazy_exports

from . import _core
from ._core import *  # noqa: F401,F403  (the public API of the core)

_python_api, __getattr__, __dir__ = lazy_exports(__name__, {
    "description": ["expand_xacro", "load_description", "parse_description"],
    "embedded": ["EmbeddedSimulation"],
    "resources": ["package_file"],
})
__all__ = sorted([name for name in dir(_core) if not name.startswith("_")] + _python_api)
