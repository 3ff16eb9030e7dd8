"""Prove that rdmaops.roce.validate tells the truth on the lab: on the converged lab it passes, its
report.json holds the bandwidth and latency perftest measured between the VMs and every host reports
changed=0; then one fault at a time, each undone before the next, must make it fail with the right
host, field and hint in report.json:

  mtu     vm2's fabric NIC at MTU 1500 (ip link)             -> vm2 mtu, "MTU"
  tos     vm1's rdma_cm default_roce_tos at 32 (configfs)     -> vm1 tos, "default_roce_tos"
  rdma_cm rdma_cm unloaded on vm2                             -> vm2 rdma_cm, "modprobe rdma_cm"
  switch  a switch whose gathered PFC disagrees (fixture)     -> leaf1 pfc_priorities, "pfc priorities"
  fabric  vm2's lab switch port down (its tap, set down in the
          lab's namespace: the fabric dead, every link up)    -> vm1 reachability, "cannot reach vm2",
                                                                 and nothing else failed (but rail 1's
                                                                 path between them); perftest
                                                                 between them not checked

    python3 tests/lab/validate_faults.py -i INVENTORY [--faults mtu,tos,rdma_cm,switch,fabric]

The fault runs skip perftest (validate_rdma=false): each fault is caught by the host and switch
checks, and a perftest that cannot connect would wait for its server's timeout. The fabric fault
asks for perftest: the role must leave the dead pair out (no timeout) and report its tests as not
checked. Exit 0 when every expectation holds, 1 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAB = [sys.executable, os.path.join(HERE, "lab.py")]
SWITCH_FIXTURE = os.path.join(HERE, "fixtures", "switch_pfc_mismatch.yml")
sys.path.insert(0, HERE)
from tos_on_wire import intent_tos  # noqa: E402  (the lab intent's roce_tos, as the collection resolves it)

INTENT_TOS = intent_tos(os.path.join(REPO, "inventories", "lab", "group_vars", "all.yml"))
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", re.M)

# fault -> (VM, inject on it, undo on it, expected finding (host, field, text in its hint), extra vars files);
# VM "lab": the command runs on this machine, in the lab's network namespace (the switch)
FABRIC = "$(cat /sys/class/infiniband/rxe0/parent)"
LAB_STATE = os.path.join(os.environ.get("RDMAOPS_LAB_STATE") or "/run/rdmaops-lab", "lab.json")


def lab_port(vm):
    """``ip -n NETNS link set TAP`` for ``vm``'s port on the lab switch (lab.py's state)."""
    with open(LAB_STATE) as handle:
        record = json.load(handle)
    return "ip -n %s link set dev %s" % (record["netns"], record["vms"][vm]["tap"])


FAULTS = {
    "mtu": ("vm2", "ip link set dev %s mtu 1500" % FABRIC, "ip link set dev %s mtu 9000" % FABRIC,
            ("vm2", "mtu", "MTU"), []),
    "tos": ("vm1", "echo 32 > /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos",
            # the collection's own re-apply unit writes the intent's ToS back
            "systemctl restart rdmaops-nic-qos@rxe0.service",
            ("vm1", "tos", "default_roce_tos"), []),
    # rdma_cm is held by its configfs group and by whatever modules use it (Debian's rdma_ucm, rpcrdma,
    # ib_iser; which ones depends on what ran before, e.g. a reloaded rdma_rxe): the group goes, then
    # every holder, deepest first, then rdma_cm; the undo loads them back, and the re-apply unit
    # writes the ToS again into the group it re-creates
    # every RDMA device's rdma_cm configfs directory holds the module (rxe0, and rxe1 on two rails)
    "rdma_cm": ("vm2", "for d in /sys/kernel/config/rdma_cm/*; do rmdir \"$d\" 2>/dev/null; done; "
                       "held() { local h; for h in $(ls /sys/module/$1/holders 2>/dev/null); do held $h; echo $h; done; }; "
                       "mods=$(held rdma_cm | awk '!seen[$0]++'); echo $mods > /run/rdmaops-fault-rdma_cm; "
                       "modprobe -r $mods rdma_cm",
                "modprobe rdma_cm && for m in $(cat /run/rdmaops-fault-rdma_cm 2>/dev/null); do modprobe $m || exit 1; done; "
                "for d in /sys/class/infiniband/*; do systemctl restart \"rdmaops-nic-qos@${d##*/}.service\"; done",
                ("vm2", "rdma_cm", "modprobe rdma_cm"), []),
    "switch": (None, None, None, ("leaf1", "pfc_priorities", "pfc priorities"), [SWITCH_FIXTURE]),
    "fabric": ("lab", lambda: lab_port("vm2") + " down", lambda: lab_port("vm2") + " up",
               ("vm1", "reachability", "cannot reach vm2"), []),
}
# faults that must fail on their finding alone, and that run perftest (asked for, left out by the role)
ONLY_FINDING = ("fabric",)
# ...besides these, which the same fault causes: with the lab's two rails, vm2's switch port is rail 1's,
# so the rails' ping between vm1's and vm2's rail-1 addresses fails too (rail 2 stays up)
ALSO_CAUSED = {"fabric": lambda f: f["check"] == "rails" and f["field"] == "rail rail1 path" and {f["host"], f["peer"]} == {"vm1", "vm2"}}
WITH_PERFTEST = ("fabric",)


def lab_ssh(vm, command):
    if vm == "lab":
        return subprocess.run(command(), shell=True, capture_output=True, text=True, check=False)
    return subprocess.run(LAB + ["ssh", vm, command], capture_output=True, text=True, check=False)


def path_back(vm, peer_address, tries=10):
    """After the fabric fault's undo: ``vm`` pings ``peer_address`` again (the bridge forwards at once;
    the neighbour entry that failed is resolved anew)."""
    for _attempt in range(tries):
        if lab_ssh(vm, "ping -c 1 -W 2 %s" % peer_address).returncode == 0:
            return True
        time.sleep(2)
    return False


def validate(inventory, report_dir, extra=None, files=()):
    """Run playbooks/validate.yml; return (rc, report.json, {host: changed}, seconds, output)."""
    argv = ["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "validate.yml"),
            "-e", json.dumps(dict(validate_report_dir=report_dir, **(extra or {})))]
    for path in files:
        argv += ["-e", "@" + path]
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    took = time.time() - t0
    path = os.path.join(report_dir, "latest", "report.json")
    report = json.load(open(path)) if os.path.exists(path) else None
    recap = proc.stdout.rsplit("PLAY RECAP", 1)[-1]
    changed = dict((host, int(count)) for host, count in RECAP.findall(recap))
    if report is None:
        print(proc.stdout[-4000:] + proc.stderr[-2000:])
    return proc.returncode, report, changed, took, proc.stdout


def healthy(inventory, base):
    rc, report, changed, took, out = validate(inventory, os.path.join(base, "healthy"))
    problems = []
    if rc != 0 or not report or not report["passed"]:
        failed = [f for f in (report or {}).get("findings", []) if f["passed"] is False]
        problems.append("validate failed on the healthy lab (rc %d): %s" % (rc, json.dumps(failed)[:3000]))
        print(out[-3000:])
    if any(changed.values()) or not changed:
        problems.append("validate changed something: %s" % changed)
    kinds = dict((m["kind"], m) for m in (report or {}).get("measurements", []) if m["value"] is not None)
    for kind in ("ib_write_bw", "ib_write_lat"):
        if kind not in kinds:
            problems.append("report.json holds no %s measurement" % kind)
    if not problems:
        bw, lat = kinds["ib_write_bw"], kinds["ib_write_lat"]
        print("healthy: passed in %.0fs, changed=0 on %s; ib_write_bw %s -> %s %s Gb/s, ib_write_lat %s usec typical (ToS %s)"
              % (took, ", ".join(sorted(changed)), bw["host"], bw["peer"], bw["value"], lat["value"], bw["detail"].get("tos")))
    return problems


def fault(inventory, base, name):
    vm, inject, undo, (host, field, hint), files = FAULTS[name]
    problems = []
    if vm:
        done = lab_ssh(vm, inject)
        if done.returncode != 0:
            # it may have done part of it: undo whatever it did before saying so
            undone = lab_ssh(vm, undo)
            return ["%s: injecting on %s failed: %s%s" % (
                name, vm, done.stderr.strip(),
                "" if undone.returncode == 0 else "; undoing failed too: %s" % undone.stderr.strip())]
    try:
        rc, report, _changed, took, _out = validate(inventory, os.path.join(base, name), dict(validate_rdma=name in WITH_PERFTEST), files)
    finally:
        if vm:
            undone = lab_ssh(vm, undo)
            if undone.returncode != 0:
                problems.append("%s: undoing on %s failed: %s" % (name, vm, undone.stderr.strip()))
    if name == "fabric" and not path_back("vm1", "198.18.0.12"):
        problems.append("fabric: vm1 does not reach vm2 again after the undo")
    if rc == 0 or not report or report["passed"]:
        return problems + ["%s: validate did not fail (rc %d)" % (name, rc)]
    hits = [f for f in report["findings"] if f["passed"] is False and f["host"] == host and f["field"] == field and hint in f["hint"]]
    if not hits:
        failed = [(f["host"], f["field"], f["hint"][:80]) for f in report["findings"] if f["passed"] is False]
        problems.append("%s: no failed finding for host %s field %s with %r in its hint; failed: %s" % (name, host, field, hint, failed))
    else:
        hit = hits[0]
        print("%s: caught in %.0fs: %s %s %s expected %s, actual %s; hint: %s"
              % (name, took, hit["host"], hit["device"] or "", hit["field"], hit["expected"], hit["actual"], hit["hint"]))
    if name in ONLY_FINDING:
        also = ALSO_CAUSED.get(name, lambda f: False)
        others = [(f["host"], f["field"]) for f in report["findings"] if f["passed"] is False and f not in hits and not also(f)]
        if others or len(hits) != 1:
            problems.append("%s: expected exactly the %s %s finding, also failed: %s" % (name, host, field, others))
        rdma = [(f["field"], f["passed"], f["hint"]) for f in report["findings"] if f["check"] in ("rdma_bw", "rdma_lat")]
        if not rdma or any(passed is not None or "do not reach each other" not in hint for _f, passed, hint in rdma):
            problems.append("%s: perftest between the dead pair is not reported as not checked: %s" % (name, rdma))
    return problems


def undone(vm_checks):
    """After the faults, what they changed reads as before."""
    problems = []
    for vm, command, want in vm_checks:
        got = lab_ssh(vm, command).stdout.strip()
        if got != want:
            problems.append("%s: %s reads %r, not %r after the undo" % (vm, command, got, want))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--faults", default="mtu,tos,rdma_cm,switch,fabric")
    parser.add_argument("--skip-healthy", action="store_true")
    parser.add_argument("--report-base", help="keep the reports here (default: a temporary directory)")
    args = parser.parse_args()
    base = args.report_base or tempfile.mkdtemp(prefix="rdmaops-validate-lab-")
    problems = [] if args.skip_healthy else healthy(args.inventory, base)
    for name in [n for n in args.faults.split(",") if n]:
        problems += fault(args.inventory, base, name)
    problems += undone([("vm2", "cat /sys/class/net/%s/mtu" % FABRIC, "9000"),
                        ("vm1", "cat /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos", str(INTENT_TOS)),
                        ("vm2", "cat /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos", str(INTENT_TOS)),
                        ("vm2", "test -d /sys/module/rdma_cm && echo loaded", "loaded")])
    print("reports: %s" % base)
    for line in problems:
        print("FAIL: " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
