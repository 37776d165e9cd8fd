"""The kernel manager's input check, for a message of any type on a state spec channel: every
float of it finite and within a magnitude bound, and the channel's fields present."""
from __future__ import annotations

from typing import Any

import numpy as np
from sim2real_checks import Rejected, require_finite

from kernel_manager_ros.errors import KernelError
from kernel_manager_ros.state_spec import Channel


def channel_values(channel: Channel, msg: Any, bound: float) -> np.ndarray:
    """The channel's values of ``msg``, or :class:`Rejected`: ``non_finite`` or ``bounds`` for
    any float of the message (the relay republishes all of them), ``names`` for joints other
    than the channel's (its fields index the arrays), ``size`` for a field the message lacks
    (e.g. ``position[6]`` of a shorter JointState)."""
    require_finite(msg, bound)
    if channel.joints:
        got = tuple(getattr(msg, "name", ()))
        if got[:len(channel.joints)] != channel.joints:
            raise Rejected("names", f"joints {list(got)}; {channel.name} reads "
                                    f"{list(channel.joints)} first, in this order")
    try:
        return channel.values(msg)
    except KernelError as exc:
        raise Rejected("size", str(exc)) from None
