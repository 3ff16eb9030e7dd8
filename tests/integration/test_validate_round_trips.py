"""playbooks/validate.yml through ansible-playbook on the lab's Soft-RoCE VM recorded (dcb's real answer
for virtio_net): the nic layer's check-mode read and the wait for the perftest servers are made in the
call that reads the counters after the tests, so the host gets validate_probe's two calls and no
nic_layer or async_status of its own (counted by benchmarks/callback_plugins/bench_count.py), with the
report's QoS findings as nic_layer's read gives them. A read nic_layer fails is reported as not read,
with its message. The wait, against ansible's real async_wrapper: a server's result (its failure
included) comes back, and a job past its limit is killed by Ansible and waited for, no process left."""

import json
import os
import signal
import subprocess
import sys

import hosttree
import monitortrees

import ansiblerun

BENCH = os.path.join(ansiblerun.REPO, "benchmarks", "callback_plugins")


def validate(tmp_path, root, bindirs):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"children": {"rdma_hosts": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    reports = tmp_path / "reports"
    summary = tmp_path / "counts.json"
    env = dict(ansiblerun.tree_env(root, bindirs), ANSIBLE_CALLBACK_PLUGINS=BENCH, ANSIBLE_CALLBACKS_ENABLED="bench_count",
               RDMAOPS_BENCH_EVENTS=str(tmp_path / "events"), RDMAOPS_BENCH_SUMMARY=str(summary))
    proc = ansiblerun.run("ansible-playbook", ["-i", inventory, os.path.join(ansiblerun.REPO, "playbooks", "validate.yml"),
                                               "-e", json.dumps({"validate_report_dir": str(reports)})], env_extra=env)
    report = reports / "latest" / "report.json"
    assert report.exists(), proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc, json.loads(report.read_text()), json.loads(summary.read_text())["localhost"]["modules"]


def qos_hints(report):
    return dict((f["field"], f["hint"]) for f in report["findings"] if f["check"] in ("qos", "ecn", "tos") and f["passed"] is None)


def test_the_vm_gets_two_calls_and_the_qos_findings_of_nic_layers_read(tmp_path):
    proc, report, modules = validate(tmp_path, *monitortrees.rxe_host(tmp_path))
    # the recorded VM's rdma_cm ToS is 0, not the intent's 106: read by the nic layer, a finding
    tos = [(f["device"], f["field"], f["passed"], f["actual"]) for f in report["findings"] if f["check"] == "tos"]
    assert tos == [("rxe0/1", "tos", False, 0), ("rxe0/1", "roce_mode", True, "v2")] and report["summary"]["failed_hosts"] == ["localhost"], tos
    assert proc.returncode != 0 and "the fabric failed 1 check(s) on localhost" in proc.stdout.replace("\n        ", " ")
    # before: validate_probe twice and nic_layer once (one host: no peer to ping or measure)
    assert modules == {"rdmaops.roce.validate_probe": 2}, modules
    hints = qos_hints(report)
    assert hints["trust"] == hints["pfc"] == "the driver exposes no DCB (trust, PFC) on ens4", hints
    assert hints["ecn"] == "the driver exposes no ECN (DCQCN) settings on ens4", hints
    assert "nic_layer failed" not in json.dumps(report)


def test_a_read_nic_layer_fails_is_reported_as_not_read_with_its_message(tmp_path):
    """Before, the role's nic_layer task ran with failed_when false, which also cleared the result's
    failed: the engines that had read nothing were reported as a driver without DCB or ECN."""
    manifest = hosttree.load("rxe_bookworm_mtu9000.json")
    manifest["commands"]["dcb -j pfc show dev ens4"] = dict(rc=1, stdout="", stderr="Error: Attribute read: No such device\n")
    root = tmp_path / "host"
    _proc, report, _modules = validate(tmp_path, root, [hosttree.materialize(manifest, root)])
    why = "NIC QoS state not read: nic_layer failed: ens4: dcb -j pfc show failed: Error: Attribute read: No such device"
    assert qos_hints(report) == {"trust": why, "ecn": why, "tos": why}, qos_hints(report)


PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Start the servers
      rdmaops.roce.validate_probe:
        concurrent: true
        commands:
          - {argv: [sh, -c, "sleep 2; echo served"], item: [ib_write_bw, 0]}
          - {argv: [sh, -c, "echo refused >&2; exit 3"], item: [ib_write_lat, 0]}
      async: 60
      poll: 0
      register: servers
    - name: Start a server that hangs
      rdmaops.roce.validate_probe:
        concurrent: true
        commands: [{argv: [sleep, "%(hang)s"]}]
      async: 3
      poll: 0
      register: hung
    - name: Wait for them and read
      rdmaops.roce.validate_probe:
        wait_jobs:
          - {jid: "{{ servers.ansible_job_id }}", results_file: "{{ servers.results_file }}", seconds: 75}
          - {jid: "{{ hung.ansible_job_id }}", results_file: "{{ hung.results_file }}", seconds: 18}
        commands: [{argv: [pgrep, -f, "sleep %(hang)s"]}]
      register: after
    - name: Write it
      ansible.builtin.copy:
        content: "{{ after | to_json }}"
        dest: "%(out)s"
        mode: "0600"
"""


def test_the_servers_job_is_waited_for_with_its_results_and_a_hung_one_is_gone(tmp_path):
    hang = "617.25"  # a sleep no other process runs
    play = tmp_path / "play.yml"
    out = tmp_path / "after.json"
    play.write_text(PLAY % dict(hang=hang, out=out))
    proc = ansiblerun.run("ansible-playbook", ["-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, play])
    try:
        assert proc.returncode == 0, proc.stdout[-4000:]
        after = json.loads(out.read_text())
        served, hung = after["jobs"]
        assert served["finished"] is True and [(r["item"], r["rc"], r["stdout"], r["stderr"]) for r in served["results"]] == [
            (["ib_write_bw", 0], 0, "served", ""), (["ib_write_lat", 0], 3, "", "refused")]
        assert hung["finished"] is True and hung["failed"] is True and hung["msg"] == "Timeout exceeded"
        # read after the waits: Ansible killed the hung job at its limit, and the call waited for that
        assert after["results"][0]["rc"] == 1, after["results"]
    finally:
        # a server left behind by a failure above: ended by its id
        left = subprocess.run(["pgrep", "-x", "-f", "sleep %s" % hang], capture_output=True, text=True, check=False).stdout.split()
        for pid in left:
            os.kill(int(pid), signal.SIGKILL)
        assert not left
