"""What CPC and CIC share around their control laws: the grasp given in any of the forms the
mix-and-match of paper 004 §VI needs, and the phases of a grasp (approach above and beside the
cube, close, move to the goal, hold, retreat for a re-grasp)."""
from __future__ import annotations

import enum
from typing import Callable, Optional, Union

from trifinger_controllers import grasps
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.params import ParameterSet
from trifinger_controllers.types import Observation

GraspSpec = Union[str, grasps.Grasp, Callable[[Observation], grasps.Grasp]]
GraspChooser = Callable[[Observation], grasps.Grasp]


class Phase(enum.Enum):
    ABOVE = "above"
    BESIDE = "beside"
    CLOSE = "close"
    MOVE = "move"
    HOLD = "hold"
    RETREAT = "retreat"


def grasp_chooser(controller: str, grasp: GraspSpec, kinematics: FingerKinematics,
                  level: int) -> GraspChooser:
    """``observation -> Grasp`` for a grasp name (tg, cg, og, pg: chosen for the observed cube and
    goal at every (re)grasp), a fixed :class:`grasps.Grasp` (cube frame, used as is) or a
    callable; TypeError naming ``controller`` otherwise."""
    if isinstance(grasp, str):
        return grasps.grasp_source(grasp, kinematics, level)
    if isinstance(grasp, grasps.Grasp):
        fixed = grasp
        return lambda observation: fixed
    if callable(grasp):
        return grasp
    raise TypeError(f"{controller}: grasp must be a name, a Grasp or a callable, got {type(grasp).__name__}")


def check_setup(controller: str, params: Optional[ParameterSet], expected: ParameterSet,
                level: int) -> ParameterSet:
    """The controller's parameters (``expected``'s defaults if None) after checking that they are
    its own set and that ``level`` is an RRC level (ValueError otherwise)."""
    if params is not None and params.names != expected.names:
        raise ValueError(f"{controller}: expected the {controller} parameter set, got {params.name!r}")
    if level not in (1, 2, 3, 4):
        raise ValueError(f"invalid level {level!r}: expected one of (1, 2, 3, 4)")
    return params if params is not None else expected
