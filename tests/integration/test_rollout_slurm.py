"""playbooks/site.yml with rdmaops_scheduler: slurm against a real Slurm (Debian's slurmctld and one
slurmd per node on this machine, tests/unit/slurmcluster.py): sleep jobs stand for training runs.

Each inventory host is this machine seen through a recorded Soft-RoCE host tree of its own (an
interpreter wrapper sets RDMAOPS_HOST_ROOT and PATH per host), and runs the tuning layer: a
sysctl value is an online change, the fabric NIC's ring size a link reset. ethtool is a stand-in
that answers in ethtool 6.1's virtio_net layout (tests/unit/fixtures/tools/ethtool) and logs each
change with its time, so a test can tell whether the ring changed before or after a job ended."""

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import pytest
import yaml

import ansiblerun
import hosttree
import processes
import slurmcluster
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout import slurm

pytestmark = pytest.mark.skipif(slurmcluster.available() is not None, reason=str(slurmcluster.available()))

RING_FIXTURE = os.path.join(os.path.dirname(hosttree.__file__), "fixtures", "tools", "ethtool")

ETHTOOL = r'''#!{python}
"""ethtool for one virtio_net NIC: -g/-a/-c in ethtool 6.1's captured layout, -G applied and logged, -C adaptive-rx applied."""
import json, os, sys, time
state_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ethtool-state.json")
state = json.load(open(state_path))
fixtures = {fixtures!r}
flag, name = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
if flag == "-i":
    sys.stdout.write(state["info"]); sys.exit(0)
if flag in ("-a", "-c"):
    text = open(os.path.join(fixtures, "virtio_net-ethtool6.1-%s.txt" % flag[1])).read().replace("eth0", name)
    if flag == "-c":
        text = text.replace("Adaptive RX: off", "Adaptive RX: %s" % state.get("adaptive-rx", "off"))
    sys.stdout.write(text); sys.exit(0)
if flag == "-C":  # adaptive-rx only (TX is n/a in the captured layout); online, so not in the ring log
    args = sys.argv[3:]
    if args[::2] != ["adaptive-rx"] or args[1] not in ("on", "off"):
        sys.stderr.write("netlink error: Operation not supported\n"); sys.exit(1)
    state["adaptive-rx"] = args[1]
    json.dump(state, open(state_path, "w")); sys.exit(0)
if flag == "-g":
    text = open(os.path.join(fixtures, "virtio_net-ethtool6.1-g.txt")).read().replace("eth0", name)
    head, current = text.split("Current hardware settings:")
    current = current.replace("RX:\t\t256", "RX:\t\t%d" % state["rx"]).replace("TX:\t\t256", "TX:\t\t%d" % state["tx"])
    sys.stdout.write(head + "Current hardware settings:" + current); sys.exit(0)
if flag == "-G":
    if state.get("ignore"):  # a driver that takes the change and does not make it
        sys.exit(0)
    args = sys.argv[3:]
    for key, value in zip(args[::2], args[1::2]):
        state[key] = int(value)
    state.setdefault("log", []).append([time.time(), " ".join(sys.argv[1:])])
    json.dump(state, open(state_path, "w")); sys.exit(0)
sys.stderr.write("unexpected ethtool %s\n" % " ".join(sys.argv[1:])); sys.exit(2)
'''

WRAPPER = """#!/bin/sh
# this host's tree and tools, for every module Ansible runs on it
export RDMAOPS_HOST_ROOT={root}
export PATH={tools}:{bindir}:$PATH
exec {python} "$@"
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = slurmcluster.SlurmCluster(tmp_path_factory.mktemp("slurm"), nodes=("vm1", "vm2")).start()
    yield cluster
    cluster.stop()


@pytest.fixture
def hosts(tmp_path, cluster):
    """Two hosts (gpu1 on node vm1, gpu2 on node vm2), each with its tree, ethtool and interpreter."""
    manifest = hosttree.load("rxe_bookworm_mtu9000.json")
    made = {}
    for host in ("gpu1", "gpu2"):
        root = tmp_path / host
        bindir = hosttree.materialize(manifest, root)
        (root / "proc/sys/net/core").mkdir(parents=True, exist_ok=True)
        (root / "proc/sys/net/core/rmem_max").write_text("212992\n")
        tools = tmp_path / (host + "-tools")
        tools.mkdir()
        (tools / "ethtool-state.json").write_text(json.dumps(
            dict(rx=256, tx=256, info=manifest["commands"]["ethtool -i ens4"]["stdout"])))
        write_exec(tools / "ethtool", ETHTOOL.format(python=sys.executable, fixtures=RING_FIXTURE))
        write_exec(tools / "python", WRAPPER.format(root=root, tools=tools, bindir=bindir, python=sys.executable))
        made[host] = dict(root=root, tools=tools)
    for node in cluster.nodes:  # every test starts with both nodes in service and no job
        cluster.run("scancel", "-w", node)
        state, reason = cluster.node(node)
        if "DRAIN" in state:
            cluster.run("scontrol", "update", "NodeName=" + node, "State=RESUME", check=True)
    return made


def in_service(cluster, node):
    """Not drained and no drain reason (Slurm's own NOT_RESPONDING flag on a loaded machine aside)."""
    state, reason = cluster.node(node)
    return "DRAIN" not in state.split("+") and reason in (None, "Not responding")


def write_exec(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def ring_state(hosts, host):
    return json.loads((hosts[host]["tools"] / "ethtool-state.json").read_text())


def inventory(tmp_path, hosts, **extra):
    host_vars = {}
    for host, made in hosts.items():
        host_vars[host] = dict(ansible_connection="local", ansible_python_interpreter=str(made["tools"] / "python"),
                               rdmaops_slurm_node_name="vm1" if host == "gpu1" else "vm2")
    group_vars = dict(
        rdmaops_scheduler="slurm", rdmaops_gate="none", rdmaops_scheduler_poll_interval=1, rdmaops_drain_timeout=120,
        tuning_memlock_enabled=False, tuning_nic_interfaces=["ens4"], tuning_nic_rings={"rx": 256, "tx": 256},
        tuning_sysctl_profile={"net.core.rmem_max": 212992}, tuning_sysctl_extra={},
    )
    group_vars.update(extra)
    for host, value in list(group_vars.items()):
        if isinstance(value, dict) and host in hosts:
            host_vars[host].update(group_vars.pop(host))
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"rdma_hosts": {"hosts": host_vars}}, "vars": group_vars}}))
    return path


def site(cluster, inventory_path, *args, check=False):
    argv = ["-i", str(inventory_path), os.path.join(ansiblerun.REPO, "playbooks", "site.yml"), "--tags", "tuning"]
    argv += list(args) + (["--check"] if check else [])
    proc = ansiblerun.run("ansible-playbook", argv, env_extra=dict(SLURM_CONF=cluster.conf), timeout=600)
    # each run's screen output, kept beside the inventory for a person reading a failure
    runs = len(list(inventory_path.parent.glob("site-*.out")))
    (inventory_path.parent / ("site-%d.out" % (runs + 1))).write_text(proc.stdout + proc.stderr)
    return proc, " ".join(proc.stdout.split())


def rings(rx):
    return {"rx": rx, "tx": rx}


def test_a_disruptive_change_waits_for_the_job_then_the_host_is_resumed(tmp_path, cluster, hosts):
    job = cluster.submit("vm1", 30)
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)})
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    # drained with our reason, the job ran to its end, the ring changed only afterwards
    assert "drain vm1: rdmaops.roce: link_reset: ens4: set rx ring from 256 to 128" in out or \
        re.search(r"gpu1 .*drained \(link_reset: ens4: set rx ring from 256 to 128", out), out[-4000:]
    assert cluster.job_state(job) == "COMPLETED"
    end = job_end(cluster, job)
    changes = ring_state(hosts, "gpu1")["log"]
    assert changes and all(stamp >= end for stamp, _cmd in changes), (end, changes)
    assert ring_state(hosts, "gpu1")["rx"] == 128
    # back in service, and gpu2 (nothing disruptive) was never drained
    assert in_service(cluster, "vm1")
    assert in_service(cluster, "vm2")
    assert "gpu2 (node vm2, idle): changes in place: yes; nothing disruptive; drain: no" in out
    waited = int(re.search(r"gpu1: drained \(.*?\), waited (\d+) s, changed; gate not run; resumed", out).group(1))
    assert waited > 0
    # a second run finds nothing to do: no drain, nothing changed in the scheduler or on the hosts
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert re.search(r"gpu1 : ok=\d+ changed=0 ", out) and re.search(r"gpu2 : ok=\d+ changed=0 ", out), out[-2000:]
    assert "drain: yes" not in out


def job_end(cluster, job):
    out = cluster.run("scontrol", "show", "job", "-o", job).stdout
    stamp = re.search(r"EndTime=(\S+)", out).group(1)
    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))


def test_an_online_change_is_made_in_place_under_a_running_job(tmp_path, cluster, hosts):
    job = cluster.submit("vm1", 60)
    inv = inventory(tmp_path, hosts, tuning_sysctl_profile={"net.core.rmem_max": 4194304})
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert (hosts["gpu1"]["root"] / "proc/sys/net/core/rmem_max").read_text() == "4194304\n"
    assert cluster.job_state(job) == "RUNNING"
    state, reason = cluster.node("vm1")
    assert "DRAIN" not in state and reason is None
    assert "gpu1 (node vm1, allocated, 1 job(s)): changes in place: yes; nothing disruptive; drain: no" in out
    assert "rdmaops.roce.scheduler" not in out.split("TASK [rdmaops.roce.rollout : Drain the hosts")[1].split("TASK [")[1] \
        if "Drain the hosts" in out else True
    cluster.run("scancel", job)


def test_a_node_drained_by_someone_else_stays_drained(tmp_path, cluster, hosts):
    cluster.run("scontrol", "update", "NodeName=vm2", "State=DRAIN", "Reason=disk replacement, ticket 4711", check=True)
    inv = inventory(tmp_path, hosts, tuning_nic_rings=rings(128))
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    # it was idle and out of service anyway: changed, but its drain is theirs and it is never resumed
    assert ring_state(hosts, "gpu2")["rx"] == 128
    state, reason = cluster.node("vm2")
    assert "DRAIN" in state.split("+") and reason == "disk replacement, ticket 4711"
    assert in_service(cluster, "vm1")


def boot_config(hosts, host):
    """``host`` boots without iommu=pt, has Debian's GRUB defaults and an update-grub that logs its runs."""
    root, tools = hosts[host]["root"], hosts[host]["tools"]
    (root / "proc/cmdline").write_text("BOOT_IMAGE=/vmlinuz ro quiet\n")
    (root / "etc/default").mkdir(parents=True, exist_ok=True)
    (root / "etc/default/grub").write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX=""\n')
    write_exec(tools / "update-grub", "#!/bin/sh\necho update-grub >> %s\n" % (tools / "update-grub.calls"))
    return root / "etc/default/grub.d/90-rdmaops-gpudirect.cfg", tools / "update-grub.calls"


def test_kernel_arguments_are_written_in_place_and_the_host_drained_for_the_reboot(tmp_path, cluster, hosts):
    """GRUB's kernel arguments disrupt nothing until the reboot: phase one writes them, holds the host
    back as a change of class reboot, and phase two (drained, idle) owes the reboot; with
    rdmaops_reboot: never it says so and the host stays drained for someone to reboot."""
    dropin, calls = boot_config(hosts, "gpu2")
    inv = inventory(tmp_path, hosts, rdmaops_reboot="never", gpu2={"tuning_gpudirect_iommu": "passthrough"})
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "gpu2 (node vm2, idle): changes in place: yes; held back for a drain (reboot): tuning: boot with iommu=pt; drain: yes" in out
    assert "gpu1 (node vm1, idle): changes in place: yes; nothing disruptive; drain: no" in out  # its sysctl file
    assert "iommu=pt" in dropin.read_text() and calls.read_text() == "update-grub\n"
    assert "gpu2 needs a reboot for reboot: tuning: boot with iommu=pt; rdmaops_reboot is never, so it stays drained" in out
    state, reason = cluster.node("vm2")
    assert "DRAIN" in state.split("+") and reason.startswith("rdmaops.roce: reboot: tuning: boot with iommu=pt"), (state, reason)
    assert in_service(cluster, "vm1")
    # the reboot has not happened yet: the next run finds the arguments written and the reboot still owed
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "gpu2 needs a reboot for" in out and calls.read_text() == "update-grub\n"


def test_a_host_whose_reboot_comes_later_is_not_gated_before_it(tmp_path, cluster, hosts):
    """With the gate on, a change that takes effect at a reboot Ansible does not do (rdmaops_reboot: never
    here; scheduler hands it to Slurm, which reboots the node when idle) is not validated before that
    reboot: the gate would test the old state, or a host going down. The report says so; the host that
    changed in place is gated as before."""
    dropin, calls = boot_config(hosts, "gpu2")
    inv = inventory(tmp_path, hosts, rdmaops_reboot="never", rdmaops_gate="validate", validate_rdma=False,
                    validate_qos=False, validate_nccl=False, validate_report_dir=str(tmp_path / "reports"),
                    gpu2={"tuning_gpudirect_iommu": "passthrough"})
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "iommu=pt" in dropin.read_text() and calls.read_text() == "update-grub\n"
    assert ("gate not run: the change takes effect at the reboot, validate the host once it is back "
            "(playbooks/validate.yml --limit gpu2)") in " ".join(out.split()), out[-6000:]
    state, reason = cluster.node("vm2")
    assert "DRAIN" in state.split("+") and reason.startswith("rdmaops.roce: reboot: tuning: boot with iommu=pt"), (state, reason)
    assert "gpu1: changed in place; gate passed" in out, out[-6000:]
    assert in_service(cluster, "vm1")


def test_a_node_drained_by_hand_is_changed_but_neither_rebooted_nor_resumed(tmp_path, cluster, hosts):
    """A change that needs a reboot, on a node an admin drained: it is idle and out of service, so
    the kernel arguments are written, but the reboot is not handed to Slurm (which would replace the
    admin's reason and put the node back in service afterwards) and the node is not resumed."""
    dropin, calls = boot_config(hosts, "gpu2")
    cluster.run("scontrol", "update", "NodeName=vm2", "State=DRAIN", "Reason=disk replacement, ticket 4711", check=True)
    inv = inventory(tmp_path, hosts, rdmaops_reboot="scheduler", gpu2={"tuning_gpudirect_iommu": "passthrough"})
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "held back for a drain (reboot): tuning: boot with iommu=pt" in out
    assert "iommu=pt" in dropin.read_text() and calls.read_text() == "update-grub\n"
    assert "reboot NOT handed to the scheduler: out of service for someone else (disk replacement, ticket 4711)" in out
    state, reason = cluster.node("vm2")
    assert "DRAIN" in state.split("+") and reason == "disk replacement, ticket 4711", (state, reason)
    assert not any(flag.startswith("REBOOT") for flag in state.split("+")), state
    assert in_service(cluster, "vm1")


def test_drain_timeout_skip_leaves_the_host_unchanged_and_in_service(tmp_path, cluster, hosts):
    job = cluster.submit("vm1", 120)
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)}, rdmaops_drain_timeout=3,
                    rdmaops_drain_timeout_action="skip")
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert ring_state(hosts, "gpu1")["rx"] == 256 and "log" not in ring_state(hosts, "gpu1")
    state, reason = cluster.node("vm1")
    assert "DRAIN" not in state and reason is None
    assert cluster.job_state(job) == "RUNNING"
    assert "its jobs did not end within 3 s, left unchanged" in out
    cluster.run("scancel", job)


def test_drain_timeout_fail_names_the_host_and_the_job(tmp_path, cluster, hosts):
    job = cluster.submit("vm1", 120)
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)}, rdmaops_drain_timeout=3)
    proc, out = site(cluster, inv)
    assert proc.returncode != 0
    assert re.search(r"gpu1 \(node vm1\) still runs %s wrap \(RUNNING, root\) after 3 s" % job, out), out[-4000:]
    assert ring_state(hosts, "gpu1")["rx"] == 256
    state, reason = cluster.node("vm1")
    assert "DRAIN" in state and reason.startswith("rdmaops.roce: link_reset:")
    cluster.run("scancel", job)


def test_check_mode_says_what_would_happen_and_changes_nothing(tmp_path, cluster, hosts):
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)})
    proc, out = site(cluster, inv, "--diff", check=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "gpu1 (node vm1, idle): changes in place: none; held back for a drain (link_reset): " \
           "ens4: set rx ring from 256 to 128; ens4: set tx ring from 256 to 128; drain: yes" in out
    assert "drain: yes" in out
    assert in_service(cluster, "vm1")
    assert ring_state(hosts, "gpu1")["rx"] == 256


def test_an_unknown_node_name_is_refused_before_anything_changes(tmp_path, cluster, hosts):
    inv = inventory(tmp_path, hosts, gpu2={"rdmaops_slurm_node_name": "vm9"}, tuning_nic_rings=rings(128))
    proc, out = site(cluster, inv)
    assert proc.returncode != 0
    assert "Slurm does not know the node vm9" in out and "rdmaops_slurm_node_name" in out
    assert ring_state(hosts, "gpu1")["rx"] == 256 and ring_state(hosts, "gpu2")["rx"] == 256


def test_a_malformed_max_unavailable_is_refused_on_the_controller(tmp_path, cluster, hosts):
    inv = inventory(tmp_path, hosts, rdmaops_max_unavailable="half")
    proc, out = site(cluster, inv)
    assert proc.returncode != 0
    assert "rdmaops_max_unavailable is 'half'" in out
    assert "Read the RDMA state, OS, kernel and Python" not in out  # no host was contacted


def test_a_scheduler_that_does_not_answer_stops_the_rollout_before_anything(tmp_path, cluster, hosts):
    inv = inventory(tmp_path, hosts, tuning_nic_rings=rings(128), tuning_sysctl_profile={"net.core.rmem_max": 4194304})
    cluster.stop_controller()
    try:
        proc, out = site(cluster, inv)
    finally:
        cluster.start_controller()
    assert proc.returncode != 0
    assert "Slurm does not answer" in out and "nothing was drained or changed" in out
    assert ring_state(hosts, "gpu1")["rx"] == 256
    assert (hosts["gpu1"]["root"] / "proc/sys/net/core/rmem_max").read_text() == "212992\n"


def test_an_interrupted_rollout_is_finished_by_the_next_run(tmp_path, cluster, hosts):
    """A node the rollout drained before it was stopped (Ctrl-C, a lost host) keeps our reason; the next
    run changes it, validates and resumes it."""
    cluster.run("scontrol", "update", "NodeName=vm1", "State=DRAIN",
                "Reason=rdmaops.roce: link_reset: ens4: set rx ring from 256 to 128", check=True)
    inv = inventory(tmp_path, hosts, gpu1={"tuning_nic_rings": rings(128)})
    proc, out = site(cluster, inv, "--limit", "gpu1")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "(already drained by a rollout)" in out
    assert ring_state(hosts, "gpu1")["rx"] == 128
    assert in_service(cluster, "vm1")


def test_a_host_that_fails_the_gate_stays_drained_with_the_finding(tmp_path, cluster, hosts):
    """The gate is the validate role over the batch; this host's links are at 9000 and the intent says
    4200, which nothing in a tuning run fixes: fabric_check fails its mtu check."""
    inv = inventory(tmp_path, hosts, tuning_nic_rings=rings(128), rdmaops_gate="validate",
                    roce_fabric={"host_mtu": 4200}, validate_rdma=False, validate_qos=False, validate_nccl=False,
                    validate_report_dir=str(tmp_path / "reports"))
    proc, out = site(cluster, inv)
    assert proc.returncode != 0
    state, reason = cluster.node("vm1")
    assert "DRAIN" in state and reason.startswith("rdmaops.roce: gate failed: ") and "mtu" in reason, reason
    assert "gpu1 failed the gate (" in out and "the next wave is not started" in out
    assert (tmp_path / "reports").is_dir()
    # waves of one (rdmaops_max_unavailable 1): gpu2's wave never started
    assert ring_state(hosts, "gpu2")["rx"] == 256 and in_service(cluster, "vm2")


def test_a_host_whose_second_pass_fails_stays_drained_with_what_failed(tmp_path, cluster, hosts):
    """The drained, idle host's change fails (its NIC takes the ring size and keeps the old one, which
    the layer's re-read finds): it stays drained with the finding in its reason, the run fails naming
    the task, and the next wave never starts."""
    state = ring_state(hosts, "gpu1")
    state["ignore"] = True
    (hosts["gpu1"]["tools"] / "ethtool-state.json").write_text(json.dumps(state))
    inv = inventory(tmp_path, hosts, tuning_nic_rings=rings(128))
    proc, out = site(cluster, inv)
    assert proc.returncode != 0
    node_state, reason = cluster.node("vm1")
    assert "DRAIN" in node_state.split("+"), node_state
    assert reason.startswith("rdmaops.roce: failed: ") and "ens4" in reason, reason
    assert "rx ring is 256 after setting 128" in reason and "(for link_reset: ens4" in reason, reason
    assert "gpu1 (node vm1): the second pass failed at " in out and "(rdmaops.roce.tuning_layer)" in out, out[-3000:]
    assert "It stays drained, with this in its drain reason" in out and "The next wave is not started" in out
    assert ring_state(hosts, "gpu1")["rx"] == 256
    # waves of one (rdmaops_max_unavailable 1): gpu2's wave never started
    assert ring_state(hosts, "gpu2")["rx"] == 256 and in_service(cluster, "vm2")
    # the cause fixed, the next run finishes the host and puts it back in service
    state = ring_state(hosts, "gpu1")
    state["ignore"] = False
    (hosts["gpu1"]["tools"] / "ethtool-state.json").write_text(json.dumps(state))
    proc, out = site(cluster, inv)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert ring_state(hosts, "gpu1")["rx"] == 128 and ring_state(hosts, "gpu2")["rx"] == 128
    assert in_service(cluster, "vm1") and in_service(cluster, "vm2")


# -- the scheduler module against the real Slurm: someone else's drain, hangs, odd bytes ----------
ADMIN_REASON = "disk replacement, ticket 4711"


@pytest.fixture
def nodes_in_service(cluster):
    """Both nodes in service, no job and no reboot pending, before and after the test."""
    def reset():
        for node in cluster.nodes:
            for argv in (["scancel", "-w", node], ["scontrol", "cancel_reboot", node],
                         ["scontrol", "update", "NodeName=" + node, "State=RESUME"]):
                # bytes, not text: a test leaves a reason that is not UTF-8; a node in service refuses RESUME
                subprocess.run(argv, env=cluster.env, capture_output=True, check=False, timeout=60)
    reset()
    yield cluster
    reset()


def scheduler(cluster, check=False, **args):
    """``ansible localhost -m rdmaops.roce.scheduler`` against the cluster: (rc, result, seconds)."""
    started = time.time()
    rc, result = ansiblerun.adhoc("rdmaops.roce.scheduler", json.dumps(args), dict(SLURM_CONF=cluster.conf), check=check)
    return rc, result, time.time() - started


def show(cluster, node):
    """The fields of ``scontrol show node -o`` for ``node`` (Reason whole, with Slurm's [user@time])."""
    out = cluster.run("scontrol", "show", "node", "-o", node, check=True).stdout
    head, _sep, reason = out.strip().partition(" Reason=")
    fields = dict(token.split("=", 1) for token in head.split() if "=" in token)
    fields["Reason"] = reason or None
    return fields


def test_reboot_leaves_a_node_drained_by_hand_drained_with_its_reason(nodes_in_service):
    """The rollout's finish step hands reboots to Slurm. On a node an admin drained, Slurm would
    replace the reason and put the node back in service after the reboot (NextState=RESUME, which
    Slurm 22.05 records even without nextstate=), so the module leaves it alone and says so."""
    cluster = nodes_in_service
    cluster.run("scontrol", "update", "NodeName=vm2", "State=DRAIN", "Reason=" + ADMIN_REASON, check=True)
    rc, result, _took = scheduler(cluster, action="reboot", nodes=["vm2"], reason="reboot for mlxconfig next boot")
    assert rc == 0, result
    assert result["changed"] is False and result["foreign"] == ["vm2"] and result["acted"] == []
    assert any("vm2 was not handed to the scheduler for a reboot" in warning and ADMIN_REASON in warning
               for warning in result.get("warnings", [])), result.get("warnings")
    fields = show(cluster, "vm2")
    state = fields["State"].split("+")
    assert "DRAIN" in state and "REBOOT_REQUESTED" not in state and "REBOOT_ISSUED" not in state, fields
    assert fields["Reason"].startswith(ADMIN_REASON + " [root@"), fields
    assert fields.get("NextState") in (None, "", "None"), fields  # nothing scheduled to bring it back
    # and a resume from a rollout leaves it as it is too
    rc, result, _took = scheduler(cluster, action="resume", nodes=["vm2"])
    assert rc == 0 and result["changed"] is False and result["foreign"] == ["vm2"]
    assert show(cluster, "vm2")["Reason"].startswith(ADMIN_REASON)


def test_reboot_of_a_node_the_rollout_drained_is_handed_to_slurm_to_come_back(nodes_in_service):
    """The other side: our own drain, a job still running, so Slurm waits (REBOOT_REQUESTED) and
    records that the node comes back in service afterwards."""
    cluster = nodes_in_service
    job = cluster.submit("vm1", 120)
    rc, result, _took = scheduler(cluster, action="drain", nodes=["vm1"], reason="mlxconfig next boot")
    assert rc == 0 and result["acted"] == ["vm1"]
    rc, result, _took = scheduler(cluster, action="reboot", nodes=["vm1"], reason="reboot for mlxconfig next boot")
    assert rc == 0 and result["acted"] == ["vm1"] and result["foreign"] == []
    fields = show(cluster, "vm1")
    assert "REBOOT_REQUESTED" in fields["State"].split("+") and fields.get("NextState") == "RESUME", fields
    assert fields["Reason"].startswith("rdmaops.roce: reboot for mlxconfig next boot"), fields
    cluster.run("scancel", job)


def test_a_hanging_site_command_is_killed_and_named_within_the_timeout(tmp_path, nodes_in_service):
    """rdmaops_scheduler: command with a busy command that hangs (a child of its own included)."""
    pids = tmp_path / "pids"
    commands = dict(busy="sleep 120 & echo $! > %s; echo $$ >> %s; wait" % (pids, pids), drain="true", resume="true")
    rc, result, took = scheduler(nodes_in_service, action="wait_idle", nodes=["gpu1"], backend="command",
                                 commands=commands, timeout=600, command_timeout=3)
    assert rc != 0 and result["failed"] is True
    assert "busy command for gpu1 did not finish within 3 s (rdmaops_scheduler_timeout)" in result["msg"], result["msg"]
    assert "sleep 120" in result["msg"]
    assert took < 60, took  # ansible's own start-up included; the command itself is killed after 3 s (+2 for KILL)
    assert processes.gone([int(pid) for pid in pids.read_text().split()])


def test_a_slurm_controller_that_hangs_is_reported_within_the_timeout(nodes_in_service):
    """slurmctld stopped (SIGSTOP: it accepts connections and never answers), so scontrol hangs
    until MessageTimeout and beyond; the module kills it after command_timeout and says so."""
    cluster = nodes_in_service
    pid = int(open(os.path.join(cluster.dir, "slurmctld.pid")).read().strip())
    os.kill(pid, signal.SIGSTOP)
    try:
        rc, result, took = scheduler(cluster, action="query", nodes=["vm1"], command_timeout=2)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert rc != 0 and result["failed"] is True
    assert "scontrol show node -o vm1` did not finish within 2 s (rdmaops_scheduler_timeout)" in result["msg"], result["msg"]
    assert "nothing was drained or changed" in result["msg"]


def test_a_reason_that_is_not_utf8_is_read_with_replacement(nodes_in_service):
    """scontrol stores and prints the bytes as given; the module's result must be valid UTF-8."""
    cluster = nodes_in_service
    subprocess.run(["scontrol", "update", "NodeName=vm2", "State=DRAIN", b"Reason=disk \xff\xfe replacement"],
                   env=cluster.env, check=True, capture_output=True, timeout=60)
    assert b"\xff\xfe" in subprocess.run(["scontrol", "show", "node", "-o", "vm2"], env=cluster.env, check=True,
                                         capture_output=True, timeout=60).stdout
    rc, result, _took = scheduler(cluster, action="query", nodes=["vm1", "vm2"])
    assert rc == 0, result
    vm2 = result["nodes"]["vm2"]
    assert vm2["reason"] == "disk \ufffd\ufffd replacement" and vm2["drained"] and vm2["foreign"] and not vm2["ours"]
    # a drain over it is refused as someone else's, and the bytes stay as they were
    rc, result, _took = scheduler(cluster, action="drain", nodes=["vm2"], reason="nic_layer: mtu")
    assert rc == 0 and result["foreign"] == ["vm2"] and result["changed"] is False
    assert b"disk \xff\xfe replacement" in subprocess.run(["scontrol", "show", "node", "-o", "vm2"], env=cluster.env,
                                                          check=True, capture_output=True, timeout=60).stdout


def test_a_node_slurm_lists_twice_is_busy(nodes_in_service):
    """scontrol lists a node as often as it is named: the parser merges the lines into one busy node."""
    out = nodes_in_service.run("scontrol", "show", "node", "-o", "vm1,vm1", check=True).stdout
    assert out.count("NodeName=vm1 ") == 2
    vm1 = slurm.parse_show_node(out)["vm1"]
    assert vm1.listed == 2 and vm1.busy
