"""Small hand-made specs and histories shared by the test_kernel_*.py files."""
from __future__ import annotations

from typing import Optional

import numpy as np

from kernel_manager_ros.history import Episode, History
from kernel_manager_ros.state_spec import StateSpec

DT = 0.1


def point_spec(epsilon_c: float = 0.05, dims: int = 1) -> StateSpec:
    """A point's position (PointStamped, header stamps) driven by a speed command."""
    fields = ["point.x", "point.y", "point.z"][:dims]
    return StateSpec.from_dict({
        "epsilon_c": epsilon_c,
        "sensors": [{"name": "pos", "topic": "/point/pos", "type": "geometry_msgs/PointStamped",
                     "fields": fields}],
        "actions": [{"name": "cmd", "topic": "/point/cmd", "type": "std_msgs/Float64",
                     "fields": ["data"]}],
        "reward": {"name": "reward", "topic": "/point/reward", "type": "std_msgs/Float64",
                   "fields": ["data"]}})


def point_episodes(n: int = 20, slow: Optional[tuple[float, float]] = None, hold: int = 1,
                   speed: float = 1.0, length: float = 10.0, dims: int = 1) -> list[Episode]:
    """Episodes of a point moving along x at ``speed`` from 0 to ``length`` (steps of DT);
    at half speed inside ``slow`` = (x0, x1) (a "ramp"); with hold > 1 the sensor reports a new
    value only every ``hold`` steps (a slow GPS) and keeps its stamp in between."""
    episodes = []
    for _ in range(n):
        x, xs = 0.0, [0.0]
        while x < length:
            v = speed * (0.5 if slow is not None and slow[0] <= x < slow[1] else 1.0)
            x = round(x + DT * v, 9)
            xs.append(x)
        positions = np.array(xs)
        t = np.arange(positions.size) * DT
        if hold > 1:
            held = (np.arange(positions.size) // hold) * hold
            positions, stamps = positions[held], t[held]
        else:
            stamps = t
        states = np.zeros((positions.size, dims))
        states[:, 0] = positions
        steps = positions.size - 1
        episodes.append(Episode(states=states, actions=np.full((steps, 1), speed),
                                rewards=np.zeros(steps), stamps=stamps[:, None]))
    return episodes


def point_history(**kwargs) -> History:
    return History.from_episodes(point_episodes(**kwargs))


def random_kernel_set(n: int, d: int = 4, m: int = 2, seed: int = 0,
                      sigmas: tuple[float, float] = (0.02, 0.06), threshold: float = 0.5):
    """n kernels with random centres in [0, 1]^d, random sigmas, random transfers (one sensor
    block per pair of coordinates), alternating kinds."""
    from kernel_manager_ros.kernel import Kernel, KernelSet
    from kernel_manager_ros.transfer import LinearTransfer, SensorTransfer
    rng = np.random.default_rng(seed)
    bounds = list(range(0, d, 2)) + [d]
    kernels = []
    for k in range(n):
        blocks = tuple(SensorTransfer(f"s{j}", lo, hi, np.eye(hi - lo) + rng.normal(0, 0.01, (hi - lo, hi - lo)),
                                      rng.normal(0, 0.1, (hi - lo, m)), rng.normal(0, 0.1, hi - lo))
                       for j, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])))
        kernels.append(Kernel(centre=rng.uniform(0, 1, d), sigma=float(rng.uniform(*sigmas)),
                              p_sim=0.5, p_phy=0.5, transfer=LinearTransfer(blocks, d, m, None),
                              kind=("motor", "sensor")[k % 2], support=1 + k % 3))
    w = rng.uniform(0.5, 1.5, d)
    return KernelSet(tuple(kernels), tuple(f"x{i}" for i in range(d)),
                     tuple(f"a{i}" for i in range(m)), w / w.sum(), threshold,
                     {"note": "random"})
