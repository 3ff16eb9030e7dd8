"""rdma_facts logic against recorded host trees (module_utils level)."""

import errno

import pytest

import hosttree
from hosttree import ReplayModule, gather_facts as gather
from fixtures.hosts import cx7_doca

from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts


@pytest.fixture
def cx7(tmp_path):
    return gather(tmp_path, cx7_doca.manifest())


def test_cx7_devices_and_ports(cx7):
    facts = cx7[0]
    assert sorted(facts["devices"]) == ["mlx5_0", "mlx5_1"]
    dev = facts["devices"]["mlx5_0"]
    assert dev["driver"] == "mlx5_core"
    assert dev["fw_ver"] == "28.39.1002"
    assert dev["node_guid"] == "b83f:d203:00a1:b2c4"
    assert dev["pci_address"] == "0000:3d:00.0"
    assert dev["numa_node"] == 0
    assert dev["node_type"] == "CA"
    assert dev["virtual"] is False
    port = dev["ports"]["1"]
    assert port["state"] == "ACTIVE"
    assert port["phys_state"] == "LinkUp"
    assert port["link_layer"] == "Ethernet"
    assert port["netdev"] == "ens1f0np0"
    assert port["rate"] == "400 Gb/sec (4X NDR)"
    assert (port["active_mtu"], port["max_mtu"], port["mtu_source"]) == (4096, 4096, "ibv_devinfo")


def test_cx7_gids_one_v2_per_ipv4_and_empty_slot_skipped(cx7):
    facts = cx7[0]
    gids = facts["devices"]["mlx5_0"]["ports"]["1"]["gids"]
    assert [g["index"] for g in gids] == [0, 1, 2, 3, 4, 5]  # slot 6 and 7 are empty
    v2_ipv4 = [(g["index"], g["ipv4"]) for g in gids if g["type"] == "RoCE v2" and g["ipv4"]]
    assert v2_ipv4 == [(3, "192.168.100.12"), (5, "192.168.101.12")]
    assert gids[2] == {
        "index": 2,
        "type": "IB/RoCE v1",
        "gid": "0000:0000:0000:0000:0000:ffff:c0a8:640c",
        "netdev": "ens1f0np0",
        "ipv4": "192.168.100.12",
    }
    assert gids[0]["ipv4"] is None
    assert facts["devices"]["mlx5_0"]["ports"]["1"]["roce_v2_ipv4_gid_index"] == 3


def test_cx7_down_port(cx7):
    facts = cx7[0]
    port = facts["devices"]["mlx5_1"]["ports"]["1"]
    assert port["state"] == "DOWN"
    assert port["phys_state"] == "Disabled"
    assert port["netdev"] == "ens1f1np1"
    assert port["active_mtu"] == 1024
    assert port["roce_v2_ipv4_gid_index"] is None
    assert [g["type"] for g in port["gids"]] == ["IB/RoCE v1", "RoCE v2"]


def test_cx7_netdevs(cx7):
    facts = cx7[0]
    assert sorted(facts["netdevs"]) == ["ens1f0np0", "ens1f1np1"]  # eno1 is no RDMA netdev
    up = facts["netdevs"]["ens1f0np0"]
    assert up == {
        "ibdev": "mlx5_0",
        "port": 1,
        "mtu": 9000,
        "operstate": "up",
        "carrier": 1,
        "address": "b8:3f:d2:a1:b2:c4",
        "driver": "mlx5_core",
        "pci_address": "0000:3d:00.0",
        "ipv4": ["192.168.100.12/24", "192.168.101.12/24"],
        "ipv4_source": "ip",
    }
    assert facts["netdevs"]["ens1f1np1"]["mtu"] == 1500
    assert facts["netdevs"]["ens1f1np1"]["ipv4"] == []


def test_cx7_stack_modules_gpus(cx7):
    facts, module = cx7
    assert facts["stack"]["flavor"] == "doca_ofed"
    assert facts["stack"]["version"] == "25.10-1.7.1"
    assert facts["stack"]["loaded_driver"] == "ofed"
    assert facts["stack"]["kernel"] == "5.15.0-119-generic"
    assert facts["modules"]["rdma_cm"] is True
    assert facts["modules"]["nvidia_peermem"] is True
    assert facts["modules"]["nv_peer_mem"] is False
    assert facts["modules"]["rdma_rxe"] is False
    assert [g["pci_address"] for g in facts["gpus"]] == ["0000:3e:00.0", "0000:ba:00.0"]
    assert facts["devices"]["mlx5_0"]["gpu_affinity"] == [
        {"gpu": "0000:3e:00.0", "relation": "same_pcie_switch"},
        {"gpu": "0000:ba:00.0", "relation": "cross_numa"},
    ]
    assert facts["warnings"] == []
    # each tool ran once, and no package manager was asked since ofed_info answered
    assert sorted(module.calls) == ["ibv_devinfo", "ip -j addr show", "ofed_info -s"]


def test_sysfs_only_derives_mtus_and_addresses(tmp_path):
    facts, module = gather(tmp_path, cx7_doca.manifest(), use_tools=False)
    assert module.calls == []
    port0 = facts["devices"]["mlx5_0"]["ports"]["1"]
    assert (port0["active_mtu"], port0["mtu_source"]) == (4096, "derived_from_netdev_mtu")
    assert facts["devices"]["mlx5_1"]["ports"]["1"]["active_mtu"] == 1024
    assert facts["netdevs"]["ens1f0np0"]["ipv4"] == ["192.168.100.12", "192.168.101.12"]
    assert facts["netdevs"]["ens1f0np0"]["ipv4_source"] == "gids"
    assert port0["roce_v2_ipv4_gid_index"] == 3
    # without ofed_info the OFED driver's version file still identifies the stack
    assert facts["stack"]["flavor"] == "doca_ofed"
    assert facts["stack"]["version"] == "25.10-1.7.1"
    assert any("ofed_info is missing" in w for w in facts["warnings"])


def test_einval_gid_type_is_an_empty_slot(tmp_path, monkeypatch):
    """A populated-looking GID whose type read fails with EINVAL is not reported."""
    manifest = cx7_doca.manifest()
    bindir = hosttree.materialize(manifest, tmp_path)
    host = HostRoot(str(tmp_path))
    real = HostRoot.read_or_errno

    def einval_for_slot_5(self, path):
        if path.endswith("/mlx5_0/ports/1/gid_attrs/types/5"):
            return None, errno.errorcode[errno.EINVAL]
        return real(self, path)

    monkeypatch.setattr(HostRoot, "read_or_errno", einval_for_slot_5)
    module = ReplayModule(manifest["commands"], bindir)
    facts = RdmaFacts(host, CommandRunner(module)).gather()
    port = facts["devices"]["mlx5_0"]["ports"]["1"]
    assert 5 not in [g["index"] for g in port["gids"]]
    # 192.168.101.12 lost its RoCE v2 GID: the facts say so
    assert any("192.168.101.12" in w and "no RoCE v2 GID" in w for w in facts["warnings"])


def test_inbox_driver_under_ofed_is_reported(tmp_path):
    manifest = cx7_doca.manifest()
    del manifest["entries"]["/sys/module/mlx5_core/version"]
    facts = gather(tmp_path, manifest)[0]
    assert facts["stack"]["flavor"] == "doca_ofed"
    assert facts["stack"]["loaded_driver"] == "inbox"
    assert any("loaded mlx5_core is the kernel's own driver" in w for w in facts["warnings"])


def test_host_without_rdma(tmp_path):
    manifest = {"entries": {"/proc/sys/kernel/osrelease": {"type": "file", "content": "6.1.0-28-amd64\n"}}}
    facts, module = gather(tmp_path, manifest)
    assert facts["devices"] == {}
    assert facts["netdevs"] == {}
    assert facts["gpus"] == []
    assert facts["stack"]["flavor"] == "none"
    assert facts["stack"]["kernel"] == "6.1.0-28-amd64"
    assert set(facts["modules"].values()) == {False}
    assert module.calls == []  # no device and no tool recorded: nothing ran


def test_captured_host_without_rdma(tmp_path):
    """A real capture of a Debian 12 machine with no RDMA hardware and no RDMA modules."""
    manifest = hosttree.load("nordma_debian12_container.json")
    facts = gather(tmp_path, manifest)[0]
    assert facts["devices"] == {} and facts["netdevs"] == {}
    assert facts["stack"]["flavor"] == "none"
    assert facts["stack"]["kernel"] == manifest["meta"]["kernel"]
    assert not any(facts["modules"].values())
    assert facts["warnings"] == []


# ip -N -j -4/-6 rule show, iproute2 6.1 (Debian 12), in a network namespace with the two rules
# nic_layer's rails add for ens1f0np0's two addresses (two rails in one subnet on one netdev would be
# refused by the plan; here one netdev carries tables 100 and 101 to show both entries)
RULES_V4 = ('[{"priority":0,"src":"all","table":"255"},{"priority":1000,"src":"192.168.100.12","table":"100"},'
            '{"priority":1000,"src":"192.168.101.12","table":"101"},{"priority":32766,"src":"all","table":"254"},'
            '{"priority":32767,"src":"all","table":"253"}]')
RULES_V6 = '[{"priority":0,"src":"all","table":"255"},{"priority":32766,"src":"all","table":"254"}]'


def test_rails_are_reported_only_where_nic_layer_named_the_tables(tmp_path):
    manifest = cx7_doca.manifest()
    manifest["entries"]["/etc/iproute2/rt_tables.d/rdmaops.conf"] = {"type": "file", "content": (
        "# Managed by rdmaops.roce (nic_layer rails): one routing table per RDMA netdev.\n"
        "# rail rail0\n100\trdmaops_ens1f0np0\n# rail rail1\n101\trdmaops_ens1f0np0_101\n")}
    manifest["commands"]["ip -N -j -4 rule show"] = {"rc": 0, "stdout": RULES_V4, "stderr": ""}
    manifest["commands"]["ip -N -j -6 rule show"] = {"rc": 0, "stdout": RULES_V6, "stderr": ""}
    facts, module = gather(tmp_path, manifest)
    netdev = facts["netdevs"]["ens1f0np0"]
    assert netdev["rails"] == [
        {"rail": "rail0", "table": 100, "table_name": "rdmaops_ens1f0np0", "rules": ["1000 from 192.168.100.12 lookup 100"]},
        {"rail": "rail1", "table": 101, "table_name": "rdmaops_ens1f0np0_101", "rules": ["1000 from 192.168.101.12 lookup 101"]},
    ]
    assert netdev["ipv6"] == []
    assert "rails" not in facts["netdevs"]["ens1f1np1"]  # a netdev on no rail keeps today's keys
    assert sorted(module.calls) == ["ibv_devinfo", "ip -N -j -4 rule show", "ip -N -j -6 rule show", "ip -j addr show", "ofed_info -s"]
