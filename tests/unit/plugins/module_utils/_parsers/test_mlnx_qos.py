"""mlnx_qos status output, one fixture per tool generation (fixtures/tools/mlnx_qos/README.md)."""

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.mlnx_qos import ets_of, parse_mlnx_qos

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "tools", "mlnx_qos")


def fixture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def test_current_trust_dscp_default_map_pfc3():
    state = parse_mlnx_qos(fixture("current-a-trust-dscp-pfc3.txt"))
    assert state["dcbx"] == "OS controlled"
    assert state["trust"] == "dscp"
    assert state["dscp2prio"] == dict((d, d >> 3) for d in range(64))
    assert state["pfc"] == [3]
    assert state["prio2buffer"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert state["buffer_size"] == [130944, 130944, 0, 0, 0, 0, 0, 0] and state["max_buffer_size"] == 2044224
    assert state["cable_len"] == 7
    assert state["prio_tc"] == [1, 0, 2, 3, 4, 5, 6, 7]
    assert ets_of(state) == dict(tsa=["vendor"] * 8, bw=[0] * 8)


def test_current_two_dscp_entries_ets_and_cable_len():
    state = parse_mlnx_qos(fixture("current-b-two-dscp-ets-cable30.txt"))
    assert state["trust"] == "dscp" and state["dscp2prio"] == {26: 3, 48: 6}
    assert state["cable_len"] == 30
    assert state["prio_tc"] == [0, 0, 0, 3, 0, 0, 6, 0]
    # TCs with no priority are not printed without -a: their TSA is unknown, not guessed
    assert ets_of(state) == dict(tsa=["ets", None, None, "ets", None, None, "strict", None],
                                 bw=[50, None, None, 50, None, None, 0, None])
    assert state["tcs"][0]["priorities"] == [0, 1, 2, 4, 5, 7]


def test_boot_defaults_trust_pcp_no_dscp_block():
    state = parse_mlnx_qos(fixture("current-c-boot-defaults.txt"))
    assert state["trust"] == "pcp" and state["dscp2prio"] == {} and state["pfc"] == []
    assert state["buffer_size"] == [262016, 0, 0, 0, 0, 0, 0, 0]
    assert state["prio_tc"] == [1, 0, 2, 3, 4, 5, 6, 7]


def test_older_generation_lldpad_total_size_default_priority():
    old = parse_mlnx_qos(fixture("pre2023-lldpad-total-size-default-priority.txt"))
    new = parse_mlnx_qos(fixture("current-b-two-dscp-ets-cable30.txt"))
    assert old == new


def test_no_buffer_support_and_long_dscp_lists_split_over_lines():
    text = (
        "DCBX mode: Firmware controlled\n"
        "Priority trust state: dscp\n"
        "dscp2prio mapping:\n"
        "\tprio:0 dscp:07,06,05,04,03,02,01,00,\n"
        "\tprio:0 dscp:08,\n"
        "Buffers commands are not supported on your system\n"
        "Cable len: 7\n"
        "PFC configuration:\n"
        "\tpriority    0   1   2   3   4   5   6   7\n"
        "\tenabled     1   0   0   1   0   0   0   0   \n"
        "tc: 0 ratelimit: 25.0 Gbps, tsa: strict\n"
        "\t priority:  0\n"
    )
    state = parse_mlnx_qos(text)
    assert state["dscp2prio"] == dict((d, 0) for d in range(9))
    assert state["buffer_size"] is None and state["prio2buffer"] is None
    assert state["pfc"] == [0, 3]
    assert state["tcs"][0]["ratelimit"] == "25.0 Gbps"
    assert state["prio_tc"] == [0, None, None, None, None, None, None, None]


def test_garbage_gives_no_state():
    state = parse_mlnx_qos("Traceback (most recent call last):\n  oops\n")
    assert state["trust"] is None and state["pfc"] is None
