"""kernel_manager_ros figures (issue 7): the kernel manager's look-up per simulation step and
the time of kernel generation (paper 001 Algorithm 1).

Look-up: ``n_kernels`` (10 000) random kernels of the vehicle's state dimension, their centres
spread over the unit box, sigmas such that roughly half the query states lie in some kernel's
region (queries: half near a random centre, half uniform). Candidates, timed on the same
queries, each call alone with time.perf_counter_ns after 1000 untimed warm-up calls:
  1. manager:  KernelManager.decide (input checks, cKDTree ball query, first active kernel,
               f_k(s, a)) - what the node runs per step;
  2. index:    KernelIndex.first_active alone;
  3. scan:     a brute-force NumPy linear scan over precomputed centre/sigma arrays (eq. 8 to
               every centre, activation, first above threshold) - the peer.
Both answers are checked against each other on every query. Target: manager median <= 50 us.

Generation: generate_kernels on a given (H_sim, H_phy, spec) or, by default, on a synthetic
vehicle-like pair (a point driving laps of a square track at 10 Hz; in "deployment" it is
slower on one side - the ramp - and its position sensor updates at 2 Hz on another side), with
the stage times of the GenerationReport.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any, Optional

import numpy as np

from kernel_manager_ros import (Episode, GenerationConfig, History, Kernel, KernelIndex, KernelManager,
                                KernelSet, LinearTransfer, SensorTransfer, StateSpec, generate_kernels)

TARGETS = {"lookup_median_us": 50.0}
WARMUP_CALLS = 1000
RESULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                      "kernel_manager.json")


def random_kernels(n: int, state_dim: int, action_dim: int, seed: int) -> KernelSet:
    """n kernels, one sensor block per state coordinate pair, random transfers."""
    rng = np.random.default_rng(seed)
    bounds = list(range(0, state_dim, 2)) + [state_dim]
    # region radius ~ the typical nearest-centre distance, so about half the box is covered
    sigma = 0.5 * n ** (-1.0 / state_dim) / state_dim
    kernels = []
    for k in range(n):
        blocks = tuple(SensorTransfer(f"s{j}", lo, hi,
                                      np.eye(hi - lo) + rng.normal(0, 0.01, (hi - lo, hi - lo)),
                                      rng.normal(0, 0.01, (hi - lo, action_dim)),
                                      rng.normal(0, 0.01, hi - lo))
                       for j, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])))
        kernels.append(Kernel(rng.uniform(0, 1, state_dim), sigma * rng.uniform(0.8, 1.2), 0.5,
                              0.5, LinearTransfer(blocks, state_dim, action_dim, None),
                              "motor" if k % 3 else "sensor"))
    return KernelSet(tuple(kernels), tuple(f"x{i}" for i in range(state_dim)),
                     tuple(f"a{i}" for i in range(action_dim)),
                     np.full(state_dim, 1.0 / state_dim), 0.5)


class LinearScan:
    """The peer: eq. 8 to every centre, activations, the first above the threshold."""

    def __init__(self, kernel_set: KernelSet) -> None:
        self.centres = kernel_set.centres()
        self.weights = kernel_set.weights
        self.two_sigma2 = 2.0 * np.square(kernel_set.sigmas())
        self.threshold = kernel_set.activation_threshold

    def first_active(self, state: np.ndarray) -> Optional[tuple[int, float]]:
        dist = np.abs(self.centres - state) @ self.weights
        act = np.exp(-np.square(dist) / self.two_sigma2)
        active = np.flatnonzero(act > self.threshold)
        if active.size == 0:
            return None
        return int(active[0]), float(act[active[0]])


def _time_calls(call, queries: np.ndarray) -> dict[str, float]:
    for q in queries[:WARMUP_CALLS]:
        call(q)
    times = np.empty(len(queries))
    clock = time.perf_counter_ns
    for i, q in enumerate(queries):
        t0 = clock()
        call(q)
        times[i] = clock() - t0
    us = times / 1e3
    return {"median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
            "mean_us": float(us.mean())}


def synthetic_pair(steps: int, seed: int) -> tuple[History, History, StateSpec]:
    """A vehicle-like pair: laps of a 20 m square at 10 Hz and 2 m/s; deployment is at half
    speed on the east side (the ramp) and its position sensor updates at 2 Hz on the north
    side (a slow GPS). State (x, y), action (speed command)."""
    spec = StateSpec.from_dict({
        "epsilon_c": 0.1,
        "sensors": [{"name": "gps", "topic": "/vehicle/gps", "type": "geometry_msgs/PointStamped",
                     "fields": ["point.x", "point.y"]}],
        "actions": [{"name": "cmd", "topic": "/vehicle/cmd", "type": "std_msgs/Float64",
                     "fields": ["data"]}],
        "reward": {"name": "reward", "topic": "/mission/reward", "type": "std_msgs/Float64",
                   "fields": ["data"]}})
    rng = np.random.default_rng(seed)

    def history(deploy: bool) -> History:
        episodes, done = [], 0
        while done < steps:
            s, path = rng.uniform(0, 80), []
            stamps, last_fix = [], None
            for t in range(min(800, steps - done) + 1):
                x, y = _square(s)
                if deploy and 20.0 <= s < 40.0 and t % 5 and last_fix is not None:
                    x, y, stamp = last_fix          # north side: GPS at 2 Hz holds its fix
                else:
                    stamp = 0.1 * t
                    last_fix = (x, y, stamp)
                path.append((x, y))
                stamps.append(stamp)
                v = 2.0 * (0.5 if deploy and 0.0 <= s % 80 < 20.0 else 1.0)
                s = (s + 0.1 * v * (1 + rng.normal(0, 0.02))) % 80.0
            states = np.array(path)
            n = states.shape[0] - 1
            episodes.append(Episode(states, np.full((n, 1), 2.0), np.zeros(n),
                                    np.array(stamps)[:, None]))
            done += n
        return History.from_episodes(episodes)

    return history(False), history(True), spec


def _square(s: float) -> tuple[float, float]:
    """Arc length s (0..80) along a 20 m square: east side first, counter-clockwise."""
    side, u = int(s // 20) % 4, s % 20
    return [(20.0, u), (20.0 - u, 20.0), (0.0, 20.0 - u), (u, 0.0)][side]


def bench_kernel_manager(n_kernels: int = 10000, state_dim: int = 5, action_dim: int = 2,
                         queries: int = 20000, seed: int = 0,
                         histories: Optional[tuple[History, History, StateSpec]] = None,
                         generation_steps: int = 20000,
                         generation_config: Optional[GenerationConfig] = None
                         ) -> dict[str, Any]:
    """Look-up and generation figures (module docstring) as a JSON-ready dict."""
    kernel_set = random_kernels(n_kernels, state_dim, action_dim, seed)
    manager, index, scan = KernelManager(kernel_set), KernelIndex(kernel_set), \
        LinearScan(kernel_set)
    rng = np.random.default_rng(seed + 1)
    centres = kernel_set.centres()
    near = centres[rng.integers(0, n_kernels, queries // 2)] \
        + rng.normal(0, centres.std() * 0.01, (queries // 2, state_dim))
    states = rng.permutation(np.vstack([near, rng.uniform(0, 1, (queries - queries // 2,
                                                                  state_dim))]))
    action = np.zeros(action_dim)
    hits = mismatches = 0
    for q in states:
        a, b = index.first_active(q), scan.first_active(q)
        hits += a is not None
        mismatches += (a is None) != (b is None) or (a is not None and a[0] != b[0])
    lookup = {
        "manager": _time_calls(lambda q: manager.decide(q, action), states),
        "index": _time_calls(index.first_active, states),
        "scan": _time_calls(scan.first_active, states)}
    ratio = lookup["scan"]["median_us"] / lookup["manager"]["median_us"]

    clock = time.perf_counter()
    sim, phy, spec = histories if histories is not None else synthetic_pair(generation_steps,
                                                                            seed)
    synth_seconds = time.perf_counter() - clock
    config = generation_config or GenerationConfig(rollouts=200, seed=seed, significance=0.05)
    clock = time.perf_counter()
    kernels, report = generate_kernels(sim, phy, spec, config, progress=False)
    generation_seconds = time.perf_counter() - clock
    return {
        "lookup": {"n_kernels": n_kernels, "state_dim": state_dim, "queries": queries,
                   "active_fraction": hits / queries, "mismatches_vs_scan": int(mismatches),
                   **{k: v for k, v in lookup.items()},
                   "scan_over_manager_median": ratio,
                   "target_median_us": TARGETS["lookup_median_us"],
                   "meets_target": lookup["manager"]["median_us"] <= TARGETS["lookup_median_us"]},
        "generation": {"histories": "given" if histories is not None else
                       "synthetic vehicle-like pair (bench/kernel_manager.py)",
                       "sim_steps": len(sim), "phy_steps": len(phy),
                       "seconds": generation_seconds, "stages": report.seconds,
                       "synthesis_seconds": synth_seconds if histories is None else None,
                       "rollouts": report.rollouts, "states": report.states,
                       "common_states": report.common_states,
                       "motor_kernels": report.motor_kernels,
                       "sensor_kernels": report.sensor_kernels},
        "machine": platform.platform(), "python": platform.python_version()}


def print_table(result: dict[str, Any]) -> None:
    lk = result["lookup"]
    print(f"kernel look-up, {lk['n_kernels']} kernels, d={lk['state_dim']}, "
          f"{lk['queries']} states ({100 * lk['active_fraction']:.0f}% in a region):")
    for name in ("manager", "index", "scan"):
        print(f"  {name:8s} median {lk[name]['median_us']:8.1f} us   p99 "
              f"{lk[name]['p99_us']:8.1f} us")
    print(f"  scan / manager = {lk['scan_over_manager_median']:.1f}x; target <= "
          f"{lk['target_median_us']:.0f} us: {'met' if lk['meets_target'] else 'MISSED'}; "
          f"{lk['mismatches_vs_scan']} mismatches")
    g = result["generation"]
    print(f"generation: {g['sim_steps']} + {g['phy_steps']} steps, {g['rollouts']} roll-outs "
          f"-> {g['motor_kernels']} motor + {g['sensor_kernels']} sensor kernels in "
          f"{g['seconds']:.2f} s ({', '.join(f'{k} {v:.2f}' for k, v in g['stages'].items())})")


def main() -> None:
    from sim2real_checks import provenance, write_json
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=10000)
    parser.add_argument("--state-dim", type=int, default=5)
    parser.add_argument("--queries", type=int, default=20000)
    parser.add_argument("--generation-steps", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=RESULT)
    args = parser.parse_args()
    result = bench_kernel_manager(args.kernels, args.state_dim, queries=args.queries,
                                  seed=args.seed, generation_steps=args.generation_steps)
    print_table(result)
    write_json(args.json, {**result, **provenance("bench/kernel_manager.py")})
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
