"""How hard the reality stand-in is, measured as a real Panda is (issue 38): after the chain's
own identification (collect, split, identify, resimulate), the identified stage's held-out torque
MSE per joint against the validation MSE Gaz et al. (RA-L 2019) left on a real Panda with their
full model, and the residual's spectrum and autocorrelation beside white noise of the same power.

The stand-in's ``unmodelled.scale`` sets each joint's level of the effects the identifier cannot
model; :func:`suggested_scale` is the next value for a joint outside the tolerance, from the
residual's growth with the effects' amplitude (MSE ~ floor + scale^2 x effects).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from sim2real_pipeline.errors import PipelineError

CALIBRATION_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                                "calibration.yaml")
TORQUE = slice(14, 21)     # the torque columns of a (T, 3 dof) [q, qd, tau] stream


@dataclass(frozen=True)
class RealRobotResidual:
    """The published held-out torque MSE of a real robot [(N m)^2 per joint] and the tolerance
    (a factor either way) within which the stand-in counts as calibrated."""

    torque_mse: np.ndarray
    tolerance: float
    source: str

    @classmethod
    def from_yaml(cls, path: str = CALIBRATION_FILE) -> "RealRobotResidual":
        from sim2real_checks import read_yaml
        raw = read_yaml(path, "calibration config", lambda m: PipelineError("settings", m))
        try:
            mse = np.asarray(raw["real_panda_torque_mse"], dtype=float)
            tolerance = float(raw["tolerance"])
            source = str(raw["source"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PipelineError("settings", f"calibration config {path}: {exc}") from None
        if mse.shape != (7,) or not np.all(np.isfinite(mse) & (mse > 0)) or not tolerance > 1.0:
            raise PipelineError("settings", f"calibration config {path}: needs 7 positive MSE "
                                            f"and a tolerance above 1")
        return cls(mse, tolerance, source)


@dataclass(frozen=True)
class Calibration:
    """Per joint: the identified and the nominal simulator's held-out torque MSE, the published
    real figure, their ratio and whether it is within the tolerance."""

    identified: np.ndarray
    simulation: np.ndarray
    published: np.ndarray
    tolerance: float

    @property
    def ratio(self) -> np.ndarray:
        return self.identified / self.published

    @property
    def within(self) -> np.ndarray:
        return (self.ratio <= self.tolerance) & (self.ratio >= 1.0 / self.tolerance)


def suggested_scale(calibration: Calibration, scale: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """The scale that would bring each joint's MSE onto the published figure, if the MSE above
    ``floor`` (the part the scale does not change, :func:`white_noise`) grows as scale^2; joints
    within the tolerance keep theirs."""
    above = np.maximum(calibration.identified - floor, 1e-12)
    wanted = np.maximum(calibration.published - floor, 1e-12)
    return np.where(calibration.within, scale, scale * np.sqrt(wanted / above))


def torque_residuals(pred: Sequence[np.ndarray], real: Sequence[np.ndarray]) -> list[np.ndarray]:
    """real - predicted joint torque per trajectory, (T, dof) each [N m]."""
    return [r[:, TORQUE] - p[:, TORQUE] for p, r in zip(pred, real)]


@dataclass(frozen=True)
class ResidualSpectra:
    """Welch power spectral density [(N m)^2/Hz] and autocorrelation of the residual per joint,
    and both for white noise of the same power (flat at 2 var / rate; 1 at lag 0, else 0)."""

    frequency: np.ndarray      # (F,) Hz
    psd: np.ndarray            # (F, dof)
    white_psd: np.ndarray      # (dof,)
    lags: np.ndarray           # (L,) s
    autocorrelation: np.ndarray  # (L, dof)
    correlation_time: np.ndarray  # (dof,) s, first lag where the autocorrelation falls below 1/e


def residual_spectra(residuals: Sequence[np.ndarray], rate: float, segment: int = 128,
                     max_lag: int = 50) -> ResidualSpectra:
    """The spectra of ``residuals`` (trajectories sampled at ``rate`` Hz), each trajectory's mean
    removed; trajectories shorter than ``segment`` samples are left out."""
    from scipy.signal import welch
    long = [r - r.mean(axis=0) for r in residuals if len(r) >= segment]
    if not long:
        raise PipelineError("calibration", f"no residual of {segment} samples or more")
    psds, acf_sum, counts = [], np.zeros((max_lag + 1, long[0].shape[1])), np.zeros(max_lag + 1)
    for r in long:
        freq, p = welch(r, fs=rate, nperseg=segment, axis=0)
        psds.append((p, len(r)))
        for lag in range(max_lag + 1):
            acf_sum[lag] += np.sum(r[: len(r) - lag] * r[lag:], axis=0)
            counts[lag] += len(r) - lag
    weights = np.array([n for _, n in psds], dtype=float)
    psd = np.tensordot(weights / weights.sum(), np.array([p for p, _ in psds]), axes=1)
    cov = acf_sum / counts[:, None]
    acf = cov / cov[0]
    below = acf < np.exp(-1.0)
    first = np.where(below.any(axis=0), below.argmax(axis=0), max_lag)
    variance = np.concatenate(long).var(axis=0)
    return ResidualSpectra(freq, psd, 2.0 * variance / rate, np.arange(max_lag + 1) / rate, acf,
                           first / rate)


def plot_calibration(calibration: Calibration, spectra: ResidualSpectra, names: Sequence[str],
                     label: str, path: str) -> None:
    """PNG: per joint, the residual's spectrum and autocorrelation beside white noise of the same
    power, titled with the identified and the published MSE."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dof = len(names)
    fig, axes = plt.subplots(2, dof, figsize=(2.6 * dof, 5.2), squeeze=False)
    for j in range(dof):
        top, bottom = axes[0, j], axes[1, j]
        top.semilogy(spectra.frequency[1:], spectra.psd[1:, j], label="residual")
        top.axhline(spectra.white_psd[j], color="grey", linestyle="--", label="white, same power")
        top.set_title(f"{names[j]}\nMSE {calibration.identified[j]:.3g} (real {calibration.published[j]:.3g})",
                      fontsize=8)
        top.set_xlabel("Hz", fontsize=8)
        bottom.plot(spectra.lags * 1e3, spectra.autocorrelation[:, j], label="residual")
        white = np.zeros_like(spectra.lags)
        white[0] = 1.0
        bottom.plot(spectra.lags * 1e3, white, color="grey", linestyle="--", label="white")
        bottom.set_xlabel("lag [ms]", fontsize=8)
        bottom.set_ylim(-0.3, 1.05)
        for ax in (top, bottom):
            ax.tick_params(labelsize=7)
    axes[0, 0].set_ylabel("PSD [(N m)^2/Hz]", fontsize=8)
    axes[1, 0].set_ylabel("autocorrelation", fontsize=8)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Torque residual after identification, held-out moves ({label})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def white_noise(reality: Any) -> np.ndarray:
    """The variance of the torque sensor's white noise per joint [(N m)^2], the part of the
    residual ``unmodelled.scale`` does not change."""
    sensor = reality.torque_sensor
    return sensor.noise_std ** 2 if sensor is not None else np.zeros(7)


def noise_floor(reality: Any) -> np.ndarray:
    """The stand-in's unpredictable torque variance per joint [(N m)^2]: white noise, correlated
    noise and the offsets' drift (no model of the robot's state can predict them)."""
    floor = white_noise(reality)
    extra = reality.unmodelled
    if extra is not None:
        for process in (extra.correlated_noise, extra.offset_drift):
            if process is not None:
                floor = floor + process.std ** 2
    return floor


def figures(calibration: Calibration, spectra: ResidualSpectra, names: Sequence[str],
            scale: np.ndarray, suggestion: np.ndarray, floor: np.ndarray,
            reference: RealRobotResidual, extra: Optional[dict] = None) -> dict:
    """The JSON of the calibration command."""
    def per_joint(values: np.ndarray) -> dict:
        return {n: float(v) for n, v in zip(names, values)}
    return {
        "identified_torque_mse": per_joint(calibration.identified),
        "simulation_torque_mse": per_joint(calibration.simulation),
        "published_torque_mse": per_joint(calibration.published),
        "ratio_to_published": per_joint(calibration.ratio),
        "within_tolerance": {n: bool(v) for n, v in zip(names, calibration.within)},
        "all_within": bool(np.all(calibration.within)),
        "tolerance": calibration.tolerance,
        "published_source": reference.source,
        "noise_floor": per_joint(floor),
        "scale": [float(v) for v in scale],
        "suggested_scale": [round(float(v), 3) for v in suggestion],
        "residual_correlation_time": per_joint(spectra.correlation_time),
        **(extra or {}),
    }
