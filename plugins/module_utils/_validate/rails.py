# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rails of a multi-rail host, checked: every rail's address, table and rule as planned, and
the ARP and reverse-path settings that keep each address on its own NIC.

A host's state carries ``rails``: ``links`` (its plan, from the rdmaops.roce.roce_rail_links
filter), ``read`` (the ``rails`` result of nic_layer run in check mode: per netdev its
``addresses``, the ``routes`` of its tables, its ``rules`` and ``sysctls``, read from the kernel)
``pings`` (the validate role's ``ping -I <rail address> <peer's address on the rail>`` results,
each with its ``item``: ``[[host, peer], link]``, and ``rc``), ``rx`` (``before``/``after``: each rail
netdev's ``NETDEV RX_PACKETS`` around the pings, so a ping is proven to have arrived on the peer's NIC
of its rail), ``arp`` (from this host's first rail, ``ip neigh show`` for each peer's addresses on
its other rails after an ARP request: an answer is ARP flux on the peer) and ``rdma`` (ib_write_bw
per rail from the rail's address on the rail's device: its ``cmd``, ``rc`` and ``stdout``).
Without ``rails`` the host has no rail plan and nothing is reported.
"""


from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.measure import parse_write_bw

CHECK = "rails"
SYSCTL_HINTS = dict(
    arp_ignore="1: answer ARP only for the netdev's own addresses (else a rail's address answers on another rail: ARP flux)",
    arp_announce="2: source ARP from the netdev's own address",
    rp_filter="2 (loose): strict filtering drops RoCE packets from a peer's other rail",
)


def _finding(host, field, expected, actual, hint, passed, device=None):
    return dict(check=CHECK, host=host, peer=None, device=device, field=field, expected=expected, actual=actual,
                hint=hint if passed is not True else "", passed=passed)


def rail_findings(host, state, states=None):
    """Findings for one host's rails (an empty list for a host without a rail plan). ``states``
    (every host's state) gives the peers' plans and receive counters."""
    rails = (state or {}).get("rails")
    if not isinstance(rails, dict) or not rails.get("links"):
        return []
    states = states if isinstance(states, dict) else {}
    links = [link for link in rails["links"] if isinstance(link, dict)]
    read = rails.get("read")
    out = _ping_findings(host, rails.get("pings") or [], states)
    out += _arp_findings(host, rails.get("arp") or [], states)
    out += _rdma_findings(host, rails.get("rdma") or [], states)
    if not isinstance(read, dict):
        why = rails.get("error") or "the rails were not read on this host (nic_layer check mode failed or did not run)"
        return [_finding(host, "rail %s" % link.get("rail"), link.get("address"), "not checked", why, None, device=link.get("interface"))
                for link in links] + out
    sysctls = rails.get("sysctls") or dict(arp_ignore=1, arp_announce=2, rp_filter=2)
    seen = set()
    fix = "run the nic role (rdmaops.roce.nic) with roce_fabric.rails"
    for link in links:
        netdev = link.get("interface")
        now = read.get(netdev) or {}
        cidr = "%s/%s" % (link.get("address"), link.get("prefix"))
        table = link.get("table")
        rail = link.get("rail")
        addresses = now.get("addresses") or []
        out.append(_finding(host, "rail %s address" % rail, cidr, ", ".join(addresses) or "none",
                            "%s lacks its rail address %s: %s" % (netdev, cidr, fix), cidr in addresses, device=netdev))
        rule = "%s from %s lookup %s" % (link.get("rule_priority", 1000), link.get("address"), table)
        rules = now.get("rules") or []
        out.append(_finding(host, "rail %s rule" % rail, rule, ", ".join(rules) or "none",
                            "without the rule, traffic from %s leaves by the main table's route (another rail's NIC): %s"
                            % (link.get("address"), fix), rule in rules, device=netdev))
        routes = now.get("routes") or []
        wanted = ["%s table %s" % (link.get("network"), table)]
        if link.get("gateway"):
            wanted.append("default via %s table %s" % (link.get("gateway"), table))
        missing = [route for route in wanted if route not in routes]
        out.append(_finding(host, "rail %s table %s" % (rail, table), "; ".join(wanted), "; ".join(routes) or "empty",
                            "table %s lacks %s: %s" % (table, "; ".join(missing), fix), not missing, device=netdev))
        if netdev in seen:
            continue
        seen.add(netdev)
        for key in ("arp_ignore", "arp_announce", "rp_filter"):
            actual = (now.get("sysctls") or {}).get(key)
            expected = sysctls.get(key)
            if actual is None:
                out.append(_finding(host, "net.ipv4.conf.%s.%s" % (netdev, key), expected, "not checked", "not read", None, device=netdev))
                continue
            out.append(_finding(host, "net.ipv4.conf.%s.%s" % (netdev, key), expected, actual,
                                "set it to %s: %s" % (SYSCTL_HINTS[key], fix), actual == expected, device=netdev))
    return out


def _rails_of(states, host):
    rails = (states.get(host) or {}).get("rails")
    return rails if isinstance(rails, dict) else {}


def parse_rx(text):
    """``{netdev: rx_packets}`` from the role's ``NETDEV RX_PACKETS`` lines (unreadable lines skipped)."""
    out = {}
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            out[words[0]] = int(words[1])
    return out


def _rx_delta(states, peer, netdev):
    """How many packets the peer's netdev received around the rail pings, None when not read."""
    rx = _rails_of(states, peer).get("rx")
    if not isinstance(rx, dict):
        return None
    before, after = parse_rx(rx.get("before")).get(netdev), parse_rx(rx.get("after")).get(netdev)
    return None if before is None or after is None else after - before


def _peer_link(states, peer, rail):
    for link in _rails_of(states, peer).get("links") or []:
        if isinstance(link, dict) and link.get("rail") == rail:
            return link
    return None


_SENT = re.compile(r"(\d+) packets transmitted")


def _ping_findings(host, pings, states):
    """One finding per ping from a rail's address to the same rail of a peer; with the peer's
    receive counters, the ping must also have arrived on the peer's NIC of that rail."""
    out = []
    for ping in pings:
        item = ping.get("item") if isinstance(ping, dict) else None
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and isinstance(item[1], dict)):
            continue
        peer, link = item[0][-1], item[1]
        target = (ping.get("cmd") or [None])[-1]
        passed = ping.get("rc") == 0
        actual = "answers" if passed else "rc %s: %s" % (ping.get("rc"), (ping.get("stdout") or ping.get("stderr") or "").strip()[-160:])
        hint = "" if passed else ("no answer from %s's rail %s address from %s: check the rule and table on both hosts, "
                                  "the leaf of rail %s, and arp_ignore on the peer" % (peer, link.get("rail"), link.get("address"), link.get("rail")))
        peer_link = _peer_link(states, peer, link.get("rail"))
        peer_netdev = peer_link.get("interface") if peer_link else None
        moved = _rx_delta(states, peer, peer_netdev) if peer_netdev else None
        expected = "%s -> %s answers" % (link.get("address"), target)
        if peer_netdev:
            expected += ", received on %s's %s" % (peer, peer_netdev)
        if passed and moved is not None:
            sent = _SENT.search(ping.get("stdout") or "")
            sent = int(sent.group(1)) if sent else 1
            actual = "answers; %s's %s received +%d packets" % (peer, peer_netdev, moved)
            if moved < sent:
                passed = False
                hint = ("%s answered, but its rail %s NIC %s received %d packets for the %d sent: the pings arrived on another "
                        "of its NICs; check the rule and table of rail %s on %s, arp_ignore on %s, and the leaves' cabling"
                        % (peer, link.get("rail"), peer_netdev, moved, sent, link.get("rail"), host, peer))
        out.append(dict(check=CHECK, host=host, peer=peer, device=link.get("interface"), field="rail %s path" % link.get("rail"),
                        expected=expected, actual=actual, hint=hint, passed=passed))
    return out


_NEIGH_ANSWERED = re.compile(r"\blladdr ([0-9a-fA-F:]+)\b.*\b(REACHABLE|STALE|DELAY|PROBE|PERMANENT|NOARP)\b")


def parse_arp_probe(text):
    """``{address: MAC that answered, or None}`` from the role's ARP probe (``== ADDRESS`` then
    ``ip neigh show`` of that address on the probing netdev)."""
    out, current = {}, None
    for line in (text or "").splitlines():
        if line.startswith("== "):
            current = line[3:].strip()
            out[current] = None
        elif current is not None:
            answered = _NEIGH_ANSWERED.search(line)
            if answered:
                out[current] = answered.group(1).lower()
    return out


def _arp_findings(prober, probes, states):
    """One finding per peer address of another rail asked for on the prober's first rail: an
    answer is ARP flux on the peer (its address answers on a rail it is not on)."""
    out = []
    for probe in probes:
        item = probe.get("item") if isinstance(probe, dict) else None
        cmd = probe.get("cmd") if isinstance(probe, dict) else None
        if not (isinstance(item, list) and len(item) == 2 and isinstance(cmd, list) and len(cmd) > 5):
            continue
        peer, netdev = item[1], cmd[4]
        asked = parse_arp_probe(probe.get("stdout"))
        for address in cmd[5:]:
            rail = next((link.get("rail") for link in _rails_of(states, peer).get("links") or []
                         if isinstance(link, dict) and link.get("address") == address), "?")
            mac = asked.get(address)
            read = address in asked
            out.append(dict(check=CHECK, host=peer, peer=prober, device=None, field="rail %s ARP on another rail" % rail,
                            expected="no answer to %s's ARP for %s on %s" % (prober, address, netdev),
                            actual=("answered by %s" % mac) if mac else ("no answer" if read else "not read"),
                            hint="" if read and not mac else (
                                "%s's rail %s address %s answers ARP on %s's %s (another rail): ARP flux, RDMA-CM may map it to the "
                                "wrong device; set arp_ignore=1 on %s's rail NICs (run the nic role with roce_fabric.rails)"
                                % (peer, rail, address, prober, netdev, peer) if mac else "the probe printed nothing for it"),
                            passed=(not mac) if read else None))
    return out


_DEVICE = re.compile(r"\bDevice\s*:\s*(\S+)")
_GID = re.compile(r"^\s*GID:\s*([0-9:]+)\s*$", re.M)


def gid_address(text):
    """The address of a GID as perftest prints it (16 decimal bytes, ``00:...:255:255:198:18:00:21``):
    the IPv4 address of an IPv4-mapped GID, else the IPv6 address; None when it is not one."""
    try:
        raw = bytes(int(part) for part in text.split(":"))
    except ValueError:
        return None
    if len(raw) != 16:
        return None
    if raw[:12] == b"\x00" * 10 + b"\xff\xff":
        return ".".join(str(byte) for byte in raw[12:])
    return ":".join("%x" % int.from_bytes(raw[i:i + 2], "big") for i in range(0, 16, 2))


def parse_rail_perftest(text):
    """``(device, local GID address, remote GID address)`` from ib_write_bw's header (None where missing)."""
    device = _DEVICE.search(text or "")
    gids = [gid_address(gid) for gid in _GID.findall(text or "")]
    return device.group(1) if device else None, (gids + [None])[0], (gids[1:] + [None])[0]


def _rdma_findings(host, runs, states):
    """One finding per rail's ib_write_bw (``item``: ``[pair, rail position]``): it ran on the rail's
    device, from the GID of this host's rail address to the GID of the peer's address on that rail."""
    out = []
    links = [link for link in _rails_of(states, host).get("links") or [] if isinstance(link, dict)]
    for run in runs:
        cmd = run.get("cmd") if isinstance(run, dict) else None
        item = run.get("item") if isinstance(run, dict) else None
        if not (isinstance(cmd, list) and "-d" in cmd and cmd.index("-d") + 1 < len(cmd) and isinstance(item, list) and len(item) == 2
                and isinstance(item[1], int) and 0 <= item[1] < len(links)):
            continue
        link = links[item[1]]
        wanted = cmd[cmd.index("-d") + 1]
        stdout = run.get("stdout") or ""
        named, local, remote = parse_rail_perftest(stdout)
        peer = next((name for name in sorted(states) if name != host
                     for peer_link in _rails_of(states, name).get("links") or []
                     if isinstance(peer_link, dict) and peer_link.get("rail") == link.get("rail") and peer_link.get("address") == remote), None)
        bw = parse_write_bw(stdout)
        ran = run.get("rc") == 0 and bw is not None
        passed = ran and named == wanted and local == link.get("address") and peer is not None
        if ran:
            actual = "%s, GID %s -> %s: %.3f Gb/s" % (named or "no device named", local, remote, bw["average_gbps"])
        else:
            actual = "rc %s: %s" % (run.get("rc"), (stdout or run.get("stderr") or "").strip()[-160:])
        out.append(dict(check=CHECK, host=host, peer=peer, device=named or wanted, field="rail %s RDMA" % link.get("rail"),
                        expected="ib_write_bw on %s from GID %s to the peer's rail %s GID" % (wanted, link.get("address"), link.get("rail")),
                        actual=actual,
                        hint="" if passed else (
                            "ib_write_bw on %s's rail %s (%s, %s) did not run from its rail address to a peer's address on the "
                            "same rail: check that both ends' RDMA devices of rail %s are ACTIVE with a RoCE v2 GID of the rail "
                            "address (rdma_facts), the rail's rule and table, and the rail's leaf"
                            % (host, link.get("rail"), wanted, link.get("address"), link.get("rail"))),
                        passed=passed))
    return out
