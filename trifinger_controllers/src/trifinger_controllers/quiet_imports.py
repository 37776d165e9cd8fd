"""Silence the import banners of pybullet and gym in the tools, so that their output (and an
argument error's one line) stays their own. Imports only the standard library."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator


@contextlib.contextmanager
def quiet_fds() -> Iterator[None]:
    """Silence stdout/stderr at the file-descriptor level inside the block; exceptions propagate
    and are reported after the descriptors are restored."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
