"""Grasp selection away from the control call, shared by CPC, CIC and MP (paper 004 §IV: each
chooses a grasp, MP also a path, whenever it grasps the cube; on the robot that choice must not
stall the 100-500 Hz torque loop).

:class:`GraspPlanner` runs a controller's ``select(observation, kinematics, **inputs) -> plan``
on a snapshot of its inputs, on one worker thread with a FingerKinematics of its own:
:meth:`GraspPlanner.plan` (from ``reset``) waits for the plan, :meth:`GraspPlanner.poll` (from
a re-grasp's control calls, while the fingers hold a safe command) takes it when it is due.
Asynchronous mode (free-running nodes): when it has finished; deterministic mode (the default:
evaluation, lock step): :data:`DEFAULT_LATENCY` simulated seconds after it was asked for.
Each plan's times are in :attr:`GraspPlanner.records`.

The modes, the GIL measurements and why a thread: README.md, "How the controllers work", "Grasp
selection off the control call (`controllers/grasp_planner.py`)".
"""
from __future__ import annotations

import copy
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, List, Optional, TypeVar

from trifinger_controllers.kinematics import FingerKinematics
from trifinger_controllers.types import Observation
from trifinger_controllers.errors import TrifingerError

T = TypeVar("T")
#: ``select(observation, kinematics, **inputs) -> plan`` (a plan is never None).
Select = Callable[..., T]
#: Deterministic mode: CPC's and CIC's plans are taken this long [s, simulated] after they were
#: asked for: longer than their selection takes (1-15 ms of wall time here), so that the
#: evaluation does not assume a faster planner than the robot has.
DEFAULT_LATENCY = 0.05
#: Simulated times closer than this [s] are equal (the time of a call is a sum of 1 ms steps).
TIME_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PlanRecord:
    """One selection: asked for at simulated time ``requested`` [s] and taken by the controller at
    ``taken`` [s] (``reset``: by reset, else by the control call at that time); ``seconds`` of
    wall time on the worker thread ``thread``; ``wait_seconds`` the wall time the taking call (or
    reset) waited for it; ``error`` the selection's exception (type: message) if it raised."""

    requested: float
    taken: float
    seconds: float
    wait_seconds: float
    thread: str
    reset: bool = False
    error: Optional[str] = None


class _Job:
    """A selection handed to the worker; ``seconds`` and ``thread`` are set before ``future``
    completes."""

    def __init__(self, select: Select, observation: Observation, inputs: Dict[str, Any]) -> None:
        self.select = select
        self.observation = observation
        self.inputs = inputs
        self.requested = float(observation.robot.time)
        self.future: Future = Future()
        self.submitted = False
        self.seconds = 0.0
        self.thread = ""


def _serve(jobs: queue.SimpleQueue, kinematics: FingerKinematics) -> None:
    """The worker thread: run the jobs in order until a None arrives (its planner was collected)."""
    while True:
        job = jobs.get()
        if job is None:
            return
        if job.future.set_running_or_notify_cancel():
            start = time.perf_counter()
            plan, error = None, None
            try:
                plan = job.select(job.observation, kinematics, **job.inputs)
            except BaseException as exc:  # noqa: BLE001 - the controller re-raises it when it takes the plan
                error = exc
            job.seconds, job.thread = time.perf_counter() - start, threading.current_thread().name
            if error is None:
                job.future.set_result(plan)
            else:
                job.future.set_exception(error)
        job = plan = error = None  # noqa: F841 - hold nothing (the job's select) while waiting


class GraspPlanner(Generic[T]):
    """Runs ``select`` on a worker thread of its own (module docstring).

    Args:
        select: the selection, ``select(observation, kinematics, **inputs) -> plan``.
        kinematics: the controller's; the worker gets a copy with its own workspace.
        latency: deterministic mode: the plan is taken this many simulated seconds after it was
            asked for.
        name: the worker thread's name.
    """

    def __init__(self, select: Select, kinematics: FingerKinematics, latency: float,
                 name: str = "grasp-planner") -> None:
        if not latency >= 0.0:
            raise TrifingerError(f"planning latency must be >= 0 s, got {latency}")
        self.select = select
        self.latency = float(latency)
        self.name = name
        #: False: plans are taken ``latency`` after they were asked for; True: when they arrive.
        self.asynchronous = False
        self.records: List[PlanRecord] = []
        self._kinematics = kinematics.workspace_copy()
        self._jobs: Optional[queue.SimpleQueue] = None
        self._pending: Optional[_Job] = None

    def plan(self, observation: Observation, **inputs: Any) -> T:
        """The plan for ``observation``, waited for (``reset``: not a control call); a plan still
        pending from before is dropped. Raises the selection's exception."""
        self._pending = None
        return self._take(_Job(self.select, copy.deepcopy(observation), inputs), observation.robot.time,
                          reset=True)

    def poll(self, observation: Observation, **inputs: Any) -> Optional[T]:
        """Call at every control call while waiting for a plan: the first call asks for it, for
        a copy of ``observation`` and for ``inputs`` (handed over as they are); returns the plan
        once it is to be taken and None before; raises the selection's exception then."""
        job = self._pending
        if job is None:
            job = self._pending = _Job(self.select, copy.deepcopy(observation), inputs)
        t = observation.robot.time
        if self.asynchronous:
            self._submit(job)
            if not job.future.done():
                return None
        elif t + TIME_TOLERANCE < job.requested + self.latency:
            return None
        self._pending = None
        return self._take(job, t)

    def _submit(self, job: _Job) -> None:
        """Hand ``job`` to the worker (once)."""
        if job.submitted:
            return
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(self._jobs, self._kinematics), name=self.name,
                             daemon=True).start()
            weakref.finalize(self, self._jobs.put, None)
        job.submitted = True
        self._jobs.put(job)

    def _take(self, job: _Job, t: float, reset: bool = False) -> T:
        """The plan of ``job`` (run now if it was not handed over yet), recorded."""
        start = time.perf_counter()
        self._submit(job)
        error = job.future.exception()          # waits for the worker
        waited = time.perf_counter() - start
        self.records.append(PlanRecord(job.requested, float(t), job.seconds, waited, job.thread, reset,
                                       None if error is None else f"{type(error).__name__}: {error}"))
        if error is not None:
            raise error
        return job.future.result()
