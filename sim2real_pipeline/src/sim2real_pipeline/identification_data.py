"""The identification data: the robot's (``/real``) joint states of the training trajectories.

Written as an npz in diffnea_ros's format (t, q, qd, tau, joint_names, segment; one segment per
trajectory, so its derivatives never straddle two), read by ``rosrun diffnea_ros identify``.
Held-out trajectories never enter it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from sim2real_pipeline.errors import PipelineError
from sim2real_checks.outputs import atomic_path



def write_identification_data(bag: str, trajectory_ids: Sequence[int], out: str,
                              stage: str = "identify") -> dict:
    """Write the npz; returns its figures. PipelineError if the bag lacks the robot's stream or
    none of the trajectories."""
    from panda_sim2real.errors import PandaError
    from panda_sim2real.limits import JointLimits
    from panda_sim2real.pair_bag import read_pairs

    limits = JointLimits.from_yaml()
    try:
        recording = read_pairs(bag, limits.joint_names)
    except PandaError as exc:
        raise PipelineError(stage, exc) from exc
    wanted = set(int(i) for i in trajectory_ids)
    pairs = [p for p in recording.pairs if p.trajectory_id in wanted and len(p.real) > 1]
    if not pairs:
        raise PipelineError(stage, f"bag {bag} holds none of the {len(wanted)} training "
                                   f"trajectories on /real/joint_states")
    t = np.concatenate([p.real.t for p in pairs])
    arrays = {
        "t": t,
        "q": np.concatenate([p.real.q for p in pairs]),
        "qd": np.concatenate([p.real.qd for p in pairs]),
        "tau": np.concatenate([p.real.tau for p in pairs]),
        "segment": np.concatenate([np.full(len(p.real), k, dtype=np.int64)
                                   for k, p in enumerate(pairs)]),
        "joint_names": np.array(limits.joint_names, dtype=str),
    }
    with atomic_path(out, suffix=".npz") as tmp:
        np.savez(tmp, **arrays)
    return {"trajectories": len(pairs), "samples": int(t.shape[0]), "label": recording.label}
