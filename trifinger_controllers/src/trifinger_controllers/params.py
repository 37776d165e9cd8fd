"""Controller hyperparameters with the intervals Bayesian optimisation searches (paper 004 §VI:
"the user only has to specify intervals").

Each controller module defines one :class:`ParameterSet` of :class:`Parameter` s (default value
and interval ``[low, high]``); a set maps to and from the unit cube ``[0, 1]^d`` for BO
(:meth:`ParameterSet.to_vector` / :meth:`ParameterSet.from_vector`, logarithmic for
``log=True`` parameters) and to and from flat YAML files ``name: value`` (what ``optimize``
writes and ``evaluate`` loads; the controller nodes get the same mapping from their launch file:
:meth:`ParameterSet.from_mapping`). A value that is not a number, outside its interval,
or a key the set does not have is a ``ValueError`` naming the key and the interval.

Example::

    CPC_PARAMETERS = ParameterSet("cpc", [
        Parameter("k_p", 20.0, 5.0, 50.0, "position gain [1/s]", log=True),
        ...
    ])
    params = CPC_PARAMETERS.load_yaml("cpc_bo.yaml")
    params["k_p"], params.k_p
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Dict, Iterator, Mapping, Optional, Sequence, Tuple

import numpy as np
import yaml

from trifinger_controllers.yaml_files import read_yaml
from trifinger_controllers.errors import ConfigurationError


@dataclass(frozen=True)
class Parameter:
    """One scalar hyperparameter: ``default`` in ``[low, high]``; ``log`` maps it to the BO
    unit interval logarithmically (gains spanning decades); ``integer`` rounds it."""

    name: str
    default: float
    low: float
    high: float
    doc: str = ""
    log: bool = False
    integer: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ConfigurationError(f"parameter name {self.name!r} is not an identifier")
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ConfigurationError(f"parameter {self.name}: invalid interval [{self.low}, {self.high}]")
        if self.log and self.low <= 0:
            raise ConfigurationError(f"parameter {self.name}: a log-scale interval must be positive")
        self.check(self.default)

    @property
    def interval(self) -> str:
        return f"[{self.low:g}, {self.high:g}]"

    def check(self, value: object) -> float:
        """``value`` as a float if it is a number inside the interval, else ValueError."""
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ConfigurationError(f"parameter {self.name}: {value!r} is not a number (interval {self.interval})")
        value = float(value)
        if not (self.low <= value <= self.high):  # also rejects NaN
            raise ConfigurationError(f"parameter {self.name}: {value:g} outside its interval {self.interval}")
        if self.integer and value != round(value):
            raise ConfigurationError(f"parameter {self.name}: {value:g} is not an integer")
        return value

    def to_unit(self, value: float) -> float:
        if self.log:
            return (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (value - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        value = min(max(value, self.low), self.high)
        return float(round(value)) if self.integer else value


class ParameterSet:
    """An ordered set of parameters with their current values (defaults unless given).

    Immutable: :meth:`replace`, :meth:`from_dict`, :meth:`from_vector`, :meth:`load_yaml` and
    :meth:`with_intervals` return new sets. Values read as ``params["name"]`` or
    ``params.name``."""

    def __init__(self, name: str, parameters: Sequence[Parameter],
                 values: Optional[Mapping[str, float]] = None) -> None:
        self.name = name
        self.parameters: Tuple[Parameter, ...] = tuple(parameters)
        names = [p.name for p in self.parameters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"{name}: duplicate parameters {duplicates}")
        self._by_name: Dict[str, Parameter] = {p.name: p for p in self.parameters}
        self._values: Dict[str, float] = {p.name: float(p.default) for p in self.parameters}
        if values:
            self._values.update(self._validated(values))

    # ----------------------------------------------------------------------------- access
    def __getitem__(self, key: str) -> float:
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(f"{self.name}: no parameter {key!r}") from None

    def __getattr__(self, key: str) -> float:
        if key.startswith("_") or "_values" not in self.__dict__:
            raise AttributeError(key)
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"{self.name}: no parameter {key!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self.parameters)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ParameterSet) and self.parameters == other.parameters
                and self._values == other._values)

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v:g}" for k, v in self._values.items())
        return f"ParameterSet({self.name}: {values})"

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def parameter(self, key: str) -> Parameter:
        try:
            return self._by_name[key]
        except KeyError:
            raise KeyError(f"{self.name}: no parameter {key!r}") from None

    # ----------------------------------------------------------------------------- validation
    def _validated(self, values: Mapping[str, object]) -> Dict[str, float]:
        if not isinstance(values, Mapping):
            raise ConfigurationError(f"{self.name} parameters must be a mapping name: value, "
                                     f"got {type(values).__name__}")
        unknown = [k for k in values if k not in self._by_name]
        if unknown:
            raise ConfigurationError(
                f"{self.name}: unknown parameter {', '.join(map(repr, unknown))}"
                f" (known: {', '.join(self.names)})"
            )
        return {k: self._by_name[k].check(v) for k, v in values.items()}

    # ----------------------------------------------------------------------------- new sets
    def replace(self, **values: float) -> "ParameterSet":
        """A copy with some values changed (validated)."""
        return self.from_dict(values)

    def to_dict(self) -> Dict[str, float]:
        """``{name: value}`` in order."""
        return dict(self._values)

    def from_dict(self, values: Mapping[str, object]) -> "ParameterSet":
        """A copy with the values of ``values`` (a subset is fine: the others keep theirs)."""
        merged = dict(self._values)
        merged.update(self._validated(values))
        return ParameterSet(self.name, self.parameters, merged)

    def defaults(self) -> "ParameterSet":
        """A copy with every value at its default."""
        return ParameterSet(self.name, self.parameters)

    def with_intervals(self, intervals: Mapping[str, Tuple[float, float]]) -> "ParameterSet":
        """A copy whose intervals are replaced by ``intervals`` (``name: (low, high)``, e.g. the
        user's BO search space); defaults and values are clipped into the new intervals."""
        unknown = [k for k in intervals if k not in self._by_name]
        if unknown:
            raise ConfigurationError(f"{self.name}: unknown parameter {', '.join(map(repr, unknown))}")
        parameters = []
        values = {}
        for p in self.parameters:
            low, high = (float(x) for x in intervals.get(p.name, (p.low, p.high)))
            if not low < high:
                raise ConfigurationError(f"parameter {p.name}: invalid interval [{low:g}, {high:g}]")
            parameters.append(Parameter(p.name, min(max(p.default, low), high), low, high, p.doc, p.log,
                                        p.integer))
            values[p.name] = min(max(self._values[p.name], low), high)
        return ParameterSet(self.name, parameters, values)

    # ----------------------------------------------------------------------------- BO vectors
    def to_vector(self) -> np.ndarray:
        """The values mapped to ``[0, 1]^d`` (order of :attr:`parameters`)."""
        return np.array([p.to_unit(self._values[p.name]) for p in self.parameters])

    def from_vector(self, u: Sequence[float]) -> "ParameterSet":
        """A copy with values from a point of ``[0, 1]^d`` (clipped into it)."""
        u = np.asarray(u, dtype=float).reshape(-1)
        if u.shape != (len(self.parameters),):
            raise ConfigurationError(f"{self.name}: expected a vector of {len(self.parameters)} values, "
                                     f"got {u.shape[0]}")
        if not np.all(np.isfinite(u)):
            raise ConfigurationError(f"{self.name}: non-finite vector {u.tolist()}")
        return ParameterSet(self.name, self.parameters,
                            {p.name: p.from_unit(x) for p, x in zip(self.parameters, u)})

    # ----------------------------------------------------------------------------- YAML
    def from_mapping(self, data: object, source: str) -> "ParameterSet":
        """A copy with the values of ``data``, a flat mapping ``name: value`` as a YAML file or a
        launch file's ``<rosparam file=... ns="params"/>`` gives it (keys not in it keep their
        values; None: nothing to change). Not a mapping, unknown keys, non-numbers or
        out-of-interval values: ValueError starting with ``source``; one line."""
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{source}: expected a mapping 'name: value', got {type(data).__name__}")
        # PyYAML (YAML 1.1) reads exponents without a dot, e.g. 1e-3, as strings (so does
        # rosparam's loader)
        data = {k: _yaml_number(v) for k, v in data.items()}
        try:
            return self.from_dict(data)
        except ValueError as error:
            raise ConfigurationError(f"{source}: {error}") from None

    def load_yaml(self, path: "os.PathLike[str] | str") -> "ParameterSet":
        """A copy with the values of the YAML file ``path``: read, then :meth:`from_mapping`
        (its validation, the errors starting with the path). Missing file: FileNotFoundError;
        malformed file: ValueError; one line each."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"parameter file not found: {path}")
        return self.from_mapping(read_yaml(path, "parameter file"), path)

    def save_yaml(self, path: "os.PathLike[str] | str", header: str = "") -> None:
        """Write the values as a flat YAML mapping, each with its interval and doc as a comment."""
        lines = [f"# {self.name} parameters (trifinger_controllers)"]
        lines += [f"# {line}" for line in header.splitlines()]
        for p in self.parameters:
            value = self._values[p.name]
            text = str(int(value)) if p.integer else yaml.safe_dump(float(value)).splitlines()[0]
            comment = f"  # {p.interval}{' log' if p.log else ''}{': ' + p.doc if p.doc else ''}"
            lines.append(f"{p.name}: {text}{comment}")
        with open(os.fspath(path), "w", encoding="utf-8") as stream:
            stream.write("\n".join(lines) + "\n")


def _yaml_number(value: object) -> object:
    """A string that spells a float (``1e-3``) as that float; anything else unchanged."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
