"""rdma_facts on Soft-RoCE hosts captured in the lab VMs (Debian 12, kernel 6.1, rdma_rxe).

The trees were recorded by tests/tools/capture_host_tree.py inside a VM booted from the lab
image: capture A with the fabric NIC at MTU 1500 and one address, capture B at MTU 9000 with
a second address.
"""

import pytest

import hosttree
from hosttree import gather_facts as gather


@pytest.fixture(params=["rxe_bookworm_mtu1500.json", "rxe_bookworm_mtu9000.json"])
def capture(request):
    return hosttree.load(request.param)


def test_rxe_device_is_software_with_netdev_and_v2_gids(tmp_path, capture):
    facts = gather(tmp_path, capture)[0]
    assert list(facts["devices"]) == ["rxe0"]
    dev = facts["devices"]["rxe0"]
    assert dev["driver"] == "rdma_rxe"
    assert dev["virtual"] is True
    assert dev["pci_address"] is None and dev["numa_node"] is None
    assert dev["fw_ver"] is None  # the kernel's fw_ver for rxe is an empty line
    assert dev["node_guid"] == "5054:00ff:fe18:0011"
    port = dev["ports"]["1"]
    assert (port["state"], port["phys_state"], port["link_layer"]) == ("ACTIVE", "LinkUp", "Ethernet")
    assert port["netdev"] == "ens4"
    assert all(gid["type"] == "RoCE v2" and gid["netdev"] == "ens4" for gid in port["gids"])
    assert port["gids"][0]["gid"].startswith("fe80:") and port["gids"][0]["ipv4"] is None
    assert port["roce_v2_ipv4_gid_index"] == 1
    assert facts["netdevs"]["ens4"]["driver"] == "virtio_net"
    assert facts["netdevs"]["ens4"]["pci_address"] == "0000:00:04.0"
    assert facts["stack"]["flavor"] == "inbox"
    assert facts["stack"]["kernel"] == "6.1.0-50-amd64"
    assert facts["modules"]["rdma_rxe"] is True and facts["modules"]["ib_core"] is True
    assert facts["modules"]["mlx5_core"] is False
    assert facts["gpus"] == [] and dev["gpu_affinity"] == []
    assert facts["warnings"] == []


def test_rxe_mtu1500_gives_roce_mtu_1024(tmp_path):
    facts = gather(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))[0]
    port = facts["devices"]["rxe0"]["ports"]["1"]
    assert facts["netdevs"]["ens4"]["mtu"] == 1500
    assert (port["active_mtu"], port["max_mtu"], port["mtu_source"]) == (1024, 4096, "ibv_devinfo")
    assert facts["netdevs"]["ens4"]["ipv4"] == ["198.18.0.11/24"]
    assert [(g["index"], g["ipv4"]) for g in port["gids"]] == [(0, None), (1, "198.18.0.11")]


def test_rxe_mtu9000_two_addresses(tmp_path):
    facts = gather(tmp_path, hosttree.load("rxe_bookworm_mtu9000.json"))[0]
    port = facts["devices"]["rxe0"]["ports"]["1"]
    assert facts["netdevs"]["ens4"]["mtu"] == 9000
    assert port["active_mtu"] == 4096
    assert facts["netdevs"]["ens4"]["ipv4"] == ["198.18.0.11/24", "198.18.0.111/24"]
    assert [(g["index"], g["ipv4"]) for g in port["gids"]] == [(0, None), (1, "198.18.0.11"), (2, "198.18.0.111")]


def test_rxe_sysfs_only_agrees_with_tools(tmp_path, capture):
    with_tools = gather(tmp_path / "a", capture)[0]
    sysfs_only = gather(tmp_path / "b", capture, use_tools=False)[0]
    port_t = with_tools["devices"]["rxe0"]["ports"]["1"]
    port_s = sysfs_only["devices"]["rxe0"]["ports"]["1"]
    # The kernel's derivation and ibv_devinfo agree on the RoCE MTU for both captures.
    assert port_s["active_mtu"] == port_t["active_mtu"]
    assert port_s["roce_v2_ipv4_gid_index"] == port_t["roce_v2_ipv4_gid_index"]
    assert [a.split("/")[0] for a in with_tools["netdevs"]["ens4"]["ipv4"]] == sysfs_only["netdevs"]["ens4"]["ipv4"]
