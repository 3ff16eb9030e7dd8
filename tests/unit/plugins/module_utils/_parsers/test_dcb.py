"""iproute2 dcb -j output, per iproute2 generation (fixtures/tools/dcb/README.md)."""

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import dcb

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "tools", "dcb")


def fixture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def test_pfc():
    assert dcb.parse_pfc(fixture("pfc-prio3-delay7.json")) == dict(pfc=[3], delay=7, pfc_cap=8)
    assert dcb.parse_pfc(fixture("pfc-stats.json"))["pfc"] == [3]


def test_ets():
    assert dcb.parse_ets(fixture("ets.json")) == dict(
        prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], tsa=["ets", "strict", "strict", "ets", "strict", "strict", "strict", "strict"],
        bw=[50, 0, 0, 50, 0, 0, 0, 0])


def test_app_table_both_json_shapes():
    # iproute2 6.5 added a literal " " third element to every pair
    old = dcb.parse_app_dscp(fixture("app-dscp-prio-iproute2-5.12-6.4.json"))
    new = dcb.parse_app_dscp(fixture("app-dscp-prio-iproute2-6.5.json"))
    assert old == new == [(26, 3), (48, 6)]
    assert dcb.parse_app_dscp(fixture("app-dscp-prio-empty.json")) == []


def test_buffer():
    assert dcb.parse_buffer(fixture("buffer.json")) == dict(
        prio2buffer=[0, 0, 0, 1, 0, 0, 0, 0], buffer_size=[130944, 130944, 0, 0, 0, 0, 0, 0], total_size=2044224)


def test_unreadable_output_is_none_not_empty():
    for parser in (dcb.parse_pfc, dcb.parse_ets, dcb.parse_app_dscp, dcb.parse_buffer):
        assert parser(fixture("real-iproute2-6.1-lo-unsupported.stdout")) is None
        assert parser("[1, 2]") is None
    assert dcb.parse_pfc('{"prio_pfc":[true,false]}') is None
    assert dcb.parse_app_dscp('{"dscp_prio":[[26]]}') is None


def test_unsupported_answer_of_the_real_tool():
    assert dcb.unsupported(fixture("real-iproute2-6.1-lo-unsupported.stderr"))
    assert not dcb.unsupported("Attribute read: No such device\n")
