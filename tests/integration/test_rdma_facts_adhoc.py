"""rdma_facts run by ansible itself: ``RDMAOPS_HOST_ROOT=<tree> ansible localhost -m rdmaops.roce.rdma_facts``."""

import os

import pytest

import ansiblerun
import hosttree
from fixtures.hosts import cx7_doca


def run_adhoc(module, args="", env_extra=None, check=False):
    rc, result = ansiblerun.adhoc(module, args, env_extra or {}, check=check)
    assert rc == 0, result
    return result


@pytest.fixture
def cx7_tree(tmp_path):
    bindir = hosttree.materialize(cx7_doca.manifest(), tmp_path)
    return dict(RDMAOPS_HOST_ROOT=str(tmp_path), PATH=bindir + os.pathsep + os.environ["PATH"])


def test_adhoc_prints_the_facts_of_the_tree(cx7_tree):
    result = run_adhoc("rdmaops.roce.rdma_facts", env_extra=cx7_tree, check=True)
    assert result["changed"] is False
    rdma = result["ansible_facts"]["rdma"]
    assert sorted(rdma["devices"]) == ["mlx5_0", "mlx5_1"]
    port = rdma["devices"]["mlx5_0"]["ports"]["1"]
    assert port["roce_v2_ipv4_gid_index"] == 3
    assert port["active_mtu"] == 4096
    assert rdma["netdevs"]["ens1f0np0"]["ipv4"] == ["192.168.100.12/24", "192.168.101.12/24"]
    assert rdma["stack"] == {
        "flavor": "doca_ofed",
        "version": "25.10-1.7.1",
        "kernel": "5.15.0-119-generic",
        "mlx5_core_version": "25.10-1.7.1",
        "loaded_driver": "ofed",
        "evidence": ["ofed_info -s: OFED-internal-25.10-1.7.1"],
    }


def test_adhoc_options_reach_the_module(cx7_tree):
    result = run_adhoc("rdmaops.roce.rdma_facts", "use_tools=false gpu_topology=false", env_extra=cx7_tree)
    rdma = result["ansible_facts"]["rdma"]
    assert "gpus" not in rdma
    assert rdma["devices"]["mlx5_0"]["ports"]["1"]["mtu_source"] == "derived_from_netdev_mtu"


def test_adhoc_live_host_gives_complete_shape():
    """On the machine running the tests (no RDMA hardware in CI) the facts are complete, not an error."""
    result = run_adhoc("rdmaops.roce.rdma_facts", env_extra={"RDMAOPS_HOST_ROOT": "/"})
    rdma = result["ansible_facts"]["rdma"]
    assert set(rdma) == {"devices", "netdevs", "stack", "modules", "gpus", "warnings"}
    assert rdma["stack"]["flavor"] in ("doca_ofed", "mlnx_ofed", "inbox", "none")
    assert rdma["stack"]["kernel"] == open("/proc/sys/kernel/osrelease").read().strip()
    assert set(rdma["modules"]) >= {"rdma_cm", "ib_uverbs", "ib_umad", "nvidia_peermem"}
    for name, device in rdma["devices"].items():
        assert set(device["ports"]) and all(p["state"] for p in device["ports"].values()), name


# -- gpudirect_facts, also read only and on run_facts ----------------------------------------------
@pytest.fixture
def gpu_tree(tmp_path):
    import gputree

    root = tmp_path / "root"
    root.mkdir()
    gputree.gpudirect_tree(root)
    stubs = gputree.pci_stub_tools(tmp_path)
    return ansiblerun.tree_env(root, [root / "bin", stubs])


def test_adhoc_gpudirect_facts_reports_acs_redirection(gpu_tree):
    result = run_adhoc("rdmaops.roce.gpudirect_facts", env_extra=gpu_tree, check=True)
    assert result["changed"] is False
    facts = result["ansible_facts"]["gpudirect"]
    assert facts["applicable"] is True and facts["ready"] is False
    assert facts["iommu"]["mode"] == "passthrough"
    assert facts["acs"]["redirecting_on_gpu_paths"] == ["0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"]
    assert facts["gpus"] == ["0000:3e:00.0", "0000:ba:00.0"]


def test_adhoc_gpudirect_facts_without_lspci(gpu_tree):
    result = run_adhoc("rdmaops.roce.gpudirect_facts", "use_lspci=false", env_extra=gpu_tree)
    acs = result["ansible_facts"]["gpudirect"]["acs"]
    assert (acs["status"], acs["reason"]) == ("unknown", "lspci was not used (use_lspci=false)")


def test_adhoc_facts_modules_refuse_unknown_options(cx7_tree):
    rc, result = ansiblerun.adhoc("rdmaops.roce.rdma_facts", "no_such_option=1", cx7_tree)
    assert rc != 0 and result.get("failed") is True
    assert "no_such_option" in result["msg"]


def test_os_facts_are_setups_own(cx7_tree):
    # The oracle is ansible-core's setup module on the same machine: every fact the preflight
    # now takes from rdma_facts (os_facts=true) instead of setup must be setup's, value for value.
    ours = run_adhoc("rdmaops.roce.rdma_facts", "os_facts=true", env_extra=cx7_tree)["ansible_facts"]
    theirs = run_adhoc("ansible.builtin.setup", "gather_subset=min")["ansible_facts"]
    read_by_roles = ["ansible_distribution", "ansible_distribution_version", "ansible_distribution_major_version",
                     "ansible_distribution_release", "ansible_os_family", "ansible_kernel", "ansible_architecture",
                     "ansible_python_version", "ansible_system", "ansible_machine", "ansible_userspace_bits"]
    for key in read_by_roles:
        assert ours[key] == theirs[key], key
    assert ours["ansible_python"]["version"] == theirs["ansible_python"]["version"]
    assert "PATH" in ours["ansible_env"] and ours["rdma"]["devices"]  # the RDMA facts still come with them
    # only the four collectors ran: nothing of setup's network, hardware or service collectors
    assert "ansible_default_ipv4" not in ours and "ansible_service_mgr" not in ours


def test_os_facts_are_left_out_by_default(cx7_tree):
    facts = run_adhoc("rdmaops.roce.rdma_facts", env_extra=cx7_tree)["ansible_facts"]
    assert list(facts) == ["rdma"]
