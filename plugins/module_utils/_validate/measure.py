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

import ipaddress
import json
import re

# Counters read before and after the tests, by where the driver exposes them (nic-ground-truth
# section 3): hw_counters of the RDMA port (mlx5: CNPs and the receive queue's out_of_buffer) and
# ethtool -S of its netdev (mlx5: PFC pause frames, only for priorities with PFC on).
HW_COUNTERS = ("np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "out_of_buffer")
ETHTOOL_PAUSE = ("rx_prio%d_pause", "tx_prio%d_pause")
ETHTOOL_OTHER = ("rx_out_of_buffer",)

# Numbers are read only as ASCII digits of a bounded length: int() refuses more than 4300 digits
# and float() makes inf of 400, which would pass any threshold. A count or a counter has at most 20
# digits (2^64); a perftest figure at most 15 digits before and after its point.
_COUNT = r"[0-9]{1,20}"
_PERFTEST_FIGURE = r"[0-9]{1,15}(?:\.[0-9]{1,15})?"
_PERFTEST_ROW = re.compile(r"^\s*[0-9]{1,15}\s+[0-9]{1,15}(\s+%s)+\s*$" % _PERFTEST_FIGURE)
# a line of figures after the header that is not one perftest writes (1.2.3, 400 digits): a result
# that cannot be read, never skipped for a later line
_PERFTEST_ROW_LIKE = re.compile(r"^\s*[0-9]\S*\s+[0-9]\S*(\s+[0-9.]\S*)+\s*$")
_BW_UNIT = re.compile(r"BW average\[(\w+)/sec\]")
_PING_SUMMARY = re.compile(r"(?<![0-9])(%s) packets transmitted, (%s) (?:packets )?received" % (_COUNT, _COUNT))
_PING_SUMMARY_LIKE = re.compile(r"[0-9] packets transmitted")
_COUNTER_PATH = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/([0-9]{1,9})/hw_counters/([^:/]+):\s*(-?%s)\s*$" % _COUNT)
_ETHTOOL_STAT = re.compile(r"^\s+([\w.\-\[\]]+):\s*(-?%s)\s*$" % _COUNT)
# a part's line of the path check: "== NONCE NAME rc=RC", NONCE the run's own (see parse_path_check)
_PATH_PART = re.compile(r"== ([0-9a-f]{16,64}) (small|jumbo|neigh|link|kernel|refused) rc=(-?[0-9]{1,5})")
PATH_NONCE = re.compile(r"[0-9a-f]{16,64}")
# the link counters a dead path shows (ip -s -j link: stats64)
LINK_COUNTERS = (("tx", "errors"), ("tx", "dropped"), ("tx", "carrier_errors"), ("rx", "errors"), ("rx", "dropped"))


def measurement(kind, host, name, value, unit, peer=None, device=None, detail=None):
    return dict(kind=kind, host=host, peer=peer, device=device, name=name, value=value, unit=unit, detail=detail or {})


def _result_row(text, header_word):
    """``(header, figures, row)``: the header line holding ``header_word``, the first row of figures
    after it and that row's text; figures None when the row is not one perftest writes (``row``
    then says what was there), all None when there is no row."""
    lines = (text if isinstance(text, str) else "").splitlines()
    for index, line in enumerate(lines):
        if "#bytes" in line and header_word in line:
            for row in lines[index + 1:]:
                if _PERFTEST_ROW.match(row):
                    return line, [float(value) for value in row.split()], row
                if _PERFTEST_ROW_LIKE.match(row):
                    return line, None, row
    return None, None, None


def unreadable_result(text, header_word="#bytes"):
    """The result row of a perftest output that holds one it cannot be read from (``1.2.3``, a
    figure of 400 digits), else None: such a run is not checked, neither passed nor failed."""
    header, values, row = _result_row(text, header_word)
    return row.strip()[:80] if header is not None and values is None and row is not None else None


def parse_write_bw(text):
    """``{bytes, iterations, peak_gbps, average_gbps, msg_rate_mpps}`` from ib_write_bw's output
    (``--report_gbits`` or the default MB/sec), or None when it holds no readable result row."""
    header, values = _result_row(text, "BW average")[:2]
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
    values = _result_row(text, "t_typical")[1]
    if values is None or len(values) < 7:
        return None
    names = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p999")
    result = dict(bytes=int(values[0]), iterations=int(values[1]))
    result.update(zip(names, values[2:]))
    return result


def ping_received(text):
    """``(transmitted, received)`` from ping's summary line, or None."""
    match = _PING_SUMMARY.search(text if isinstance(text, str) else "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def unreadable_ping_summary(text):
    """Whether ping's output holds a summary whose counts cannot be read (more digits than any count
    has): such a ping is not checked, neither passed nor failed."""
    text = text if isinstance(text, str) else ""
    return _PING_SUMMARY.search(text) is None and _PING_SUMMARY_LIKE.search(text) is not None


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


def path_operands_problem(ping):
    """``(actual, why)`` when a path check's record names a peer (``address``) or a source that is not
    an IPv4 address (what path-check.sh pings, from the peer's rdma facts), else None: such a record is
    not a path check of that peer, whatever its output says."""
    for key in ("address", "source"):
        value = ping.get(key)
        if value is None and key == "source":
            continue
        try:
            ipaddress.IPv4Address(value if isinstance(value, str) else "")
        except ValueError:
            shown = json.dumps(value[:40]) if isinstance(value, str) else "not text"
            why = "the path check's %s %s is not an IPv4 address (four decimal numbers 0-255), so its pings were refused or " \
                  "prove nothing" % (key, shown)
            return "%s %s" % (key, shown), why
    return None


def parse_path_check(text, nonce):
    """The validate role's path check (roles/validate/files/path-check.sh) by part:
    ``{name: (rc, text)}`` for ``small``, ``jumbo``, ``neigh``, ``link``, ``kernel`` and ``refused``
    (an operand the script refused); empty when ``text`` holds none.

    Only a line ``== NONCE NAME rc=RC`` with this run's ``nonce`` starts a part: what a tool prints
    (ping echoes its operand, a peer's address could hold a newline) cannot know the nonce, so it
    can never pass for a result. A part named twice is not a result either (the script writes each
    once): it reads as no part at all. Without a valid nonce no line is believed."""
    if not isinstance(nonce, str) or not PATH_NONCE.fullmatch(nonce):
        return {}
    parts = {}
    seen = []
    name = None
    for line in (text or "").split("\n"):
        match = _PATH_PART.fullmatch(line)
        if match and match.group(1) == nonce:
            name = match.group(2)
            seen.append(name)
            parts[name] = (int(match.group(3)), [])
        elif name is not None:
            parts[name][1].append(line)
    if len(seen) != len(set(seen)):
        return {}
    return dict((key, (rc, "\n".join(lines).rstrip("\n"))) for key, (rc, lines) in parts.items())


def _json_list(text):
    try:
        data = json.loads(text or "")
    except (ValueError, RecursionError):
        # RecursionError: nesting deeper than the interpreter's stack ("[" * 100000) is not ip's output
        return None
    return data if isinstance(data, list) else None


def parse_neighbour(text, address):
    """The state of ``address``'s entry in ``ip -j neigh show`` (``INCOMPLETE``, ``FAILED``,
    ``REACHABLE`` ...; several joined by ``/``), ``"none"`` when there is no entry, None when
    ``text`` is not that output."""
    entries = _json_list(text)
    if entries is None:
        return None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("dst") == address:
            state = entry.get("state")
            if isinstance(state, list) and all(isinstance(word, str) for word in state) and state:
                return "/".join(state)
            return "unknown"
    return "none"


def parse_link(text):
    """``{up, carrier, operstate, tx_errors, tx_dropped, tx_carrier_errors, rx_errors, rx_dropped}``
    of the one netdev in ``ip -s -j link show dev NETDEV``, None when ``text`` is not that output.
    ``up`` is whether it is set up (``UP``); ``carrier`` is False for ``NO-CARRIER``, True for
    ``LOWER_UP``, None when neither is shown (a netdev set down shows neither)."""
    entries = _json_list(text)
    if not entries or not isinstance(entries[0], dict):
        return None
    link = entries[0]
    flags = link.get("flags") if isinstance(link.get("flags"), list) else []
    out = dict(up="UP" in flags, carrier=False if "NO-CARRIER" in flags else (True if "LOWER_UP" in flags else None),
               operstate=link.get("operstate") if isinstance(link.get("operstate"), str) else None)
    stats = link.get("stats64") if isinstance(link.get("stats64"), dict) else {}
    for way, name in LINK_COUNTERS:
        value = (stats.get(way) if isinstance(stats.get(way), dict) else {}).get(name)
        out["%s_%s" % (way, name)] = value if isinstance(value, int) and not isinstance(value, bool) else None
    return out


def kernel_lines(text):
    """The kernel log lines the path check kept (transmit watchdog, TX timeouts, link down)."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]
