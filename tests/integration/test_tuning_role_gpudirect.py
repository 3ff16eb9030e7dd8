"""The rdmaops.roce.tuning role's GPUDirect part, run by ansible-playbook against the CX-7 GPU
server tree: nothing changes unless ACS or the IOMMU is named, and then the role clears ACS,
writes the boot unit and the GRUB drop-in, says that a reboot is needed, and a second run
changes nothing. lspci/setpci/update-grub are the stand-ins of gputree.pci_stub_tools; every
other part of the role is switched off, so nothing outside the tree is touched."""

import os

import pytest

import ansiblerun
import gputree
import hosttree
from fixtures.hosts import cx7_doca

PLAYBOOK = """---
- name: Apply the tuning role's GPUDirect part to a recorded host
  hosts: localhost
  gather_facts: false
  roles:
    - role: rdmaops.roce.tuning
      vars:
        tuning_sysctl_enabled: false
        tuning_memlock_enabled: false
        tuning_nic_enabled: false
"""
CONFIG_TASK = "rdmaops.roce.tuning : Change PCIe ACS and the IOMMU mode as asked"
REBOOT_TASK = "rdmaops.roce.tuning : Say that the IOMMU change waits for a reboot"
REPORT_TASK = "rdmaops.roce.tuning : Report what stands in the way of GPUDirect RDMA"
DROPIN = "etc/default/grub.d/90-rdmaops-gpudirect.cfg"
UNIT = "etc/systemd/system/rdmaops-gpudirect-acs.service"


@pytest.fixture
def gpu_server(tmp_path):
    root = tmp_path / "host"
    manifest = cx7_doca.manifest()
    manifest["entries"]["/proc/cmdline"] = {"type": "file", "content": "BOOT_IMAGE=/vmlinuz ro quiet\n"}
    manifest["entries"]["/etc/default/grub"] = {"type": "file", "content": 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX=""\n'}
    hosttree.materialize(manifest, root)
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    return root, playbook, ansiblerun.tree_env(root, [gputree.pci_stub_tools(tmp_path)])


def test_default_reports_and_changes_nothing(gpu_server, tmp_path):
    root, playbook, env = gpu_server
    before = gputree.tree_files(root)
    rc, tasks, stats = ansiblerun.playbook(playbook, env)
    assert rc == 0, tasks
    assert tasks[CONFIG_TASK]["skipped"] is True
    assert any("PCIe ACS redirects" in problem for problem in tasks[REPORT_TASK]["msg"])
    assert stats["changed"] == 0 and gputree.tree_files(root) == before
    assert not (tmp_path / "lspci.txt.calls").exists()


def test_consent_clears_acs_sets_iommu_pt_and_says_reboot(gpu_server, tmp_path):
    root, playbook, env = gpu_server
    consent = {"tuning_gpudirect_acs": "disable", "tuning_gpudirect_iommu": "passthrough"}

    rc, tasks, stats = ansiblerun.playbook(playbook, env, extra_vars=consent, check=True)
    assert rc == 0, tasks
    assert tasks[CONFIG_TASK]["changed"] is True and not (root / UNIT).exists() and not (root / DROPIN).exists()

    rc, tasks, stats = ansiblerun.playbook(playbook, env, extra_vars=consent)
    assert rc == 0, tasks
    result = tasks[CONFIG_TASK]
    assert result["changed"] is True
    assert result["acs"]["redirecting_after"] == {} and len(result["acs"]["redirecting_before"]) == 3
    assert result["iommu"]["boot_config_after"] == "quiet iommu=pt"
    assert "from its next reboot (configured through grub)" in tasks[REBOOT_TASK]["msg"]
    # the report is read after the change: ACS was this host's only problem (no IOMMU groups, peermem loaded)
    assert tasks[REPORT_TASK]["skipped"] is True
    assert (root / UNIT).exists() and os.path.islink(root / "etc/systemd/system/multi-user.target.wants/rdmaops-gpudirect-acs.service")
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} iommu=pt"' in (root / DROPIN).read_text()
    assert (tmp_path / "update-grub.calls").read_text() == "update-grub\n"

    rc, tasks, stats = ansiblerun.playbook(playbook, env, extra_vars=consent)
    assert rc == 0 and stats["changed"] == 0, tasks
    assert (tmp_path / "update-grub.calls").read_text() == "update-grub\n"
    assert "from its next reboot" in tasks[REBOOT_TASK]["msg"]  # until the host reboots
