"""The one error of this package: an input message a node cannot use."""
from __future__ import annotations


class Rejected(ValueError):
    """An unusable message. ``reason`` is a short code shared by every node (``names``, ``size``,
    ``non_finite``, ``bounds``, ``stamp``, ``type``) that keys the throttled log line and the
    diagnostics counter; the message says what exactly is wrong, on one line."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(" ".join(str(detail).split()))
        self.reason = reason
