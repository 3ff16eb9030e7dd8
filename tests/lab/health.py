"""Is the lab fit for what it is for: every VM's fabric NIC reachable from the others over the
lab's switch, and its Soft-RoCE port ACTIVE. Pure functions over what the VMs and the lab's
namespace print, so that the unit tests replay recorded outputs (tests/unit/lab/test_health.py).

One probe per VM (one SSH round trip, ``probe_command``) prints, in sections: the fabric netdev
(rxe0's parent), rxe0's port state, ``ip -j -s link`` of the netdev (flags, operstate, TX/RX
counters), its neighbour entries, the kernel's watchdog lines (``NETDEV WATCHDOG`` and
virtio_net's ``TX timeout``) and a short ping to every other VM's fabric address. In a lab with
two rails it also reads rxe1's port and pings every other VM's rail-2 address from its own.
``assess`` turns the probes (plus the switch ports seen in the namespace) into a verdict per VM
with the evidence: a dead path is blamed on the VM that shows it (watchdog lines, TX errors, no
carrier, its switch port down), not on the healthy peer whose pings to it fail too.
"""

from __future__ import annotations

import json
import re
import shlex

# What the kernel logs when a NIC's transmit queue stops moving: the core's watchdog
# (net/sched/sch_generic.c) and virtio_net's own tx_timeout handler.
WATCHDOG_PATTERN = r"NETDEV WATCHDOG|TX timeout on queue"
WATCHDOG_LINES_KEPT = 3
PING_COUNT = 3
SECTION = re.compile(r"^== (\S+)(?: (\S+))?$")
PING_STATS = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


def probe_command(peers, rail2_address=None, rail2_peers=()):
    """The shell command run in one VM: its fabric state and a ping to each peer address.

    The pings run in parallel (each at most about 3 s), so a probe costs one SSH round trip
    and a few seconds whatever the lab's size. With rail 2 (``rail2_address``, the VM's own
    rail-2 address, and the peers' rail-2 addresses) the pings of both rails leave from the
    rail's address (``-I ADDRESS``), not bound to a netdev: both rails share one subnet, and
    before the collection gives each rail its table a peer may answer through its other rail
    (the weak host model), which a netdev-bound ping would not see.
    """
    two_rails = rail2_address is not None
    source = "$(ip -4 -o addr show dev \"$dev\" | awk '{print $4}' | cut -d/ -f1 | head -n 1)" if two_rails else '"$dev"'
    targets = [(peer, source) for peer in peers] + [(peer, shlex.quote(rail2_address)) for peer in (rail2_peers if two_rails else ())]
    pings = "".join(
        "ping -n -q -c %d -i 0.2 -W 2 -w 4 -I %s %s > /tmp/.rdmaops-lab-ping.%d 2>&1 & " % (PING_COUNT, src, shlex.quote(peer), i)
        for i, (peer, src) in enumerate(targets))
    show = "".join("echo '== ping %s'; cat /tmp/.rdmaops-lab-ping.%d; rm -f /tmp/.rdmaops-lab-ping.%d; " % (peer, i, i)
                   for i, (peer, _src) in enumerate(targets))
    rail2_state = 'echo "== port2"; cat /sys/class/infiniband/rxe1/ports/1/state 2>&1; ' if two_rails else ""
    return (
        'dev=$(cat /sys/class/infiniband/rxe0/parent 2>/dev/null); '
        + (pings if targets else "")
        + 'echo "== netdev"; echo "${dev:-none}"; '
        'echo "== port"; cat /sys/class/infiniband/rxe0/ports/1/state 2>&1; '
        'echo "== link"; ip -j -s link show dev "${dev:-none}" 2>&1; '
        'echo "== neigh"; ip neigh show dev "${dev:-none}" 2>&1; '
        'echo "== watchdog"; dmesg 2>/dev/null | grep -E %s | tail -n 50; ' % shlex.quote(WATCHDOG_PATTERN)
        + rail2_state
        + ("wait; " + show if targets else "")
    )


def split_sections(text):
    """{(name, arg): [lines]} from a probe's output."""
    sections = {}
    current = None
    for line in text.splitlines():
        match = SECTION.match(line.rstrip())
        if match:
            current = (match.group(1), match.group(2))
            sections[current] = []
        elif current is not None:
            sections[current].append(line.rstrip())
    return sections


def parse_link(lines):
    """Flags, carrier and counters of the netdev from ``ip -j -s link show`` (None when unreadable)."""
    try:
        link = json.loads("\n".join(lines))[0]
    except (ValueError, LookupError, TypeError):
        return None
    stats = link.get("stats64") or link.get("stats") or {}
    tx, rx = stats.get("tx", {}), stats.get("rx", {})
    flags = link.get("flags", [])
    return {
        "up": "UP" in flags,
        "carrier": "LOWER_UP" in flags,
        "operstate": link.get("operstate", "UNKNOWN"),
        "mtu": link.get("mtu"),
        "tx_packets": tx.get("packets", 0), "tx_errors": tx.get("errors", 0), "tx_dropped": tx.get("dropped", 0),
        "rx_packets": rx.get("packets", 0), "rx_errors": rx.get("errors", 0), "rx_dropped": rx.get("dropped", 0),
    }


def parse_ping(lines):
    """(sent, received) from ping's summary; (0, 0) when ping printed none (no route, no netdev)."""
    for line in lines:
        match = PING_STATS.search(line)
        if match:
            return int(match.group(1)), int(match.group(2))
    return 0, 0


def parse_probe(text):
    """What one VM's probe says: netdev, port state, link, neighbours, watchdog lines, pings."""
    sections = split_sections(text)
    netdev = (sections.get(("netdev", None)) or ["none"])[0].strip() or "none"
    port = " ".join(sections.get(("port", None), [])).strip()
    watchdog = [line for line in sections.get(("watchdog", None), []) if line.strip()]
    port2 = " ".join(sections.get(("port2", None), [])).strip() if ("port2", None) in sections else None
    return {
        "rail2_port_state": port2,  # None: a one-rail probe
        "rail2_port_active": port2 is None or port2.endswith("ACTIVE"),
        "netdev": None if netdev == "none" else netdev,
        "port_state": port or "unreadable",
        "port_active": port.endswith("ACTIVE"),  # "4: ACTIVE"
        "link": parse_link(sections.get(("link", None), [])),
        "neighbours": [line for line in sections.get(("neigh", None), []) if line.strip()],
        "watchdog_count": len(watchdog),
        "watchdog_lines": watchdog[-WATCHDOG_LINES_KEPT:],
        "pings": {arg: parse_ping(lines) for (name, arg), lines in sections.items() if name == "ping"},
    }


def parse_switch_port(ip_json):
    """A tap (the VM's switch port) from ``ip -j link show dev TAP`` in the lab's namespace."""
    try:
        link = json.loads(ip_json)[0]
    except (ValueError, LookupError, TypeError):
        return None
    flags = link.get("flags", [])
    return {"up": "UP" in flags, "carrier": "LOWER_UP" in flags, "mtu": link.get("mtu"), "master": link.get("master")}


def local_evidence(probe, switch_port, bridge, rail2_port=True, rail2_bridge="br-rail2"):
    """What a VM (and its switch ports) show by themselves that explains a dead path."""
    out = []
    if probe is None:
        return ["does not answer SSH"]
    if probe["netdev"] is None:
        out.append("no rxe0, so no fabric netdev")
    link = probe["link"]
    if probe["netdev"] and link is None:
        out.append("%s unreadable (ip -j -s link)" % probe["netdev"])
    if link:
        if not link["up"]:
            out.append("%s is administratively down" % probe["netdev"])
        elif not link["carrier"]:
            out.append("%s has no carrier (operstate %s)" % (probe["netdev"], link["operstate"]))
        if link["tx_errors"] or link["tx_dropped"]:
            out.append("%s TX errors %d, dropped %d (ip -s link)" % (probe["netdev"], link["tx_errors"], link["tx_dropped"]))
    if probe["watchdog_count"]:
        out.append("kernel log: %d transmit watchdog line(s), last: %s" % (
            probe["watchdog_count"], probe["watchdog_lines"][-1].strip()))
    if switch_port is None:
        out.append("switch port missing in the lab's namespace")
    elif switch_port is not True:
        if not switch_port["up"]:
            out.append("switch port is down")
        if switch_port["master"] != bridge:
            out.append("switch port is not on %s" % bridge)
    if rail2_port is None:
        out.append("rail-2 switch port missing in the lab's namespace")
    elif rail2_port is not True:
        if not rail2_port["up"]:
            out.append("rail-2 switch port is down")
        if rail2_port["master"] != rail2_bridge:
            out.append("rail-2 switch port is not on %s" % rail2_bridge)
    return out


def assess(vms, bridge="br-fabric"):
    """The lab's health from each VM's parsed probe.

    ``vms``: {name: {"address": fabric IPv4, "probe": parse_probe(...) or None (no SSH),
    "switch_port": parse_switch_port(...) or None (missing), or True (not looked at)}}.
    Returns {"healthy": bool, "vms": {name: {"healthy", "problems", "evidence", ...}}}.
    """
    by_address = {vm["address"]: name for name, vm in vms.items()}
    by_address.update({vm["rail2_address"]: name for name, vm in vms.items() if vm.get("rail2_address")})
    # pings[src][dst] = (sent, received) over every rail, only for VMs that answered (their probe
    # ran); a rail whose pings all failed makes the pair's path dead (received 0)
    pings = {}
    for name, vm in vms.items():
        if vm["probe"] is not None:
            row = pings[name] = {}
            for addr, (sent, received) in vm["probe"]["pings"].items():
                dst = by_address.get(addr, addr)
                before = row.get(dst)
                row[dst] = (sent, received) if before is None else (
                    before[0] + sent, 0 if 0 in (before[1], received) else before[1] + received)
    evidence = {name: local_evidence(vm["probe"], vm.get("switch_port", True), bridge, vm.get("rail2_switch_port", True))
                for name, vm in vms.items()}
    # a probe that answered with a healthy NIC and port but logged a watchdog line long ago is not
    # by itself a suspect; the evidence that counts for blame is what can stop the path now
    suspect = {name for name, ev in evidence.items() if ev}
    dead_pairs = set()
    for src, row in pings.items():
        for dst, (_sent, received) in row.items():
            if received == 0:
                dead_pairs.add(tuple(sorted((src, dst))))
    for name, vm in vms.items():
        if vm["probe"] is None:
            for other in vms:
                if other != name:
                    dead_pairs.add(tuple(sorted((name, other))))
    out = {}
    for name, vm in vms.items():
        problems = []
        probe = vm["probe"]
        if probe is None:
            problems.append("does not answer SSH")
        else:
            if not probe["port_active"]:
                problems.append("rxe0 port 1 is %s, not ACTIVE" % probe["port_state"])
            if not probe.get("rail2_port_active", True):
                problems.append("rxe1 (rail 2) port 1 is %s, not ACTIVE" % probe["rail2_port_state"])
            if probe["netdev"] is None:
                problems.append("no rxe0 (no fabric netdev)")
        mine = sorted(other for pair in dead_pairs if name in pair for other in pair if other != name)
        # blame: my dead pairs count against me unless the peer at the other end shows the fault
        # and I do not
        blamed = [other for other in mine if name in suspect or other not in suspect]
        if blamed:
            unreachable = [other for other in blamed
                           if other in pings and pings[other].get(name, (0, 0))[1] == 0]
            cannot = [other for other in blamed if name in pings and pings[name].get(other, (0, 0))[1] == 0]
            if probe is not None:
                parts = []
                if unreachable:
                    parts.append("no answer to pings from %s" % ", ".join(unreachable))
                if cannot:
                    parts.append("gets no answer from %s" % ", ".join(cannot))
                problems.append("fabric path dead: %s" % "; ".join(parts or ["to %s" % ", ".join(blamed)]))
        entry = {
            "healthy": not problems,
            "problems": problems,
            "evidence": evidence[name] if problems else [e for e in evidence[name] if e.startswith("kernel log")],
            "address": vm["address"],
        }
        if probe is not None:
            entry.update({
                "netdev": probe["netdev"], "port_state": probe["port_state"], "link": probe["link"],
                "neighbours": probe["neighbours"], "watchdog_count": probe["watchdog_count"],
                "watchdog_lines": probe["watchdog_lines"],
                "pings": {dst: {"sent": s, "received": r} for dst, (s, r) in pings.get(name, {}).items()},
                "rail_pings": {addr: {"sent": s, "received": r} for addr, (s, r) in probe["pings"].items()},
            })
            if probe.get("rail2_port_state") is not None:
                entry["rail2_port_state"] = probe["rail2_port_state"]
        out[name] = entry
    return {"healthy": all(v["healthy"] for v in out.values()), "vms": out}


def describe(health):
    """Human lines: one per VM, then its problems and evidence."""
    lines = []
    for name, vm in health["vms"].items():
        if vm["healthy"]:
            pings = vm.get("pings", {})
            seen = ", ".join("%s %d/%d" % (dst, p["received"], p["sent"]) for dst, p in sorted(pings.items()))
            note = "; earlier: %s" % vm["evidence"][0] if vm["evidence"] else ""
            rail2 = ", rxe1 %s" % vm["rail2_port_state"] if vm.get("rail2_port_state") else ""
            lines.append("%s: fabric ok (%s, rxe0 %s%s; pings %s)%s" % (
                name, vm.get("netdev"), vm.get("port_state"), rail2, seen or "none", note))
            continue
        lines.append("%s: UNHEALTHY: %s" % (name, "; ".join(vm["problems"])))
        for item in vm["evidence"]:
            lines.append("    evidence: %s" % item)
        for neigh in vm.get("neighbours", [])[:4]:
            lines.append("    neighbour: %s" % neigh)
        for watchdog in vm.get("watchdog_lines", []):
            lines.append("    kernel: %s" % watchdog.strip())
    return lines
