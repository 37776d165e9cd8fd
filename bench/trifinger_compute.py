"""Compute time per controller call of the TriFinger controllers, with a re-grasp (simulation;
the ``compute`` part of bench/trifinger_benchmark.py, also runnable alone).

Each pairing runs ``trials`` level-3 episodes (trials 0.. of ``seed``, ``seconds`` long) in
which the cube is taken out of the hand at ``knock_at`` s and put on the floor at
:data:`KNOCK_POSITION`: the controller loses it and grasps it again, so the figures include the
calls around a re-grasp. The grasp planner (controllers/grasp_planner.py) chooses every grasp off
the control call; in the deterministic mode the evaluation uses, the call that takes a re-grasp's
plan waits while the planner's thread computes it, and that wait (planning, reported under
``planning``) is taken out of the call's time. ``asynchronous``: the controllers' mode on the
robot, with the simulation stepped no faster than real time (the control loop idles between its
calls, as on the robot) and the plan taken when it arrives; nothing is taken out.

Two clocks: the wall time of each call (``median_us``, ``p99_us``, ``mean_us``, ``max_us``: what
the robot's control loop sees on an idle computer) and the CPU time of the calling thread
(``cpu``: the call's own work; other processes on the shared machine preempt the calls for ~4 ms
at a time, which the wall figures' p99 and max then show for every controller alike, and a wait
for the planner's thread, or in the asynchronous mode for the GIL, costs no CPU time).

    python bench/trifinger_compute.py [--trials 3] [--seed 0] [--asynchronous] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import time
from typing import Optional

import numpy as np
import pybullet

from sim2real_checks import provenance, write_json
from trifinger_controllers import (CONTROLLERS, IDENTITY, PHYSICS_RATE, RESTING_HEIGHT, Controller, CubePose,
                                   FingerKinematics, Observation, SimOptions, SimulatedPlatform, add_arguments,
                                   default_grasp, episode_specs, from_arguments, make_controller, run_episode)

#: Where the cube is put at ``knock_at``: on the floor, 7 cm from the centre, out of the hand.
KNOCK_POSITION = np.array([0.05, -0.05, RESTING_HEIGHT])


class KnockedPlatform(SimulatedPlatform):
    """The simulated platform with the cube put at :data:`KNOCK_POSITION` after ``knock_step``
    steps; with ``real_time``, stepped no faster than real time."""

    def __init__(self, knock_step: int, real_time: bool = False, **platform_args) -> None:
        super().__init__(**platform_args)
        self.knock_step = int(knock_step)
        self.real_time = real_time
        self._wall_start = 0.0

    def reset(self, initial: CubePose, goal: CubePose, seed: Optional[int] = None) -> Observation:
        observation = super().reset(initial, goal, seed)
        self._wall_start = time.perf_counter()
        return observation

    def step(self, torque: np.ndarray) -> Observation:
        if self.steps == self.knock_step:
            pybullet.resetBasePositionAndOrientation(self.simulation.cube._object_id, KNOCK_POSITION,
                                                     IDENTITY, physicsClientId=self.client_id)
        if self.real_time:
            ahead = self.time - (time.perf_counter() - self._wall_start)
            if ahead > 0.0:
                time.sleep(ahead)
        return super().step(torque)


class CpuTimed(Controller):
    """``base`` with the CPU time of the calling thread of each call kept in ``cpu_us`` (the
    evaluation measures the wall time of the same calls)."""

    def __init__(self, base: Controller) -> None:
        self.base = base
        self.name = base.name
        self.rate_hz = base.rate_hz
        self.cpu_us: list = []

    def reset(self, observation: Observation) -> None:
        self.base.reset(observation)

    def set_asynchronous_planning(self, enabled: bool) -> None:
        self.base.set_asynchronous_planning(enabled)

    def _torque(self, observation: Observation) -> np.ndarray:
        start = time.thread_time_ns()
        torque = self.base.compute(observation)
        self.cpu_us.append((time.thread_time_ns() - start) / 1e3)
        return torque


def statistics(us: np.ndarray) -> dict:
    """median, p99, mean and max of times [us]."""
    return {"median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
            "mean_us": float(us.mean()), "max_us": float(us.max())}


def compute_time(name: str, grasp: str, seed: int, seconds: float, options: SimOptions,
                 trials: int = 3, knock_at: float = 6.0, asynchronous: bool = False) -> dict:
    """Compute time per call [us] of controller ``name`` with ``grasp`` over ``trials`` knocked
    level-3 episodes (module docstring): median, p99, mean, max, the re-grasps, and the grasp
    planner's time per plan and its waits (taken out of the calls' times)."""
    kinematics = FingerKinematics()
    times, cpu_times, plan_seconds, waits = [], [], [], []
    regrasps = 0
    rate = 0.0
    for goal, initial, platform_seed in episode_specs(3, trials, seed):
        controller = CpuTimed(make_controller(name, grasp, None, kinematics, level=3))
        controller.set_asynchronous_planning(asynchronous)
        rate = float(controller.rate_hz)
        platform = KnockedPlatform(int(round(knock_at * PHYSICS_RATE)), real_time=asynchronous,
                                   seed=platform_seed, perception=options.perception, physics=options.physics)
        try:
            record = run_episode(platform, controller, 3, goal, initial, seconds, kinematics=kinematics)
        finally:
            platform.close()
        if record.error is not None:
            raise RuntimeError(f"{name}-{grasp}: {record.error}")
        us = record.compute_us.copy()
        for plan in controller.base.grasp_planner.records:
            if not plan.reset:   # taken by the call at that time (calls at multiples of 1/rate)
                us[int(round(plan.taken * rate))] -= 1e6 * plan.wait_seconds
                plan_seconds.append(plan.seconds)
                waits.append(plan.wait_seconds)
        regrasps += controller.base.regrasps
        times.append(us)
        cpu_times.append(controller.cpu_us)
    us = np.concatenate(times)

    def most(values: list) -> Optional[float]:
        return float(max(values)) if values else None

    return {"controller": name, "grasp": grasp, "calls": int(us.size), **statistics(us),
            "cpu": statistics(np.concatenate(cpu_times)), "rate_hz": rate, "trials": trials, "seed": seed,
            "seconds": seconds, "knock_at_s": knock_at,
            "mode": "asynchronous, real time" if asynchronous else "deterministic", "regrasps": regrasps,
            "planning": {"plans": len(plan_seconds),
                         "seconds_mean": float(np.mean(plan_seconds)) if plan_seconds else None,
                         "seconds_max": most(plan_seconds), "wait_seconds_max": most(waits)},
            "label": "simulation"}


def describe(c: dict) -> str:
    """One line of a :func:`compute_time` result."""
    planning = c["planning"]
    plans = (f"; {planning['plans']} re-grasp plans of {1e3 * planning['seconds_mean']:.1f} ms "
             f"(max {1e3 * planning['seconds_max']:.1f}) off the calls" if planning["plans"] else "")
    cpu = c["cpu"]
    return (f"{c['controller']}-{c['grasp']} compute per call ({c['mode']}): median {c['median_us']:.0f} us, "
            f"p99 {c['p99_us']:.0f} us, max {c['max_us']:.0f} us (CPU time: {cpu['median_us']:.0f}, "
            f"{cpu['p99_us']:.0f}, {cpu['max_us']:.0f} us; {c['calls']} calls at {c['rate_hz']:.0f} Hz, "
            f"{c['trials']} episodes, {c['regrasps']} re-grasps{plans})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--knock-at", type=float, default=6.0)
    parser.add_argument("--controllers", nargs="+", choices=CONTROLLERS, default=list(CONTROLLERS))
    parser.add_argument("--asynchronous", action="store_true")
    parser.add_argument("--out")
    add_arguments(parser)
    args = parser.parse_args()
    options = from_arguments(args)
    results = []
    for name in args.controllers:
        results.append(compute_time(name, default_grasp(name), args.seed, args.seconds, options,
                                    args.trials, args.knock_at, args.asynchronous))
        print(describe(results[-1]), flush=True)
    if args.out:
        write_json(args.out, {"compute": results, **options.describe(), "label": "simulation",
                              **provenance("bench/trifinger_compute.py")})


if __name__ == "__main__":
    main()
