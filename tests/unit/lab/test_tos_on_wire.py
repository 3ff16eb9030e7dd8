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
