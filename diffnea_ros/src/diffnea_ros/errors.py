"""One-line errors of diffnea_ros: each says what is wrong and what to do about it."""
from __future__ import annotations


class DiffneaError(ValueError):
    """Base class: a user-facing problem with an input (file, data, parameters)."""


class UrdfError(DiffneaError):
    """A URDF is missing, malformed or uses something this library does not support."""


class DataError(DiffneaError):
    """Identification data are missing, malformed, mismatched or unidentifiable."""


class ConsistencyError(DiffneaError):
    """A parameter set is physically inconsistent where consistency is required."""
