"""rdmaops.roce.fabric_check run by ansible-playbook on localhost: rdma_facts reads a recorded lab VM
(tests/unit/fixtures/hosts) and the action plugin checks it against the lab intent on the controller
and writes the report."""

import json
import os

import hosttree
import ansiblerun

PLAYBOOK = """---
- name: Check a recorded host with fabric_check
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the RDMA state
      rdmaops.roce.rdma_facts:
        gpu_topology: false

    - name: Check the fabric
      rdmaops.roce.fabric_check:
        intent: "{{ roce_fabric | rdmaops.roce.roce_intent }}"
        hosts:
          vm1: {rdma: "{{ ansible_facts['rdma'] }}", nic: null}
        switches: "{{ switches | default({}) }}"
        report_dir: "{{ report_dir }}"
      register: fabric

    - name: Fail on findings
      ansible.builtin.assert:
        that: fabric.passed
"""
FABRIC = dict(preset="lossless", roce_dscp=26, roce_priority=3, cnp_dscp=48, cnp_priority=6, host_mtu=9000, switch_mtu=9216)


def run(tmp_path, tree, check=False, **extra):
    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load(tree), root)
    playbook = tmp_path / "check.yml"
    playbook.write_text(PLAYBOOK)
    extra_vars = dict(roce_fabric=FABRIC, report_dir=str(tmp_path / "reports"))
    extra_vars.update(extra)
    return ansiblerun.playbook(playbook, ansiblerun.tree_env(root, [bindir]), extra_vars=extra_vars, check=check)


def test_healthy_recorded_vm_passes_and_the_report_is_written(tmp_path):
    rc, tasks, stats = run(tmp_path, "rxe_bookworm_mtu9000.json")
    fabric = tasks["Check the fabric"]
    assert rc == 0, fabric
    assert fabric["changed"] is False and fabric["passed"] is True and stats["changed"] == 0
    latest = tmp_path / "reports" / "latest"
    assert os.path.realpath(str(latest)) == fabric["report_path"]
    data = json.loads((latest / "report.json").read_text())
    assert data["passed"] is True
    assert ("mtu", "vm1", "mtu", True) in [(f["check"], f["host"], f["field"], f["passed"]) for f in data["findings"]]
    assert (latest / "junit.xml").exists() and (latest / "report.md").exists()


def test_mtu_fault_fails_with_host_field_and_hint_in_check_mode_too(tmp_path):
    rc, tasks, _stats = run(tmp_path, "rxe_bookworm_mtu1500.json", check=True)
    assert rc == 2
    fabric = tasks["Check the fabric"]
    bad = [f for f in fabric["findings"] if f["passed"] is False]
    assert [(f["host"], f["field"], f["actual"]) for f in bad] == [("vm1", "mtu", 1500), ("vm1", "active_mtu", 1024)]
    assert "ens4" in bad[0]["hint"]
    assert json.loads((tmp_path / "reports" / "latest" / "report.json").read_text())["passed"] is False


def test_a_raw_intent_is_refused_naming_the_fix(tmp_path):
    playbook = tmp_path / "bad.yml"
    playbook.write_text(PLAYBOOK.replace("roce_fabric | rdmaops.roce.roce_intent", "roce_fabric"))
    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    rc, tasks, _stats = ansiblerun.playbook(playbook, ansiblerun.tree_env(root, [bindir]),
                                            extra_vars=dict(roce_fabric=FABRIC, report_dir=str(tmp_path / "r")))
    assert rc == 2
    msg = tasks["Check the fabric"]["msg"]
    assert "intent lacks" in msg and "rdmaops.roce.roce_intent" in msg and "Traceback" not in msg
    assert not (tmp_path / "r").exists()
