"""Per-joint error of a simulated stream against the (stand-in) real one, in physical units: the
figure every gap report and every learner's evaluation prints (paper 000 Table II layout)."""
from __future__ import annotations

import numpy as np

# (quantity, key of per_joint_mse, unit)
QUANTITIES = (("position", "position_mse", "rad^2"),
              ("velocity", "velocity_mse", "(rad/s)^2"),
              ("torque", "torque_mse", "(N m)^2"))


def per_joint_mse(pred: np.ndarray, real: np.ndarray) -> dict[str, list[float]]:
    """Per-joint MSE of ``pred`` against ``real``, both (N, 3 dof) with columns [q, qd, tau] in
    physical units: position_mse [rad^2], velocity_mse [(rad/s)^2], torque_mse [(N m)^2], each
    a list of dof floats. ValueError for different or unusable shapes or no samples."""
    pred, real = np.asarray(pred, dtype=float), np.asarray(real, dtype=float)
    if pred.shape != real.shape or pred.ndim != 2 or pred.shape[1] % 3 or pred.shape[0] == 0:
        raise ValueError(f"need two arrays of the same shape (N > 0, 3 dof), got {pred.shape} "
                         f"and {real.shape}")
    diff = pred - real
    mse = np.mean(diff * diff, axis=0)
    dof = mse.shape[0] // 3
    return {key: mse[k * dof:(k + 1) * dof].tolist()
            for k, (_, key, _) in enumerate(QUANTITIES)}
