"""Joint-state logs in CSV, as robot users record them, read into the arrays of an .npz log
(t, q, tau, optional qd, joint_names) for :func:`diffnea_ros.data.load_csv`.

Two layouts, told apart by the header:

* **plain**: ``t`` [s] (or ``time``), then ``q_<joint>``, ``tau_<joint>`` and optionally
  ``qd_<joint>`` per joint, one row per sample (e.g. a libfranka RobotState log: q, dq, tau_J);
* **rostopic**: ``rostopic echo -b BAG -p TOPIC > FILE.csv`` of sensor_msgs/JointState
  (``field.header.stamp`` [ns], ``field.name<i>``, ``field.position<i>``, ``field.velocity<i>``,
  ``field.effort<i>``); the joint names are those of the first row, and a row naming other
  joints is an error. Empty velocity columns mean "not measured".
"""
from __future__ import annotations

import csv
import re
from typing import Optional

import numpy as np

from diffnea_ros.errors import DataError

ROSTOPIC_STAMP = "field.header.stamp"
_PLAIN = re.compile(r"^(q|qd|tau)_(.+)$")
_ROSTOPIC = re.compile(r"^field\.(name|position|velocity|effort)(\d+)$")


def read_csv(path: str) -> dict[str, np.ndarray]:
    """The arrays ``t``, ``q``, ``tau`` (and ``qd`` if measured, ``joint_names``) of a CSV log;
    DataError naming the file and the row for anything unreadable."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise DataError(f"{path}: a header and at least one sample row are needed")
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    bad = [i + 2 for i, r in enumerate(body) if len(r) != len(header)]
    if bad:
        raise DataError(f"{path}: row {bad[0]} has a different number of columns than the header")
    if ROSTOPIC_STAMP in header:
        return _rostopic(path, header, body)
    return _plain(path, header, body)


def _numbers(path: str, body: list[list[str]], columns: list[int], allow_empty: bool = False
             ) -> Optional[np.ndarray]:
    """The columns as float64 (N, len(columns)); None when every cell is empty and that is allowed."""
    if allow_empty and all(not r[c].strip() for r in body for c in columns):
        return None
    out = np.empty((len(body), len(columns)))
    for i, row in enumerate(body):
        for j, c in enumerate(columns):
            try:
                out[i, j] = float(row[c])
            except ValueError:
                raise DataError(f"{path}: row {i + 2} has a non-numeric value {row[c]!r} in "
                                f"column {c + 1}") from None
    return out


def _plain(path: str, header: list[str], body: list[list[str]]) -> dict[str, np.ndarray]:
    time = [i for i, h in enumerate(header) if h in ("t", "time")]
    if len(time) != 1:
        raise DataError(f"{path}: the header needs one time column 't' [s] (or a rostopic echo -p "
                        f"header with {ROSTOPIC_STAMP}); it has {', '.join(header)}")
    columns: dict[str, dict[str, int]] = {"q": {}, "qd": {}, "tau": {}}
    names: list[str] = []
    for i, h in enumerate(header):
        match = _PLAIN.match(h)
        if match:
            columns[match.group(1)][match.group(2)] = i
            if match.group(1) == "q":
                names.append(match.group(2))
    if not names:
        raise DataError(f"{path}: no position column q_<joint> in the header")
    for kind in ("tau", "qd"):
        missing = [n for n in names if n not in columns[kind]]
        if missing and (kind == "tau" or columns[kind]):
            raise DataError(f"{path}: no column {kind}_{missing[0]} for joint {missing[0]}")
    out = {"t": _numbers(path, body, time)[:, 0],
           "q": _numbers(path, body, [columns["q"][n] for n in names]),
           "tau": _numbers(path, body, [columns["tau"][n] for n in names]),
           "joint_names": np.array(names)}
    if columns["qd"]:
        out["qd"] = _numbers(path, body, [columns["qd"][n] for n in names])
    return out


def _rostopic(path: str, header: list[str], body: list[list[str]]) -> dict[str, np.ndarray]:
    fields: dict[str, dict[int, int]] = {"name": {}, "position": {}, "velocity": {}, "effort": {}}
    for i, h in enumerate(header):
        match = _ROSTOPIC.match(h)
        if match:
            fields[match.group(1)][int(match.group(2))] = i
    joints = sorted(fields["name"])
    if not joints or any(set(fields[k]) != set(joints) for k in ("position", "effort")):
        raise DataError(f"{path}: a rostopic echo -p CSV of sensor_msgs/JointState needs "
                        f"field.name<i>, field.position<i> and field.effort<i> for every joint")
    names = [body[0][fields["name"][j]].strip() for j in joints]
    for i, row in enumerate(body):
        if [row[fields["name"][j]].strip() for j in joints] != names:
            raise DataError(f"{path}: row {i + 2} names other joints than the first row "
                            f"({', '.join(names)}); record one joint set per topic")
    stamp = _numbers(path, body, [header.index(ROSTOPIC_STAMP)])[:, 0] * 1e-9
    out = {"t": stamp,
           "q": _numbers(path, body, [fields["position"][j] for j in joints]),
           "tau": _numbers(path, body, [fields["effort"][j] for j in joints]),
           "joint_names": np.array(names)}
    if set(fields["velocity"]) == set(joints):
        qd = _numbers(path, body, [fields["velocity"][j] for j in joints], allow_empty=True)
        if qd is not None:
            out["qd"] = qd
    return out
