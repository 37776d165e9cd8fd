"""Which files make up one recording. ``rosbag record -O NAME.bag --split`` writes NAME_0.bag,
NAME_1.bag, ... and names the file it is writing NAME_<k>.bag.active until it closes it; a
recorder that is killed leaves that one behind. A recording is given as

* a bag file (``pairs.bag``), or a ``.bag.active`` file;
* the name the recorder was given (``pairs.bag``) when only its split files exist;
* a folder holding one recording (its bag files, split or not);
* a glob pattern (``'pairs_*.bag'``).

Split files are ordered by their index, so reading them one after the other reads the recording
in time order.
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

from panda_pairs.errors import BagError

ACTIVE = ".active"
_SPLIT = re.compile(r"^(?P<stem>.*)_(?P<index>\d+)\.bag(?P<active>\.active)?$")
_GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class BagSet:
    """The files of one recording, in recording order: ``files`` closed by the recorder,
    ``unclosed`` the ``.bag.active`` ones it was still writing."""

    path: str
    files: tuple[str, ...]
    unclosed: tuple[str, ...]

    @property
    def all_files(self) -> tuple[str, ...]:
        """Every file, closed or not, in recording order."""
        return tuple(sorted(self.files + self.unclosed, key=_order))


def _order(path: str) -> tuple[str, int, str]:
    """Sort key: by recording, an unsplit file before the split ones, these by index."""
    match = _SPLIT.match(os.path.basename(path))
    index = -1 if match is None else int(match["index"])
    return (os.path.join(os.path.dirname(path), _recording_of(path)), index, path)


def _recording_of(path: str) -> str:
    """The recording a file belongs to: its split stem, or its own name without .bag(.active)."""
    base = os.path.basename(path)
    match = _SPLIT.match(base)
    if match is not None:
        return match["stem"]
    for suffix in (".bag" + ACTIVE, ".bag"):
        if base.endswith(suffix):
            return base[:-len(suffix)]
    return base


def _is_bag(path: str) -> bool:
    return path.endswith(".bag") or path.endswith(".bag" + ACTIVE)


def _make(path: str, found: list[str]) -> BagSet:
    found = sorted(set(found), key=_order)
    return BagSet(path, tuple(f for f in found if not f.endswith(ACTIVE)),
                  tuple(f for f in found if f.endswith(ACTIVE)))


def _split_siblings(path: str) -> list[str]:
    """NAME_<k>.bag and NAME_<k>.bag.active of the recording ``path`` = NAME.bag, and
    NAME.bag.active (a recorder killed without --split)."""
    stem = path[:-len(".bag")] if path.endswith(".bag") else path
    pattern = glob.escape(stem) + "_*.bag"
    found = glob.glob(pattern) + glob.glob(pattern + ACTIVE)
    found = [f for f in found if _recording_of(f) == os.path.basename(stem)]
    if os.path.isfile(stem + ".bag" + ACTIVE):
        found.append(stem + ".bag" + ACTIVE)
    return found


def recording_files(name: str) -> list[str]:
    """Every file a recorder told ``-O name`` may have left: name itself (``.bag`` added if
    missing), its ``.bag.active``, and the split files NAME_<k>.bag(.active), in index order."""
    path = name if name.endswith(".bag") else name + ".bag"
    found = _split_siblings(path) + ([path] if os.path.isfile(path) else [])
    return sorted(set(found), key=_order)


def _folder(path: str) -> list[str]:
    found = [os.path.join(path, name) for name in os.listdir(path) if _is_bag(name)]
    recordings = sorted({_recording_of(f) for f in found})
    if len(recordings) > 1:
        raise BagError(f"folder {path} holds several recordings ({', '.join(recordings)}); "
                       f"give one of them, e.g. {os.path.join(path, recordings[0] + '.bag')}")
    return found


def resolve_bags(path: str) -> BagSet:
    """The files of the recording ``path`` (module docstring). BagError (one line) when there
    is none."""
    if os.path.isdir(path):
        found = _folder(path)
    elif _GLOB_CHARS & set(os.path.basename(path)):
        found = [f for f in glob.glob(path) if os.path.isfile(f) and _is_bag(f)]
    elif os.path.isfile(path):
        found = [path]
    else:
        found = _split_siblings(path)
    if not found:
        raise BagError(f"folder {path} holds no bag file" if os.path.isdir(path)
                       else f"bag not found: {path}")
    return _make(path, found)
