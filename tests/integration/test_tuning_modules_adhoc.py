"""sysctl_profile, gpudirect_facts, gpudirect_config and nic_ethtool run by ansible itself against host trees."""

import os

import pytest

import gputree
import hosttree
from fixtures.hosts import cx7_doca
from ansiblerun import adhoc, tree_env

PATH = "/etc/sysctl.d/90-rdmaops-roce.conf"
ARGS = "settings={'net.ipv4.tcp_rmem':'4096 87380 4194304','net.core.rmem_max':4194304,'net.ipv4.tcp_sack':1}"


@pytest.fixture
def sysctl_tree(tmp_path):
    for rel, value in (
        ("net/ipv4/tcp_rmem", "4096\t131072\t33554432\n"),
        ("net/core/rmem_max", "212992\n"),
        ("net/ipv4/tcp_sack", "1\n"),
    ):
        path = tmp_path / "proc/sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value)
    (tmp_path / "etc/sysctl.d").mkdir(parents=True)
    return tmp_path


def test_check_diff_apply_and_idempotence(sysctl_tree):
    env = tree_env(sysctl_tree, [])
    rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS, env, check=True, diff=True)
    assert rc == 0 and result["changed"] is True
    assert result["changes"] == [
        "write " + PATH,
        "set net.core.rmem_max from '212992' to '4194304' at runtime",
        "set net.ipv4.tcp_rmem from '4096 131072 33554432' to '4096 87380 4194304' at runtime",
    ]
    assert result["diff"][0] == {
        "before": {"sysctl net.core.rmem_max": "212992", "sysctl net.ipv4.tcp_rmem": "4096 131072 33554432"},
        "after": {"sysctl net.core.rmem_max": "4194304", "sysctl net.ipv4.tcp_rmem": "4096 87380 4194304"},
    }
    assert "net.ipv4.tcp_rmem = 4096 87380 4194304\n" in result["diff"][1]["after"]
    assert not (sysctl_tree / PATH.lstrip("/")).exists()
    assert (sysctl_tree / "proc/sys/net/core/rmem_max").read_text() == "212992\n"

    rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS, env)
    assert rc == 0 and result["changed"] is True
    assert result["runtime"]["net.core.rmem_max"] == {"before": "212992", "after": "4194304"}
    assert result["unapplied"] == {} and result["overridden"] == []
    assert (sysctl_tree / "proc/sys/net/core/rmem_max").read_text() == "4194304\n"

    rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS, env)
    assert rc == 0 and result["changed"] is False and result["changes"] == []


def test_unsettable_key_fails_before_anything_changes(sysctl_tree):
    env = tree_env(sysctl_tree, [])
    args = ARGS.replace("}", ",'net.core.netdev_max_backlog':250000}")
    rc, result = adhoc("rdmaops.roce.sysctl_profile", args, env)
    assert rc != 0 and result.get("failed")
    assert result["msg"].startswith("nothing was changed: these keys cannot be set at runtime on this host: net.core.netdev_max_backlog")
    assert "runtime_errors=warn" in result["msg"]
    assert not (sysctl_tree / PATH.lstrip("/")).exists()

    rc, result = adhoc("rdmaops.roce.sysctl_profile", args + " runtime_errors=warn", env)
    assert rc == 0 and result["changed"] is True
    assert list(result["unapplied"]) == ["net.core.netdev_max_backlog"]
    assert any("net.core.netdev_max_backlog not applied at runtime" in w for w in result["warnings"])
    assert "net.core.netdev_max_backlog = 250000" in (sysctl_tree / PATH.lstrip("/")).read_text()


def test_bad_key_names_the_key(sysctl_tree):
    rc, result = adhoc("rdmaops.roce.sysctl_profile", "settings={'net..core':1}", tree_env(sysctl_tree, []))
    assert rc != 0 and "invalid sysctl key 'net..core'" in result["msg"]


def test_later_file_wins_is_warned(sysctl_tree):
    (sysctl_tree / "etc/sysctl.d/99-local.conf").write_text("net.core.rmem_max = 8388608\n")
    rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS, tree_env(sysctl_tree, []))
    assert rc == 0
    assert result["overridden"] == [
        {"key": "net.core.rmem_max", "file": "/etc/sysctl.d/99-local.conf", "value": "8388608", "ours": "4194304"}
    ]
    assert any("99-local.conf is applied after" in w for w in result["warnings"])


def test_state_absent(sysctl_tree):
    env = tree_env(sysctl_tree, [])
    adhoc("rdmaops.roce.sysctl_profile", ARGS, env)
    rc, result = adhoc("rdmaops.roce.sysctl_profile", "state=absent", env, diff=True)
    assert rc == 0 and result["changed"] is True and result["changes"] == ["remove " + PATH]
    assert not (sysctl_tree / PATH.lstrip("/")).exists()


def test_gpudirect_facts_runs_lspci_once_from_the_tree(tmp_path):
    here = os.path.dirname(os.path.abspath(hosttree.__file__))
    with open(os.path.join(here, "fixtures", "tools", "lspci", "cx7-gpu-server-acs-on.txt")) as handle:
        lspci = handle.read()
    manifest = cx7_doca.manifest()
    manifest["entries"]["/proc/cmdline"] = {"type": "file", "content": "ro intel_iommu=on iommu=pt\n"}
    manifest.setdefault("commands", {})["lspci -D -vvv"] = {"rc": 0, "stdout": lspci, "stderr": ""}
    bindir = hosttree.materialize(manifest, tmp_path)
    rc, result = adhoc("rdmaops.roce.gpudirect_facts", "", tree_env(tmp_path, [bindir]), check=True)
    assert rc == 0 and result["changed"] is False
    facts = result["ansible_facts"]["gpudirect"]
    assert facts["applicable"] is True and facts["ready"] is False
    assert facts["iommu"]["mode"] == "off" and facts["iommu"]["cmdline"] == {"intel_iommu": "on", "iommu": "pt"}
    assert facts["acs"]["redirecting_on_gpu_paths"] == ["0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"]
    assert len(facts["problems"]) == 1


@pytest.fixture
def veth_tree(tmp_path):
    """A container's veth as ethtool 6.1 answers for it (see fixtures/tools/ethtool/veth-ethtool6.1-unsupported.txt)."""
    refused = {"rc": 1, "stdout": "", "stderr": "netlink error: Operation not supported\n"}
    manifest = {
        "entries": {"/sys/class/net/eth0": {"type": "dir"}},
        "commands": {"ethtool -a eth0": refused, "ethtool -g eth0": refused, "ethtool -c eth0": refused},
    }
    bindir = hosttree.materialize(manifest, tmp_path)
    return tree_env(tmp_path, [bindir])


def test_nic_ethtool_reports_every_unsupported_knob(veth_tree, tmp_path):
    args = "interfaces=eth0 global_pause=false rings={'rx':'max','tx':4096} adaptive_rx=true adaptive_tx=true"
    rc, result = adhoc("rdmaops.roce.nic_ethtool", args, veth_tree)
    assert rc == 0 and result["changed"] is False
    assert sorted(result["unsupported"]["eth0"]) == ["adaptive-rx", "adaptive-tx", "global pause", "rx ring", "tx ring"]
    assert result["unsupported"]["eth0"]["rx ring"] == "ethtool -g failed (rc=1): netlink error: Operation not supported"
    assert len(result["warnings"]) == 5
    assert not (tmp_path / "etc/udev/rules.d/90-rdmaops-roce-ethtool.rules").exists()

    rc, result = adhoc("rdmaops.roce.nic_ethtool", args + " unsupported=fail", veth_tree)
    assert rc != 0 and result["msg"].startswith("unsupported NIC settings: ")


def test_nic_ethtool_refuses_an_unknown_interface(veth_tree):
    rc, result = adhoc("rdmaops.roce.nic_ethtool", "interfaces=ens9 global_pause=false", veth_tree)
    assert rc != 0 and result["msg"] == "interface ens9 does not exist on this host (see /sys/class/net)"


def test_gpudirect_config_acs_check_apply_idempotence(tmp_path):
    """Through Ansible: check mode predicts, the run clears ACS on the GPU/NIC paths with setpci
    (a stand-in that changes what lspci prints next), writes the boot unit, and runs again with no change."""
    root = tmp_path / "host"
    hosttree.materialize(cx7_doca.manifest(), root)
    stubs = gputree.pci_stub_tools(tmp_path)
    env = tree_env(root, [stubs])
    unit = root / "etc/systemd/system/rdmaops-gpudirect-acs.service"

    rc, result = adhoc("rdmaops.roce.gpudirect_config", "acs=disable", env, check=True, diff=True)
    assert rc == 0 and result["changed"] is True
    assert [c.split(" (")[0] for c in result["changes"]] == [
        "clear ACS ReqRedir/CmpltRedir on 0000:3c:00.0", "clear ACS ReqRedir/CmpltRedir on 0000:3c:01.0",
        "clear ACS ReqRedir/CmpltRedir on 0000:b9:00.0",
        "write /etc/systemd/system/rdmaops-gpudirect-acs.service", "enable rdmaops-gpudirect-acs.service",
    ]
    assert not unit.exists() and not (tmp_path / "lspci.txt.calls").exists()

    rc, result = adhoc("rdmaops.roce.gpudirect_config", "acs=disable", env)
    assert rc == 0 and result["changed"] is True
    assert result["acs"]["redirecting_after"] == {}
    assert result["gpudirect"]["acs"]["redirecting_on_gpu_paths"] == []
    assert (tmp_path / "lspci.txt.calls").read_text().split("\n")[:3] == [
        "-s %s ECAP_ACS+0x6.w=0000:002c" % bdf for bdf in ("0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0")
    ]
    assert "ExecStart=%s -s 0000:3c:00.0 ECAP_ACS+0x6.w=0000:002c" % (stubs / "setpci") in unit.read_text()

    rc, result = adhoc("rdmaops.roce.gpudirect_config", "acs=disable", env)
    assert rc == 0 and result["changed"] is False and result["changes"] == []

    rc, result = adhoc("rdmaops.roce.gpudirect_config", "iommu=passthrough kernel_args='iommu=pt quiet'", env)
    assert rc != 0 and "each must be one kernel parameter" in result["msg"]


@pytest.fixture
def virtio_tree(tmp_path):
    """Two virtio_net netdevs answering ethtool -g as ethtool 6.1 does (rings already at their maximum, 256)."""
    here = os.path.dirname(os.path.abspath(hosttree.__file__))
    with open(os.path.join(here, "fixtures", "tools", "ethtool", "virtio_net-ethtool6.1-g.txt")) as handle:
        rings = handle.read()
    manifest = {"entries": {}, "commands": {}}
    for name in ("eth1", "eth2"):
        manifest["entries"]["/sys/class/net/" + name] = {"type": "dir"}
        manifest["commands"]["ethtool -g " + name] = {"rc": 0, "stdout": rings.replace("eth0", name), "stderr": ""}
    bindir = hosttree.materialize(manifest, tmp_path)
    return tree_env(tmp_path, [bindir])


def test_nic_ethtool_keeps_the_rules_of_every_interface(virtio_tree, tmp_path):
    rules = tmp_path / "etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"
    for name in ("eth2", "eth1"):
        rc, result = adhoc("rdmaops.roce.nic_ethtool", "interfaces=%s rings={'rx':'max'}" % name, virtio_tree)
        assert rc == 0 and result["changed"] is True, result
        assert result["changes"] == ["write /etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"]
        assert result["rules_path"] == "/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"
    lines = rules.read_text().splitlines()
    assert [line.split('NAME=="')[1].split('"')[0] for line in lines[2:]] == ["eth1", "eth2"]
    assert all(line.endswith(' -G $name rx 256"') for line in lines[2:])
    for name in ("eth1", "eth2"):
        rc, result = adhoc("rdmaops.roce.nic_ethtool", "interfaces=%s rings={'rx':'max'}" % name, virtio_tree)
        assert rc == 0 and result["changed"] is False


def test_nic_ethtool_refuses_names_the_kernel_refuses(virtio_tree):
    for name in ("..", "eth1:0", "-s"):
        rc, result = adhoc("rdmaops.roce.nic_ethtool", "interfaces=%s global_pause=false" % name, virtio_tree)
        assert rc != 0 and result["msg"].startswith("invalid interface name %r" % name), result
        assert result.get("commands") in (None, [])


def test_sysctl_key_with_a_newline_writes_nothing(sysctl_tree):
    # A key ending in a newline passed re.match(...$): the module wrote a broken line and returned rc 0.
    args = '{"settings": {"net.core.rmem_max\\n": 4194304}, "apply_runtime": false}'
    rc, result = adhoc("rdmaops.roce.sysctl_profile", args, tree_env(sysctl_tree, []))
    assert rc != 0 and result["msg"].startswith("invalid sysctl key 'net.core.rmem_max\\n'")
    assert not (sysctl_tree / PATH.lstrip("/")).exists()


def test_sysctl_path_outside_sysctl_d_is_refused(sysctl_tree):
    env = tree_env(sysctl_tree, [])
    (sysctl_tree / "etc/profile.d").mkdir(parents=True)
    for path in ("/etc/profile.d/evil.conf", "/etc/sysctl.d/../../escape.conf"):
        rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS + " path=" + path, env)
        assert rc != 0 and result["msg"].startswith("path=%r must be a file directly in /etc/sysctl.d" % path), result
    assert not (sysctl_tree / "etc/profile.d/evil.conf").exists()
    assert not (sysctl_tree.parent / "escape.conf").exists() and not (sysctl_tree / "escape.conf").exists()
    assert (sysctl_tree / "proc/sys/net/core/rmem_max").read_text() == "212992\n"


def test_sysctl_file_of_someone_else_needs_adopt(sysctl_tree):
    env = tree_env(sysctl_tree, [])
    (sysctl_tree / PATH.lstrip("/")).write_text("kernel.panic = 10\n")
    rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS, env)
    assert rc != 0 and "adopt" in result["msg"] and result["changed"] is False
    assert (sysctl_tree / PATH.lstrip("/")).read_text() == "kernel.panic = 10\n"
    rc, result = adhoc("rdmaops.roce.sysctl_profile", ARGS + " adopt=true", env)
    assert rc == 0 and result["changed"] is True
    assert "Managed by rdmaops.roce" in (sysctl_tree / PATH.lstrip("/")).read_text()


@pytest.mark.parametrize("check", [True, False])
def test_gpudirect_config_never_runs_the_grub_defaults(tmp_path, check):
    """The old module sourced /etc/default/grub with sh, check mode included: whatever it held ran."""
    root = tmp_path / "host"
    pwned = tmp_path / "pwned"
    manifest = cx7_doca.manifest()
    manifest["entries"]["/proc/cmdline"] = {"type": "file", "content": "BOOT_IMAGE=/vmlinuz ro quiet\n"}
    manifest["entries"]["/etc/default/grub"] = {
        "type": "file",
        "content": 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet $(touch %s)"\nGRUB_CMDLINE_LINUX=""\ntouch %s\n' % (pwned, pwned),
    }
    hosttree.materialize(manifest, root)
    env = tree_env(root, [gputree.pci_stub_tools(tmp_path)])
    rc, result = adhoc("rdmaops.roce.gpudirect_config", "iommu=passthrough", env, check=check)
    assert rc == 0 and result["changed"] is True, result
    assert not pwned.exists()
    assert result["iommu"]["boot_config_before"] == "quiet" and result["iommu"]["missing_before"] == ["iommu=pt"]
    assert any("$(touch %s)" % pwned in warning for warning in result["warnings"])
    assert (root / "etc/default/grub.d/90-rdmaops-gpudirect.cfg").exists() is (not check)
    assert (tmp_path / "update-grub.calls").exists() is (not check)
