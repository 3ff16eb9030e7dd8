"""cli_text: the running-config tree, number lists, byte units and the profile read from QoS facts,
shared by the eos, nxos and onyx drivers."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import cli_text


def shape(nodes):
    return [(node.line, shape(node.children)) for node in nodes]


def test_tree_nests_by_indentation_and_skips_comments():
    text = "\n".join([
        "! comment", "qos profile P", "   qos trust dscp", "   !", "   tx-queue 3", "      no priority",
        "      !! a queue comment", "   tx-queue 6", "      priority strict", "", "interface Ethernet1", "   mtu 9214", "end",
    ])
    assert shape(cli_text.config_tree(text)) == [
        ("qos profile P", [("qos trust dscp", []), ("tx-queue 3", [("no priority", [])]),
                           ("tx-queue 6", [("priority strict", [])])]),
        ("interface Ethernet1", [("mtu 9214", [])]),
    ]


def test_tree_onyx_comments_and_flat_indented_lines():
    text = "##\n## Interface Ethernet configuration\n##\n   interface ethernet 1/1 mtu 9216 force\n   dcb priority-flow-control enable force\n"
    assert shape(cli_text.config_tree(text, comments=("#",))) == [
        ("interface ethernet 1/1 mtu 9216 force", []), ("dcb priority-flow-control enable force", [])]


@pytest.mark.parametrize("text, values", [
    ("26", [26]), ("24-27", [24, 25, 26, 27]), ("24 26 28", [24, 26, 28]), ("24,26-27", [24, 26, 27]),
    ("26 to 3", []), ("", []),
])
def test_number_list(text, values):
    assert cli_text.number_list(text) == values


def test_natural_key_sorts_names_with_digits_other_than_ascii_as_text():
    # "²" is a digit to str.isdigit() but not to int(); "٣" (Arabic-Indic 3) is one to both
    names = ["Ethernet1\u00b2", "Ethernet\u0663", "Ethernet10", "Ethernet2"]
    assert sorted(names, key=cli_text.natural_key) == ["Ethernet1\u00b2", "Ethernet2", "Ethernet10", "Ethernet\u0663"]


def test_natural_key_orders_ports_as_switches_list_them():
    names = ["Ethernet10", "Ethernet2/1", "Ethernet2", "Ethernet1/10", "Ethernet1/2"]
    assert sorted(names, key=cli_text.natural_key) == ["Ethernet1/2", "Ethernet1/10", "Ethernet2", "Ethernet2/1", "Ethernet10"]


@pytest.mark.parametrize("value, unit, expected", [
    ("150", "kbytes", 153600), ("2", "mbytes", 2097152), ("150000", "bytes", 150000), ("150", "KBytes", 153600),
    ("10", "segments", None), ("50", "microseconds", None), ("3", "packets", None),
])
def test_to_bytes(value, unit, expected):
    assert cli_text.to_bytes(value, unit) == expected


@pytest.mark.parametrize("low, high, expected", [
    (153600, 1536000, ("kbytes", 150, 1500)),
    (1048576, 3145728, ("mbytes", 1, 3)),
    (1048576, 1536000, ("kbytes", 1024, 1500)),
    (150000, 1500000, ("bytes", 150000, 1500000)),
    (153600, 1500000, ("bytes", 153600, 1500000)),
])
def test_threshold_unit_is_the_largest_exact_one(low, high, expected):
    profile = dict(ecn=dict(min_threshold_bytes=low, max_threshold_bytes=high, probability_percent=100))
    assert cli_text.threshold_unit(profile) == expected


def test_exact_multiple_refuses_naming_the_key_and_nearest_values():
    profile = dict(ecn=dict(min_threshold_bytes=150000))
    with pytest.raises(InputError) as err:
        cli_text.exact_multiple(profile, "min_threshold_bytes", 1024, "KB", "NOS X")
    assert "config.fabric.ecn.min_threshold_bytes=150000" in err.value.msg
    assert "149504 (146 KB) or 150528 (147 KB)" in err.value.msg
    assert cli_text.exact_multiple(dict(ecn=dict(min_threshold_bytes=153600)), "min_threshold_bytes", 1024, "KB", "X") == 150


@pytest.mark.parametrize("key", ["roce_priority", "cnp_priority"])
def test_check_classes_refuses_the_default_class(key):
    profile = dict(roce_priority=3, cnp_priority=6)
    profile[key] = 0
    with pytest.raises(InputError, match="config.fabric.%s=0" % key):
        cli_text.check_classes(profile, "X")


def test_facts_of_a_config_that_is_no_valid_intent():
    """Two PFC priorities, DSCP 26 on TC1, no strict queue: reported as the configuration says."""
    fabric = cli_text.fabric_from_facts(
        trust="dscp", dscp_to_tc={26: 1, 27: 1, 48: 6}, pfc=[4, 1], strict=set(), shares={1: 40, 0: 60},
        ecn={1: dict(min_threshold_bytes=1000, max_threshold_bytes=2000)}, mtus=[9000, 9214])
    assert fabric == dict(trust="dscp", roce_priority=1, roce_dscp=26, pfc_priorities=[1, 4], ecn_priorities=[1],
                          ecn=dict(min_threshold_bytes=1000, max_threshold_bytes=2000),
                          ets=dict(roce_percent=40, default_percent=60), switch_mtu=9000)


def test_facts_prefer_a_classified_lossless_class_and_not_the_default():
    fabric = cli_text.fabric_from_facts(classified=range(8), pfc=[], strict={7}, ecn={0: {}, 5: {}})
    assert fabric["roce_priority"] == 5 and fabric["cnp_priority"] == 7 and fabric["pfc_priorities"] == []
    assert "ecn" not in fabric  # no thresholds in bytes were stated


def test_facts_of_nothing_are_empty():
    assert cli_text.fabric_from_facts() == {}
