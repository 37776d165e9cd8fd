#!/usr/bin/env python3
"""The fuzz test's realtime model: written to a new file (in ROS_LOG_DIR, else the temporary
folder) whose path is printed without a newline, for ``<param command=...>`` in test/fuzz.test.

A small seeded network whose torque rows of the dense layer are zero and whose torque bias is
EFFORT_RESIDUAL N m: every corrected torque is the simulator's plus EFFORT_RESIDUAL whatever the
hidden state, so the fuzz test knows what a good state must give; the position and velocity
residuals come from the LSTM (a NaN in its hidden state would show there)."""
import os
import sys
import tempfile

import torch

from panda_sim2real import JointLimits
from panda_pairs import JointLimitScaler
from realeasy_ros.networks import ModelSpec, build_network
from realeasy_ros.model import RealeasyModel

EFFORT_RESIDUAL = 1.0     # N m added to every torque
RATE = 100.0
WARMUP = 5


def fuzz_model(seed: int = 0) -> RealeasyModel:
    """The model described in the module docstring, for the Panda's joints."""
    torch.manual_seed(seed)
    limits = JointLimits.from_yaml()
    spec = ModelSpec(hidden_size=8)
    network = build_network(spec)
    scaler = JointLimitScaler.from_limits(limits)
    torque = slice(2 * limits.dof, 3 * limits.dof)
    with torch.no_grad():
        network.dense.weight[torque] = 0.0
        network.dense.bias[torque] = torch.as_tensor(EFFORT_RESIDUAL / scaler.scale[torque])
    return RealeasyModel(network, spec, scaler, limits.joint_names, RATE, WARMUP,
                         {"label": "fuzz test"})


def main() -> None:
    folder = os.environ.get("ROS_LOG_DIR") or tempfile.gettempdir()
    os.makedirs(folder, exist_ok=True)
    handle, path = tempfile.mkstemp(prefix="realeasy_fuzz_model_", suffix=".pt", dir=folder)
    os.close(handle)
    fuzz_model().save(path)
    sys.stdout.write(path)


if __name__ == "__main__":
    main()
