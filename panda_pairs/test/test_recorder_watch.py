"""The pair runner's recorder watch (recorder_watch.py) against a stand-in node: a real XML-RPC
server on loopback answering getPid, and a master that knows its URI and subscriptions."""
import threading
from xmlrpc.server import SimpleXMLRPCServer

import pytest

from panda_pairs.recorder_watch import RecorderLost, RecorderWatch, node_pid, subscribes

NAME = "/record_pairs"


class FakeNode:
    """A node's XML-RPC server on 127.0.0.1 reporting ``pid``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.server = SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False)
        self.server.register_function(lambda caller: [1, "", self.pid], "getPid")
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def kill(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeMaster:
    def __init__(self, nodes: dict, subscriptions: list) -> None:
        self.nodes, self.subscriptions = nodes, subscriptions

    def lookupNode(self, name):          # noqa: N802
        if name not in self.nodes:
            raise RuntimeError(f"unknown node [{name}]")
        return self.nodes[name]

    def getSystemState(self):            # noqa: N802
        return [[], self.subscriptions, []]


@pytest.fixture
def node():
    fake = FakeNode(4242)
    yield fake
    fake.kill()


def test_node_pid_and_subscriptions(node):
    assert node_pid(node.uri, "/test", timeout=2.0) == 4242
    master = FakeMaster({NAME: node.uri}, [["/pairs/event", [NAME, "/other"]],
                                           ["/sim/joint_states", [NAME]]])
    assert subscribes(master, NAME, ["/pairs/event", "/sim/joint_states"])
    assert not subscribes(master, NAME, ["/pairs/event", "/real/joint_states"])
    assert not subscribes(master, "/other", ["/sim/joint_states"])


def test_a_killed_recorder_is_lost(node):
    watch = RecorderWatch(FakeMaster({NAME: node.uri}, []), NAME, "/test", period=0.05)
    watch.start()
    try:
        assert watch.pid == 4242 and watch.check() is None and watch.lost is None
        node.kill()
        for _ in range(100):                 # the background checks notice it
            if watch.lost is not None:
                break
            threading.Event().wait(0.02)
        assert watch.lost is not None and "died" in watch.lost and "4242" in watch.lost
    finally:
        watch.stop()


def test_a_restarted_recorder_is_lost(node):
    watch = RecorderWatch(FakeMaster({NAME: node.uri}, []), NAME, "/test", period=10.0)
    watch.start()
    try:
        node.pid = 5151
        assert "restarted (pid 4242 -> 5151)" in watch.check()
    finally:
        watch.stop()


def test_a_recorder_that_stops_answering_is_lost_on_the_second_timeout():
    answers = iter([7, TimeoutError(), TimeoutError()])

    def probe(uri, caller, timeout):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    watch = RecorderWatch(FakeMaster({NAME: "http://x/"}, []), NAME, "/test", period=10.0,
                          timeout=1.5, probe=probe)
    watch.start()
    try:
        assert watch.check() is None                       # one timeout is not a death yet
        assert "has not answered for 3 s" in watch.check()
    finally:
        watch.stop()


def test_a_recorder_that_is_not_there_cannot_be_watched():
    watch = RecorderWatch(FakeMaster({}, []), NAME, "/test")
    with pytest.raises(RecorderLost, match="the recorder /record_pairs cannot be reached"):
        watch.start()
