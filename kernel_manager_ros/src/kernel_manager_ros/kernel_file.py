"""Kernel files: human-readable YAML with plain lists, loaded safely elsewhere.

    format: kernel_manager_ros/kernels
    version: 1
    state_names: [gps.point.x, gps.point.y, pitch.data]
    action_names: [cmd.speed, cmd.steering_angle]
    weights: [0.25, 0.25, 0.5]          # eq. 8, sum 1
    activation_threshold: 0.5           # e_k ∘ c_k(s) above this: active (§3.2)
    metadata: {...}                     # generation settings and figures
    kernels:                            # application order: the first active one is applied
      - kind: motor                     # motor | sensor
        held: []                        # sensor kernels: the sensors that held (eq. 9)
        centre: [...]                   # the state preceding the divergence
        sigma: 0.2                      # e_k = N(0, sigma^2) over c_k
        p_sim: 0.5                      # normalised divergence distribution (p_s, p_p)
        p_phy: 0.5
        support: 3                      # roll-out divergences merged into this kernel
        displacement: 0.12              # max c(f_k(s, a), s) over the fit samples (or null)
        transfer:                       # f_k: per sensor, state[start:stop]' = A s + B a + c
          - {sensor: gps, start: 0, stop: 2, A: [[..], [..]], B: [[..], [..]], c: [.., ..]}

Loading uses yaml.safe_load (no python tags, no code execution) and checks every field; a file
for another state layout (dimension or names) is refused with a KernelError.
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import yaml
from sim2real_checks import plain

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.kernel import Kernel, KernelSet
from kernel_manager_ros.state_spec import read_yaml
from kernel_manager_ros.transfer import LinearTransfer, SensorTransfer

FORMAT = "kernel_manager_ros/kernels"
VERSION = 1


def kernel_set_to_dict(kernel_set: KernelSet) -> dict[str, Any]:
    kernels = []
    for k in kernel_set.kernels:
        kernels.append({
            "kind": k.kind, "held": list(k.held), "centre": k.centre.tolist(),
            "sigma": float(k.sigma),
            "p_sim": float(k.p_sim), "p_phy": float(k.p_phy), "support": int(k.support),
            "displacement": None if k.transfer.displacement is None
            else float(k.transfer.displacement),
            "transfer": [{"sensor": b.name, "start": int(b.start), "stop": int(b.stop),
                          "A": np.asarray(b.A).tolist(), "B": np.asarray(b.B).tolist(),
                          "c": np.asarray(b.c).tolist()} for b in k.transfer.blocks]})
    return {"format": FORMAT, "version": VERSION,
            "state_names": list(kernel_set.state_names),
            "action_names": list(kernel_set.action_names),
            "weights": kernel_set.weights.tolist(),
            "activation_threshold": float(kernel_set.activation_threshold),
            "metadata": plain(kernel_set.metadata), "kernels": kernels}


def save_kernels(path: Union[str, os.PathLike], kernel_set: KernelSet) -> None:
    """Write ``kernel_set`` as YAML (creating the folder)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    text = yaml.safe_dump(kernel_set_to_dict(kernel_set), sort_keys=False,
                          default_flow_style=None, width=100)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# state-space kernels ({len(kernel_set)}), paper 001; see kernel_file.py\n")
        f.write(text)


def _get(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise KernelError(f"{where}: missing key '{key}'")
    return data[key]


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise KernelError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def _array(value: Any, where: str, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise KernelError(f"{where} must be a {ndim}-D list of numbers: {exc}") from exc
    if arr.ndim != ndim and not (ndim == 2 and arr.size == 0):
        raise KernelError(f"{where} must be a {ndim}-D list of numbers, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise KernelError(f"{where} holds NaN/Inf")
    return arr


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KernelError(f"{where} must be a list of strings")
    return tuple(value)


def kernel_set_from_dict(data: Any, where: str = "kernel file") -> KernelSet:
    if not isinstance(data, Mapping):
        raise KernelError(f"{where}: expected a mapping with format, kernels, ... at the top")
    if data.get("format") != FORMAT:
        raise KernelError(f"{where}: not a kernel file (format is {data.get('format')!r}, "
                          f"expected {FORMAT!r})")
    if data.get("version") != VERSION:
        raise KernelError(f"{where}: unsupported version {data.get('version')!r} "
                          f"(this reader knows {VERSION})")
    state_names = _names(_get(data, "state_names", where), f"{where}: state_names")
    action_names = _names(_get(data, "action_names", where), f"{where}: action_names")
    weights = _array(_get(data, "weights", where), f"{where}: weights", 1)
    threshold = _number(_get(data, "activation_threshold", where),
                        f"{where}: activation_threshold")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise KernelError(f"{where}: metadata must be a mapping")
    raw_kernels = _get(data, "kernels", where)
    if not isinstance(raw_kernels, list):
        raise KernelError(f"{where}: kernels must be a list")
    d, m = len(state_names), len(action_names)
    kernels = []
    for i, raw in enumerate(raw_kernels):
        at = f"{where}: kernel {i}"
        if not isinstance(raw, Mapping):
            raise KernelError(f"{at} must be a mapping")
        centre = _array(_get(raw, "centre", at), f"{at}: centre", 1)
        if centre.size != d:
            raise KernelError(f"{at}: centre has {centre.size} values for {d} state names")
        blocks_raw = _get(raw, "transfer", at)
        if not isinstance(blocks_raw, list):
            raise KernelError(f"{at}: transfer must be a list of sensor blocks")
        blocks = []
        for j, b in enumerate(blocks_raw):
            bat = f"{at}: transfer block {j}"
            if not isinstance(b, Mapping):
                raise KernelError(f"{bat} must be a mapping")
            start, stop = _get(b, "start", bat), _get(b, "stop", bat)
            if not (isinstance(start, int) and isinstance(stop, int)) \
                    or isinstance(start, bool) or isinstance(stop, bool):
                raise KernelError(f"{bat}: start and stop must be integers")
            B = _array(_get(b, "B", bat), f"{bat}: B", 2).reshape(stop - start, m) \
                if stop > start else np.zeros((0, m))
            blocks.append(SensorTransfer(str(_get(b, "sensor", bat)), start, stop,
                                         _array(_get(b, "A", bat), f"{bat}: A", 2), B,
                                         _array(_get(b, "c", bat), f"{bat}: c", 1)))
        displacement = raw.get("displacement")
        transfer = LinearTransfer(tuple(blocks), d, m, None if displacement is None
                                  else _number(displacement, f"{at}: displacement"))
        support = raw.get("support", 1)
        if isinstance(support, bool) or not isinstance(support, int) or support < 1:
            raise KernelError(f"{at}: support must be a positive integer, got {support!r}")
        kernels.append(Kernel(centre=centre, sigma=_number(_get(raw, "sigma", at), f"{at}: sigma"),
                              p_sim=_number(_get(raw, "p_sim", at), f"{at}: p_sim"),
                              p_phy=_number(_get(raw, "p_phy", at), f"{at}: p_phy"),
                              transfer=transfer, kind=str(_get(raw, "kind", at)),
                              support=support,
                              held=_names(raw.get("held") or [], f"{at}: held")))
    return KernelSet(tuple(kernels), state_names, action_names, weights, threshold,
                     dict(metadata))


def load_kernels(path: Union[str, os.PathLike],
                 expected_state_names: Optional[Sequence[str]] = None,
                 expected_action_names: Optional[Sequence[str]] = None) -> KernelSet:
    """Read a kernel file; KernelError if it is missing, malformed, or (given the expected
    names) made for another state or action layout."""
    path = os.fspath(path)
    try:
        kernel_set = kernel_set_from_dict(read_yaml(path, "kernel file"), f"kernel file {path}")
    except KernelError:
        raise
    except (TypeError, ValueError, yaml.YAMLError) as exc:
        raise KernelError(f"kernel file {path} is malformed: {exc}") from exc
    for what, expected, got in (("state", expected_state_names, kernel_set.state_names),
                                ("action", expected_action_names, kernel_set.action_names)):
        if expected is None:
            continue
        if len(expected) != len(got):
            raise KernelError(f"kernel file {path} has {len(got)}-dimensional {what}s, expected "
                              f"{len(expected)} ({', '.join(expected)})")
        if tuple(expected) != tuple(got):
            raise KernelError(f"kernel file {path} was made for {what}s ({', '.join(got)}), "
                              f"expected ({', '.join(expected)})")
    return kernel_set
