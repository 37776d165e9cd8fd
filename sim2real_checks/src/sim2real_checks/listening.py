"""Which TCP and UDP sockets a set of processes listens on, read from /proc (Linux): the check
that a running graph listens on loopback only."""
from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass
from typing import Iterable

LISTEN = "0A"   # TCP state in /proc/net/tcp*
UNCONNECTED = "07"   # UDP "close": bound, no peer


@dataclass(frozen=True)
class Listener:
    pid: int
    program: str
    protocol: str
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback


def listening_sockets(pids: Iterable[int]) -> list[Listener]:
    """The listening TCP and bound UDP sockets of ``pids`` (processes that vanished are
    skipped)."""
    owners: dict[int, int] = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    owners[int(target[8:-1])] = pid
        except OSError:
            continue
    found = []
    for protocol, state in (("tcp", LISTEN), ("tcp6", LISTEN), ("udp", UNCONNECTED),
                            ("udp6", UNCONNECTED)):
        try:
            with open(f"/proc/net/{protocol}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            inode = int(fields[9])
            if fields[3] != state or inode not in owners:
                continue
            address, port = _address(fields[1])
            pid = owners[inode]
            found.append(Listener(pid, _program(pid), protocol, address, port))
    return found


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (roslaunch and the nodes it started, each of which
    roslaunch puts in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def node_pid(name: str, caller: str = "/sim2real_checks") -> int:
    """The process id of the running ROS node ``name``: its own answer over the node API (the
    master gives its address). For tests that stop or signal one node (and its children)."""
    import xmlrpc.client

    import rosgraph
    uri = rosgraph.Master(caller).lookupNode(name)
    return int(xmlrpc.client.ServerProxy(uri).getPid(caller)[2])


def _address(hex_address: str) -> tuple[str, int]:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        address = socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(host, 16)))
    else:
        words = struct.unpack("<4I", raw)
        address = socket.inet_ntop(socket.AF_INET6, struct.pack(">4I", *words))
        mapped = ipaddress.ip_address(address)
        if getattr(mapped, "ipv4_mapped", None):
            address = str(mapped.ipv4_mapped)
    return address, int(port, 16)


def _program(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    if not args:
        return "?"
    if "python" in os.path.basename(args[0]):     # a Python node: name its script
        args = [a for a in args[1:] if not a.startswith("-")] or args
    return os.path.basename(args[0])
