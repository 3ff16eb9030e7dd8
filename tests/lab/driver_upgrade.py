"""Prove a DOCA-OFED upgrade, downgrade and a broken release through the lab's real Slurm, against the
lab's signed DOCA stand-in repository (``lab.py doca-repo``, tests/lab/docarepo.py; the lab flavour of
tests/tools/ofed_standins/build.py: its packages depend on Debian's rdma-core and perftest, so rxe0
and perftest keep working and the gate proves something). Each step is one `site.yml --tags ofed` run
with the repository's settings in an overlay inventory (ofed_provider doca, ofed_doca_repo_url,
ofed_doca_gpg_key_url, ofed_doca_gpg_key_fingerprint, ofed_doca_version), waves of one host:

  install    from the converged lab's inbox stack to DOCA OLD, without the scheduler
             (rdmaops_scheduler none: the lab's VMs run no job yet; a stack switch is not what this proves)
  missing    a release the repository does not hold: refused before any host is drained (sinfo sampled
             every second during the run never shows a drain), nothing installed
  upgrade    a job on vm1; the bump OLD -> NEW drains vm1 with both versions in the reason, waits for the
             job (released 5 s after the drain), which ends COMPLETED; vm1 gets NEW, rxe0 ACTIVE, the gate
             passes (validate_rdma on, but the waves' pairs run no perftest in the lab: vm1's wave has no
             partner rolled out, vm2's pairs with vm1 by path only), vm1 is resumed; then vm2, never both
             out at once (ofed_allow_driver_restart: true, see rolled())
  downgrade  the same back to OLD, with ofed_allow_downgrade
  broken     a NEW release whose mlnx-ofed-kernel-dkms postinst fails: vm1 stays drained (its reason says
             what failed, the package's postinst, and names the versions; the play fails with apt's error),
             vm2 is untouched (OLD, in service)
  restore    the lab put back as it was converged: vm1 to OLD, both to the inbox stack (ofed_provider inbox,
             which removes the DOCA packages and the repository), the stand-in dkms purged, vm1 resumed

    python3 tests/lab/driver_upgrade.py -i INVENTORY [--steps install,missing,upgrade,downgrade,broken,restore]

Exit 0 when every expectation holds, 1 otherwise. Each step prints its wall time and the reasons Slurm
showed. Needs the lab up and converged (inbox stack); leaves it converged (inbox) after restore.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time

from rollout import LAB, Failed, Run, batch_line, expect, job_state, node, slurm, ssh, submit

STEPS = ("install", "missing", "upgrade", "downgrade", "broken", "restore")
RXE_STATE = "cat /sys/class/infiniband/rxe0/ports/1/state"


def repo_settings():
    """``lab.py doca-repo``'s JSON line: starts the repository (idempotent)."""
    proc = subprocess.run(LAB + ["doca-repo"], check=False, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise Failed("lab.py doca-repo: %s" % (proc.stderr or proc.stdout).strip())
    lines = proc.stdout.strip().splitlines()
    expect(len(lines) == 1, "lab.py doca-repo printed one line")
    repo = json.loads(lines[0])
    expect(set(repo) >= {"url", "versions", "key_url", "fingerprint"} and len(repo["versions"]) == 2,
           "the repository: %s, versions %s, key %s" % (repo["url"], repo["versions"], repo["fingerprint"]))
    return repo


def role_vars(repo, version, **more):
    settings = dict(ofed_provider="doca", ofed_doca_repo_url=repo["url"], ofed_doca_gpg_key_url=repo["key_url"],
                    ofed_doca_gpg_key_fingerprint=repo["fingerprint"], ofed_doca_version=version)
    settings.update(more)
    return settings


def installed(vm):
    """``(doca-ofed's version or None, ofed_info -s, rxe0's port state)`` of a VM."""
    out = ssh(vm, "dpkg-query -W -f='${Version} ${db:Status-Abbrev}\\n' doca-ofed 2>/dev/null; echo \"|$(ofed_info -s 2>/dev/null)|\"; "
              + RXE_STATE).splitlines()
    version = out[0].split()[0] if len(out) == 3 and out[0].split()[1:] == ["ii"] else None
    return version, out[-2].strip("|"), out[-1]


class Watch:
    """Samples both nodes' (state, reason) every second while a run goes on."""

    def __init__(self, release=None, job=None):
        self.samples = []
        self.stop = threading.Event()
        self.release = release  # vm1's job ends once this file exists, 5 s after vm1's drain
        self.job = job
        self.job_end_state = None
        self.thread = threading.Thread(target=self.loop)

    def loop(self):
        drained_at = None
        while not self.stop.is_set():
            states = dict((name, node(name)) for name in ("vm1", "vm2"))
            self.samples.append((time.time(), states))
            if self.release and drained_at is None and "DRAIN" in states["vm1"][0]:
                drained_at = time.time()
            if self.release and drained_at is not None and time.time() - drained_at > 5:
                ssh("vm1", "touch %s" % self.release)
                self.release = None
            if self.job and self.job_end_state is None and job_state(self.job) not in ("RUNNING", "COMPLETING", "PENDING"):
                self.job_end_state = job_state(self.job)
            self.stop.wait(1)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def reasons(self, name):
        seen = []
        for _t, states in self.samples:
            reason = states[name][1]
            if "DRAIN" in states[name][0] and reason and reason not in seen:
                seen.append(reason)
        return seen

    def both_out(self):
        return sum(1 for _t, states in self.samples if all("DRAIN" in states[n][0] for n in ("vm1", "vm2")))

    def first_drain(self, name):
        return next((t for t, states in self.samples if "DRAIN" in states[name][0]), None)


def step_install(run, ctx):
    # (a host an earlier run left on another release goes back to OLD too)
    rc, out, _reports = run({}, {"rdmaops_scheduler": "none"}, tags="ofed",
                            inventory_vars=role_vars(ctx["repo"], ctx["old"], ofed_allow_downgrade=True))
    expect(rc == 0, "DOCA %s installed from the lab's repository without the scheduler" % ctx["old"], out)
    for vm in ("vm1", "vm2"):
        version, info, rxe = installed(vm)
        expect(version and version.startswith(ctx["old"] + "-") and "ACTIVE" in rxe,
               "%s: doca-ofed %s, %s, rxe0 %s" % (vm, version, info, rxe))
    ctx["installed"] = ctx["old"]  # the later steps compare with what is installed


def step_missing(run, ctx):
    with Watch() as watch:
        rc, out, _reports = run({}, {}, tags="ofed", inventory_vars=role_vars(ctx["repo"], ctx["repo"]["missing"]))
    expect(rc != 0, "a release the repository lacks fails the run", out)
    found = re.search(r"doca-ofed %s\S* is not in the repository [^,]*, which has [^:]*" % re.escape(ctx["repo"]["missing"]), out)
    expect(found is not None, "refused: %s" % (found.group(0) if found else ""), out)
    expect(not watch.reasons("vm1") and not watch.reasons("vm2"),
           "no node was drained (%d samples of sinfo during the run)" % len(watch.samples))
    for vm in ("vm1", "vm2"):
        version = installed(vm)[0]
        expect((version or "").split("-", 1)[0] == (ctx["installed"] or ""),
               "%s keeps %s" % (vm, "doca-ofed " + version if version else "the inbox stack (no doca-ofed)"))


def rolled(run, ctx, version, extra_vars):
    release = "/run/rdmaops-driver-upgrade-release"
    ssh("vm1", "rm -f %s" % release)
    job = submit("vm1", 0, wrap="until [ -e %s ]; do sleep 1; done" % release)
    try:
        with Watch(release=release, job=job) as watch:
            # the gate runs perftest too: the upgraded stack must carry RDMA traffic
            # Debian's rdma-core loads rpcrdma and ib_iser in the VMs, which make a driver restart unsafe by
            # the role's rule: without consent the class is reboot, and Slurm's reboot of a TCG VM outlasts
            # its ResumeTimeout (the node goes DOWN, the next wave is deferred). The scenario consents.
            rc, out, _reports = run({}, {"validate_rdma": True}, tags="ofed",
                                    inventory_vars=role_vars(ctx["repo"], version, ofed_allow_driver_restart=True, **extra_vars))
    finally:
        ssh("vm1", "touch %s" % release)
    return rc, out, watch, job


def step_rolled(run, ctx, old, new, extra_vars):
    rc, out, watch, job = rolled(run, ctx, new, extra_vars)
    expect(rc == 0, "the rollout %s -> %s succeeded" % (old, new), out)
    for vm in ("vm1", "vm2"):
        print("  sinfo reasons seen for %s: %s" % (vm, watch.reasons(vm)))
        expect(any(old in reason and new in reason for reason in watch.reasons(vm)),
               "%s was drained with both versions in the reason" % vm)
    expect(watch.job_end_state == "COMPLETED" or job_state(job) == "COMPLETED",
           "vm1's job ended COMPLETED after the drain (%s)" % (watch.job_end_state or job_state(job)))
    first1, first2 = watch.first_drain("vm1"), watch.first_drain("vm2")
    expect(first1 and first2 and first1 < first2 and watch.both_out() == 0,
           "vm1 first, then vm2, never both out (vm2 %.0f s after vm1)" % ((first2 or 0) - (first1 or 0)))
    for vm in ("vm1", "vm2"):
        version, info, rxe = installed(vm)
        expect(version and version.startswith(new + "-") and "ACTIVE" in rxe, "%s: doca-ofed %s, %s, rxe0 %s" % (vm, version, info, rxe))
        line = batch_line(out, vm)
        expect("gate passed" in line and "resumed" in line, "%s: %s" % (vm, line), out)
        state, reason = node(vm)
        expect("DRAIN" not in state, "%s is in service: %s" % (vm, state))
    ctx["installed"] = new


def step_upgrade(run, ctx):
    step_rolled(run, ctx, ctx["old"], ctx["new"], {})


def step_downgrade(run, ctx):
    step_rolled(run, ctx, ctx["new"], ctx["old"], {"ofed_allow_downgrade": True})


def step_broken(run, ctx):
    broken = ctx["repo"]["broken"]
    rc, out, watch, _job = rolled(run, ctx, broken, {})
    expect(rc != 0, "the rollout to the broken %s failed" % broken, out)
    state, reason = node("vm1")
    print("  vm1 after the run: %s, reason %r" % (state, reason))
    expect("DRAIN" in state and ctx["installed"] in (reason or "") and broken in (reason or ""),
           "vm1 stays drained, the reason names both versions", out)
    expect((reason or "").startswith("rdmaops.roce: failed: ") and "mlnx-ofed-kernel-dkms postinst failed" in reason,
           "vm1's reason says what failed (the package whose postinst failed)", out)
    expect("mlnx-ofed-kernel-dkms" in out and re.search(r"Bad return status|post-installation script", out) is not None,
           "the run's failure names the package whose postinst failed", out)
    expect(not watch.reasons("vm2") and "DRAIN" not in node("vm2")[0], "vm2 was never drained")
    expect(installed("vm2")[0].startswith(ctx["installed"] + "-"), "vm2 keeps doca-ofed %s" % ctx["installed"])
    expect("ACTIVE" in installed("vm1")[2], "vm1's rxe0 is still ACTIVE (drained, not broken)")


def step_restore(run, ctx):
    rc, out, _reports = run({}, {"rdmaops_scheduler": "none"}, tags="ofed",
                            inventory_vars=role_vars(ctx["repo"], ctx["old"], ofed_allow_downgrade=True))
    expect(rc == 0, "vm1 back to DOCA %s (the half-configured broken release replaced)" % ctx["old"], out)
    rc, out, _reports = run({}, {"rdmaops_scheduler": "none"}, tags="ofed",
                            inventory_vars=role_vars(ctx["repo"], ctx["old"], ofed_provider="inbox"))
    expect(rc == 0, "both back to the inbox stack (ofed_provider inbox)", out)
    for vm in ("vm1", "vm2"):
        ssh(vm, "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q dkms >/dev/null 2>&1 || true")
        version, info, rxe = installed(vm)
        expect(version is None and not info and "ACTIVE" in rxe, "%s: no DOCA, no ofed_info, rxe0 %s" % (vm, rxe))
    if "DRAIN" in node("vm1")[0]:
        slurm("scontrol", "update", "nodename=vm1", "state=resume")
    expect(all("DRAIN" not in node(vm)[0] for vm in ("vm1", "vm2")), "both nodes in service")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--steps", default=",".join(STEPS))
    args = parser.parse_args()
    steps = [name for name in args.steps.split(",") if name]
    unknown = [name for name in steps if name not in STEPS]
    if unknown:
        parser.error("unknown steps %s (known: %s)" % (", ".join(unknown), ", ".join(STEPS)))
    workdir = tempfile.mkdtemp(prefix="rdmaops-driver-upgrade.")
    run = Run(args.inventory, workdir)
    ok = True
    t_all = time.time()
    try:
        repo = repo_settings()
    except Failed as exc:
        print("FAIL repository: %s" % exc)
        return 1
    ctx = dict(repo=repo, old=repo["versions"][0], new=repo["versions"][1])
    first = installed("vm1")[0]
    ctx["installed"] = first.split("-", 1)[0] if first else None
    for name in steps:
        print("== %s" % name, flush=True)
        t0 = time.time()
        try:
            globals()["step_" + name](run, ctx)
            print("PASS %s (%.0f s)" % (name, time.time() - t0), flush=True)
        except Failed as exc:
            ok = False
            print("FAIL %s (%.0f s): %s" % (name, time.time() - t0, exc), flush=True)
            break
    print("driver upgrade: %s in %.0f s (runs' output in %s)" % ("passed" if ok else "FAILED", time.time() - t_all, workdir))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
