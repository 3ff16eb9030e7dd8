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


# issue 20: hostile and missing data, and runs that checked nothing ---------------------------------
def run_hosts(tmp_path, hosts_yaml, switches_yaml="{}"):
    """PLAYBOOK with its ``hosts:`` and ``switches:`` arguments replaced (YAML flow text, templated in the play)."""
    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    playbook = tmp_path / "check.yml"
    text = PLAYBOOK.replace("""        hosts:
          vm1: {rdma: "{{ ansible_facts['rdma'] }}", nic: null}
        switches: "{{ switches | default({}) }}"
""", "        hosts: %s\n        switches: %s\n" % (hosts_yaml, switches_yaml))
    assert text != PLAYBOOK
    playbook.write_text(text)
    return ansiblerun.playbook(playbook, ansiblerun.tree_env(root, [bindir]),
                               extra_vars=dict(roce_fabric=FABRIC, report_dir=str(tmp_path / "reports")))


def test_facts_and_switch_state_of_the_wrong_shape_are_findings_not_python_errors(tmp_path):
    """Class 4: a list where rdma_facts writes a mapping, text where a number belongs, "off" for a boolean."""
    rc, tasks, _stats = run_hosts(
        tmp_path,
        """{vm1: {rdma: "{{ ansible_facts['rdma'] | combine({'modules': ['rdma_cm', 'ib_uverbs']}) }}", nic: null}}""",
        """{leaf1: {fabric: {switch_mtu: "9216 bytes", pfc_watchdog: "off", pfc_priorities: [3]}}}""")
    fabric = tasks["Check the fabric"]
    assert "object has no attribute" not in json.dumps(fabric) and "not supported between" not in json.dumps(fabric), fabric
    assert fabric.get("failed") is not True, fabric["msg"]
    unread = dict((f["field"], f) for f in fabric["findings"] if f["check"] == "input")
    assert set(unread) == {"rdma.modules", "fabric.switch_mtu"}
    assert unread["rdma.modules"]["host"] == "vm1" and "hosts.vm1.rdma.modules is a list" in unread["rdma.modules"]["hint"]
    assert "switches.leaf1.fabric.switch_mtu is text" in unread["fabric.switch_mtu"]["hint"]
    watchdog = [f for f in fabric["findings"] if f["field"] == "pfc_watchdog"][0]
    assert (watchdog["actual"], watchdog["passed"]) == (False, False)
    assert fabric["passed"] is False and rc == 2  # the play's assert fails on it
    report = json.loads((tmp_path / "reports" / "latest" / "report.json").read_text())
    assert report["passed"] is False and report["summary"]["unproven"]


def test_gpu_host_without_module_facts_is_not_checked_for_peermem(tmp_path):
    """Class 5: the recorded VM given a GPU and no module facts: peermem is not checked, not "not loaded"."""
    rc, tasks, _stats = run_hosts(
        tmp_path,
        """{gpu1: {rdma: "{{ ansible_facts['rdma'] | dict2items | rejectattr('key', 'equalto', 'modules') | items2dict
                              | combine({'gpus': [{'pci_address': '0000:3e:00.0', 'device_id': '0x2330', 'numa_node': 0}]}) }}",
                   nic: null}}""")
    fabric = tasks["Check the fabric"]
    peermem = [f for f in fabric["findings"] if f["check"] == "peermem"]
    assert [(f["passed"], f["actual"]) for f in peermem] == [(None, "not checked")], peermem
    assert [f for f in fabric["findings"] if f["passed"] is False] == []
    assert rc == 0 and fabric["passed"] is True


def test_hosts_with_no_data_do_not_pass(tmp_path):
    """Class 6: nothing checked is not a pass."""
    rc, tasks, _stats = run_hosts(tmp_path, "{vm1: null, vm2: {}}")
    fabric = tasks["Check the fabric"]
    assert fabric["passed"] is False and fabric["summary"]["checked"] == 0 and rc == 2
    assert fabric["summary"]["unproven"][0] == "nothing was checked"
    report = json.loads((tmp_path / "reports" / "latest" / "report.json").read_text())
    assert report["passed"] is False
    assert (tmp_path / "reports" / "latest" / "report.md").read_text().startswith("# Fabric validation: NOT PROVEN")


def test_validate_with_an_unreachable_host_is_not_proven(tmp_path):
    """Class 6 through playbooks/validate.yml: a host of the play that cannot be reached is named, and the
    run fails instead of saying PASSED for the hosts that were left."""
    import sys

    import yaml

    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"rdma_hosts": {"hosts": {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        # nothing listens on port 9 (discard): ssh is refused at once
        "ghost": {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_connection": "ssh", "ansible_user": "nobody",
                  "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}}}}}}))
    reports = tmp_path / "reports"
    proc = ansiblerun.run("ansible-playbook", ["-i", str(inventory), os.path.join(ansiblerun.REPO, "playbooks", "validate.yml"),
                                               "-e", json.dumps({"validate_report_dir": str(reports)})],
                          env_extra={"RDMAOPS_HOST_ROOT": str(root), "PATH": bindir + os.pathsep + os.environ["PATH"]})
    out = proc.stdout.replace("\n        ", " ")
    report = json.loads((reports / "latest" / "report.json").read_text())
    assert report["passed"] is False, out
    assert [p for p in report["summary"]["unproven"] if p.startswith("host ghost: nothing checked")], report["summary"]
    assert "fabric NOT PROVEN" in out and "fabric PASSED" not in out
    assert "nothing failed, but the fabric is not proven; not proven: host ghost" in out
    assert proc.returncode != 0
