"""Prove the monitor role with a real Prometheus: Debian's prometheus on the host scrapes node_exporter on
the lab VMs (forwarded to 127.0.0.1:<SSH port + lab.METRICS_PORT_OFFSET>) with the collection's alert rules
loaded, after site.yml ran with rdmaops_monitor on.

    python3 tests/lab/monitor.py -i INVENTORY

1. every VM's rdmaops_roce_* series are there (the collector ran, node_exporter serves its file);
2. ib_write_bw vm1 -> vm2 makes vm1's packet counters rise;
3. vm2's fabric MTU set to 1500 by hand: RoceIntentDrift fires for vm2 with check="mtu" (and not for
   vm1); how long it took, in collection intervals, is printed;
4. site.yml (--tags nic, vm2) puts the MTU back: the alert clears;
5. rdma_rxe's device re-created on vm1 (a driver reload): the port's counters start again from zero,
   which Prometheus sees as a counter reset.
Exit 0 when all hold, 1 when one does not (saying which), 2 when Prometheus cannot run. Prometheus is
started here and stopped at the end, whatever happens.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import lab  # noqa: E402  (the lab's CLI module: its metrics port offset)

LAB = [sys.executable, os.path.join(HERE, "lab.py")]
RULES = os.path.join(REPO, "roles", "monitor", "files", "rdmaops-roce.rules.yml")
INTERVAL = 15  # the lab's monitor_interval (the role's default)
PROM_PORT = int(os.environ.get("RDMAOPS_LAB_PROMETHEUS_PORT", "19590"))


class Failed(Exception):
    pass


def ssh(vm, command, timeout=120):
    return subprocess.run(LAB + ["ssh", vm, command], check=False, capture_output=True, text=True, timeout=timeout)


class Prometheus:
    def __init__(self, targets, workdir):
        self.url = "http://127.0.0.1:%d" % PROM_PORT
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as handle:
            json.dump({  # JSON is YAML
                "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
                "rule_files": [RULES],
                # only node_exporter's textfile collector: its other collectors take seconds in an emulated VM
                "scrape_configs": [{"job_name": "node", "params": {"collect[]": ["textfile"]}, "static_configs": [
                    {"targets": [address], "labels": {"instance": name}} for name, address in sorted(targets.items())]}],
            }, handle)
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(["prometheus", "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(workdir, "data"),
                                      "--web.listen-address=127.0.0.1:%d" % PROM_PORT, "--log.level=warn"],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except OSError:
                pass
            if self.proc.poll() is not None:
                return False
            time.sleep(1)
        return False

    def query(self, expr):
        """``[(labels, value)]`` of an instant query."""
        url = "%s/api/v1/query?%s" % (self.url, urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=10) as answer:
            data = json.load(answer)
        return [(item["metric"], float(item["value"][1])) for item in data["data"]["result"]]

    def wait(self, what, expr, test, timeout, every=2):
        """Poll ``expr`` until ``test(result)``; return the seconds it took, or raise Failed."""
        start = time.time()
        result = None
        while time.time() - start < timeout:
            result = self.query(expr)
            if test(result):
                return time.time() - start
            time.sleep(every)
        raise Failed("%s: not within %d s (%s = %s)" % (what, timeout, expr, result))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def sent_packets(prom, vm):
    values = [value for _labels, value in prom.query('sum(rdmaops_roce_hw_sent_pkts_total{instance="%s"})' % vm)]
    return values[0] if values else None


def drift_firing(vm):
    return 'ALERTS{alertname="RoceIntentDrift",alertstate="firing",instance="%s",check="mtu"}' % vm


def run(prom, inventory, status, since):
    # 1. the series, from a collection that ran after this step began: the inventory's interval is
    # minutes, so the file node_exporter serves first can predate what the steps before this one put
    # back (the rollout's failed gate left vm1's ToS at 0 until its end), and drift judged on it would
    # be the past's
    took = prom.wait("rdmaops_roce_* series of vm1 and vm2", 'count by (instance) ({__name__=~"rdmaops_roce_.+"})',
                     lambda r: set(labels["instance"] for labels, value in r if value > 10) >= {"vm1", "vm2"}, 90)
    took += prom.wait("a collection on vm1 and vm2 that ran after this step began",
                      "rdmaops_roce_collector_last_run_timestamp_seconds > %d" % int(since),
                      lambda r: set(labels["instance"] for labels, _value in r) >= {"vm1", "vm2"}, 6 * INTERVAL)
    counts = dict((labels["instance"], int(value)) for labels, value in prom.query('count by (instance) ({__name__=~"rdmaops_roce_.+"})'))
    success = dict((labels["instance"], value) for labels, value in prom.query("rdmaops_roce_collector_success"))
    print("series: %s rdmaops_roce_* series (after %.0f s); collector_success %s" % (
        ", ".join("%s %d" % kv for kv in sorted(counts.items())), took, success))
    if success != {"vm1": 1.0, "vm2": 1.0}:
        raise Failed("a collector failed: %s (see the '# error:' lines of its rdmaops_roce.prom)" % success)
    drifting = prom.query("rdmaops_roce_intent_drift == 1")
    if drifting:
        raise Failed("drift right after site.yml: %s" % drifting)
    cpu = dict((labels["instance"], value) for labels, value in prom.query("rdmaops_roce_collector_cpu_seconds"))
    duration = dict((labels["instance"], value) for labels, value in prom.query("rdmaops_roce_collector_duration_seconds"))
    print("collector cost per run: CPU %s s, wall %s s (TCG-emulated VMs)" % (cpu, duration))

    # 2. counters rise under ib_write_bw
    before = sent_packets(prom, "vm1")
    peer = status["vms"]["vm2"]["fabric_address"].split("/")[0]
    bw = "ib_write_bw -d rxe0 -R -D 3"
    server = subprocess.Popen(LAB + ["ssh", "vm2", "timeout 60 " + bw], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    client = None
    for _attempt in range(10):
        time.sleep(1)
        client = ssh("vm1", "%s %s" % (bw, peer), timeout=90)
        if client.returncode == 0:
            break
    server.communicate(timeout=90)
    if client is None or client.returncode != 0:
        raise Failed("ib_write_bw vm1 -> vm2 failed: %s" % ((client.stderr or client.stdout)[-300:] if client else "not run"))
    took = prom.wait("vm1's sent_pkts rising", 'sum(rdmaops_roce_hw_sent_pkts_total{instance="vm1"})',
                     lambda r: r and before is not None and r[0][1] > before, 3 * INTERVAL + 15)
    print("counters: vm1 rdmaops_roce_hw_sent_pkts_total %d -> %d, seen %.0f s after ib_write_bw" % (
        before, sent_packets(prom, "vm1"), took))

    # 3. drift: vm2's fabric MTU by hand
    fabric = ssh("vm2", "cat /sys/class/infiniband/rxe0/parent").stdout.strip()
    set_at = time.time()
    changed = ssh("vm2", "ip link set dev %s mtu 1500" % fabric)
    if changed.returncode != 0:
        raise Failed("cannot set vm2's %s MTU: %s" % (fabric, changed.stderr))
    took = prom.wait("RoceIntentDrift for vm2 (check mtu)", drift_firing("vm2"), bool, 6 * INTERVAL)
    took = time.time() - set_at
    if took > 3 * INTERVAL:
        raise Failed("RoceIntentDrift fired %.0f s after the change: more than three intervals of %d s" % (took, INTERVAL))
    print("drift: vm2 %s MTU 1500 -> RoceIntentDrift{instance=vm2,check=mtu} firing after %.0f s (%.1f intervals of %d s; "
          "the rule: drift in 2 collections in a row)" % (fabric, took, took / INTERVAL, INTERVAL))
    others = [labels for labels, _v in prom.query('ALERTS{alertname="RoceIntentDrift",alertstate="firing"}') if labels.get("instance") != "vm2"]
    if others:
        raise Failed("RoceIntentDrift fires for a host that did not drift: %s" % others)

    # 4. site.yml puts it back. Without the scheduler: through the lab's Slurm an MTU change is a link
    # reset, so the rollout would drain vm2 and gate it with validate.yml (about 150 s more, proven by
    # the rollout step); this step is about the alert clearing once the host matches the intent.
    start = time.time()
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "site.yml"), "--tags", "nic",
                           "--limit", "vm2", "-e", "rdmaops_scheduler=none"],
                          cwd=REPO, capture_output=True, text=True, check=False, timeout=900)
    if proc.returncode != 0:
        raise Failed("site.yml --tags nic --limit vm2 failed: %s" % proc.stdout[-1500:])
    ran = time.time() - start
    took = prom.wait("RoceIntentDrift for vm2 cleared", drift_firing("vm2"), lambda r: not r, 4 * INTERVAL + 15)
    print("drift cleared: site.yml --tags nic --limit vm2 (%.0f s) put the MTU back; the alert was gone %.0f s later" % (ran, took))

    # 5. the RDMA device re-created on vm1 (as a driver reload does): its counters restart
    ssh("vm1", 'set -e; f=$(cat /sys/class/infiniband/rxe0/parent); rdma link delete rxe0; rdma link add rxe0 type rxe netdev "$f"')
    took = prom.wait("a counter reset on vm1 after rxe0 was re-created",
                     'max(resets(rdmaops_roce_hw_sent_pkts_total{instance="vm1"}[5m]))', lambda r: r and r[0][1] >= 1,
                     3 * INTERVAL + 15)
    print("rxe0 re-created on vm1: Prometheus saw its counters reset %.0f s later" % took)


def set_interval(inventory, interval=None):
    """site.yml --tags monitor: the collector's timer at ``interval`` seconds, or the inventory's."""
    extra = ["-e", "monitor_interval=%d" % interval] if interval else []
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "site.yml"), "--tags", "monitor"] + extra,
                          cwd=REPO, capture_output=True, text=True, check=False, timeout=900)
    if proc.returncode != 0:
        raise Failed("site.yml --tags monitor %s failed: %s" % (" ".join(extra), proc.stdout[-1500:]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--leave-interval", action="store_true",
                        help="leave the collector at %d s afterwards (the lab tier's last step: the lab goes down next)" % INTERVAL)
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # each step's line as it happens (the lab tier tees it)
    if shutil.which("prometheus") is None:
        print("prometheus is not installed (apt-get install prometheus)")
        return 2
    status = json.loads(subprocess.run(LAB + ["status", "--json"], check=True, capture_output=True, text=True).stdout)
    targets = dict((name, "127.0.0.1:%d" % (vm["ssh_port"] + lab.METRICS_PORT_OFFSET)) for name, vm in status["vms"].items()
                   if name in ("vm1", "vm2"))
    workdir = tempfile.mkdtemp(prefix="rdmaops-lab-prometheus-")
    prom = Prometheus(targets, workdir)
    rc = 0
    try:
        if not prom.ready():
            print("prometheus did not start: %s" % open(os.path.join(workdir, "prometheus.log")).read()[-1000:])
            return 2
        print("prometheus %s scraping %s with %s" % (prom.url, targets, os.path.relpath(RULES, REPO)))
        # the lab's inventory runs the collector rarely (an emulated VM spends seconds of CPU on a run):
        # every INTERVAL s for this step, the inventory's interval again afterwards
        start = time.time()
        set_interval(args.inventory, INTERVAL)
        print("site.yml --tags monitor -e monitor_interval=%d: %.0f s" % (INTERVAL, time.time() - start))
        run(prom, args.inventory, status, start)
    except Failed as exc:
        print("FAILED: %s" % exc)
        rc = 1
    finally:
        prom.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.leave_interval:
        return rc
    try:
        set_interval(args.inventory)
    except (Failed, subprocess.TimeoutExpired) as exc:
        print("FAILED to put the inventory's interval back: %s" % exc)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
