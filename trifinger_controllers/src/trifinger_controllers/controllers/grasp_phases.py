"""What CPC and CIC share around their control laws: the grasp given in any of the forms the
mix-and-match of paper 004 §VI needs and its selection (run by grasp_planner.py, off the control
call), and the phases of a grasp (approach above and beside the cube, close, move to the goal,
hold, retreat for a re-grasp)."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Optional, Tuple, Union

from trifinger_controllers import grasps
from trifinger_controllers.grasp_geometry import Grasp
from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.params import ParameterSet
from trifinger_controllers.types import Observation
from trifinger_controllers.errors import TrifingerError

#: A grasp name (tg, cg, og, pg), names tried in order (the first reachable), a fixed Grasp (cube
#: frame) or a callable ``observation -> Grasp``.
GraspSpec = Union[str, Tuple[str, ...], Grasp, Callable[[Observation], Grasp]]


class Phase(enum.Enum):
    ABOVE = "above"
    BESIDE = "beside"
    CLOSE = "close"
    MOVE = "move"
    HOLD = "hold"
    RETREAT = "retreat"


@dataclass(frozen=True)
class GraspSelection:
    """The grasp of ``spec`` for an observation; at a re-grasp, where ``spec`` reaches none (e.g.
    the cube dropped near the arena's edge), the first reachable of ``fallback``. A named
    strategy that reaches the cube but no assignment of which reaches the goal too (a goal at the
    arena's edge) is chosen for the cube alone. Run on the
    planner's thread (grasp_planner.py) with its kinematics: a callable ``spec`` is called there,
    and must not use a FingerKinematics that the controller uses."""

    spec: GraspSpec
    level: int
    fallback: Tuple[str, ...] = ()

    def __call__(self, observation: Observation, kinematics: FingerKinematics,
                 regrasp: bool = False) -> Grasp:
        """GraspError if no grasp is reachable."""
        spec = self.spec
        if isinstance(spec, Grasp):
            return spec
        if callable(spec):
            try:
                return spec(observation)
            except grasps.GraspError:
                if not (regrasp and self.fallback):
                    raise
                names: Tuple[str, ...] = self.fallback
        else:
            names = tuple(dict.fromkeys(((spec,) if isinstance(spec, str) else tuple(spec))
                                        + (self.fallback if regrasp else ())))
        error: Optional[grasps.GraspError] = None
        # first reachable at the cube and at the goal; else reachable at the cube alone (the
        # carry then goes as far as the fingers reach, rather than no grasp at all)
        for goal in (observation.goal, None):
            for name in names:
                try:
                    return grasps.make_grasp(name, observation.cube, goal, kinematics, self.level)
                except grasps.GraspError as exc:
                    error = exc
        raise error if error is not None else grasps.GraspError("no grasp to try")


def grasp_selection(controller: str, grasp: GraspSpec, level: int,
                    fallback: Tuple[str, ...] = ()) -> GraspSelection:
    """The :class:`GraspSelection` of ``grasp`` after checking it: TypeError naming
    ``controller`` for anything but a name, names, a Grasp or a callable, ValueError for an
    unknown name."""
    if isinstance(grasp, str) or (isinstance(grasp, tuple) and grasp and all(isinstance(n, str) for n in grasp)):
        for name in ((grasp,) if isinstance(grasp, str) else grasp) + tuple(fallback):
            if name not in grasps.STRATEGIES:
                raise TrifingerError(f"unknown grasp {name!r}: expected one of {sorted(grasps.STRATEGIES)}")
    elif not (isinstance(grasp, Grasp) or callable(grasp)):
        raise TypeError(f"{controller}: grasp must be a name, a Grasp or a callable, got {type(grasp).__name__}")
    return GraspSelection(grasp, level, tuple(fallback))


def check_setup(controller: str, params: Optional[ParameterSet], expected: ParameterSet,
                level: int) -> ParameterSet:
    """The controller's parameters (``expected``'s defaults if None) after checking that they are
    its own set and that ``level`` is an RRC level (ValueError otherwise)."""
    if params is not None and params.names != expected.names:
        raise TrifingerError(f"{controller}: expected the {controller} parameter set, got {params.name!r}")
    if level not in (1, 2, 3, 4):
        raise TrifingerError(f"invalid level {level!r}: expected one of (1, 2, 3, 4)")
    return params if params is not None else expected
