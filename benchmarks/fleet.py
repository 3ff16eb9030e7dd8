#!/usr/bin/env python
"""What site.yml costs per host, and how that grows with the fleet, measured on container hosts.

    python benchmarks/fleet.py                      # N = 1, 8, 32
    python benchmarks/fleet.py --hosts 2 --smoke    # what CI runs: N = 2, fails on a non-idempotent re-run
    python benchmarks/fleet.py --label after --docs # also keep the figures and rewrite docs/benchmarks.md

For each N it starts N systemd containers the way the molecule harness does
(molecule/shared/create.yml, which builds the local Debian image with build-image.sh when it is
missing; podman settings from molecule/shared/containers.conf), then times, on the same hosts:

  ping    `ansible all -m ping` (the baseline: one module round trip per host)
  fresh   site.yml with the layers that apply in a container (LAYERS below, as tags)
  no-op   the same again (must report changed=0)

and prints the wall times, their ratios, the tasks, module executions and remote round trips per
host (counted by benchmarks/callback_plugins/bench_count.py) and the controller's peak memory
(every process the run started, podman's CLI included, summed). Root, podman, runc and
debootstrap are needed, as for the molecule tier. Runs `nice`d.

    python benchmarks/fleet.py --scheduler slurm --hosts 2,8 --label rollout --docs

measures the rollout instead (playbooks/rollout.yml, which site.yml runs when rdmaops_scheduler is
set): a real Slurm on this machine (tests/unit/slurmcluster.py: Debian's slurmctld, one slurmd per
container host, named as the host, munge) on ports 16917 and up, with rdmaops_slurm_controller:
localhost (scontrol runs on the controller). On the same hosts, after a fresh run without a
scheduler, it times

  none      the no-op site.yml with rdmaops_scheduler: none
  slurm     the same no-op with rdmaops_scheduler: slurm (the rollout's phase one alone: one
            scheduler read for the run, every host at once)
  slurm/1   the same with rdmaops_serial = N (fixed batches of N: the same single batch)
  online    rdmaops_scheduler: slurm and one tuning sysctl changed (an online change), with a sleep
            job running on the first node; the nodes' Slurm state before and after

and fails unless the slurm no-op reads the scheduler once for the whole run, costs at most one
module round trip per host more than the none no-op (module executions, and no more remote
commands and transfers than one module takes), changes nothing, and the online run drains no node
and leaves the job running. It prints the slurm no-op's wall time over the none no-op's (the goal
is at most 1.15). The
scheduler's reads run on the controller (the localhost row of the counts); they are added to the
hosts' own round trips and divided by N. Needs slurmctld, slurmd, slurm-client and munge too.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SITE = os.path.join(REPO, "playbooks", "site.yml")
RESULTS = os.path.join(HERE, "results")
DOC = os.path.join(REPO, "docs", "benchmarks.md")
PLOT = os.path.join(REPO, "docs", "benchmarks.png")
CONTAINERS_CONF = os.path.join(REPO, "molecule", "shared", "containers.conf")
CREATE = os.path.join(REPO, "molecule", "shared", "create.yml")
DESTROY = os.path.join(REPO, "molecule", "shared", "destroy.yml")

# The site.yml layers a container can carry, by tag, in site.yml's order. A layer whose tag
# site.yml does not have (yet) is left out and said so; the nccl play is picked up once it lands.
# Not here: nic (no RDMA netdev in a container: nic_layer has nothing to set) and peermem (no GPU).
LAYERS = [
    ("ofed", "distribution packages (ofed role, inbox provider)"),
    ("modules", "kernel modules, persisted in modules-load.d"),
    ("tuning", "sysctl.d profile, limits.d + systemd memlock, ethtool knobs and their udev rule, GPUDirect report"),
    ("nccl", "nccl.conf"),
    ("facts", "RDMA facts report"),
]

# What a container differs in from a server, as inventory variables (the molecule scenarios use
# the same): net.core.* sysctls cannot be set there, and the NIC is a veth.
HOST_VARS = {
    "ansible_connection": "containers.podman.podman",
    "ansible_python_interpreter": "/usr/bin/python3",
    "tuning_sysctl_runtime_errors": "warn",
    "tuning_nic_interfaces": ["eth0"],
}

# --scheduler slurm: the rollout's settings, and the online change (one tuning sysctl's value: the
# profile has net.ipv4.tcp_timestamps 0). The gate is off by default: in a container the validate
# role has no RDMA device to prove, and what the gate costs is the validate role's own cost.
SLURM_PORT_BASE = 16917  # the rollout's tests use 16817 and up: both can run at once
ONLINE_CHANGE = {"tuning_sysctl_extra": {"net.ipv4.tcp_timestamps": 1}}


def log(message):
    print("==> %s" % message, flush=True)


def site_tags(path, seen=None):
    """Every tag named in a playbook and the playbooks, roles' task files it imports."""
    import yaml

    seen = seen if seen is not None else set()
    path = os.path.realpath(path)
    if path in seen or not os.path.exists(path):
        return set()
    seen.add(path)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    tags = set()
    for match in re.finditer(r"^\s*tags:\s*\[([^\]]*)\]", text, re.M):
        tags.update(tag.strip().strip("'\"") for tag in match.group(1).split(","))
    for node in yaml.safe_load(text) or []:
        if isinstance(node, dict) and "ansible.builtin.import_playbook" in node:
            tags |= site_tags(os.path.join(os.path.dirname(path), node["ansible.builtin.import_playbook"]), seen)
    # task files a play imports (playbooks/tasks/), relative to the importing file
    for match in re.finditer(r"ansible\.builtin\.import_tasks:\s*(\S+)", text):
        tags |= site_tags(os.path.join(os.path.dirname(path), match.group(1)), seen)
    return tags


def chosen_layers(skip=()):
    present = site_tags(SITE)
    layers = [(tag, what) for tag, what in LAYERS if tag in present and tag not in skip]
    missing = [layer[0] for layer in LAYERS if layer[0] not in present]
    return layers, missing


def machine():
    model = ""
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo", encoding="utf-8") as meminfo:
        mem_kib = int(meminfo.readline().split()[1])

    def version(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.splitlines()[0].strip()
        except (OSError, IndexError):
            return "?"

    return dict(
        cpu=model,
        cpus=len(os.sched_getaffinity(0)),
        memory_gib=round(mem_kib / 1024 / 1024, 1),
        kernel=platform.release(),
        os=version(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        python=platform.python_version(),
        ansible=version(["ansible", "--version"]),
        podman=version(["podman", "--version"]),
        load_before=os.getloadavg()[0],
    )


class TreeMemory(threading.Thread):
    """Peak of the summed resident memory of every process in one session (the run's tree)."""

    def __init__(self, session):
        super().__init__(daemon=True)
        self.session, self.peak, self.stop = session, 0, threading.Event()
        self.loads = []  # the machine's 1-minute load average while the run ran (others' work included)
        self.page = os.sysconf("SC_PAGE_SIZE")

    def sample(self):
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid, encoding="utf-8") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                if int(fields[3]) != self.session:
                    continue
                with open("/proc/%s/statm" % pid, encoding="utf-8") as statm:
                    total += int(statm.read().split()[1]) * self.page
            except (OSError, IndexError, ValueError):
                continue
        self.peak = max(self.peak, total)
        self.loads.append(os.getloadavg()[0])

    def run(self):
        while not self.stop.wait(0.2):
            self.sample()


def run_counted(argv, env, work, name):
    """Run one ansible command; its wall time, peak memory, exit status and per-host counts."""
    events = os.path.join(work, name + ".events")
    summary = os.path.join(work, name + ".json")
    logfile = os.path.join(work, name + ".log")
    env = dict(env, RDMAOPS_BENCH_EVENTS=events, RDMAOPS_BENCH_SUMMARY=summary)
    with open(logfile, "w", encoding="utf-8") as out:
        # CPU time of the run's whole tree (ansible, its forks, podman's CLI; not the containers'
        # side): far less sensitive than wall time to what else the machine runs.
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.Popen(["nice", "-n", "10"] + argv, cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        memory = TreeMemory(proc.pid)
        memory.start()
        rc = proc.wait()
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        memory.stop.set()
        memory.join()
    counts = {}
    if os.path.exists(summary):
        with open(summary, encoding="utf-8") as handle:
            counts = json.load(handle)
    load = statistics.mean(memory.loads) if memory.loads else os.getloadavg()[0]
    return dict(wall=wall, rc=rc, peak_mib=memory.peak / 1024 / 1024, hosts=counts, log=logfile, load=load, cpu=cpu)


def per_host(result, key):
    values = [host[key] for host in result["hosts"].values()]
    return statistics.mean(values) if values else 0


def ansible_env(work):
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, "build", "collections"),
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="bench_count",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="0",
        CONTAINERS_CONF=CONTAINERS_CONF,
        ANSIBLE_LOCAL_TEMP=os.path.join(work, "ansible-tmp"),
    )
    return env


def link_collection():
    """This checkout as build/collections/ansible_collections/rdmaops/roce (as bootstrap.sh does)."""
    link = os.path.join(REPO, "build", "collections", "ansible_collections", "rdmaops", "roce")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink("../../../..", link)


def harness(playbook, names, work, env, prefix):
    """molecule/shared/create.yml or destroy.yml run outside molecule, with the values molecule gives it."""
    extra = os.path.join(work, "molecule-vars.json")
    with open(extra, "w", encoding="utf-8") as handle:
        json.dump(dict(molecule_yml=dict(scenario=dict(name=prefix), platforms=[dict(name=n) for n in names]),
                       molecule_instance_config=os.path.join(work, "instance_config.yml")), handle)
    env = {key: value for key, value in env.items() if key not in ("ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_LOAD_CALLBACK_PLUGINS")}
    rc = subprocess.run(["nice", "-n", "10", "ansible-playbook", "-i", "localhost,", "-e", "@" + extra,
                         "-e", "ansible_python_interpreter=" + sys.executable, playbook],
                        cwd=REPO, env=env, stdout=open(os.path.join(work, os.path.basename(playbook) + ".log"), "a"),
                        stderr=subprocess.STDOUT, check=False).returncode
    if rc:
        raise SystemExit("%s failed (rc=%d), see %s" % (playbook, rc, os.path.join(work, os.path.basename(playbook) + ".log")))


def leftovers(prefix):
    out = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}", "--filter",
                          "label=org.rdmaops.molecule.scenario=%s" % prefix],
                         capture_output=True, text=True, env=dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF),
                         check=False).stdout.split()
    return out


# The containers share the machine's kernel, whose module tree is not inside them: modprobe finds
# nothing. The RDMA core is declared built into that kernel (modules.builtin, indexed by depmod),
# as kernels that build it in do, so the modules layer persists its list and has nothing to load.
BUILTIN_RDMA = r"""
k=$(uname -r); mkdir -p /lib/modules/$k
for m in ib_core rdma_cm ib_uverbs ib_umad; do echo kernel/drivers/infiniband/core/$m.ko; done > /lib/modules/$k/modules.builtin
: > /lib/modules/$k/modules.order
depmod $k 2>/dev/null
"""


def prepare(names):
    env = dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF)
    for name in names:
        subprocess.run(["podman", "exec", name, "sh", "-ec", BUILTIN_RDMA], env=env, check=True)


def write_inventory(path, names):
    import yaml

    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"rdma_hosts": {"hosts": {n: None for n in names}, "vars": HOST_VARS}}, handle)


def bench_one(count, tags, work, env, args):
    names = ["%s-%02d" % (args.prefix, i) for i in range(1, count + 1)]
    inventory = os.path.join(work, "inventory.yml")
    write_inventory(inventory, names)
    log("N=%d: starting %d containers (molecule/shared/create.yml)" % (count, count))
    start = time.monotonic()
    harness(CREATE, names, work, env, args.prefix)
    create_s = time.monotonic() - start
    try:
        prepare(names)
        playbook = ["ansible-playbook", "-i", inventory, "--tags", ",".join(tags), SITE]
        if args.forks:
            playbook[1:1] = ["--forks", str(args.forks)]
        log("N=%d: fresh site.yml --tags %s" % (count, ",".join(tags)))
        fresh = run_counted(playbook, env, work, "n%d-fresh" % count)
        log("N=%d: no-op re-run" % count)
        noop = run_counted(playbook, env, work, "n%d-noop" % count)
        pings = []
        for index in range(args.ping_runs):
            argv = ["ansible", "all", "-i", inventory, "-m", "ansible.builtin.ping"]
            if args.forks:
                argv[1:1] = ["--forks", str(args.forks)]
            pings.append(run_counted(argv, env, work, "n%d-ping%d" % (count, index)))
    finally:
        if not args.keep:
            log("N=%d: removing the containers" % count)
            harness(DESTROY, names, work, env, args.prefix)
    ping = sorted(pings, key=lambda r: r["wall"])[len(pings) // 2]
    for name, result in (("fresh", fresh), ("no-op", noop), ("ping", ping)):
        if result["rc"] != 0:
            raise SystemExit("N=%d: the %s run failed (rc=%d); see %s" % (count, name, result["rc"], result["log"]))
    row = dict(
        hosts=count,
        create_s=round(create_s, 1),
        fresh_s=round(fresh["wall"], 1),
        noop_s=round(noop["wall"], 1),
        ping_s=round(ping["wall"], 2),
        pings_s=[round(p["wall"], 2) for p in pings],
        fresh_per_ping=round(fresh["wall"] / ping["wall"], 1),
        noop_per_ping=round(noop["wall"] / ping["wall"], 1),
        noop_per_host_s=round(noop["wall"] / count, 2),
        noop_cpu_s=round(noop["cpu"], 1),
        ping_cpu_s=round(ping["cpu"], 2),
        noop_per_ping_cpu=round(noop["cpu"] / ping["cpu"], 1) if ping["cpu"] else 0,
        fresh_changed=sum(h["changed"] for h in fresh["hosts"].values()),
        noop_changed=sum(h["changed"] for h in noop["hosts"].values()),
        tasks_per_host=round(per_host(noop, "tasks"), 1),
        skipped_per_host=round(per_host(noop, "skipped"), 1),
        modules_per_host=round(per_host(noop, "module_executions"), 1),
        round_trips_per_host=round(per_host(noop, "round_trips"), 1),
        fresh_modules_per_host=round(per_host(fresh, "module_executions"), 1),
        ping_modules_per_host=round(per_host(ping, "module_executions"), 1),
        ping_round_trips_per_host=round(per_host(ping, "round_trips"), 1),
        peak_mib=round(max(fresh["peak_mib"], noop["peak_mib"]), 0),
        ping_peak_mib=round(ping["peak_mib"], 0),
        load_noop=round(noop["load"], 1),
        noop_modules=next(iter(noop["hosts"].values()), {}).get("modules", {}),
    )
    return row


def slurm_cluster(work, names):
    """A real Slurm whose nodes are the container hosts (tests/unit/slurmcluster.py)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
    import slurmcluster  # pylint: disable=import-outside-toplevel

    why = slurmcluster.available()
    if why:
        raise SystemExit("--scheduler slurm: %s" % why)
    directory = os.path.join(work, "slurm-%d" % len(names))
    return slurmcluster.SlurmCluster(directory, nodes=names, port_base=SLURM_PORT_BASE)


def node_states(cluster):
    """Each node's Slurm state and drain reason ("-" for none)."""
    states = {}
    for name in cluster.nodes:
        state, reason = cluster.node(name)
        states[name] = "%s (%s)" % (state, reason) if reason else state
    return states


def drained(states):
    return sorted(name for name, state in states.items() if "DRAIN" in state.split(" ")[0].split("+"))


def totals(result, names):
    """Per container host: its own counts plus an equal share of the controller's (the scheduler's
    reads)."""
    hosts = result["hosts"]
    share = dict(tasks=0, module_executions=0, round_trips=0)
    for key in share:
        share[key] = sum(counts[key] for counts in hosts.values()) / len(names)
    controller = {host: counts for host, counts in hosts.items() if host not in names}
    share["controller_round_trips"] = sum(counts["round_trips"] for counts in controller.values())
    share["controller_modules"] = {}
    for counts in controller.values():
        for module, count in counts["modules"].items():
            share["controller_modules"][module] = share["controller_modules"].get(module, 0) + count
    share["changed"] = sum(counts["changed"] for counts in hosts.values())
    return share


def bench_rollout(count, tags, work, env, args):
    names = ["%s-%02d" % (args.prefix, i) for i in range(1, count + 1)]
    inventory = os.path.join(work, "inventory.yml")
    write_inventory(inventory, names)
    log("N=%d: starting %d containers (molecule/shared/create.yml) and a Slurm with nodes %s" % (
        count, count, ",".join(names)))
    harness(CREATE, names, work, env, args.prefix)
    cluster = slurm_cluster(work, names)
    env = dict(env, SLURM_CONF=cluster.conf)  # scontrol on the controller (a local connection) finds it
    runs, states = {}, {}
    job = None
    try:
        prepare(names)
        cluster.start()
        base = ["ansible-playbook", "-i", inventory, "--tags", ",".join(tags)]
        if args.forks:
            base[1:1] = ["--forks", str(args.forks)]

        def site(name, **extra):
            path = os.path.join(work, "n%d-%s.vars.json" % (count, name))
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(extra, handle)
            log("N=%d: %s (%s)" % (count, name, json.dumps(extra)))
            runs[name] = run_counted(base + ["-e", "@" + path, SITE], env, work, "n%d-%s" % (count, name))

        slurm = dict(rdmaops_scheduler="slurm", rdmaops_slurm_controller="localhost", rdmaops_gate=args.gate)
        site("fresh", rdmaops_scheduler="none")
        site("none", rdmaops_scheduler="none")
        states["noop_before"] = node_states(cluster)
        site("slurm", **slurm)
        states["noop_after"] = node_states(cluster)
        site("slurm-one-batch", rdmaops_serial=count, **slurm)
        job = cluster.submit(names[0], 3600)  # a training run on the first node
        states["online_before"] = node_states(cluster)
        site("online", **dict(slurm, **ONLINE_CHANGE))
        states["online_after"] = node_states(cluster)
        job_state = cluster.job_state(job)
        pings = []
        for index in range(args.ping_runs):
            argv = ["ansible", "all", "-i", inventory, "-m", "ansible.builtin.ping"]
            if args.forks:
                argv[1:1] = ["--forks", str(args.forks)]
            pings.append(run_counted(argv, env, work, "n%d-ping%d" % (count, index)))
    finally:
        if job:
            cluster.run("scancel", job)
        cluster.stop()
        if not args.keep:
            log("N=%d: removing the containers" % count)
            harness(DESTROY, names, work, env, args.prefix)
    ping = sorted(pings, key=lambda r: r["wall"])[len(pings) // 2]
    for name, result in list(runs.items()) + [("ping", ping)]:
        if result["rc"] != 0:
            raise SystemExit("N=%d: the %s run failed (rc=%d); see %s" % (count, name, result["rc"], result["log"]))
    none, slurm_, one, online = (totals(runs[name], names)
                                 for name in ("none", "slurm", "slurm-one-batch", "online"))
    row = dict(
        hosts=count,
        ping_s=round(ping["wall"], 2),
        none_s=round(runs["none"]["wall"], 1),
        slurm_s=round(runs["slurm"]["wall"], 1),
        one_batch_s=round(runs["slurm-one-batch"]["wall"], 1),
        online_s=round(runs["online"]["wall"], 1),
        none_cpu_s=round(runs["none"]["cpu"], 1),
        slurm_cpu_s=round(runs["slurm"]["cpu"], 1),
        online_cpu_s=round(runs["online"]["cpu"], 1),
        none_rt=round(none["round_trips"], 2),
        slurm_rt=round(slurm_["round_trips"], 2),
        one_batch_rt=round(one["round_trips"], 2),
        online_rt=round(online["round_trips"], 2),
        extra_rt=round(slurm_["round_trips"] - none["round_trips"], 2),
        none_modules=round(none["module_executions"], 2),
        slurm_modules=round(slurm_["module_executions"], 2),
        one_batch_modules=round(one["module_executions"], 2),
        online_modules=round(online["module_executions"], 2),
        extra_modules=round(slurm_["module_executions"] - none["module_executions"], 2),
        none_tasks=round(none["tasks"], 1),
        slurm_tasks=round(slurm_["tasks"], 1),
        controller_rt=slurm_["controller_round_trips"],
        controller_modules=slurm_["controller_modules"],
        online_controller_modules=online["controller_modules"],
        none_changed=none["changed"],
        slurm_changed=slurm_["changed"],
        one_batch_changed=one["changed"],
        online_changed=online["changed"],
        online_drained=drained(states["online_after"]),
        noop_drained=drained(states["noop_after"]),
        states=states,
        job_state=job_state,
        load=round(runs["slurm"]["load"], 1),
        slurm_per_none=round(runs["slurm"]["wall"] / runs["none"]["wall"], 2) if runs["none"]["wall"] else 0,
    )
    return row


ROLLOUT_COLUMNS = [
    ("hosts", "N"), ("ping_s", "ping s"), ("none_s", "no-op none s"), ("slurm_s", "no-op slurm s"),
    ("slurm_per_none", "slurm / none"),
    ("one_batch_s", "no-op slurm, 1 batch s"), ("online_s", "online slurm s"),
    ("none_modules", "modules/host none"), ("slurm_modules", "slurm"), ("extra_modules", "slurm - none"),
    ("one_batch_modules", "slurm, 1 batch"), ("online_modules", "online"),
    ("none_rt", "round trips/host none"), ("slurm_rt", "slurm"), ("extra_rt", "slurm - none"),
    ("one_batch_rt", "slurm, 1 batch"), ("online_rt", "online"),
    ("online_changed", "online changed"), ("online_drained", "online drained"), ("job_state", "job after online"),
    ("load", "load"),
]


def rollout_failures(row):
    """What the rollout's figures break of the issue's promise (empty: nothing)."""
    failures = []
    reads = row["controller_modules"].get("rdmaops.roce.scheduler", 0)
    if reads != 1:
        failures.append("the slurm no-op read the scheduler %d times (once for the run)" % reads)
    if row["extra_modules"] > 1:
        failures.append("the slurm no-op costs %.2f module round trips per host more than without a scheduler "
                        "(at most 1)" % row["extra_modules"])
    # one module's worth of remote commands and transfers on the hosts (they are alike on the controller)
    per_module = row["none_rt"] / row["none_modules"] if row["none_modules"] else 0
    if row["extra_rt"] > per_module:
        failures.append("the slurm no-op costs %.2f remote commands and transfers per host more than without a "
                        "scheduler (one module's are %.2f)" % (row["extra_rt"], per_module))
    for run, key in (("none", "none_changed"), ("slurm", "slurm_changed"), ("slurm, one batch", "one_batch_changed")):
        if row[key]:
            failures.append("a no-op run (%s) changed %d things" % (run, row[key]))
    if not row["online_changed"]:
        failures.append("the online run changed nothing (the sysctl change did not reach the hosts)")
    if row["online_drained"] or row["noop_drained"]:
        failures.append("nodes drained: %s" % (row["online_drained"] + row["noop_drained"]))
    if row["job_state"] != "RUNNING":
        failures.append("the job on the first node is %s after the online run (RUNNING expected)" % row["job_state"])
    return failures


COLUMNS = [
    ("hosts", "N"), ("fresh_s", "fresh s"), ("noop_s", "no-op s"), ("ping_s", "ping s"),
    ("fresh_per_ping", "fresh/ping"), ("noop_per_ping", "no-op/ping"), ("noop_per_host_s", "no-op s/host"),
    ("noop_cpu_s", "no-op CPU s"), ("noop_per_ping_cpu", "no-op/ping CPU"),
    ("tasks_per_host", "tasks/host"), ("modules_per_host", "modules/host"),
    ("round_trips_per_host", "round trips/host"), ("noop_changed", "no-op changed"), ("peak_mib", "peak MiB"), ("load_noop", "load (no-op)"),
]


def cell(value):
    if isinstance(value, list):
        return ", ".join(value) or "none"
    return str(value)


def table(rows, columns=None):
    columns = columns or COLUMNS
    lines = ["| " + " | ".join(column[1] for column in columns) + " |",
             "|" + "|".join("---:" for column in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(column[0], "")) for column in columns) + " |")
    return "\n".join(lines)


def plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, run in runs:
        hosts = [row["hosts"] for row in run["rows"]]
        left.plot(hosts, [row["noop_s"] for row in run["rows"]], marker="o", label="no-op (%s)" % label)
        left.plot(hosts, [row["ping_s"] for row in run["rows"]], marker="x", linestyle=":", label="ping (%s)" % label)
        right.plot(hosts, [row["noop_per_ping"] for row in run["rows"]], marker="o", label=label)
    left.set(xlabel="hosts (N)", ylabel="wall time, s", title="no-op site.yml and ping", xscale="log")
    right.set(xlabel="hosts (N)", ylabel="no-op / ping", title="no-op re-run in pings", xscale="log")
    right.axhline(8, color="grey", linestyle="--", label="goal: 8")
    sizes = sorted({row["hosts"] for label_and_run in runs for row in label_and_run[1]["rows"]})
    for axis in (left, right):
        axis.set_xticks(sizes, [str(size) for size in sizes])
        axis.minorticks_off()
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


BEGIN, END = "<!-- fleet.py:begin (generated by benchmarks/fleet.py --docs; edit around it) -->", "<!-- fleet.py:end -->"
ROLLOUT_BEGIN = ("<!-- fleet.py:rollout:begin (generated by benchmarks/fleet.py --scheduler slurm --docs; "
                 "edit around it) -->")
ROLLOUT_END = "<!-- fleet.py:rollout:end -->"


def machine_line(run):
    m = run["machine"]
    return ("Machine: %s, %d CPUs, %s GiB, %s, kernel %s; %s, Python %s, %s; load average %.1f before the run." % (
        m["cpu"], m["cpus"], m["memory_gib"], m["os"], m["kernel"], m["ansible"], m["python"], m["podman"],
        m["load_before"]))


def state_counts(states):
    """Node states, counted: "ALLOCATED 1, IDLE 7"."""
    counts = {}
    for state in states.values():
        counts[state] = counts.get(state, 0) + 1
    return ", ".join("%s %d" % item for item in sorted(counts.items()))


def render_rollout(runs):
    parts = []
    for label, run in runs:
        command = run.get("command") or "python benchmarks/fleet.py --scheduler %s --hosts %s --docs" % (
            run["scheduler"], ",".join(str(row["hosts"]) for row in run["rows"]))
        parts += ["### %s" % label, "",
                  "`%s`. Layers (tags): %s; gate: %s. %s" % (
                      command, ", ".join(run["tags"]), run.get("gate", "none"), machine_line(run)), "",
                  table(run["rows"], ROLLOUT_COLUMNS), ""]
        for row in run["rows"]:
            modules = ", ".join("%s %d" % (name.split(".")[-1], count) for name, count in
                                sorted(row["controller_modules"].items())) or "none"
            parts += ["N=%d: the slurm no-op's reads of the scheduler, on the controller: %s (%d round trips in "
                      "all). Task results per host: %s without a scheduler, %s with it (the "
                      "rollout's own tasks run on the controller: no round trip). Slurm node states before the "
                      "online run: %s; after it: %s; drained: %s." % (
                          row["hosts"], modules, row["controller_rt"], row["none_tasks"],
                          row["slurm_tasks"], state_counts(row["states"]["online_before"]),
                          state_counts(row["states"]["online_after"]), cell(row["online_drained"])), ""]
    return parts


def splice(text, begin, end, parts):
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    return head + begin + "\n" + "\n".join(parts) + end + tail


def render_docs():
    runs, rollouts = [], []
    for name in sorted(os.listdir(RESULTS)):
        if name.endswith(".json"):
            with open(os.path.join(RESULTS, name), encoding="utf-8") as handle:
                run = json.load(handle)
            (rollouts if run.get("scheduler") else runs).append((run["label"], run))
    runs.sort(key=lambda item: item[1]["when"])
    rollouts.sort(key=lambda item: item[1]["when"])
    # The page shows the latest run of each kind in full and, for the earlier ones, only what changed the
    # cost (module executions and round trips per host); their dates, commits and notes stay in
    # benchmarks/results/*.json (CONTRIBUTING.md says where).
    parts = ["![no-op site.yml and ping per N](benchmarks.png)", "",
             "| run | modules/host | round trips/host | no-op/ping at the largest N |", "|---|---:|---:|---:|"]
    for label, run in runs:
        last = run["rows"][-1]
        parts.append("| %s | %s | %s | %s (N=%d) |" % (label, cell(last.get("modules_per_host")),
                                                       cell(last.get("round_trips_per_host")), cell(last.get("noop_per_ping")),
                                                       last["hosts"]))
    parts.append("")
    for label, run in runs[-1:]:
        parts += ["### %s" % label, "", "Layers (tags): %s. %s" % (", ".join(run["tags"]), machine_line(run)), "",
                  table(run["rows"]), ""]
        by_size = {row["hosts"]: row for row in run["rows"]}
        if 8 in by_size and 32 in by_size:
            parts += ["No-op cost per host from N=8 to N=32: %+.0f%% (goal: within 20%%)." % (
                (by_size[32]["noop_per_host_s"] / by_size[8]["noop_per_host_s"] - 1) * 100), ""]
        last = run["rows"][-1]
        modules = {}
        for name, count in last["noop_modules"].items():
            modules[name.split(".")[-1]] = modules.get(name.split(".")[-1], 0) + count
        parts += ["Module executions of one host's no-op run (N=%d): " % last["hosts"] + ", ".join(
            "%s %d" % item for item in sorted(modules.items())) + ".", ""]
    plot(runs, PLOT)
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    text = splice(text, BEGIN, END, parts)
    if ROLLOUT_BEGIN in text:
        text = splice(text, ROLLOUT_BEGIN, ROLLOUT_END, render_rollout(rollouts[-1:]))
    with open(DOC, "w", encoding="utf-8") as handle:
        handle.write(text)


def commit():
    return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip() + ("+dirty" if subprocess.run(
                              ["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                              capture_output=True, text=True, check=False).stdout.strip() else "")


def save(label, tags, info, rows, **more):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, label + ".json"), "w", encoding="utf-8") as handle:
        json.dump(dict(label=label, when=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                       commit=commit(), tags=tags, machine=info, rows=rows, **more), handle, indent=1)


def main_rollout(sizes, tags, work, env, args, info, started):
    rows = []
    for count in sizes:
        row = bench_rollout(count, tags, work, env, args)
        rows.append(row)
        print(table(rows[-1:], ROLLOUT_COLUMNS), flush=True)
        if args.docs:
            save(args.label, tags, info, rows, scheduler=args.scheduler, gate=args.gate,
                 command=" ".join(shlex.quote(arg) for arg in ["python", "benchmarks/fleet.py"] + sys.argv[1:]))
        failures = rollout_failures(row)
        if failures:
            raise SystemExit("N=%d: %s; logs in %s" % (count, "; ".join(failures), work))
    print()
    print(table(rows, ROLLOUT_COLUMNS))
    for row in rows:
        print("N=%d: the scheduler's modules on the controller (slurm no-op): %s; online: %s; node states %s" % (
            row["hosts"], json.dumps(row["controller_modules"]), json.dumps(row["online_controller_modules"]),
            json.dumps(row["states"])))
    print("total %.0f s" % (time.monotonic() - started))
    shutil.rmtree(work, ignore_errors=True)
    if args.docs:
        render_docs()
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="1,8,32", help="fleet sizes, comma separated (default 1,8,32)")
    parser.add_argument("--label", default="run", help="name of this run in benchmarks/results and the docs")
    parser.add_argument("--docs", action="store_true", help="keep the figures (benchmarks/results/LABEL.json) "
                        "and rewrite the generated part of docs/benchmarks.md and its plot")
    parser.add_argument("--render", action="store_true", help="only rewrite docs/benchmarks.md from the kept figures")
    parser.add_argument("--smoke", action="store_true", help="fail unless the no-op run changed nothing (CI)")
    parser.add_argument("--ping-runs", type=int, default=3, help="ping baselines per N, the median counts (default 3)")
    parser.add_argument("--forks", type=int, default=0, help="forks (default: ansible.cfg's)")
    parser.add_argument("--prefix", default="rdmaops-bench", help="container name prefix (default rdmaops-bench)")
    parser.add_argument("--skip-layers", default="", help="layers (tags) to leave out, comma separated; CI's "
                        "smoke leaves out ofed, whose package install the molecule tier already proves")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    parser.add_argument("--scheduler", choices=["slurm"], help="measure the rollout through a real local Slurm "
                        "(no-op with rdmaops_scheduler none and slurm, and an online-only change) instead")
    parser.add_argument("--gate", choices=["none", "validate"], default="none",
                        help="rdmaops_gate for --scheduler runs (default none: a container has no RDMA device)")
    args = parser.parse_args()
    if args.render:
        render_docs()
        return 0
    sizes = [int(n) for n in args.hosts.split(",") if n.strip()]
    for tool in ("podman", "ansible-playbook", "debootstrap"):
        if not shutil.which(tool):
            raise SystemExit("%s is not on PATH (apt-get install podman runc debootstrap; the virtualenv's bin)" % tool)
    layers, missing = chosen_layers([tag.strip() for tag in args.skip_layers.split(",") if tag.strip()])
    tags = [layer[0] for layer in layers]
    log("layers: %s%s" % (", ".join("%s (%s)" % layer for layer in layers),
                          ("; not in site.yml: " + ", ".join(missing)) if missing else ""))
    link_collection()
    info = machine()
    rows = []
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="rdmaops-bench.")
    # the work directory (logs) stays when a run fails, and goes when all went well
    env = ansible_env(work)
    stale = leftovers(args.prefix)
    if stale:
        log("removing %d containers left by an earlier run" % len(stale))
        harness(DESTROY, stale, work, env, args.prefix)
    if args.scheduler:
        return main_rollout(sizes, tags, work, env, args, info, started)
    for count in sizes:
        row = bench_one(count, tags, work, env, args)
        rows.append(row)
        print(table(rows[-1:]), flush=True)
        if args.docs:  # kept after every N: a long run cut short still leaves its figures
            save(args.label, tags, info, rows)
        if args.smoke and row["noop_changed"]:
            raise SystemExit("N=%d: the re-run changed %d things; it must change nothing" % (
                count, row["noop_changed"]))
        if args.smoke and not row["modules_per_host"]:
            raise SystemExit("N=%d: no module execution was counted (bench_count callback not loaded?)" % count)
    print()
    print(table(rows))
    for row in rows:
        print("N=%d no-op module executions per host: %s" % (row["hosts"], json.dumps(row["noop_modules"])))
    by_size = {row["hosts"]: row for row in rows}
    if 8 in by_size and 32 in by_size:
        growth = by_size[32]["noop_per_host_s"] / by_size[8]["noop_per_host_s"] - 1
        print("no-op cost per host from N=8 to N=32: %+.0f%% (goal: within 20%%)" % (growth * 100))
    print("total %.0f s" % (time.monotonic() - started))
    shutil.rmtree(work, ignore_errors=True)
    if args.docs:
        render_docs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
