"""ethtool -S: a real virtio_net dump (no flow control), mlx5's per-priority pause names, no stats at all."""

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.ethtool_stats import parse_stats, pause_counters

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                     "fixtures", "tools", "ethtool")


def _read(name):
    with open(os.path.join(TOOLS, name)) as handle:
        return handle.read()


def test_virtio_net_has_statistics_but_no_flow_control():
    stats = parse_stats(_read("virtio_net-ethtool6.1-S.txt"))
    assert stats["rx_drops"] == 0 and "tx0_kicks" in stats and len(stats) == 20
    assert pause_counters(stats) == []


def test_mlx5_pause_counters_only_where_the_driver_printed_them():
    stats = parse_stats(_read("mlx5-composed-S.txt"))
    pauses = pause_counters(stats)
    assert ("rx", 3, "frames", 15234) in pauses and ("tx", 3, "frames", 2847) in pauses
    assert ("rx", 3, "duration_us", 48736) in pauses and ("rx", 3, "transitions", 7617) in pauses
    assert set(priority for _d, priority, _k, _v in pauses) == {3}  # PFC is on for priority 3 only
    # rx_prio3_bytes and the *_phy counters are not pause counters
    assert all(kind in ("frames", "duration_us", "transitions") for _d, _p, kind, _v in pauses) and len(pauses) == 5
    # one driver version's "tx_pause_storm_warning_events " (trailing space)
    assert stats["tx_pause_storm_warning_events"] == 1


def test_no_statistics():
    assert parse_stats("") is None
    assert parse_stats(_read("lo-ethtool6.1-S-nostats.stderr")) is None
    assert parse_stats("NIC statistics:\n     weird line\n     rx_ok: 5\n") == {"rx_ok": 5}
