"""The collector on real counter layouts: the lab's recorded Soft-RoCE hosts (rxe on virtio_net) and a
ConnectX-7 tree with mlx5's published hw_counters names; output checked by promtool (Prometheus' own
parser), drift by fabric_check's host checks."""

import json
import os
import re
import shutil
import subprocess

import pytest

from fixtures.monitor.counters import MLX5_HW_COUNTERS
from monitortrees import collect, intent, mlx5_host, rxe_host, samples

from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import collector
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.host import host_findings

# what the collector may run: reads only
READS = re.compile(r"(ibv_devinfo|ip -j addr show|ethtool -S \S+|dcb -j (pfc|app|ets|buffer) show dev \S+( dscp-prio)?|mlnx_qos -i \S+)")


def promtool_check(text, tmp_path):
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); the unit tier installs it")
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rxe_counters_state_and_drift_from_the_lab_tree(tmp_path):
    root, bindirs = rxe_host(tmp_path)
    ok, text, run, ctx = collect(root, bindirs)
    assert ok, run.errors
    promtool_check(text, tmp_path)
    got = samples(text)
    port = frozenset([("device", "rxe0"), ("port", "1"), ("netdev", "ens4")])
    # every hw_counter Soft-RoCE has, lifespan (a cache time) left out
    recorded = sorted(os.listdir(str(root / "sys/class/infiniband/rxe0/ports/1/hw_counters")))
    assert "lifespan" in recorded
    for name in recorded:
        assert (("rdmaops_roce_hw_%s_total" % name, port) in got) == (name != "lifespan")
    assert got[("rdmaops_roce_hw_sent_pkts_total", port)] == 0
    # virtio_net has no pause counters, DCB or ECN: no series for them, never a made-up zero
    assert not [key for key in got if "pause" in key[0] or key[0] in ("rdmaops_roce_trust", "rdmaops_roce_pfc_enabled",
                                                                      "rdmaops_roce_ecn_enabled")]
    assert got[("rdmaops_roce_netdev_mtu_bytes", frozenset([("netdev", "ens4")]))] == 9000
    assert got[("rdmaops_roce_active_mtu_bytes", port)] == 4096
    assert got[("rdmaops_roce_rdma_cm_tos", port)] == 0
    # the recorded tree's ToS is the kernel's default 0: the tos check drifts, the rest holds
    drift = dict((dict(labels)["check"], value) for (name, labels), value in got.items() if name == "rdmaops_roce_intent_drift")
    assert drift == {"modules": 0, "ports": 0, "mtu": 0, "gid": 0, "tos": 1}
    assert "qos" not in drift and "ecn" not in drift  # not checked on this host: no series
    assert got[("rdmaops_roce_collector_success", frozenset())] == 1
    assert got[("rdmaops_roce_collector_info", frozenset([("version", "0.1.0")]))] == 1
    assert all(READS.fullmatch(command) for command in ctx.runner.commands), ctx.runner.commands


def test_drift_uses_fabric_checks_words(tmp_path):
    root, bindirs = rxe_host(tmp_path, "rxe_bookworm_mtu1500.json")
    ok, text, run, ctx = collect(root, bindirs)
    got = samples(text)
    assert got[("rdmaops_roce_intent_drift", frozenset([("check", "mtu")]))] == 1
    assert got[("rdmaops_roce_intent_drift_field",
                frozenset([("check", "mtu"), ("field", "mtu"), ("device", "rxe0"), ("port", "1")]))] == 1
    # the comment carries the finding fabric_check gives for the same state
    facts = collector._Facts(ctx.host, ctx.runner).gather()
    failed = [f for f in host_findings("vm1", dict(rdma=facts, nic=None), intent()) if f["passed"] is False]
    mtu = next(f for f in failed if f["field"] == "mtu")
    assert "# drift: check=mtu field=mtu device=rxe0/1 expected=9000 actual=1500: %s" % mtu["hint"] in text.splitlines()


def test_mlx5_published_counters_pause_and_qos_state(tmp_path):
    root, bindirs = mlx5_host(tmp_path)
    ok, text, run, ctx = collect(root, bindirs)
    assert ok, run.errors
    promtool_check(text, tmp_path)
    got = samples(text)
    port = frozenset([("device", "mlx5_0"), ("port", "1"), ("netdev", "ens1f0np0")])
    for name, value in MLX5_HW_COUNTERS.items():
        assert got[("rdmaops_roce_hw_%s_total" % name, port)] == value
    assert ("rdmaops_roce_hw_lifespan_total", port) not in got
    # counters/ port_*_data count 4-byte words: exported in bytes
    assert got[("rdmaops_roce_port_xmit_bytes_total", port)] == 1802523667064 * 4
    assert got[("rdmaops_roce_port_link_downed_total", port)] == 2
    assert got[("rdmaops_roce_port_vl15_dropped_total", port)] == 0
    prio3 = port | frozenset([("priority", "3")])
    assert got[("rdmaops_roce_pause_frames_received_total", prio3)] == 15234
    assert got[("rdmaops_roce_pause_frames_sent_total", prio3)] == 2847
    assert got[("rdmaops_roce_pause_received_seconds_total", prio3)] == pytest.approx(0.048736)
    assert not [k for k in got if k[0] == "rdmaops_roce_pause_frames_received_total" and k != ("rdmaops_roce_pause_frames_received_total", prio3)]
    assert got[("rdmaops_roce_link_down_events_total", port)] == 2
    assert got[("rdmaops_roce_pause_storm_warning_events_total", port)] == 1
    # the second port's netdev printed no statistics: none of its series
    assert not [k for k in got if ("netdev", "ens1f1np1") in k[1] and "pause" in k[0]]
    # QoS state as the dcb stand-in holds it (driver defaults: trust pcp, PFC off) and the ECN tree (all on)
    assert got[("rdmaops_roce_trust", port | frozenset([("trust", "pcp")]))] == 1
    assert got[("rdmaops_roce_pfc_enabled", prio3)] == 0
    assert got[("rdmaops_roce_ecn_enabled", prio3 | frozenset([("point", "np")]))] == 1
    drift = dict((dict(labels)["check"], value) for (name, labels), value in got.items() if name == "rdmaops_roce_intent_drift")
    assert drift["qos"] == 1 and drift["ecn"] == 1 and drift["tos"] == 1 and drift["mtu"] == 0
    assert all(READS.fullmatch(command) for command in ctx.runner.commands), ctx.runner.commands


def test_no_snapshot_means_no_drift_and_a_failed_collection(tmp_path):
    root, bindirs = rxe_host(tmp_path)
    snapshot = collector.load_snapshot(HostRoot(str(root)), "/etc/rdmaops/monitor-intent.json")
    ok, text, run, _ctx = collect(root, bindirs, snapshot=snapshot)
    got = samples(text)
    assert not ok and got[("rdmaops_roce_collector_success", frozenset())] == 0
    assert not [k for k in got if k[0].startswith("rdmaops_roce_intent")]
    assert ("rdmaops_roce_hw_sent_pkts_total", frozenset([("device", "rxe0"), ("port", "1"), ("netdev", "ens4")])) in got
    assert "# error: intent: no intent snapshot (/etc/rdmaops/monitor-intent.json is absent)" in text


def test_unreadable_counters_give_no_sample(tmp_path):
    root, bindirs = rxe_host(tmp_path)
    counters = root / "sys/devices/virtual/infiniband/rxe0/ports/1/hw_counters"
    (counters / "sent_pkts").write_text("N/A\n")
    (counters / "rcvd_pkts").unlink()
    _ok, text, _run, _ctx = collect(root, bindirs)
    assert "rdmaops_roce_hw_sent_pkts_total{" not in text and "rdmaops_roce_hw_rcvd_pkts_total{" not in text
    assert "rdmaops_roce_hw_rcvd_seq_err_total{" in text


def test_run_writes_the_textfile_atomically(tmp_path, monkeypatch):
    root, bindirs = rxe_host(tmp_path)
    snapshot = root / "etc/rdmaops/monitor-intent.json"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text(json.dumps(dict(intent=intent(), host="vm1", interval=15)))
    (root / "var/lib/prometheus/node-exporter").mkdir(parents=True)
    monkeypatch.setenv("RDMAOPS_HOST_ROOT", str(root))
    module = CollectorModule(environ=dict(os.environ, PATH=os.pathsep.join(bindirs)), sbin=())
    text = collector.run("/etc/rdmaops/monitor-intent.json", "/var/lib/prometheus/node-exporter", module=module)
    written = (root / "var/lib/prometheus/node-exporter/rdmaops_roce.prom").read_text()
    assert written == text and text.startswith("# " + collector.TEXTFILE_MARKER)
    # no temporary file left for node_exporter to read (it reads *.prom only; none may linger)
    assert os.listdir(str(root / "var/lib/prometheus/node-exporter")) == ["rdmaops_roce.prom"]
