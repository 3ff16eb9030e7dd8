"""tests/lab/tos_on_wire.py: reading a real tcpdump capture of UDP 4791 and judging the ToS per sender."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import tos_on_wire  # noqa: E402  pylint: disable=wrong-import-position

CAPTURE = os.path.join(REPO, "tests", "unit", "fixtures", "tools", "tcpdump", "udp4791-tos-0x6a-0x68.txt")


def capture():
    with open(CAPTURE) as handle:
        return handle.read()


def test_the_real_capture_is_read_per_sender_and_tos():
    assert tos_on_wire.parse_capture(capture()) == {"198.18.9.1": {0x6A: 2, 0x68: 1}}


def test_one_packet_with_another_tos_fails_and_is_named():
    ok, lines = tos_on_wire.judge(tos_on_wire.parse_capture(capture()), {"vm1": "198.18.9.1"}, 106)
    assert not ok
    assert lines == ["vm1 (198.18.9.1): 1 packet(s) with tos 0x68 (DSCP 26, ECN 0) - expected 0x6a, "
                     "2 packet(s) with tos 0x6a (DSCP 26, ECN 2)"]


def test_a_silent_peer_fails_and_matching_packets_pass():
    text = "\n".join(line for line in capture().splitlines() if "0x68" not in line)
    ok, lines = tos_on_wire.judge(tos_on_wire.parse_capture(text), {"vm1": "198.18.9.1", "vm2": "198.18.9.2"}, 106)
    assert not ok and lines[1] == "vm2 (198.18.9.2): no RoCEv2 packet captured"
    ok, _lines = tos_on_wire.judge(tos_on_wire.parse_capture(text), {"vm1": "198.18.9.1"}, 106)
    assert ok


FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures", "tools")


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def test_a_request_that_finds_no_listener_is_rejected_with_tos_0():
    """Why the client waits for the server to listen: the lab's capture of vm1's connection request
    (ToS 0x6a) to vm2 with no server, and vm2's kernel's reject, sent with ToS 0."""
    seen = tos_on_wire.parse_capture(fixture("tcpdump", "udp4791-rej-no-listener.txt"))
    assert seen == {"198.18.0.11": {0x6A: 1}, "198.18.0.12": {0x00: 1}}
    ok, lines = tos_on_wire.judge(seen, {"vm1": "198.18.0.11", "vm2": "198.18.0.12"}, 106)
    assert not ok and lines[1] == "vm2 (198.18.0.12): 1 packet(s) with tos 0x00 (DSCP 0, ECN 0) - expected 0x6a"


def test_the_server_listens_only_when_its_rdma_cm_id_does():
    listen = fixture("rdma", "res-show-cm_id-listen.json")
    assert tos_on_wire.listening(listen, "rxe0", 18515)
    assert not tos_on_wire.listening(listen, "rxe0", 18516)
    assert not tos_on_wire.listening(listen, "rxe7", 18515)
    assert not tos_on_wire.listening(fixture("rdma", "res-show-cm_id-none.json"), "rxe0", 18515)
    assert not tos_on_wire.listening("", "rxe0", 18515) and not tos_on_wire.listening("not json", "rxe0", 18515)
