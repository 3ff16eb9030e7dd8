"""Soak the running lab: its fabric under load for a fixed time, and nothing may break.

    python3 tests/lab/soak.py [--duration 600] [--cpu-hogs 2] [--ping-interval 0.05] [--ping-size 8000]

For --duration seconds, with --cpu-hogs host CPUs kept busy by stress-ng (Debian's stress-ng; the
lab's VMs run under software emulation, so host load is what starves their virtual CPUs):
  - every VM pings every other VM's fabric address (`ping -c DURATION/INTERVAL -i INTERVAL -s SIZE`,
    both ways, all pairs at once), counting what is lost;
  - ib_write_bw (perftest over Soft-RoCE, RDMA-CM) runs back to back between the pairs in turn;
  - afterwards every VM's kernel log must hold no transmit watchdog line (NETDEV WATCHDOG,
    virtio_net's TX timeout) that was not there before, its fabric netdev no new TX error, and
    `lab.py status` must find the fabric healthy.
Exit 0 when nothing was lost, every ib_write_bw run passed and no watchdog fired; 1 otherwise.
Prints one line per measure and a summary line (the lab tier and the soak tier show it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import health  # noqa: E402  pylint: disable=wrong-import-position

LAB = [sys.executable, os.path.join(HERE, "lab.py")]
BW_SECONDS = 5
BW_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s*$", re.M)

COUNTERS = ('dev=$(cat /sys/class/infiniband/rxe0/parent); '
            'echo "$(dmesg | grep -cE %s) $(cat /sys/class/net/$dev/statistics/tx_errors) '
            '$(cat /sys/class/net/$dev/statistics/tx_dropped) $(cat /proc/loadavg | cut -d" " -f1)"'
            % "'%s'" % health.WATCHDOG_PATTERN)


def ssh(vm, command, timeout=None):
    return subprocess.run(LAB + ["ssh", vm, command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, check=False)


def counters(vm):
    """(watchdog lines, TX errors, TX dropped, VM load) of a VM's fabric netdev."""
    out = ssh(vm, COUNTERS, timeout=60).stdout.split()
    if len(out) != 4:
        raise SystemExit("soak: %s did not answer the counter probe (lab.py status)" % vm)
    return int(out[0]), int(out[1]), int(out[2]), float(out[3])


def parse_bw(text):
    """Average Gb/s from ib_write_bw's result table, or None."""
    match = BW_LINE.search(text)
    return float(match.group(3)) if match else None


def bandwidth_run(server, client, address):
    """One ib_write_bw over RDMA-CM between two VMs; (ok, Gb/s or None, message)."""
    bw = "ib_write_bw -d rxe0 -R --report_gbits -D %d" % BW_SECONDS
    srv = subprocess.Popen(LAB + ["ssh", server, "timeout 90 " + bw], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    result = None
    deadline = time.monotonic() + 60  # a loaded host may take that long to start the server over SSH
    while time.monotonic() < deadline:
        time.sleep(1.5)
        result = ssh(client, "timeout 60 %s %s" % (bw, address), timeout=90)
        if result.returncode == 0 or srv.poll() is not None:
            break
    try:
        srv.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.communicate()
    if result is None or result.returncode != 0:
        return False, None, (result.stderr or result.stdout).strip()[-200:] if result else "not run"
    return True, parse_bw(result.stdout), ""


def ping_run(src, dst, address, count, interval, size, results, source=None):
    """`ping -c COUNT` from src to address; its (sent, received) into results[(src, dst)].

    -c with -W (not -w): ping waits for the last replies, so the packets in flight when it
    stops are not counted as lost. SSH that fails to connect (rc 255, a loaded host) is retried.
    """
    # from src's fabric address: with the lab's rail 2 in the same subnet, a ping without a source
    # leaves by whichever rail's route src's main table lists first (tests/lab/README.md)
    command = "ping -n -q -c %d -i %s -s %d -W 5 %s%s" % (count, interval, size, "-I %s " % source if source else "", address)
    out = ""
    for _attempt in range(5):
        proc = subprocess.run(LAB + ["ssh", src, command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              check=False)
        out = proc.stdout
        if proc.returncode != 255:
            break
        time.sleep(2)
    results[(src, dst)] = health.parse_ping(out.splitlines()), out.strip().splitlines()[-1:] or [""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=600, help="seconds (default %(default)s)")
    parser.add_argument("--cpu-hogs", type=int, default=2, help="stress-ng CPU workers on the host (default %(default)s)")
    parser.add_argument("--ping-interval", type=float, default=0.05, help="seconds between pings (default %(default)s)")
    parser.add_argument("--ping-size", type=int, default=8000, help="ping payload bytes (default %(default)s)")
    parser.add_argument("--max-loss", type=float, default=0.0, help="ping loss allowed, percent (default %(default)s)")
    args = parser.parse_args(argv)

    status = json.loads(subprocess.run(LAB + ["status", "--json", "--no-fabric"], stdout=subprocess.PIPE, text=True,
                                       check=False).stdout or "{}")
    if status.get("state") != "up":
        raise SystemExit("soak: the lab is not up (lab.py up)")
    vms = sorted(status["vms"], key=lambda n: int(n[2:]))
    addr = {vm: status["vms"][vm]["fabric_address"].split("/")[0] for vm in vms}
    if len(vms) < 2:
        raise SystemExit("soak: needs two VMs at least")
    if args.cpu_hogs and shutil.which("stress-ng") is None:
        raise SystemExit("soak: stress-ng is missing; install it with: apt-get install stress-ng")
    before = {vm: counters(vm) for vm in vms}

    t0 = time.monotonic()
    hogs = None
    if args.cpu_hogs:
        hogs = subprocess.Popen(["stress-ng", "--cpu", str(args.cpu_hogs), "--quiet"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    count = max(1, int(args.duration / args.ping_interval))
    results = {}
    pingers = [
        threading.Thread(target=ping_run, daemon=True,
                         args=(src, dst, addr[dst], count, args.ping_interval, args.ping_size, results, addr[src]))
        for src, dst in itertools.permutations(vms, 2)
    ]
    for thread in pingers:
        thread.start()
    runs = []
    stop = threading.Event()

    def bandwidth_loop():
        for server, client in itertools.cycle(list(itertools.permutations(vms, 2))):
            if stop.is_set() or time.monotonic() - t0 > args.duration - BW_SECONDS:
                return
            ok, gbps, message = bandwidth_run(server, client, addr[server])
            runs.append((client, server, ok, gbps, message))
            if not ok:
                print("soak: %.0f s: ib_write_bw %s -> %s failed: %s" % (time.monotonic() - t0, client, server, message),
                      flush=True)

    loop = threading.Thread(target=bandwidth_loop, daemon=True)
    loop.start()
    for thread in pingers:
        thread.join(timeout=args.duration * 3 + 300)
    stop.set()
    loop.join(timeout=300)
    if hogs is not None:
        hogs.terminate()
        hogs.wait(timeout=60)
    elapsed = time.monotonic() - t0
    sent = received = 0
    failed = False
    for (src, dst) in itertools.permutations(vms, 2):
        (s, r), last = results.get((src, dst), ((0, 0), ["no result"]))
        sent, received = sent + s, received + r
        loss = 100.0 * (s - r) / s if s else 100.0
        print("soak: ping %s -> %s: %d sent, %d received, %.3f %% loss%s" % (
            src, dst, s, r, loss, "" if s else " (%s)" % last[0]), flush=True)
        failed = failed or loss > args.max_loss

    after = {vm: counters(vm) for vm in vms}
    watchdog = sum(after[vm][0] - before[vm][0] for vm in vms)
    tx_errors = sum(after[vm][1] - before[vm][1] for vm in vms)
    for vm in vms:
        print("soak: %s: %d new watchdog line(s), %d new TX errors, %d new TX drops (load in the VM %.2f)" % (
            vm, after[vm][0] - before[vm][0], after[vm][1] - before[vm][1], after[vm][2] - before[vm][2], after[vm][3]))
    ok_runs = [r for r in runs if r[2]]
    rates = sorted(r[3] for r in ok_runs if r[3] is not None)
    median = rates[len(rates) // 2] if rates else 0.0
    lab_status = subprocess.run(LAB + ["status"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    print(lab_status.stdout.rstrip())
    loss = 100.0 * (sent - received) / sent if sent else 100.0
    failed = failed or watchdog > 0 or tx_errors > 0 or len(ok_runs) != len(runs) or not runs or lab_status.returncode != 0
    print("soak: %s: %.0f s, %d host CPU hog(s), %d VMs: pings %d sent, %.3f %% lost; ib_write_bw %d/%d runs passed "
          "(median %.3f Gb/s); %d watchdog line(s), %d TX errors; fabric %s" % (
              "FAILED" if failed else "passed", elapsed, args.cpu_hogs, len(vms), sent, loss, len(ok_runs), len(runs),
              median, watchdog, tx_errors, "healthy" if lab_status.returncode == 0 else "UNHEALTHY"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
