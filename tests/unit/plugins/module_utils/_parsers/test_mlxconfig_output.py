"""mlxconfig / mstconfig query output, on the recorded outputs in tests/unit/fixtures/tools/mlxconfig."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.mlxconfig import (
    parse_query,
    parse_value,
    same_value,
    values_equal,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools", "mlxconfig")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize("text,expected", [
    ("True(1)", dict(text="True(1)", name="True", number=1)),
    ("DEVICE_DEFAULT(0)", dict(text="DEVICE_DEFAULT(0)", name="DEVICE_DEFAULT", number=0)),
    ("_8_TCs(0)", dict(text="_8_TCs(0)", name="_8_TCs", number=0)),
    ("HOST_0(1)", dict(text="HOST_0(1)", name="HOST_0", number=1)),
    ("148", dict(text="148", name=None, number=148)),
    ("HOST_0", dict(text="HOST_0", name="HOST_0", number=None)),
    ("Array[0..15]", dict(text="Array[0..15]", name=None, number=None, array=[0, 15])),
    ("N/A", None),
])
def test_values(text, expected):
    assert parse_value(text) == expected


def test_plain_query_next_boot_only():
    parsed = parse_query(fixture("cx4lx-q-blog.txt"))
    assert parsed["columns"] == ["next_boot"]
    assert parsed["device_type"] == "ConnectX4LX"
    assert parsed["device"] == "01:00.0"
    assert parsed["unparsed"] == []
    assert len(parsed["order"]) == 32
    params = parsed["params"]
    assert params["SRIOV_EN"]["next_boot"] == dict(text="False(0)", name="False", number=0)
    assert params["NUM_OF_VFS"]["next_boot"]["number"] == 8
    assert params["ROCE_CC_PRIO_MASK_P1"]["next_boot"]["number"] == 255
    assert params["CNP_DSCP_P1"]["next_boot"]["number"] == 48
    assert params["CNP_802P_PRIO_P1"]["next_boot"]["number"] == 6
    assert params["NUM_OF_TC_P1"]["next_boot"]["name"] == "_8_TCs"
    assert params["PCI_DOWNSTREAM_PORT_OWNER"]["next_boot"]["array"] == [0, 15]
    assert "current" not in params["SRIOV_EN"]


def test_verbose_query_default_current_next():
    parsed = parse_query(fixture("operator-cx4-e-query.txt"))
    assert parsed["columns"] == ["default", "current", "next_boot"]
    assert parsed["order"] == ["KEEP_IB_LINK_UP_P2", "KEEP_LINK_UP_ON_BOOT_P2", "ESWITCH_HAIRPIN_DESCRIPTORS",
                               "MEMIC_SIZE_LIMIT"]
    keep = parsed["params"]["KEEP_IB_LINK_UP_P2"]
    assert keep["flagged"] is True
    assert (keep["default"]["number"], keep["current"]["number"], keep["next_boot"]["number"]) == (0, 1, 1)
    memic = parsed["params"]["MEMIC_SIZE_LIMIT"]
    assert (memic["current"]["name"], memic["next_boot"]["name"]) == ("_256KB", "DISABLED")
    assert parsed["params"]["KEEP_LINK_UP_ON_BOOT_P2"]["flagged"] is False


def test_array_element_query():
    parsed = parse_query(fixture("operator-cx4-e-query-array.txt"))
    assert parsed["order"] == ["ESWITCH_HAIRPIN_DESCRIPTORS[%d]" % i for i in range(8)]
    assert all(p["next_boot"]["number"] == 128 for p in parsed["params"].values())


def test_wide_columns_and_mixed_forms():
    parsed = parse_query(fixture("operator-cx9-e-query-mixed.txt"))
    owner = parsed["params"]
    assert owner["PCI_DOWNSTREAM_PORT_OWNER[0]"]["current"]["number"] == 148
    assert owner["PCI_DOWNSTREAM_PORT_OWNER[1]"]["current"]["name"] == "HOST_0"
    assert owner["PCI_DOWNSTREAM_PORT_OWNER[4]"]["next_boot"]["name"] == "DEVICE_DEFAULT"
    assert "PCI_DOWNSTREAM_PORT_OWNER[3]" not in owner


def test_field_of_16_characters_or_more_is_followed_by_one_space():
    # printSingleParam prints "%-16s" and one extra space only after a wider field:
    # a split on "two or more spaces" (the operator's) would glue DEVICE_DEFAULT(0) columns together.
    parsed = parse_query(fixture("cx7-e-q-composed.txt"))
    assert parsed["unparsed"] == []
    moderation = parsed["params"]["ROCE_CC_CNP_MODERATION_P1"]
    assert [moderation[c]["text"] for c in ("default", "current", "next_boot")] == ["DEVICE_DEFAULT(0)"] * 3
    assert parsed["device"] == "0000:3d:00.0"
    assert parsed["device_type"] == "ConnectX7"
    assert parsed["params"]["ADVANCED_PCI_SETTINGS"]["flagged"] is True


def test_set_confirmation_table():
    parsed = parse_query(fixture("cx5-set-blog.txt"))
    assert parsed["columns"] == ["next_boot", "new"]
    assert parsed["device"] == "/dev/mst/mt4119_pciconf0"
    assert parsed["params"]["SRIOV_EN"]["new"]["number"] == 1
    assert parsed["params"]["NUM_OF_VFS"]["next_boot"]["number"] == 0
    assert parsed["unparsed"] == []


def test_output_without_a_table():
    parsed = parse_query("\nDevice #1:\n----------\n\nDevice type:    ConnectX4\n")
    assert parsed["columns"] == [] and parsed["params"] == {}


def test_bluefield_header_wider_than_rows():
    parsed = parse_query(fixture("operator-bf3-e-query.txt"))
    engine = parsed["params"]["INTERNAL_CPU_OFFLOAD_ENGINE"]
    assert engine["current"] == dict(text="ENABLED(0)", name="ENABLED", number=0)


def test_comparisons():
    assert same_value(("number", 1), parse_value("True(1)"))
    assert same_value(("name", "true"), parse_value("True(1)"))
    assert same_value(("name", "ETH"), parse_value("ETH(2)"))
    assert not same_value(("number", 1), parse_value("ETH(2)"))
    assert not same_value(("number", 0), None)
    assert values_equal(parse_value("True(1)"), parse_value("1"))
    assert not values_equal(parse_value("IB(1)"), parse_value("ETH(2)"))
