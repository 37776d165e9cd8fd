"""listening_sockets finds this process's own listening sockets with their addresses."""
import os
import socket

import subprocess

from sim2real_checks.listening import descendants, listening_sockets


def test_finds_loopback_and_wildcard_listeners_of_a_process():
    local, wildcard, udp = socket.socket(), socket.socket(), socket.socket(type=socket.SOCK_DGRAM)
    try:
        local.bind(("127.0.0.1", 0))
        local.listen()
        wildcard.bind(("0.0.0.0", 0))
        wildcard.listen()
        udp.bind(("127.0.0.1", 0))
        found = {(s.protocol, s.port): s for s in listening_sockets([os.getpid()])}
        mine = found[("tcp", local.getsockname()[1])]
        assert mine.address == "127.0.0.1" and mine.loopback and mine.pid == os.getpid()
        assert not found[("tcp", wildcard.getsockname()[1])].loopback
        assert found[("udp", udp.getsockname()[1])].loopback
    finally:
        for s in (local, wildcard, udp):
            s.close()


def test_descendants_include_the_children():
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert child.pid in descendants(os.getpid())
    finally:
        child.kill()
        child.wait()
