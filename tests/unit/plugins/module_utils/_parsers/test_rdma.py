"""Parsers against output captured from the real tools."""

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
    "line, expected",
    [
        ("MLNX_OFED_LINUX-23.10-1.1.9.0:", ("MLNX_OFED_LINUX", "23.10-1.1.9.0", 23)),
        ("OFED-internal-24.04-0.6.6:", ("OFED-internal", "24.04-0.6.6", 24)),
        ("OFED-internal-24.10-1.1.4.0.200:", ("OFED-internal", "24.10-1.1.4.0.200", 24)),
        ("OFED-internal-25.10-1.7.1:", ("OFED-internal", "25.10-1.7.1", 25)),
        ("OFED-internal-5.0-1.0.0.0:", ("OFED-internal", "5.0-1.0.0.0", 5)),
    ],
)
def test_ofed_info_samples(line, expected):
    assert line in fixture("ofed_info", "samples.txt").splitlines()
    parsed = parsers.parse_ofed_info(line + "\n")
    assert (parsed["distribution"], parsed["version"], parsed["major"]) == expected


@pytest.mark.parametrize("text", ["", "ofed_info: command not found", "MLNX_OFED_LINUX:"])
def test_ofed_info_rejects_non_versions(text):
    assert parsers.parse_ofed_info(text) is None


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


def test_ip_addr_json_mixed_families():
    text = (
        '[{"ifname":"ens4","addr_info":[{"family":"inet","local":"198.18.0.11","prefixlen":24},'
        '{"family":"inet6","local":"fe80::5054:ff:fe12:3456","prefixlen":64}]},'
        '{"ifname":"ens5","addr_info":[]}]'
    )
    assert parsers.parse_ip_addr_json(text) == {
        "ens4": {"ipv4": ["198.18.0.11/24"], "ipv6": ["fe80::5054:ff:fe12:3456/64"]},
        "ens5": {"ipv4": [], "ipv6": []},
    }
    assert parsers.parse_ip_addr_json("not json") == {}


@pytest.mark.parametrize(
    "a, b, numa_a, numa_b, expected",
    [
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:00.0/0000:3d:00.0",
         "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:01.0/0000:3e:00.0", 0, 0, "same_pcie_switch"),
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:3a/0000:3a:02.0/0000:3f:00.0", 0, 0, "same_host_bridge"),
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:5d/0000:5d:00.0/0000:5e:00.0", 0, 0, "same_numa_node"),
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:b9/0000:b9:00.0/0000:ba:00.0", 0, 1, "cross_numa"),
        ("", "pci0000:b9/0000:b9:00.0/0000:ba:00.0", None, 1, None),
    ],
)
def test_pci_relation(a, b, numa_a, numa_b, expected):
    chain_a = parsers.pci_chain("/sys/devices/" + a if a else "/sys/devices/virtual/infiniband/rxe0")
    chain_b = parsers.pci_chain("/sys/devices/" + b)
    assert parsers.pci_relation(chain_a, chain_b, numa_a, numa_b) == expected
