# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One collection run: a host's RoCE counters, the state the intent sets, and its drift from the
intent, as Prometheus metrics for node_exporter's textfile collector.

Everything here reads. The state comes from the readers the rest of the collection uses: the
facts reader (``_host.rdma_facts``), the NIC layer's engines in check mode (``_nic_layer``,
the same call the validate role makes to read trust, PFC, ECN and the RDMA-CM ToS), and drift is
fabric_check's host checks (``_validate.host.host_findings``) run here against the intent
snapshot the monitor role wrote: a gauge ``rdmaops_roce_intent_drift{check="mtu"}`` and a finding
of ``check: mtu`` are the same check, with the same words (the failing findings' hints are written
as comments in the file).

Counters: every ``hw_counters/<name>`` and ``counters/<name>`` of every RDMA port, whatever the
driver (mlx5, rxe, bnxt_re, ...), as ``rdmaops_roce_hw_<name>_total`` and
``rdmaops_roce_port_<name>_total`` (``port_xmit_data``/``port_rcv_data`` count 4-byte words and
become ``..._bytes_total``); hw_counters' ``lifespan`` (the cache time of the others, in ms) is no
counter and is left out. Per netdev, ``ethtool -S``'s flow-control lines where the driver has
them (mlx5: per priority with PFC on). A counter the driver lacks gives no series.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import socket
import sys
import time

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
from ansible_collections.rdmaops.roce.plugins.module_utils._host.ports import roce_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import IB_CLASS, kernel_release
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import COLLECTION_VERSION, TEXTFILE_NAME
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.exposition import Exposition, metric_name
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import ethtool_stats
from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import NicLayer, ports_from_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.host import host_findings
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.verdict import read_inputs

TEXTFILE_MARKER = "Managed by rdmaops.roce (monitor): rdmaops-roce-collector rewrites this file on every run."
# a sysfs counter's text (without its newline); the kernel's counters are u64
COUNTER_TEXT = re.compile(r"[0-9]+")
NEGATIVE_TEXT = re.compile(r"-[0-9]+")
COUNTER_MAX = (1 << 64) - 1
# the snapshot's interval, as monitor_collector's option allows it
INTERVAL_RANGE = (1, 3600)
# hw_counters entries that are not counters
NOT_COUNTERS = ("lifespan",)
# counters/ entries that count 4-byte words (IBA PortCounters PortXmitData / PortRcvData)
WORD_COUNTERS = {"port_xmit_data": "xmit_bytes", "port_rcv_data": "rcv_bytes"}
# hw_counters whose meaning the alert rules and the dashboard rest on (any other is exported too)
KNOWN_HW = {
    "np_ecn_marked_roce_packets": "RoCE packets that arrived ECN-marked (CE) at this notification point",
    "np_cnp_sent": "CNPs this notification point sent back to senders",
    "rp_cnp_handled": "CNPs this reaction point received and slowed down for",
    "rp_cnp_ignored": "CNPs this reaction point received and ignored",
    "out_of_sequence": "Packets that arrived out of sequence (a loss upstream)",
    "packet_seq_err": "NAKs for a packet sequence error received by the requester",
    "local_ack_timeout_err": "Times the requester's ACK timer expired (retransmissions)",
    "out_of_buffer": "Packets dropped for lack of a receive WQE (receive queue empty)",
    "sent_pkts": "Packets Soft-RoCE sent",
    "rcvd_pkts": "Packets Soft-RoCE received",
    "rcvd_seq_err": "Packets Soft-RoCE received out of sequence",
    "retry_exceeded_err": "Requests Soft-RoCE gave up on after the retry count",
    "link_downed": "Times the port's link went down",
}
# ethtool -S counters of the netdev below a RoCE port (mlx5 names), besides the pause counters
NETDEV_COUNTERS = {
    "rx_discards_phy": ("phy_discards_received_total", "Packets the physical port dropped on receive for lack of buffer"),
    "tx_discards_phy": ("phy_discards_sent_total", "Packets the physical port dropped on transmit"),
    "link_down_events_phy": ("link_down_events_total", "Times the physical link went down"),
    "rx_out_of_buffer": ("out_of_buffer_total", "Packets the netdev dropped for lack of a receive buffer"),
    "tx_pause_storm_warning_events": ("pause_storm_warning_events_total",
                                      "Times the NIC paused its transmitter long enough to warn of a PFC storm"),
    "tx_pause_storm_error_events": ("pause_storm_error_events_total",
                                    "Times the NIC's PFC storm guard stopped honouring pause frames"),
}
PAUSE_FAMILIES = {
    ("rx", "frames"): ("pause_frames_received_total", "PFC pause frames received on a priority (the peer asked us to stop)", 1),
    ("tx", "frames"): ("pause_frames_sent_total", "PFC pause frames sent on a priority (we asked the peer to stop)", 1),
    ("rx", "duration_us"): ("pause_received_seconds_total", "Time the port was paused by received pause frames", 1e-6),
    ("tx", "duration_us"): ("pause_sent_seconds_total", "Time the port's pause frames held the peer", 1e-6),
    ("rx", "transitions"): ("pause_transitions_received_total", "Transitions from paused (XOFF) to running (XON)", 1),
}
# fabric_check's host checks, in its order (a check with no data on this host gives no drift series)
HOST_CHECKS = ("modules", "ports", "mtu", "gid", "qos", "ecn", "tos", "peermem")


class _Facts(RdmaFacts):
    """The facts reader without the driver stack's version: the host checks do not use it, and it
    costs a package-manager query (or ofed_info) on every run."""

    def _stack(self):
        return dict(flavor=None, version=None, kernel=kernel_release(self.host), evidence=[])


class Collection:
    """One run: :meth:`collect` fills :attr:`out` and returns whether every part was read."""

    def __init__(self, ctx, snapshot, clock=time.time):
        self.ctx = ctx
        self.host = ctx.host
        self.runner = ctx.runner
        self.snapshot = snapshot or {}
        self.intent = self.snapshot.get("intent")
        self.clock = clock
        self.out = Exposition()
        self.out.comment(TEXTFILE_MARKER)
        self.errors = []

    # -- the run ----------------------------------------------------------------------------
    def collect(self):
        started = self.clock()
        cpu = _cpu_seconds()
        rdma = self._part("facts", lambda: _Facts(self.host, self.runner, use_tools=True, gpu_topology=True).gather())
        if rdma is not None:
            self._part("port counters", lambda: self._port_counters(rdma))
            self._part("ethtool", lambda: self._netdev_counters(rdma))
            self._part("link state", lambda: self._link_state(rdma))
        nic = None
        if rdma is not None and self.intent is not None:
            nic = self._part("nic state", lambda: self._nic_state(rdma))
            self._part("drift", lambda: self._drift(rdma, nic))
        elif self.intent is None:
            self.errors.append("intent: no intent snapshot (%s)" % self.snapshot.get("_error", "run the monitor role"))
        self._self_metrics(started, cpu)
        return not self.errors

    def _part(self, name, read):
        try:
            return read()
        except (RdmaopsError, IOError, OSError, ValueError, KeyError, TypeError) as exc:
            self.errors.append("%s: %s" % (name, getattr(exc, "msg", None) or exc))
            return None

    # -- counters ---------------------------------------------------------------------------
    def _port_counters(self, rdma):
        for dev, num, port, netdev in _all_ports(rdma):
            labels = dict(device=dev, port=num, netdev=netdev)
            base = "%s/%s/ports/%s" % (IB_CLASS, dev, num)
            for name in self.host.listdir(base + "/hw_counters"):
                if name in NOT_COUNTERS:
                    continue
                value = self._counter(base + "/hw_counters/" + name)
                if value is not None:
                    help_text = KNOWN_HW.get(name, "An RDMA port counter, as the driver names it")
                    self.out.add(metric_name("hw", _strip_total(name), "total"), "counter",
                                 "%s (hw_counters/%s)" % (help_text, name), value, **labels)
            for name in self.host.listdir(base + "/counters"):
                value = self._counter(base + "/counters/" + name)
                if value is None:
                    continue
                if name in WORD_COUNTERS:
                    self.out.add(metric_name("port", WORD_COUNTERS[name], "total"), "counter",
                                 "Bytes counted by counters/%s (4-byte words, times 4)" % name, value * 4, **labels)
                else:
                    short = name[len("port_"):] if name.startswith("port_") else name
                    self.out.add(metric_name("port", _strip_total(short), "total"), "counter",
                                 "RDMA port counters/%s" % name, value, **labels)

    def _counter(self, path):
        """The counter in the sysfs file ``path``, or None with the file named in
        ``rdmaops_roce_collector_errors`` (and the run failed): a counter that cannot be read, or
        reads as something no kernel counter is, is never skipped silently nor exported."""
        text, errno_name = self.host.read_or_errno(path)
        value, why = _counter(text) if errno_name is None else (None, "unreadable (%s)" % errno_name)
        if why is not None:
            reason = why.split(" ", 1)[0]
            self.errors.append("counter %s: %s" % (path, why))
            self.out.add(metric_name("collector_errors"), "gauge",
                         "1 for each file the last collection could not read as a counter (the reason in the label), "
                         "left out of the metrics", 1, file=path, reason=reason)
        return value

    def _netdev_counters(self, rdma):
        seen = set()
        for dev, num, _port, netdev in _all_ports(rdma):
            if not netdev or netdev in seen:
                continue
            seen.add(netdev)
            result = self.runner.run_optional(["ethtool", "-S", netdev])
            stats = ethtool_stats.parse_stats(result.stdout) if result else None
            if not stats:
                continue  # no ethtool, or a driver without statistics: no series
            labels = dict(device=dev, port=num, netdev=netdev)
            for direction, priority, kind, value in ethtool_stats.pause_counters(stats):
                name, help_text, scale = PAUSE_FAMILIES[(direction, kind)]
                if priority is None:
                    self.out.add(metric_name("link", name), "counter", help_text.replace("on a priority", "(link-level pause)"),
                                 value * scale if scale != 1 else value, **labels)
                else:
                    self.out.add(metric_name(name), "counter", help_text, value * scale if scale != 1 else value,
                                 priority=priority, **labels)
            for stat, (name, help_text) in sorted(NETDEV_COUNTERS.items()):
                if stat in stats:
                    self.out.add(metric_name(name), "counter", "%s (ethtool -S %s)" % (help_text, stat), stats[stat], **labels)

    # -- state ------------------------------------------------------------------------------
    def _link_state(self, rdma):
        netdevs = rdma.get("netdevs") or {}
        for dev, num, port, netdev in _all_ports(rdma):
            labels = dict(device=dev, port=num, netdev=netdev)
            self.out.add(metric_name("port_active"), "gauge", "1 when the RDMA port's state is ACTIVE, else 0",
                         1 if port.get("state") == "ACTIVE" else 0, **labels)
            if port.get("active_mtu"):
                self.out.add(metric_name("active_mtu_bytes"), "gauge", "The RDMA port's active MTU (RoCE: from the netdev's MTU)",
                             port["active_mtu"], **labels)
            mtu = (netdevs.get(netdev) or {}).get("mtu") if netdev else None
            if mtu is not None:
                self.out.add(metric_name("netdev_mtu_bytes"), "gauge", "The MTU of the netdev below an RDMA port", mtu, netdev=netdev)

    def _nic_state(self, rdma):
        """nic_layer in check mode over every active RoCE port, as the validate role reads it."""
        active = sorted(set(netdev for _d, _n, port, netdev in roce_ports(rdma) if port.get("state") == "ACTIVE"))
        ports = ports_from_intent(rdma, self.intent, active) if active else []
        if not ports:
            return []
        check_ctx = Context(self.ctx.module, host=self.host, runner=self.runner)
        check_ctx.check_mode = True  # reads and plans, never applies
        result, _plan = execute(NicLayer(check_ctx, dict(ports=ports, boot_reapply=False, unsupported="warn", link_mtu={})))
        for entry in result["ports"]:
            labels = dict(device=entry["device"], port=entry["port"], netdev=entry["interface"])
            qos = (entry.get("qos") or {}).get("before") or {}
            if qos.get("trust"):
                for trust in ("pcp", "dscp"):
                    self.out.add(metric_name("trust"), "gauge", "1 for the priority trust state the port has (pcp or dscp)",
                                 1 if qos["trust"] == trust else 0, trust=trust, **labels)
            if qos.get("pfc") is not None:
                for priority in range(8):
                    self.out.add(metric_name("pfc_enabled"), "gauge", "1 when PFC is on for the priority",
                                 1 if priority in qos["pfc"] else 0, priority=priority, **labels)
            ecn = entry.get("ecn") or {}
            for point in ("np", "rp"):
                enabled = (((ecn.get("before") or {}).get(point) or {}).get("enabled")) if ecn.get("supported", True) else None
                if enabled is not None:
                    for priority in range(8):
                        self.out.add(metric_name("ecn_enabled"), "gauge",
                                     "1 when ECN (DCQCN) is on for the priority at the notification (np) or reaction (rp) point",
                                     1 if priority in enabled else 0, point=point, priority=priority, **labels)
            tos = (entry.get("tos") or {}).get("before") or {}
            if tos.get("tos") is not None:
                self.out.add(metric_name("rdma_cm_tos"), "gauge", "RDMA-CM's default ToS of the port (configfs default_roce_tos)",
                             tos["tos"], **labels)
            if tos.get("roce_mode") is not None:
                self.out.add(metric_name("rdma_cm_roce_v2"), "gauge", "1 when RDMA-CM defaults to RoCE v2 on the port, 0 for v1",
                             1 if tos["roce_mode"] == "v2" else 0, **labels)
        return result["ports"]

    def _drift(self, rdma, nic):
        intent = self.intent
        self.out.add(metric_name("intent_host_mtu_bytes"), "gauge", "The host MTU the fabric intent asks for", intent["host_mtu"])
        self.out.add(metric_name("intent_roce_tos"), "gauge", "The RDMA-CM ToS the fabric intent asks for", intent["roce_tos"])
        host = self.snapshot.get("host") or socket.gethostname()
        # read through fabric_check's own input reader first, so the checks see the values exactly
        # as they see them in validate (a port number as its name, numbers and booleans strictly)
        states, _switches, _problems = read_inputs({host: dict(rdma=rdma, nic=nic)}, None)
        findings = host_findings(host, states.get(host) or {}, intent)
        by_check = {}
        for finding in findings:
            if finding["passed"] is None:
                continue
            drifted = finding["passed"] is False
            by_check[finding["check"]] = by_check.get(finding["check"], False) or drifted
            dev, _sep, num = (finding.get("device") or "").partition("/")
            self.out.add(metric_name("intent_drift_field"), "gauge",
                         "1 when this field differs from the intent (fabric_check's finding of the same check and field), else 0",
                         1 if drifted else 0, check=finding["check"], field=finding["field"], device=dev or None, port=num or None)
            if drifted:
                self.out.comment("drift: check=%s field=%s device=%s expected=%s actual=%s: %s" % (
                    finding["check"], finding["field"], finding.get("device") or "-", _show(finding["expected"]),
                    _show(finding["actual"]), finding["hint"]))
        for check in HOST_CHECKS:
            if check in by_check:
                self.out.add(metric_name("intent_drift"), "gauge",
                             "1 when this host differs from the fabric intent on the check (fabric_check's host checks), else 0",
                             1 if by_check[check] else 0, check=check)

    # -- the collector itself -------------------------------------------------------------
    def _self_metrics(self, started, cpu):
        for error in self.errors:
            self.out.comment("error: %s" % error)
        self.out.add(metric_name("collector_success"), "gauge", "1 when the last collection read every part, else 0",
                     0 if self.errors else 1)
        self.out.add(metric_name("collector_info"), "gauge", "The rdmaops.roce collection that wrote these metrics", 1,
                     version=COLLECTION_VERSION)
        interval = self.snapshot.get("interval")
        if interval:
            self.out.add(metric_name("collector_interval_seconds"), "gauge", "How often the collector runs (monitor_interval)", interval)
        self.out.add(metric_name("collector_last_run_timestamp_seconds"), "gauge", "When the last collection ran (Unix time)",
                     round(self.clock(), 3))
        self.out.add(metric_name("collector_duration_seconds"), "gauge", "Wall time of the last collection",
                     round(max(0.0, self.clock() - started), 6))
        used = _cpu_seconds()
        if used is not None and cpu is not None:
            self.out.add(metric_name("collector_cpu_seconds"), "gauge",
                         "CPU time (user and system, the tools it ran included) of the last collection", round(used - cpu, 6))


def _all_ports(rdma):
    """``(device, port, port facts, netdev)`` for every port of every RDMA device, in order."""
    for dev in sorted(rdma.get("devices") or {}):
        ports = rdma["devices"][dev].get("ports") or {}
        for num in sorted(ports, key=lambda name: int(name) if str(name).isdigit() else 0):
            yield dev, num, ports[num], ports[num].get("netdev")


def _counter(text):
    """``(value, None)`` for a counter file's text, or ``(None, why)`` (the first word of ``why`` is the
    reason label: empty, malformed, negative, out_of_range).

    A kernel counter is an unsigned decimal number and a newline (sysfs' ``%llu``), so anything
    else -- ``12abc``, ``-5``, ``N/A``, nothing -- is an error, not a sample. The bound is the
    kernel's: its counters are u64, so a value above 2**64-1 cannot come from one; below it, values
    are exported exactly (Prometheus keeps float64: a byte counter passes 2**53 within days on a
    400G link, and a counter that coarse is still a counter)."""
    text = (text or "").rstrip("\n")
    if not text:
        return None, "empty (no counter in the file)"
    if COUNTER_TEXT.fullmatch(text) is None:
        shown = repr(text[:24]) + ("..." if len(text) > 24 else "")
        if NEGATIVE_TEXT.fullmatch(text):
            return None, "negative (%s; counters count up from 0)" % shown
        return None, "malformed (%s is not an unsigned decimal number)" % shown
    value = int(text) if len(text) <= 20 else None  # 2**64-1 has 20 digits (and int() of 4300 digits raises)
    if value is None or value > COUNTER_MAX:
        return None, "out_of_range (a number of %d digits, above 2**64-1, the largest counter the kernel has)" % len(text)
    return value, None


def _strip_total(name):
    return name[:-len("_total")] if name.endswith("_total") else name


def _show(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else str(value)


def _cpu_seconds():
    try:
        times = os.times()
    except OSError:
        return None
    return times[0] + times[1] + times[2] + times[3]


def load_snapshot(host, path):
    """The intent snapshot the monitor role wrote, or ``{"_error": why}``."""
    text = files.read_text(host, path)
    if text is None:
        return {"_error": "%s is absent" % path}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return {"_error": "%s is not JSON: %s" % (path, exc)}
    if not isinstance(data, dict) or not isinstance(data.get("intent"), dict):
        return {"_error": "%s holds no intent" % path}
    return data


class CollectorError(Exception):
    """A run that wrote nothing: the metrics file is left as it was (node_exporter keeps its last
    metrics, and the RoceCollectorDown alert sees their age)."""


def check_snapshot(snapshot, path):
    """Refuse a snapshot whose keys are not what monitor_collector writes (naming the key)."""
    interval = snapshot.get("interval")
    low, high = INTERVAL_RANGE
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int) or not low <= interval <= high):
        raise CollectorError("%s: interval is %s; expected a whole number of seconds from %d to %d (monitor_interval), such "
                             "as 15: run the monitor role again" % (path, _shown(interval), low, high))
    host = snapshot.get("host")
    if host is not None and not (isinstance(host, str) and host.strip() and host.isprintable()):
        raise CollectorError("%s: host is %s; expected the host's inventory name, such as gpu001: run the monitor role again"
                             % (path, _shown(host)))


def _shown(value):
    if isinstance(value, str):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    return json.dumps(value)[:40] if isinstance(value, (bool, int, float, type(None))) else "a %s" % (
        "list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else "value of another kind")


def textfile_path(host, textfile_dir):
    """The metrics file's path; CollectorError when it is a symlink or not a regular file (the
    collector runs as root: it writes only its own file, never where a link points)."""
    path = "%s/%s" % (textfile_dir.rstrip("/"), TEXTFILE_NAME)
    real = host.path(path)
    if os.path.islink(real):
        raise CollectorError("%s is a symlink (to %s); the collector writes only a regular file there: remove the link"
                             % (path, os.readlink(real)))
    if os.path.lexists(real) and not os.path.isfile(real):
        raise CollectorError("%s is not a regular file; the collector writes only a regular file there: remove it" % path)
    return path


def run(snapshot_path, textfile_dir, module=None, clock=time.time):
    """Collect once and write ``<textfile_dir>/rdmaops_roce.prom`` atomically; return the text.
    CollectorError (the file left as it was) for a malformed snapshot or a file it may not write."""
    module = module or CollectorModule()
    ctx = Context(module, host=HostRoot())
    path = textfile_path(ctx.host, textfile_dir)
    snapshot = load_snapshot(ctx.host, snapshot_path)
    check_snapshot(snapshot, snapshot_path)
    collection = Collection(ctx, snapshot, clock=clock)
    collection.collect()
    text = collection.out.render()
    try:
        files.write_atomic(ctx.host, path, text, mode=0o644)
    except (RdmaopsError, IOError, OSError, ValueError) as exc:
        raise CollectorError("%s could not be written: %s" % (path, getattr(exc, "msg", None) or exc))
    return text


def main(argv=None):
    """``rdmaops-roce-collector --intent PATH --textfile-dir DIR [--stdout]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    options = {"--intent": None, "--textfile-dir": None}
    to_stdout = "--stdout" in argv
    argv = [arg for arg in argv if arg != "--stdout"]
    while argv:
        key = argv.pop(0)
        if key not in options or not argv:
            sys.stderr.write("usage: rdmaops-roce-collector --intent PATH --textfile-dir DIR [--stdout]\n")
            return 2
        options[key] = argv.pop(0)
    if not options["--intent"] or not options["--textfile-dir"]:
        sys.stderr.write("usage: rdmaops-roce-collector --intent PATH --textfile-dir DIR [--stdout]\n")
        return 2
    try:
        text = run(options["--intent"], options["--textfile-dir"])
    except CollectorError as exc:
        sys.stderr.write("rdmaops-roce-collector: %s; the metrics file was left as it was\n" % exc)
        return 1
    if to_stdout:
        sys.stdout.write(text)
    return 0
