"""Prove the rollout (rdmaops_scheduler: slurm) on the lab with its real Slurm: slurmctld in the lab's
namespace, slurmd on the VMs (tests/lab/slurmlab.py). Sleep jobs stand for training runs. Runs on a
converged lab; each scenario is one `site.yml --tags tuning` run (two at once for parallel), in
phase two waves of one host (rdmaops_max_unavailable 1), with what differs from inventories/lab in an
overlay inventory:

  disruptive  a job on vm1 and a link reset for vm1 only (its fabric NIC's rings 128 <-> 256), an
              online change for vm2 (a sysctl) under a job of its own: phase one changes vm2 in
              place (never drained, its job runs on); in phase two vm1 is drained with our reason
              and the rollout waits; the job, released by this test 10 s after the drain, ends
              COMPLETED; the rings change only after that (sampled while it ran), the gate passes,
              vm1 is back in service; vm1's gate is paired with vm2, outside its wave (the path)
  skip        vm2 drained by hand (another reason), a job on vm1, the rings back to 128 with
              rdmaops_drain_timeout 5 and action skip: vm1 is unchanged and in service, its job
              runs on, vm2 still drained with its own reason
  fail        the same with action fail: the play fails naming vm1 and the job; vm1 stays drained
              with our reason (what an interrupted rollout leaves)
  gate        the jobs cancelled, vm1's rdma_cm ToS broken by hand (a fault the tuning run does not
              fix); the next run drains vm1 (after the fail scenario: finds it drained by a rollout and
              finishes it), and the gate fails:
              vm1 stays drained with the finding in its reason, no further wave runs, the play
              fails after writing the report (the lab is put back before the next scenario)

  limit       rdmaops_max_unavailable: 1 in the inventory (no -e): a link reset for both VMs (their
              rings), the gate off: phase two drains them one wave after the other; sinfo sampled
              every second never shows two nodes out at once; both changed, both back in service
  parallel    the same change back, as two runs at once (--limit vm1, --limit vm2, as job slices
              would): both succeed, and two nodes are out at once only for a step back (a drain
              that finds the other run's is resumed by the module that made it; inside a TCG VM
              that takes seconds, so the overlap is judged in seconds: at most 20)
  handdrain   vm2 drained by hand ("disk replacement, ticket 4711") and a change that needs a reboot
              for vm2 (GRUB kernel arguments: a drop-in and a stand-in update-grub put in place by
              this test, removed afterwards): the rollout changes vm2 (out of service anyway) but
              neither reboots it through Slurm nor resumes it; vm2 keeps its reason and stays drained;
              the kernel arguments count as a reboot (held back in phase one, the drained pass owes it)

Afterwards the lab is put back by hand, as an operator would after reading the report: vm1's ToS
re-applied (its boot unit), both nodes resumed.

    python3 tests/lab/rollout.py -i INVENTORY [--scenarios disruptive,skip,fail,gate]

Exit 0 when every expectation holds, 1 otherwise. Each scenario prints its wall time.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAB = [sys.executable, os.path.join(HERE, "lab.py")]
SITE = os.path.join(REPO, "playbooks", "site.yml")
SCENARIOS = ("disruptive", "skip", "fail", "gate", "limit", "parallel", "handdrain")
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", re.M)
SYSCTL = "net.core.rmem_max"
HAND_REASON = "disk replacement, ticket 4711"
TOS_PATH = "/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos"


class Failed(Exception):
    pass


def ssh(vm, command, timeout=120):
    proc = subprocess.run(LAB + ["ssh", vm, command], check=False, capture_output=True, text=True, timeout=timeout)
    return proc.stdout.strip()


def slurm(*argv, check=True):
    proc = subprocess.run(LAB + ["slurm"] + list(argv), check=False, capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise Failed("%s: %s" % (" ".join(argv), (proc.stderr or proc.stdout).strip()))
    return proc.stdout.strip()


def submit(node, seconds, wrap=None):
    job = slurm("sbatch", "--parsable", "-w", node, "-o", "/dev/null", "--wrap", wrap or "sleep %d" % seconds).split(";")[0]
    deadline = time.time() + 60
    while time.time() < deadline:
        if job_state(job) == "RUNNING":
            return job
        time.sleep(1)
    raise Failed("job %s on %s did not start: %s" % (job, node, slurm("squeue", check=False)))


def job_state(job):
    out = slurm("squeue", "-h", "-j", job, "-o", "%T", check=False)
    if out:
        return out
    fields = dict(t.split("=", 1) for t in slurm("scontrol", "show", "job", "-o", job, check=False).split() if "=" in t)
    return fields.get("JobState")


def job_end(job):
    fields = dict(t.split("=", 1) for t in slurm("scontrol", "show", "job", "-o", job).split() if "=" in t)
    return time.mktime(time.strptime(fields["EndTime"], "%Y-%m-%dT%H:%M:%S"))


def node(name):
    """(state, reason) of a Slurm node."""
    out = slurm("scontrol", "show", "node", "-o", name)
    state = re.search(r"\bState=(\S+)", out).group(1)
    reason = out.split(" Reason=", 1)[1].rsplit(" [", 1)[0].strip() if " Reason=" in out else None
    return state, reason


def drained(name):
    return "DRAIN" in node(name)[0]


def rings(vm):
    text = ssh(vm, "ethtool -g $(cat /sys/class/infiniband/rxe0/parent)")
    current = text.split("Current hardware settings:", 1)[-1]
    return int(re.search(r"^RX:\s+(\d+)", current, re.M).group(1))


def expect(condition, what, out=""):
    if not condition:
        raise Failed("%s%s" % (what, ("\n--- end of the run's output:\n" + out[-5000:]) if out else ""))
    print("  ok: %s" % what)


class Run:
    """One site.yml run with an overlay inventory (host vars beat inventories/lab's group_vars) and
    extra vars for the rollout's settings."""

    def __init__(self, inventory, workdir):
        self.inventory = inventory
        self.workdir = workdir
        self.count = 0
        self.lock = threading.Lock()  # the parallel scenario runs two at once: each its own number

    def __call__(self, host_vars, extra, tags="tuning", limit=None, inventory_vars=None):
        with self.lock:
            self.count += 1
            number = self.count
        overlay = os.path.join(self.workdir, "overlay-%d.yml" % number)
        hosts = dict((vm, dict(inventory_vars or {}, **host_vars.get(vm, {}))) for vm in ("vm1", "vm2")) \
            if inventory_vars else host_vars
        with open(overlay, "w") as handle:
            json.dump({"all": {"children": {"rdma_hosts": {"hosts": hosts}}}}, handle)  # JSON is YAML
        settings = dict({"rdmaops_scheduler_poll_interval": 2, "validate_rdma": False,
                         "validate_report_dir": os.path.join(self.workdir, "reports-%d" % number)}, **extra)
        if not inventory_vars or "rdmaops_max_unavailable" not in inventory_vars:
            settings.setdefault("rdmaops_max_unavailable", 1)
        argv = ["ansible-playbook", "-i", self.inventory, "-i", overlay, SITE, "--tags", tags, "-e", json.dumps(settings)]
        argv += ["--limit", limit] if limit else []
        t0 = time.time()
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, env=dict(os.environ, ANSIBLE_NOCOLOR="1"),
                              cwd=REPO, timeout=1500)
        out = proc.stdout + proc.stderr
        where = os.path.join(self.workdir, "run-%d.out" % number)
        with open(where, "w") as handle:
            handle.write(out)
        print("  site.yml --tags %s%s: rc %d, %.0f s (output: %s)" % (
            tags, " --limit " + limit if limit else "", proc.returncode, time.time() - t0, where), flush=True)
        return proc.returncode, out, settings["validate_report_dir"]


def latest_report(reports, name):
    """The newest ``name`` the validate role wrote under ``reports`` (a directory per run), or None."""
    found = sorted(glob.glob(os.path.join(reports, "*", name)) + glob.glob(os.path.join(reports, name)), key=os.path.getmtime)
    return found[-1] if found else None


def batch_line(out, host):
    """The rollout's report line for ``host`` (its 'Report the batch' message)."""
    found = re.findall(r"msg: '(%s: .*?)'\n" % re.escape(host), out, re.S)  # the default callback's YAML
    return " ".join(found[-1].split()) if found else ""


def scenario_disruptive(run, ctx):
    ctx["rings"] = rings("vm1")
    target = 256 if ctx["rings"] == 128 else 128
    ctx["sysctl"] = ssh("vm2", "sysctl -n %s" % SYSCTL)
    # vm1's job runs until this test lets it end (normally, exit 0): once vm1 is drained with our
    # reason and the rollout has waited a while, the job is released
    release = "/run/rdmaops-rollout-release"
    ssh("vm1", "rm -f %s" % release)
    job1 = submit("vm1", 0, wrap="until [ -e %s ]; do sleep 1; done" % release)
    ctx["job_vm1"] = job1
    job2 = submit("vm2", 1800)  # cancelled by the next scenario
    ctx["job_vm2"] = job2
    seen = {"samples": []}
    stop = threading.Event()

    def watch():  # vm1's drain, its rings while the job runs, then the job's end
        drained_at = None
        while not stop.is_set():
            state, reason = node("vm1")
            seen["samples"].append(rings("vm1"))
            if drained_at is None and "DRAIN" in state and (reason or "").startswith("rdmaops.roce:"):
                drained_at = time.time()
                seen["reason"] = reason
            if drained_at is not None and time.time() - drained_at > 10:
                seen["rings_before_release"] = list(seen["samples"])
                ssh("vm1", "touch %s" % release)
                while not stop.is_set() and job_state(job1) in ("RUNNING", "COMPLETING"):
                    stop.wait(1)
                seen["job_end_state"] = job_state(job1)
                return
            stop.wait(2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    new_sysctl = str(int(ctx["sysctl"]) * 2)
    try:
        rc, out, reports = run({"vm1": {"tuning_nic_rings": {"rx": target, "tx": target}},
                                "vm2": {"tuning_sysctl_extra": {SYSCTL: int(new_sysctl)}}}, {})
    finally:
        stop.set()
        watcher.join()
        ssh("vm1", "touch %s" % release)
    expect(rc == 0, "the rollout succeeded", out)
    expect((seen.get("reason") or "").startswith("rdmaops.roce: link_reset: "),
           "vm1 was drained with our reason: %r" % seen.get("reason"))
    before = seen.get("rings_before_release") or []
    expect(before and all(value == ctx["rings"] for value in before),
           "vm1's rings stayed at %d while its job ran, drained or not (%d samples)" % (ctx["rings"], len(before)))
    expect(seen.get("job_end_state") == "COMPLETED", "vm1's job ended normally after the drain: %s" % seen.get("job_end_state"))
    expect(rings("vm1") == target, "vm1's rings are %d after the rollout" % target)
    line = batch_line(out, "vm1")
    waited = re.search(r"waited (\d+) s", line)
    expect(waited and int(waited.group(1)) >= 3 and "gate passed" in line and "resumed" in line, "vm1: %s" % line, out)
    expect(not drained("vm1"), "vm1 is back in service: %s" % (node("vm1"),))
    expect(job_state(job2) == "RUNNING" and not drained("vm2"), "vm2's job runs on, vm2 never drained")
    expect(ssh("vm2", "sysctl -n %s" % SYSCTL) == new_sysctl, "vm2's %s is %s (changed in place)" % (SYSCTL, new_sysctl))
    line = batch_line(out, "vm2")
    expect("drained" not in line, "vm2: %s" % line, out)
    # vm1's wave was gated against vm2, which phase one finished (changed in place) and which stays in
    # service: the path between them (reachability, then the intent's MTU unfragmented). Not perftest
    # here: RDMA-CM from vm2 resolves vm1 through rail 2 in the two-rail lab (both rails in one subnet,
    # rail 2's route first in vm2's main table; docs/multirail.md)
    with open(latest_report(reports, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    pairs = sorted("%s %s -> %s" % (m["kind"], m["host"], m["peer"]) for m in report.get("measurements", []) if m.get("peer"))
    expect(any(pair in pairs for pair in ("ping vm1 -> vm2", "ping vm2 -> vm1")),
           "vm1's gate checked the path to vm2, outside its wave: %s" % ", ".join(pairs))
    ctx["rings"], ctx["changed_rings"] = ctx["rings"], target


def scenario_skip(run, ctx):
    if ctx.get("job_vm2"):
        slurm("scancel", ctx.pop("job_vm2"), check=False)
    slurm("scontrol", "update", "NodeName=vm2", "State=DRAIN", "Reason=%s" % HAND_REASON)
    ctx["job"] = submit("vm1", 600)
    rc, out, _reports = run({"vm1": {"tuning_nic_rings": {"rx": ctx["rings"], "tx": ctx["rings"]}}},
                            {"rdmaops_drain_timeout": 5, "rdmaops_drain_timeout_action": "skip", "rdmaops_max_unavailable": 2,
                             "rdmaops_serial": 1})
    expect(rc == 0, "the rollout succeeded", out)
    expect("its jobs did not end within 5 s, left unchanged" in out, "vm1 skipped after the drain timeout", out)
    expect(rings("vm1") == ctx["changed_rings"], "vm1 unchanged (rings %d)" % ctx["changed_rings"])
    expect(not drained("vm1") and job_state(ctx["job"]) == "RUNNING", "vm1 back in service, its job runs on")
    state, reason = node("vm2")
    expect("DRAIN" in state and reason == HAND_REASON, "vm2 still drained with its own reason: %s, %r" % (state, reason))


def scenario_fail(run, ctx):
    rc, out, _reports = run({"vm1": {"tuning_nic_rings": {"rx": ctx["rings"], "tx": ctx["rings"]}}},
                            {"rdmaops_drain_timeout": 5, "rdmaops_max_unavailable": 2, "rdmaops_serial": 1})
    expect(rc != 0, "the rollout failed", out)
    expect(re.search(r"vm1 \(node vm1\) still runs %s wrap \(RUNNING, root\) after 5 s" % ctx["job"], out) is not None,
           "the failure names vm1 and job %s" % ctx["job"], out)
    state, reason = node("vm1")
    expect("DRAIN" in state and (reason or "").startswith("rdmaops.roce: link_reset"),
           "vm1 stays drained with our reason: %r" % reason)
    expect(rings("vm1") == ctx["changed_rings"], "vm1 unchanged (rings %d)" % ctx["changed_rings"])


def scenario_gate(run, ctx):
    for key in ("job", "job_vm2"):  # the jobs the earlier scenarios left running
        if ctx.get(key):
            slurm("scancel", ctx.pop(key), check=False)
    left_drained = "fail" in ctx["ran"]  # the fail scenario leaves vm1 drained by the rollout
    ssh("vm1", "echo 0 > %s" % TOS_PATH)
    rc, out, reports = run({"vm1": {"tuning_nic_rings": {"rx": ctx["rings"], "tx": ctx["rings"]}}},
                           {"rdmaops_max_unavailable": 2, "rdmaops_serial": 1})
    expect(rc != 0, "the rollout failed at the gate", out)
    if left_drained:
        expect("(already drained by a rollout)" in out, "the run found vm1 drained by the previous rollout", out)
    else:
        expect(re.search(r"vm1: .*drained", batch_line(out, "vm1")) is not None, "the run drained vm1: %s" % batch_line(out, "vm1"), out)
    expect(rings("vm1") == ctx["rings"], "vm1's rings are %d again (the drained host was finished)" % ctx["rings"])
    state, reason = node("vm1")
    expect("DRAIN" in state and (reason or "").startswith("rdmaops.roce: gate failed: ") and "tos" in reason,
           "vm1 stays drained with the finding in its reason: %r" % reason)
    # after the gate's verdict (phase one's task names also say "failed the gate": split on the verdict itself)
    expect("the next wave is not started" in out and not re.search(r"^TASK .*\n.*\[vm2\]", out.split("vm1 failed the gate (", 1)[-1], re.M),
           "vm2's batch was not run", out)
    expect(latest_report(reports, "report.md") is not None, "the report was written (%s)" % latest_report(reports, "report.md"))


class Sinfo(threading.Thread):
    """Which of vm1 and vm2 are out of service (drained, down, rebooting), every second."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.stop = [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            out = slurm("sinfo", "-h", "-N", "-o", "%N %T", check=False)
            states = dict(line.split(None, 1) for line in out.splitlines() if len(line.split(None, 1)) == 2)
            out_now = sorted(name for name, state in states.items() if name in ("vm1", "vm2")
                             and re.search(r"drain|down|reboot|maint|fail", state))
            self.samples.append((time.time(), out_now))
            self.stop.wait(1)


# the longest two nodes may be out at once in the parallel scenario: one scheduler module call in a
# TCG VM (drain, read the pool, resume), with room for a loaded machine
STEP_BACK_SECONDS = 20


def both_out_spans(samples):
    """How long each stretch of samples with both VMs out lasted (seconds, from the first sample with
    both out to the first one after it without)."""
    spans, start = [], None
    for stamp, out_now in samples:
        if len(out_now) > 1 and start is None:
            start = stamp
        elif len(out_now) <= 1 and start is not None:
            spans.append(stamp - start)
            start = None
    if start is not None:
        spans.append(samples[-1][0] - start)
    return spans


def other_rings(ctx):
    return 256 if rings("vm1") == 128 else 128


def tidy(ctx):
    """Before the scenarios below: the jobs and drains the earlier ones left, and vm1's ToS the gate
    scenario broke, put back."""
    for key in ("job", "job_vm1", "job_vm2"):
        if ctx.get(key):
            slurm("scancel", ctx.pop(key), check=False)
    if set(ctx["ran"]) & {"skip", "fail", "gate"}:
        put_back()


def scenario_limit(run, ctx):
    tidy(ctx)
    target = other_rings(ctx)
    sampler = Sinfo()
    sampler.start()
    try:
        rc, out, _reports = run({}, {"rdmaops_gate": "none"},
                                inventory_vars={"rdmaops_max_unavailable": 1, "tuning_nic_rings": {"rx": target, "tx": target}})
    finally:
        sampler.stop.set()
        sampler.join()
    expect(rc == 0, "the rollout succeeded", out)
    expect("2 host(s) to drain in 2 wave(s) of at most 1" in " ".join(out.split()),
           "phase two planned two waves of one host from the inventory's rdmaops_max_unavailable", out)
    both = [sample for sample in sampler.samples if len(sample[1]) > 1]
    expect(not both and any(sample[1] for sample in sampler.samples),
           "never two nodes out at once (%d sinfo samples, %d with one node out)"
           % (len(sampler.samples), sum(1 for sample in sampler.samples if sample[1])))
    expect(rings("vm1") == target and rings("vm2") == target, "both VMs' rings are %d" % target)
    expect(not drained("vm1") and not drained("vm2"), "both back in service")


def scenario_parallel(run, ctx):
    tidy(ctx)
    target = other_rings(ctx)
    sampler = Sinfo()
    results = {}

    def one(vm):
        results[vm] = run({}, {"rdmaops_gate": "none"}, limit=vm,
                          inventory_vars={"rdmaops_max_unavailable": 1, "tuning_nic_rings": {"rx": target, "tx": target}})

    sampler.start()
    threads = [threading.Thread(target=one, args=(vm,)) for vm in ("vm1", "vm2")]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sampler.stop.set()
        sampler.join()
    for vm in ("vm1", "vm2"):
        expect(results[vm][0] == 0, "the run with --limit %s succeeded" % vm, results[vm][1])
    # Two nodes out at once only for a step back: a run that drained at the same moment as the other
    # reads the pool again and resumes its node. Here the scheduler module runs in the TCG VM (a
    # drain, a read and a resume take seconds there), so the overlap is measured in seconds, not
    # samples (the unit tier's real-Slurm test samples every 0.2 s where the module runs natively).
    overlaps = both_out_spans(sampler.samples)
    longest = max(overlaps) if overlaps else 0.0
    expect(longest <= STEP_BACK_SECONDS,
           "two nodes out at once only for a step back: %d time(s), the longest %.1f s (at most %d s; %d samples)"
           % (len(overlaps), longest, STEP_BACK_SECONDS, len(sampler.samples)))
    stepped = sum("another rollout held it" in results[vm][1] or "stepped back" in results[vm][1] for vm in ("vm1", "vm2"))
    expect(not overlaps or stepped, "the overlap ended with a run waiting for room (another rollout held it)",
           results["vm1"][1] + results["vm2"][1])
    expect(rings("vm1") == target and rings("vm2") == target, "both VMs' rings are %d" % target)
    expect(not drained("vm1") and not drained("vm2"), "both back in service")


GRUB_STAND_IN = "/usr/local/sbin/update-grub"


def scenario_handdrain(run, ctx):
    tidy(ctx)
    # a boot loader configuration the GRUB drop-in can go into, and an update-grub that logs its call
    made_default = ssh("vm2", "test -e /etc/default/grub && echo yes || echo no") == "no"
    ssh("vm2", "mkdir -p /etc/default/grub.d; [ -e /etc/default/grub ] || echo 'GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"' "
               "> /etc/default/grub; printf '#!/bin/sh\necho called >> /run/rdmaops-update-grub\n' > %s; chmod +x %s"
        % (GRUB_STAND_IN, GRUB_STAND_IN))
    slurm("scontrol", "update", "NodeName=vm2", "State=DRAIN", "Reason=%s" % HAND_REASON)
    try:
        rc, out, _reports = run({"vm2": {"tuning_gpudirect_iommu": "passthrough"}}, {"rdmaops_gate": "none"})
        expect(rc == 0, "the rollout succeeded", out)
        flat = " ".join(out.split())
        expect(re.search(r"vm2 \(node vm2, [^)]*\): changes in place: yes; held back for a drain \(reboot\): [^;]*(; [^;]*)*"
                         r"tuning: boot with iommu=pt", flat) is not None,
               "vm2's kernel arguments were written in place and held back as a reboot", out)
        expect("reboot NOT handed to the scheduler: out of service for someone else (%s)" % HAND_REASON in flat,
               "the report says why vm2's reboot was not handed to Slurm", out)
        state, reason = node("vm2")
        expect("DRAIN" in state and reason == HAND_REASON and "REBOOT" not in state,
               "vm2 keeps its reason, stays drained and is not handed to Slurm for a reboot: %s, %r" % (state, reason))
        expect(ssh("vm2", "cat /run/rdmaops-update-grub 2>/dev/null") != "", "vm2 was changed (update-grub ran)")
    finally:
        ssh("vm2", "rm -f /etc/default/grub.d/*rdmaops* %s /run/rdmaops-update-grub%s"
            % (GRUB_STAND_IN, "; rm -f /etc/default/grub" if made_default else ""))
        slurm("scontrol", "update", "NodeName=vm2", "State=RESUME", check=False)


def put_back():
    """After the gate scenario: vm1's QoS re-applied by its boot unit (the fault undone), both nodes
    resumed (vm1's failed-gate drain and vm2's drain by hand), as an operator would."""
    ssh("vm1", 'for d in /sys/class/infiniband/*; do systemctl restart "rdmaops-nic-qos@${d##*/}.service"; done')
    for name in ("vm1", "vm2"):
        if drained(name):
            slurm("scontrol", "update", "NodeName=%s" % name, "State=RESUME")
    expect(ssh("vm1", "cat %s" % TOS_PATH) != "0" and not drained("vm1") and not drained("vm2"),
           "lab put back: vm1's ToS re-applied, vm1 and vm2 in service")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    chosen = args.scenarios.split(",")
    ctx = {"ran": []}
    workdir = tempfile.mkdtemp(prefix="rdmaops-rollout-")
    run = Run(args.inventory, workdir)
    # the lab's Slurm is this test's: no job of an earlier run left, every node in service
    slurm("scancel", "--user=root", check=False)
    for name in ("vm1", "vm2"):
        if drained(name):
            slurm("scontrol", "update", "NodeName=%s" % name, "State=RESUME")
    deadline = time.time() + 60
    while time.time() < deadline and slurm("squeue", "-h", check=False):
        time.sleep(1)
    print(slurm("sinfo", "-N"))
    if "disruptive" not in chosen:  # the later scenarios change vm1's rings away from what they are now
        ctx["changed_rings"] = rings("vm1")
        ctx["rings"] = 256 if ctx["changed_rings"] == 128 else 128
    t_all = time.time()
    try:
        for name in SCENARIOS:
            if name not in chosen:
                continue
            print("== %s" % name, flush=True)
            t0 = time.time()
            globals()["scenario_" + name](run, ctx)
            ctx.setdefault("ran", []).append(name)
            print("== %s: passed (%.0f s)" % (name, time.time() - t0), flush=True)
        put_back()
    except Failed as exc:
        print("FAILED: %s" % exc)
        print(slurm("sinfo", "-N", "-o", "%N %T %E", check=False))
        return 1
    finally:
        for job in (ctx.get("job"), ctx.get("job_vm1"), ctx.get("job_vm2")):
            if job:
                slurm("scancel", job, check=False)
    print("rollout on the lab's Slurm: %s passed in %.0f s" % (", ".join(chosen), time.time() - t_all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
