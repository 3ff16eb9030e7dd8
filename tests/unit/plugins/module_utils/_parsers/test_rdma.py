"""RDMA parsers (ibv_devinfo, sysfs states and GIDs, the RoCE MTU) against output captured from the real tools."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import rdma as parsers

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools")


def fixture(*parts):
    with open(os.path.join(TOOLS, *parts)) as handle:
        return handle.read()


def test_ibv_devinfo_inbox_cx7_two_devices():
    devices = parsers.parse_ibv_devinfo(fixture("ibv_devinfo", "rdma-core-cx7-inbox.txt"))
    assert sorted(devices) == ["rocep1s0f0", "rocep1s0f1"]
    assert devices["rocep1s0f0"]["fw_ver"] == "28.45.4028"
    assert devices["rocep1s0f0"]["vendor_part_id"] == "4129"
    assert devices["rocep1s0f0"]["ports"]["1"] == {
        "state": "PORT_ACTIVE",
        "max_mtu": 4096,
        "active_mtu": 4096,
        "sm_lid": "0",
        "port_lid": "0",
        "port_lmc": "0x00",
        "link_layer": "Ethernet",
    }
    down = devices["rocep1s0f1"]["ports"]["1"]
    assert (down["state"], down["active_mtu"]) == ("PORT_DOWN", 1024)


def test_ibv_devinfo_verbose_bond_ignores_gid_lines():
    devices = parsers.parse_ibv_devinfo(fixture("ibv_devinfo", "ofed-cx6dx-bond-vv.txt"))
    port = devices["mlx5_bond_0"]["ports"]["1"]
    assert port["phys_state"] == "LINK_UP"
    assert port["active_mtu"] == 4096
    assert port["gid_tbl_len"] == "255"
    assert "GID" not in port
    # device-level fields printed before the port stay on the device
    assert devices["mlx5_bond_0"]["num_comp_vectors"] == "63"
    assert "num_comp_vectors" not in port


def test_ibv_devinfo_empty_and_garbage():
    assert parsers.parse_ibv_devinfo("") == {}
    assert parsers.parse_ibv_devinfo("No IB devices found\n") == {}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4: ACTIVE", ("ACTIVE", 4)),
        ("1: DOWN", ("DOWN", 1)),
        ("5: LinkUp", ("LinkUp", 5)),
        ("1: CA", ("CA", 1)),
        (None, (None, None)),
    ],
)
def test_numbered_state(text, expected):
    assert parsers.parse_numbered_state(text) == expected


@pytest.mark.parametrize(
    "gid, expected",
    [
        ("0000:0000:0000:0000:0000:ffff:c0a8:640c", ("0000:0000:0000:0000:0000:ffff:c0a8:640c", "192.168.100.12")),
        ("fe80:0000:0000:0000:ba3f:d2ff:fea1:b2c4", ("fe80:0000:0000:0000:ba3f:d2ff:fea1:b2c4", None)),
        ("0000:0000:0000:0000:0000:0000:0000:0000", (None, None)),
        ("not-a-gid", (None, None)),
        ("", (None, None)),
    ],
)
def test_decode_gid(gid, expected):
    assert parsers.decode_gid(gid) == expected


@pytest.mark.parametrize(
    "mtu, expected",
    [(9000, 4096), (4192, 4096), (4191, 2048), (1500, 1024), (1120, 1024), (1119, 512), (300, None), (None, None)],
)
def test_roce_active_mtu_follows_iboe_get_mtu(mtu, expected):
    assert parsers.roce_active_mtu(mtu) == expected


def test_ibv_devinfo_keeps_unparsable_states_and_mtus_as_given():
    text = "hca_id:\tmlx5_0\n\tfw_ver:\t\t\t\t28.39.1002\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n" \
           "\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\tweird\n\t\t\tphys_state:\t\tsomething\n"
    port = parsers.parse_ibv_devinfo(text)["mlx5_0"]["ports"]["1"]
    assert port == {"state": "PORT_ACTIVE", "max_mtu": 4096, "active_mtu": None, "phys_state": "something"}
