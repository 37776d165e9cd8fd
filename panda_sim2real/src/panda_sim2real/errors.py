"""Exceptions with messages meant for a person: the tools print them as one line and exit."""


class PandaError(Exception):
    """Base of every error this package raises on purpose; its message is always one line
    (parsers' multi-line messages are folded)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


#: The name of :class:`PandaError` until issue 21 (it belongs to this package, not the project);
#: kept for one release.
Sim2RealError = PandaError


class ConfigError(PandaError):
    """A configuration or model file is missing, unreadable or does not follow its schema."""


class TrajectoryRejected(PandaError):
    """A commanded trajectory is unusable; ``reason`` is the short code the nodes' throttled
    logs and diagnostics counters use (sim2real_checks): ``malformed`` (names, sizes),
    ``non_finite``, ``timing``, ``bounds`` (position, velocity or motion limits), ``continuity``."""

    def __init__(self, message: str, reason: str = "trajectory") -> None:
        super().__init__(message)
        self.reason = reason
