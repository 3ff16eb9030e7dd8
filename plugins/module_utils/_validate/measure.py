# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the validate role measured, read back: perftest's result lines, ping's summary and the
RDMA/PFC counters read before and after the tests.

Every measurement is one dict of the same shape, so report.json lists them uniformly:
``kind, host, peer, device, name, value, unit, detail`` (``value`` None: not measured; ``detail``
what a reader needs to judge the number).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Counters read before and after the tests, by where the driver exposes them (nic-ground-truth
# section 3): hw_counters of the RDMA port (mlx5: CNPs and the receive queue's out_of_buffer) and
# ethtool -S of its netdev (mlx5: PFC pause frames, only for priorities with PFC on).
HW_COUNTERS = ("np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "out_of_buffer")
ETHTOOL_PAUSE = ("rx_prio%d_pause", "tx_prio%d_pause")
ETHTOOL_OTHER = ("rx_out_of_buffer",)

_PERFTEST_ROW = re.compile(r"^\s*\d+\s+\d+(\s+[\d.]+)+\s*$")
_BW_UNIT = re.compile(r"BW average\[(\w+)/sec\]")
_PING_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
_COUNTER_PATH = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/hw_counters/([^:/]+):\s*(-?\d+)\s*$")
_ETHTOOL_STAT = re.compile(r"^\s+([\w.\-\[\]]+):\s*(-?\d+)\s*$")


def measurement(kind, host, name, value, unit, peer=None, device=None, detail=None):
    return dict(kind=kind, host=host, peer=peer, device=device, name=name, value=value, unit=unit, detail=detail or {})


def _result_row(text, header_word):
    """The header line holding ``header_word`` and the first row of numbers after it."""
    lines = (text or "").splitlines()
    for index, line in enumerate(lines):
        if "#bytes" in line and header_word in line:
            for row in lines[index + 1:]:
                if _PERFTEST_ROW.match(row):
                    return line, [float(value) for value in row.split()]
    return None, None


def parse_write_bw(text):
    """``{bytes, iterations, peak_gbps, average_gbps, msg_rate_mpps}`` from ib_write_bw's output
    (``--report_gbits`` or the default MB/sec), or None when it holds no result row."""
    header, values = _result_row(text, "BW average")
    if values is None or len(values) < 5:
        return None
    unit = _BW_UNIT.search(header)
    # perftest's MB is 2^20 bytes; Gb/s are 10^9 bits
    scale = 1.0 if unit is None or unit.group(1) == "Gb" else 8.0 * 1048576 / 1e9
    return dict(bytes=int(values[0]), iterations=int(values[1]), peak_gbps=round(values[2] * scale, 6),
                average_gbps=round(values[3] * scale, 6), msg_rate_mpps=values[4])


def parse_write_lat(text):
    """``{bytes, iterations, t_min, t_max, t_typical, t_avg, t_stdev, p99, p999}`` (microseconds)
    from ib_write_lat's output, or None when it holds no result row."""
    _header, values = _result_row(text, "t_typical")
    if values is None or len(values) < 7:
        return None
    names = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p999")
    result = dict(bytes=int(values[0]), iterations=int(values[1]))
    result.update(zip(names, values[2:]))
    return result


def ping_received(text):
    """``(transmitted, received)`` from ping's summary line, or None."""
    match = _PING_SUMMARY.search(text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_counters(text):
    """The counter read's output as ``{("hw", "dev/port", name): value, ("ethtool", netdev, name): value}``.

    The read prints ``grep -r . .../hw_counters/`` lines (``PATH:VALUE``) and, per netdev, a line
    ``== ethtool NETDEV`` followed by ``ethtool -S NETDEV``."""
    counters = {}
    netdev = None
    for line in (text or "").splitlines():
        match = _COUNTER_PATH.match(line)
        if match:
            counters[("hw", "%s/%s" % (match.group(1), match.group(2)), match.group(3))] = int(match.group(4))
            continue
        if line.startswith("== ethtool "):
            netdev = line[len("== ethtool "):].strip()
            continue
        match = _ETHTOOL_STAT.match(line)
        if match and netdev:
            counters[("ethtool", netdev, match.group(1))] = int(match.group(2))
    return counters


def counter_names(pfc_priorities):
    """The counters validate reports, by source: hw_counters names and ethtool -S names."""
    ethtool = [name % prio for prio in sorted(pfc_priorities) for name in ETHTOOL_PAUSE] + list(ETHTOOL_OTHER)
    return list(HW_COUNTERS), ethtool


def counter_deltas(host, ports, before_text, after_text, pfc_priorities):
    """One ``counter`` measurement per port and counter: the delta across the tests, or value None
    with ``detail.available`` false where the driver does not expose it (Soft-RoCE has none of them;
    mlx5 has PFC pause counters only for priorities with PFC on). ``ports`` are ``(device/port, netdev)``."""
    before = parse_counters(before_text)
    after = parse_counters(after_text)
    hw_names, ethtool_names = counter_names(pfc_priorities)
    out = []
    for port, netdev in ports:
        wanted = [("hw", port, name) for name in hw_names] + [("ethtool", netdev, name) for name in ethtool_names]
        for key in wanted:
            source, where, name = key
            device = port if source == "hw" else netdev
            if key in before and key in after:
                out.append(measurement("counter", host, name, after[key] - before[key], "count", device=device,
                                       detail=dict(available=True, source=source, before=before[key], after=after[key])))
            else:
                out.append(measurement("counter", host, name, None, "count", device=device,
                                       detail=dict(available=False, source=source,
                                                   why="not exposed by this driver" if key not in before and key not in after
                                                   else "read only before or only after the tests")))
    return out
