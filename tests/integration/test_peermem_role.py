"""The rdmaops.roce.peermem role run by ansible-playbook against localhost and host trees.

Every path the role's modules touch resolves under RDMAOPS_HOST_ROOT (the role has no task that
writes with ansible.builtin modules), and modprobe, modinfo, dmesg and systemctl are the
tree's simulated ones, so these runs never read or change the machine running the tests.
"""

import os

import pytest

import gputree
import kmodsim
import ansiblerun

PLAYBOOK = """---
- name: Apply the peermem role to a recorded host
  hosts: localhost
  gather_facts: false
  roles:
    - role: rdmaops.roce.peermem
"""
PEERMEM_TASK = "rdmaops.roce.peermem : Decide, load, persist and prove the GPUDirect RDMA peer-memory module"
REPORT_TASK = "rdmaops.roce.peermem : Report the peer-memory decision"
REQUIRE_TASK = "rdmaops.roce.peermem : Require peer memory (peermem_required) on a host without an NVIDIA GPU"
# The module alone, as a playbook that does not use the role would call it.
MODULE_PLAYBOOK = """---
- name: Run the peermem module on a recorded host
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Decide
      rdmaops.roce.peermem:
"""
UNIT = "etc/systemd/system/rdmaops-peermem.service"


@pytest.fixture
def playbook(tmp_path):
    path = tmp_path / "site.yml"
    path.write_text(PLAYBOOK)
    return path


def host_env(root, bindirs):
    return ansiblerun.tree_env(root, bindirs)


def test_a_no_gpu_host_is_skipped_with_the_reason(tmp_path, playbook):
    root = tmp_path / "host"
    env = host_env(root, gputree.no_gpu_host(root))
    before = gputree.tree_files(root)
    rc, tasks, stats = ansiblerun.playbook(playbook, env)
    assert rc == 0, tasks
    # The run's RDMA facts show no GPU and no nvidia module: the role decides without the module's
    # round trip, and says what the module says on the same host, word for word.
    assert tasks[PEERMEM_TASK]["skipped"] is True and tasks[PEERMEM_TASK]["skip_reason"] == "Conditional result was False"
    reported = tasks[REPORT_TASK]["msg"][0]
    assert reported.startswith("skip: no NVIDIA GPU on this host")
    assert stats["changed"] == 0 and stats["failures"] == 0
    assert gputree.tree_files(root) == before
    module_playbook = tmp_path / "module.yml"
    module_playbook.write_text(MODULE_PLAYBOOK)
    rc, tasks, _stats = ansiblerun.playbook(module_playbook, env)
    assert rc == 0 and tasks["Decide"]["skipped"] is True
    assert reported == "skip: " + tasks["Decide"]["msg"]


def test_b_no_gpu_host_fails_when_peermem_is_required(tmp_path, playbook):
    root = tmp_path / "host"
    env = host_env(root, gputree.no_gpu_host(root))
    rc, tasks, stats = ansiblerun.playbook(playbook, env, extra_vars={"peermem_required": True})
    assert rc != 0
    result = tasks[REQUIRE_TASK]
    assert result["failed"] is True
    assert result["msg"].startswith("peermem_required is true but no NVIDIA GPU on this host")
    assert stats["failures"] == 1


def test_c_gpu_host_loads_persists_then_changes_nothing(tmp_path, playbook):
    root = tmp_path / "host"
    env = host_env(root, gputree.gpu_host(root))
    before = gputree.tree_files(root)

    rc, tasks, stats = ansiblerun.playbook(playbook, env, check=True, diff=True)
    assert rc == 0, tasks
    predicted = tasks[PEERMEM_TASK]
    assert predicted["changed"] is True
    assert predicted["changes"] == ["load nvidia_peermem", "write /" + UNIT, "enable rdmaops-peermem.service"]
    assert gputree.tree_files(root) == before

    rc, tasks, stats = ansiblerun.playbook(playbook, env, diff=True)
    assert rc == 0, tasks
    result = tasks[PEERMEM_TASK]
    assert result["changed"] is True and stats["changed"] == 1
    assert result["changes"] == predicted["changes"]
    report = result["peermem"]
    assert report["module"] == "nvidia_peermem" and report["loaded"] is True and report["loaded_now"] is True
    assert report["memory_peers_version"] == "535.104.05"
    assert report["dmabuf"]["usable"] is False  # proprietary flavour
    assert (root / "sys/module/nvidia_peermem/initstate").read_text() == "live\n"
    assert "ExecStart=/sbin/modprobe nvidia-peermem" in (root / UNIT).read_text()
    assert os.readlink(str(root / "etc/systemd/system/multi-user.target.wants/rdmaops-peermem.service")) == "/" + UNIT
    unit_diff = [d for d in result["diff"] if d.get("after_header") == "/" + UNIT]
    assert unit_diff and unit_diff[0]["before"] == ""
    assert tasks[REPORT_TASK]["msg"][0].startswith("load: load nvidia_peermem for NVIDIA driver 535.104.05")
    assert tasks[REPORT_TASK]["msg"][1] == ("loaded: True; visible to NCCL through: "
                                            "/sys/kernel/mm/memory_peers/nv_mem/version, /sys/module/nvidia_peermem/version")

    rc, tasks, stats = ansiblerun.playbook(playbook, env)
    assert rc == 0, tasks
    assert tasks[PEERMEM_TASK]["changed"] is False
    assert stats["changed"] == 0
    loads = [c for c in kmodsim.Sim(root).calls() if c[0].endswith("modprobe") and "--dry-run" not in c]
    assert len(loads) == 1  # the second run loaded nothing


def test_d_invalid_argument_fails_with_the_rebuild_explanation(tmp_path, playbook):
    root = tmp_path / "host"
    env = host_env(root, gputree.gpu_host(
        root, modinfo="nvidia-peermem-535-stub.txt",
        peermem_behaviour=dict(rc=1, stderr=gputree.fixture("modprobe", "nvidia_peermem-invalid-argument.txt")),
    ))
    rc, tasks, stats = ansiblerun.playbook(playbook, env)
    assert rc != 0
    result = tasks[PEERMEM_TASK]
    assert result["failed"] is True
    assert "could not insert 'nvidia_peermem': Invalid argument" in result["msg"]
    assert "the NVIDIA driver was built before OFED was installed" in result["msg"]
    assert "dkms install nvidia/535.104.05 -k 5.15.0-119-generic --force" in result["msg"]
    assert result["peermem"]["diagnosis"]["category"] == "built_without_peer_symbols"
    assert not (root / UNIT).exists()
    assert not (root / "sys/module/nvidia_peermem").exists()


def test_e_a_unit_we_did_not_write_is_left_alone_unless_adopted(tmp_path, playbook):
    root = tmp_path / "host"
    env = host_env(root, gputree.gpu_host(root))
    unit = root / UNIT
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text("[Service]\nExecStart=/usr/local/bin/site-peermem\n")
    rc, tasks, stats = ansiblerun.playbook(playbook, env)
    assert rc != 0
    result = tasks[PEERMEM_TASK]
    assert result["failed"] is True and result["changed"] is False
    assert "/%s exists and was not written by rdmaops.roce" % UNIT in result["msg"]
    assert unit.read_text() == "[Service]\nExecStart=/usr/local/bin/site-peermem\n"
    assert not (root / "sys/module/nvidia_peermem").exists()
    rc, tasks, stats = ansiblerun.playbook(playbook, env, extra_vars={"peermem_adopt": True})
    assert rc == 0, tasks
    assert "ExecStart=/sbin/modprobe nvidia-peermem" in unit.read_text()


def test_f_a_failed_load_puts_the_options_file_back(tmp_path, playbook):
    root = tmp_path / "host"
    env = host_env(root, gputree.gpu_host(
        root, peermem_behaviour=dict(rc=1, stderr=gputree.fixture("modprobe", "nvidia_peermem-invalid-argument.txt"))))
    rc, tasks, stats = ansiblerun.playbook(playbook, env, extra_vars={"peermem_options": "peerdirect_support=1"})
    assert rc != 0
    result = tasks[PEERMEM_TASK]
    assert result["failed"] is True and result["changed"] is False
    assert result["rolled_back"] == ["write /etc/modprobe.d/rdmaops-peermem.conf"]
    assert not (root / "etc/modprobe.d/rdmaops-peermem.conf").exists()
