"""The one error of this package: an input message a node cannot use."""
from __future__ import annotations


class Rejected(ValueError):
    """An unusable message. ``reason`` is a short code that keys the throttled log line and the
    diagnostics counter: ``malformed`` (sizes, repeated names), ``missing_joint``,
    ``unknown_joint``, ``names`` (joints in an order a reader cannot map), ``non_finite``,
    ``bounds``, ``quaternion``, ``stamp``, ``type``; the message says what exactly is wrong, on
    one line."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(" ".join(str(detail).split()))
        self.reason = reason
