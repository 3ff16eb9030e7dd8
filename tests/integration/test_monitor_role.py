"""The monitor role and the monitor_collector module through ansible, against the Soft-RoCE lab VM as captured:
one module call per host, idempotent (the script is regenerated from the AnsiballZ payload's sources to the
same bytes), check mode writes nothing, and the script it installs runs and exports the host's drift."""

import json
import os
import subprocess
import sys

import ansiblerun
import hosttree

PLAYBOOK = """\
- name: Monitor role on the captured lab VM
  hosts: localhost
  gather_facts: false
  vars:
    roce_fabric: {preset: lossless, roce_dscp: 26, roce_priority: 3, cnp_dscp: 48, cnp_priority: 6, host_mtu: 9000, switch_mtu: 9216}
    monitor_install_node_exporter: false
    monitor_rules_path: "%(rules)s"
  roles:
    - role: rdmaops.roce.monitor
"""
TASK = "RoCE collector, its timer and the intent snapshot"


def lab_vm(tmp_path):
    root = tmp_path / "vm"
    manifest = hosttree.load("rxe_bookworm_mtu1500.json")
    manifest["commands"]["dcb -j pfc show dev ens4"] = dict(rc=1, stdout="\n", stderr="Attribute read: Operation not supported\n")
    bindir = hosttree.materialize(manifest, root)
    (tmp_path / "play.yml").write_text(PLAYBOOK % dict(rules=tmp_path / "rules.yml"))
    return root, bindir, ansiblerun.tree_env(root, [bindir])


def play(tmp_path, env, check=False, diff=False):
    rc, tasks, stats = ansiblerun.playbook(tmp_path / "play.yml", env, check=check, diff=diff)
    return rc, stats, dict((name.split(" : ", 1)[-1], result) for name, result in tasks.items())


def test_role_installs_once_then_changes_nothing_and_the_collector_runs(tmp_path):
    root, bindir, env = lab_vm(tmp_path)
    rc, stats, tasks = play(tmp_path, env, check=True, diff=True)
    assert rc == 0, tasks
    assert tasks[TASK]["changed"] is True and not (root / "usr/local/sbin/rdmaops-roce-collector").exists()

    rc, stats, tasks = play(tmp_path, env)
    assert rc == 0, tasks
    assert tasks[TASK]["changed"] is True
    assert tasks[TASK]["node_exporter"]["installed"] is False  # the captured VM has none; installing is off here
    snapshot = json.loads((root / "etc/rdmaops/monitor-intent.json").read_text())
    assert snapshot["host"] == "localhost" and snapshot["intent"]["host_mtu"] == 9000
    assert (tmp_path / "rules.yml").read_text().startswith("# Managed by rdmaops.roce (monitor)")

    rc, stats, tasks = play(tmp_path, env)
    assert rc == 0 and stats["changed"] == 0, tasks

    # the installed script, run as systemd would (no ansible on its path), reads the VM's MTU 1500 as drift
    script = (root / "usr/local/sbin/rdmaops-roce-collector").read_text()
    assert script.startswith("#!%s\n" % sys.executable)
    proc = subprocess.run([sys.executable, "-S", "-E", str(root / "usr/local/sbin/rdmaops-roce-collector"),
                           "--intent", "/etc/rdmaops/monitor-intent.json", "--textfile-dir", "/var/lib/prometheus/node-exporter"],
                          env=dict(RDMAOPS_HOST_ROOT=str(root), PATH=os.pathsep.join([bindir, "/usr/bin", "/bin"])),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    metrics = (root / "var/lib/prometheus/node-exporter/rdmaops_roce.prom").read_text().splitlines()
    assert 'rdmaops_roce_intent_drift{check="mtu"} 1' in metrics
    assert any(line.startswith("# drift: check=mtu field=mtu device=rxe0/1 expected=9000 actual=1500: set ens4's MTU to 9000")
               for line in metrics)
