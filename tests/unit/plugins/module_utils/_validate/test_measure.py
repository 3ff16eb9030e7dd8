"""The validate role's measurements read back: perftest and ping output captured in the lab VMs
(tests/unit/fixtures/perftest), counters in the formats of the kernel's sysfs and ethtool -S."""

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import measure

PERFTEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), *([os.pardir] * 3 + ["fixtures", "perftest"]))


def read(name):
    with open(os.path.join(PERFTEST, name)) as handle:
        return handle.read()


def test_write_bw_result_row_in_gbits():
    result = measure.parse_write_bw(read("ib_write_bw.txt"))
    assert result["bytes"] == 65536 and result["iterations"] > 0
    assert 0 < result["average_gbps"] <= result["peak_gbps"] or result["peak_gbps"] == 0


def test_write_bw_without_result_row():
    assert measure.parse_write_bw(read("ib_write_bw_rejected.txt")) is None
    assert measure.parse_write_bw("") is None


def test_write_lat_result_row():
    result = measure.parse_write_lat(read("ib_write_lat.txt"))
    assert result["bytes"] == 2 and result["iterations"] > 0
    assert 0 < result["t_min"] <= result["t_typical"] <= result["t_max"]
    assert result["p99"] <= result["p999"]


def test_ping_summary():
    assert measure.ping_received(read("ping_ok.txt")) == (2, 2)
    assert measure.ping_received(read("ping_dropped.txt")) == (2, 0)
    assert measure.ping_received("") is None


# hw_counters lines as grep prints them (nic-ground-truth section 3: mlx5's counters.c names) and
# ethtool -S lines for a port with PFC on priority 3 (en_stats.c names)
BEFORE = """/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent:10
/sys/class/infiniband/mlx5_0/ports/1/hw_counters/rp_cnp_handled:7
/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer:0
/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_ecn_marked_roce_packets:3
== ethtool ens1f0np0
     rx_prio3_pause: 100
     tx_prio3_pause: 5
     rx_out_of_buffer: 0
== tool ib_write_bw /usr/bin/ib_write_bw
"""
AFTER = BEFORE.replace("np_cnp_sent:10", "np_cnp_sent:25").replace("rx_prio3_pause: 100", "rx_prio3_pause: 140")


def test_counter_deltas_on_mlx5():
    out = measure.counter_deltas("gpu1", [("mlx5_0/1", "ens1f0np0")], BEFORE, AFTER, [3])
    by_name = dict((m["name"], m) for m in out)
    assert by_name["np_cnp_sent"]["value"] == 15 and by_name["np_cnp_sent"]["device"] == "mlx5_0/1"
    assert by_name["rx_prio3_pause"]["value"] == 40 and by_name["rx_prio3_pause"]["device"] == "ens1f0np0"
    assert by_name["out_of_buffer"]["value"] == 0 and by_name["out_of_buffer"]["detail"]["available"] is True


def test_counters_soft_roce_exposes_none_of_them():
    # rxe's hw_counters (sent_pkts, rcvd_pkts, ...) hold no PFC, CNP or out-of-buffer counter
    text = read("counters_rxe.txt")
    out = measure.counter_deltas("vm1", [("rxe0/1", "ens4")], text, text, [3])
    assert out and all(m["value"] is None and m["detail"]["available"] is False for m in out)
    assert ("hw", "rxe0/1", "sent_pkts") in measure.parse_counters(text)
