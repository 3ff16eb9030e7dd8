"""The rollout's two phases against a real Slurm (tests/unit/slurmcluster.py, on ports of its own):
a no-op is phase one alone with one scheduler read; a scheduler that stops answering between the
phases stops phase two before anything is drained; an interrupted phase two leaves its drained
node with our reason and the next run finishes it. Hosts, tools and inventory as in
test_rollout_slurm.py (a ring change is a link reset, a sysctl an online change)."""

import json
import os
import re
import signal
import subprocess
import time

import pytest

import ansiblerun
import slurmcluster
# hosts is a fixture: imported for the tests below, which take it as an argument
from test_rollout_slurm import hosts, in_service, inventory, ring_state, rings, site  # noqa: F401  # pylint: disable=unused-import

pytestmark = pytest.mark.skipif(slurmcluster.available() is not None, reason=str(slurmcluster.available()))

CALLBACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callback_plugins")
BENCH = os.path.join(ansiblerun.REPO, "benchmarks", "callback_plugins")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = slurmcluster.SlurmCluster(tmp_path_factory.mktemp("slurm"), nodes=("vm1", "vm2"), port_base=17117).start()
    yield cluster
    cluster.stop()


def test_a_no_op_is_phase_one_alone_with_one_scheduler_read(tmp_path, cluster, hosts):  # noqa: F811
    inv = inventory(tmp_path, hosts)
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:]
    # the gate on for the no-op: a run that changed nothing validates nothing
    inv = inventory(tmp_path, hosts, rdmaops_gate="validate", validate_report_dir=str(tmp_path / "reports"))
    # the no-op, its module executions counted per host by benchmarks/callback_plugins/bench_count.py
    summary = tmp_path / "counts.json"
    env = dict(SLURM_CONF=cluster.conf, ANSIBLE_CALLBACK_PLUGINS=BENCH, ANSIBLE_CALLBACKS_ENABLED="bench_count",
               RDMAOPS_BENCH_EVENTS=str(tmp_path / "events"), RDMAOPS_BENCH_SUMMARY=str(summary))
    proc = ansiblerun.run("ansible-playbook", ["-i", str(inv), os.path.join(ansiblerun.REPO, "playbooks", "site.yml"),
                                               "--tags", "tuning"], env_extra=env, timeout=600)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert re.search(r"gpu1 : ok=\d+ changed=0 ", out) and re.search(r"gpu2 : ok=\d+ changed=0 ", out), out[-2000:]
    assert out.count("TASK [rdmaops.roce.rollout : Ask the scheduler about every node of the rollout]") == 1
    assert "Ask the scheduler again" not in out and "phase two:" not in out and "Drain the wave" not in out
    assert "rdmaops.roce.validate" not in out and not (tmp_path / "reports").exists()
    counts = json.loads(summary.read_text())
    modules = dict((host, counts[host]["modules"]) for host in ("gpu1", "gpu2"))
    # one scheduler read for the run (on gpu1: no rdmaops_slurm_controller) and the preflight's call, which
    # also read the tuning layer and found nothing to change; the closing facts play reuses the preflight's
    assert sum(m.get("rdmaops.roce.scheduler", 0) for m in modules.values()) == 1, modules
    for host, counted in modules.items():
        assert counted.get("rdmaops.roce.rdma_facts") == 1 and "rdmaops.roce.tuning_layer" not in counted, (host, counted)
        assert sum(counted.values()) <= 2, (host, counted)


def test_a_scheduler_that_stops_answering_between_the_phases_drains_nothing(tmp_path, cluster, hosts):  # noqa: F811
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)},
                    tuning_sysctl_profile={"net.core.rmem_max": 4194304})
    env = dict(SLURM_CONF=cluster.conf, ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, ANSIBLE_CALLBACKS_ENABLED="rollout_fault",
               RDMAOPS_FAULT_AT_PLAY="Rollout phase two",
               RDMAOPS_FAULT_COMMAND="kill $(cat %s/slurmctld.pid); sleep 2" % cluster.dir)
    try:
        proc = ansiblerun.run("ansible-playbook", ["-i", str(inv), os.path.join(ansiblerun.REPO, "playbooks", "site.yml"),
                                                   "--tags", "tuning"], env_extra=env, timeout=600)
    finally:
        cluster.start_controller()
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    # phase one ran: gpu2's online change is made; phase two stopped at its read, before any drain
    assert (hosts["gpu2"]["root"] / "proc/sys/net/core/rmem_max").read_text() == "4194304\n"
    assert "Ask the scheduler again before draining anything" in out and "Slurm does not answer" in out, out[-3000:]
    assert "Drain the wave" not in out
    assert ring_state(hosts, "gpu1")["rx"] == 256
    assert in_service(cluster, "vm1") and in_service(cluster, "vm2")


def test_an_interrupted_phase_two_is_finished_by_the_next_run(tmp_path, cluster, hosts):  # noqa: F811
    job = cluster.submit("vm1", 300)
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)}, rdmaops_drain_timeout=600)
    argv = [os.path.join(ansiblerun.BIN, "ansible-playbook"), "-i", str(inv),
            os.path.join(ansiblerun.REPO, "playbooks", "site.yml"), "--tags", "tuning"]
    with open(tmp_path / "interrupted.out", "w") as log:
        run = subprocess.Popen(argv, env=ansiblerun.ansible_env(dict(SLURM_CONF=cluster.conf)), cwd=ansiblerun.REPO,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + 300
            while time.time() < deadline and run.poll() is None:
                state, reason = cluster.node("vm1")
                if "DRAIN" in state.split("+") and (reason or "").startswith("rdmaops.roce:"):
                    break
                time.sleep(1)
            time.sleep(2)  # waiting for the job now
            os.killpg(run.pid, signal.SIGINT)  # Ctrl-C
            run.wait(timeout=60)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
    state, reason = cluster.node("vm1")
    assert "DRAIN" in state.split("+") and reason.startswith("rdmaops.roce: link_reset: "), (state, reason)
    assert ring_state(hosts, "gpu1")["rx"] == 256  # interrupted while waiting: nothing disruptive made
    cluster.run("scancel", job)
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "(already drained by a rollout)" in out
    assert ring_state(hosts, "gpu1")["rx"] == 128
    assert in_service(cluster, "vm1")


NO_OP_LIMIT = 2  # module executions per host on a no-op of site.yml over LAYERS, the scheduler and the monitor on
LAYERS = "modules,tuning,nccl,monitor"
# the recorded trees have no default route; NCCL's bootstrap interface comes from this one
ROUTES = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "ens3\t00000000\t0202000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n")


def counted_run(cluster, inv, tmp_path, name, *args, tags=LAYERS):
    """site.yml over LAYERS (the preflight and the closing facts play run with any tags), its module
    executions counted per host by benchmarks/callback_plugins/bench_count.py."""
    summary = tmp_path / ("%s.json" % name)
    env = dict(SLURM_CONF=cluster.conf, ANSIBLE_CALLBACK_PLUGINS=BENCH, ANSIBLE_CALLBACKS_ENABLED="bench_count",
               RDMAOPS_BENCH_EVENTS=str(tmp_path / ("%s.events" % name)), RDMAOPS_BENCH_SUMMARY=str(summary))
    proc = ansiblerun.run("ansible-playbook", ["-i", str(inv), os.path.join(ansiblerun.REPO, "playbooks", "site.yml"),
                                               "--tags", tags] + list(args), env_extra=env, timeout=600)
    (tmp_path / ("%s.out" % name)).write_text(proc.stdout + proc.stderr)
    counts = json.loads(summary.read_text()) if summary.exists() else {}
    return proc, " ".join((proc.stdout + proc.stderr).split()), counts


def changed_of(out, host):
    found = re.search(r"%s : ok=\d+ changed=(\d+) " % host, out)
    return int(found.group(1)) if found else None


def test_a_no_op_with_the_scheduler_and_the_monitor_runs_at_most_two_modules_per_host(tmp_path, cluster, hosts):  # noqa: F811
    for made in hosts.values():
        (made["root"] / "proc/net").mkdir(parents=True, exist_ok=True)
        (made["root"] / "proc/net/route").write_text(ROUTES)
    # both hosts are GPU hosts (nccl.conf needs no GPU), the monitor on without node_exporter (none here)
    inv = inventory(tmp_path, hosts, rdmaops_monitor=True, monitor_install_node_exporter=False, rdmaops_gpu_hosts="rdma_hosts")
    proc, out, counts = counted_run(cluster, inv, tmp_path, "fresh")
    assert proc.returncode == 0, out[-6000:]
    for host in ("gpu1", "gpu2"):  # the fresh run installed the collector and wrote the modules-load file
        assert (hosts[host]["root"] / "usr/local/sbin/rdmaops-roce-collector").exists()
        assert (hosts[host]["root"] / "etc/modules-load.d/rdmaops-roce.conf").exists()
        assert counts[host]["modules"].get("rdmaops.roce.monitor_collector") == 1, counts[host]
        assert counts[host]["modules"].get("rdmaops.roce.kernel_modules") == 1, counts[host]
        assert "NCCL_SOCKET_IFNAME==ens3" in (hosts[host]["root"] / "etc/nccl.conf").read_text()

    proc, out, counts = counted_run(cluster, inv, tmp_path, "noop")
    assert proc.returncode == 0, out[-6000:]
    assert changed_of(out, "gpu1") == 0 and changed_of(out, "gpu2") == 0, out[-3000:]
    modules = dict((host, counts[host]["modules"]) for host in ("gpu1", "gpu2"))
    assert sum(m.get("rdmaops.roce.scheduler", 0) for m in modules.values()) == 1, modules
    for host, counted in modules.items():
        # the preflight's one read judged the collector, nccl.conf, the RDMA core modules and the tuning layer as wanted
        assert not [name for name in counted if name in ("rdmaops.roce.monitor_collector", "rdmaops.roce.kernel_modules",
                                                         "rdmaops.roce.nccl_conf", "rdmaops.roce.tuning_layer")], counted
        assert counted.get("rdmaops.roce.rdma_facts") == 1, counted
        assert sum(counted.values()) <= NO_OP_LIMIT, (host, counted)

    # drift on gpu2: the collector script edited, the timer's unit removed, the modules-load file emptied, a value of
    # nccl.conf's block changed, a kernel parameter of the tuning profile set back at runtime
    root = hosts["gpu2"]["root"]
    script = root / "usr/local/sbin/rdmaops-roce-collector"
    script.write_text(script.read_text() + "# edited\n")
    (root / "etc/systemd/system/rdmaops-roce-monitor.timer").unlink()
    wanted_modules = (root / "etc/modules-load.d/rdmaops-roce.conf").read_text()
    (root / "etc/modules-load.d/rdmaops-roce.conf").write_text(wanted_modules.split("\n", 1)[0] + "\n")
    nccl = root / "etc/nccl.conf"
    wanted_nccl = nccl.read_text()
    nccl.write_text(wanted_nccl.replace("NCCL_IB_RETRY_CNT=7", "NCCL_IB_RETRY_CNT=3"))
    sysctl = root / "proc/sys/net/core/rmem_max"
    wanted_sysctl = sysctl.read_text()  # the inventory's profile: 212992
    sysctl.write_text("4194304\n")
    before = dict((path, path.read_bytes() if path.exists() else None) for path in (
        script, root / "etc/modules-load.d/rdmaops-roce.conf", nccl, sysctl))

    # check mode sees the drift, says it would change gpu2 and changes nothing
    proc, out, counts = counted_run(cluster, inv, tmp_path, "check", "--check", "--diff")
    assert proc.returncode == 0, out[-6000:]
    assert changed_of(out, "gpu2") >= 4 and changed_of(out, "gpu1") == 0, out[-3000:]
    assert "net.core.rmem_max" in out
    assert dict((path, path.read_bytes() if path.exists() else None) for path in before) == before
    assert not (root / "etc/systemd/system/rdmaops-roce-monitor.timer").exists()

    # the same run that meets the drift fixes it: the modules run on gpu2 only
    proc, out, counts = counted_run(cluster, inv, tmp_path, "fix")
    assert proc.returncode == 0, out[-6000:]
    assert changed_of(out, "gpu2") >= 4 and changed_of(out, "gpu1") == 0, out[-3000:]
    assert counts["gpu2"]["modules"].get("rdmaops.roce.tuning_layer") == 1, counts["gpu2"]
    assert "rdmaops.roce.tuning_layer" not in counts["gpu1"]["modules"], counts["gpu1"]
    assert sysctl.read_text() == wanted_sysctl
    assert counts["gpu2"]["modules"].get("rdmaops.roce.monitor_collector") == 1, counts["gpu2"]
    assert counts["gpu2"]["modules"].get("rdmaops.roce.kernel_modules") == 1, counts["gpu2"]
    assert counts["gpu2"]["modules"].get("rdmaops.roce.nccl_conf") == 1, counts["gpu2"]
    assert "rdmaops.roce.monitor_collector" not in counts["gpu1"]["modules"], counts["gpu1"]
    assert nccl.read_text() == wanted_nccl
    assert "# edited" not in script.read_text()
    assert (root / "etc/systemd/system/rdmaops-roce-monitor.timer").exists()
    assert (root / "etc/modules-load.d/rdmaops-roce.conf").read_text() == wanted_modules

    # and the next run is a no-op again, within the limit on both hosts
    proc, out, counts = counted_run(cluster, inv, tmp_path, "noop-again")
    assert proc.returncode == 0 and changed_of(out, "gpu1") == 0 and changed_of(out, "gpu2") == 0, out[-3000:]
    for host in ("gpu1", "gpu2"):
        assert sum(counts[host]["modules"].values()) <= NO_OP_LIMIT, (host, counts[host])

    # a kernel parameter alone drifts on gpu2: the preflight's read of the tuning layer sees it (no other layer
    # changed anything), so the layer's module runs there and puts it back (then nccl_conf, which runs after
    # any layer changed the host, and changes nothing)
    sysctl.write_text("4194304\n")
    proc, out, counts = counted_run(cluster, inv, tmp_path, "sysctl-drift")
    assert proc.returncode == 0 and changed_of(out, "gpu1") == 0 and changed_of(out, "gpu2") == 1, out[-3000:]
    assert counts["gpu2"]["modules"].get("rdmaops.roce.tuning_layer") == 1, counts["gpu2"]
    assert not [name for name in counts["gpu2"]["modules"] if name in ("rdmaops.roce.monitor_collector",
                                                                       "rdmaops.roce.kernel_modules")], counts["gpu2"]
    assert "rdmaops.roce.tuning_layer" not in counts["gpu1"]["modules"], counts["gpu1"]
    assert sysctl.read_text() == wanted_sysctl
