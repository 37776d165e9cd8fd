"""The check of a header stamp against the reader's clock: a stamp far ahead of it is broken
(a reader that waits for that time, or takes the newest stamp as progress, would stall or jump)."""
from __future__ import annotations

from sim2real_checks.errors import Rejected


def check_not_ahead(stamp: float, now: float, limit: float, what: str = "message") -> None:
    """:class:`Rejected` (``stamp``) if ``stamp`` [s] is more than ``limit`` s after ``now``;
    no check while the reader has no clock yet (``now`` 0: simulated time before /clock)."""
    if now == 0.0:
        return
    if stamp - now > limit:
        raise Rejected("stamp", f"{what} stamped {stamp:.6g} s, {stamp - now:.4g} s ahead of the "
                                f"clock (at most {limit:g} s)")
