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

fabric_check reads all of it first (``inputs.RAILS``): what is not of its shape is an ``input``
finding and left out. The findings here still take nothing on trust (they are called on data not
read, too): lists of text are matched line by line, word for word, never as substrings; numbers
are whole numbers only (true is not 1, 2.0 is not 2); what is missing or of another type is not
checked (``passed`` None), never passed.
"""


from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.inputs import unreadable_output
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.measure import parse_write_bw, unreadable_result

CHECK = "rails"
SYSCTL_HINTS = dict(
    arp_ignore="1: answer ARP only for the netdev's own addresses (else a rail's address answers on another rail: ARP flux)",
    arp_announce="2: source ARP from the netdev's own address",
    rp_filter="2 (loose): strict filtering drops RoCE packets from a peer's other rail",
)


WANTED_SYSCTLS = (("arp_ignore", 1), ("arp_announce", 2), ("rp_filter", 2))
# what a link of the plan (rdmaops.roce.roce_rail_links) must name for its rail to be checked
LINK_KEYS = ("rail", "interface", "address", "prefix", "network", "table")
FIX = "run the nic role (rdmaops.roce.nic) with roce_fabric.rails"


def _finding(host, field, expected, actual, hint, passed, device=None):
    return dict(check=CHECK, host=host, peer=None, device=device, field=field, expected=expected, actual=actual,
                hint=hint if passed is not True else "", passed=passed)


def _text(value):
    """``value`` when it is text, else None (a rail's names, addresses and outputs are text only)."""
    return value if isinstance(value, str) else None


def _number(value):
    """``value`` when it is a whole number, else None: true is not 1, 2.0 is not 2."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _texts(value):
    """``value`` when it is a list of text, else None (text alone is not a list: "10.10.0.1/311"
    holds "10.10.0.1/31" only as a substring)."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def _words(line):
    return tuple(line.split())


def _has_line(lines, wanted):
    """Whether one of ``lines`` is ``wanted``, word for word (never a part of a longer line)."""
    return _words(wanted) in set(_words(line) for line in lines)


def _link_problem(link):
    """Why a link of the plan cannot be checked (a key missing or not of its type), or None."""
    missing = [key for key in LINK_KEYS if (_number(link.get(key)) if key in ("prefix", "table") else _text(link.get(key))) is None]
    if link.get("rule_priority") is not None and _number(link["rule_priority"]) is None:
        missing.append("rule_priority")
    if link.get("gateway") is not None and _text(link["gateway"]) is None:
        missing.append("gateway")
    return "the plan's link lacks a readable %s" % ", ".join(missing) if missing else None


def rail_findings(host, state, states=None, peers=None):
    """Findings for one host's rails (an empty list for a host without a rail plan). ``states``
    (every host's state) gives the peers' plans and receive counters; ``peers`` is
    :func:`rail_peers` of ``states`` when the caller checks many hosts (built here when needed
    otherwise). Data of another type than its producer writes is not checked (``passed`` None),
    never compared."""
    rails = state.get("rails") if isinstance(state, dict) else None
    if not isinstance(rails, dict) or not isinstance(rails.get("links"), list) or not rails["links"]:
        return []
    states = states if isinstance(states, dict) else {}
    links = [link for link in rails["links"] if isinstance(link, dict)]
    read = rails.get("read")
    out = _rx_findings(host, rails)
    out += _ping_findings(host, _list(rails.get("pings")), states)
    out += _arp_findings(host, _list(rails.get("arp")), states)
    out += _rdma_findings(host, _list(rails.get("rdma")), states, peers)
    if not isinstance(read, dict):
        why = _text(rails.get("error")) or "the rails were not read on this host (nic_layer check mode failed or did not run)"
        return [_finding(host, "rail %s" % _text(link.get("rail")), _text(link.get("address")), "not checked", why, None,
                         device=_text(link.get("interface")))
                for link in links] + out
    seen = set()
    for link in links:
        problem = _link_problem(link)
        if problem:
            out.append(_finding(host, "rail %s" % (_text(link.get("rail")) or "?"), "the rail as planned", "not checked",
                                "%s (hosts.%s.rails.links): its rail is not checked" % (problem, host), None,
                                device=_text(link.get("interface"))))
            continue
        out.extend(_link_findings(host, link, read, seen))
    return out


def _list(value):
    return value if isinstance(value, list) else []


def _link_findings(host, link, read, seen):
    """Address, rule and table of one rail, and the ARP and reverse-path sysctls of its netdev (once)."""
    netdev, rail, table = link["interface"], link["rail"], link["table"]
    now = read.get(netdev)
    where = "hosts.%s.rails.read.%s" % (host, netdev)
    if not isinstance(now, dict):
        return [_finding(host, "rail %s" % rail, "%s/%s" % (link["address"], link["prefix"]), "not checked",
                         "%s was not read (nic_layer's check-mode read has no readable entry for it)" % where, None, device=netdev)]
    out = []
    cidr = "%s/%s" % (link["address"], link["prefix"])
    rule = "%s from %s lookup %s" % (_number(link.get("rule_priority")) or 1000, link["address"], table)
    wanted = ["%s table %s" % (link["network"], table)]
    if link.get("gateway"):
        wanted.append("default via %s table %s" % (link["gateway"], table))
    for what, expected, key in (("address", cidr, "addresses"), ("rule", rule, "rules"), ("table %s" % table, "; ".join(wanted), "routes")):
        field = "rail %s %s" % (rail, what)
        lines = _texts(now.get(key))
        if lines is None:
            # absent, null or not a list of text: not read, so neither passed nor failed
            out.append(_finding(host, field, expected, "not checked", "%s.%s was not read as a list of text" % (where, key), None,
                                device=netdev))
        elif key == "addresses":
            out.append(_finding(host, field, cidr, ", ".join(lines) or "none", "%s lacks its rail address %s: %s" % (netdev, cidr, FIX),
                                cidr in lines, device=netdev))
        elif key == "rules":
            out.append(_finding(host, field, rule, ", ".join(lines) or "none",
                                "without the rule, traffic from %s leaves by the main table's route (another rail's NIC): %s"
                                % (link["address"], FIX), _has_line(lines, rule), device=netdev))
        else:
            missing = [route for route in wanted if not _has_line(lines, route)]
            out.append(_finding(host, field, expected, "; ".join(lines) or "empty",
                                "table %s lacks %s: %s" % (table, "; ".join(missing), FIX), not missing, device=netdev))
    if netdev in seen:
        return out
    seen.add(netdev)
    sysctls = now.get("sysctls") if isinstance(now.get("sysctls"), dict) else {}
    for key, expected in WANTED_SYSCTLS:
        field = "net.ipv4.conf.%s.%s" % (netdev, key)
        actual = _number(sysctls.get(key))
        if actual is None:
            out.append(_finding(host, field, expected, "not checked", "%s.sysctls.%s was not read as a number" % (where, key), None,
                                device=netdev))
            continue
        out.append(_finding(host, field, expected, actual, "set it to %s: %s" % (SYSCTL_HINTS[key], FIX), actual == expected, device=netdev))
    return out


def _rails_of(states, host):
    state = states.get(host) if isinstance(host, str) else None
    rails = state.get("rails") if isinstance(state, dict) else None
    return rails if isinstance(rails, dict) else {}


# a netdev's name and its receive count (at most 20 ASCII digits: 2^64; "²" is a digit to str.isdigit(), not to int())
_RX_LINE = re.compile(r"(\S+) ([0-9]{1,20})")


def parse_rx(text):
    """``{netdev: rx_packets}`` from the role's ``NETDEV RX_PACKETS`` lines (unreadable lines skipped)."""
    out = {}
    for line in (text if isinstance(text, str) else "").splitlines():
        match = _RX_LINE.fullmatch(line.strip())
        if match:
            out[match.group(1)] = int(match.group(2))
    return out


def _rx_delta(states, peer, netdev):
    """How many packets the peer's netdev received around the rail pings, None when not read."""
    rx = _rails_of(states, peer).get("rx")
    if not isinstance(rx, dict):
        return None
    before, after = parse_rx(rx.get("before")).get(netdev), parse_rx(rx.get("after")).get(netdev)
    return None if before is None or after is None else after - before


def _rx_given(states, peer):
    rx = _rails_of(states, peer).get("rx")
    return isinstance(rx, dict) and isinstance(rx.get("before"), str) and isinstance(rx.get("after"), str)


def _rx_findings(host, rails):
    """An input finding for each of this host's receive-count reads holding a line that is not
    ``NETDEV RX_PACKETS`` ("ens4 ²", a count of 5000 digits): its rail pings' arrival is not checked."""
    rx = rails.get("rx") if isinstance(rails.get("rx"), dict) else {}
    out = []
    for key in ("before", "after"):
        text = _text(rx.get(key)) or ""
        bad = [line.strip() for line in text.splitlines() if line.strip() and not _RX_LINE.fullmatch(line.strip())]
        if bad:
            out.append(unreadable_output(host, "rails.rx.%s" % key, "the line %s" % json.dumps(bad[0][:40]),
                                         "the rail NICs' receive counts read %s the rail pings hold a line that is not "
                                         "NETDEV RX_PACKETS" % key))
    return out


def _peer_link(states, peer, rail):
    for link in _list(_rails_of(states, peer).get("links")):
        if isinstance(link, dict) and link.get("rail") == rail:
            return link
    return None


# ping's count of packets sent; a count of more digits than any ping sends is not read (int() refuses 4300)
_SENT = re.compile(r"(?<![0-9])([0-9]{1,20}) packets transmitted")
_SENT_ANY = re.compile(r"[0-9] packets transmitted")


def _ping_item(ping):
    """``(peer, link)`` of a rail ping's loop item ``[[host, peer], link]``, or None when it is not that."""
    item = ping.get("item") if isinstance(ping, dict) else None
    if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and item[0] and isinstance(item[1], dict)):
        return None
    peer, link = _text(item[0][-1]), item[1]
    if peer is None or _text(link.get("rail")) is None:
        return None
    return peer, link


def _ping_findings(host, pings, states):
    """One finding per ping from a rail's address to the same rail of a peer; with the peer's
    receive counters, the ping must also have arrived on the peer's NIC of that rail."""
    out = []
    for ping in pings:
        read = _ping_item(ping)
        if read is None:
            continue
        peer, link = read
        rail, address = link["rail"], _text(link.get("address"))
        cmd = _texts(ping.get("cmd")) or [None]
        stdout = _text(ping.get("stdout")) or ""
        rc = _number(ping.get("rc"))
        peer_link = _peer_link(states, peer, rail)
        peer_netdev = _text(peer_link.get("interface")) if peer_link else None
        expected = "%s -> %s answers" % (address, cmd[-1])
        if peer_netdev:
            expected += ", received on %s's %s" % (peer, peer_netdev)
        field = "rail %s path" % rail
        if rc is None:
            # no rc, or one that is not a number (false is not 0): the ping's result is not known
            out.append(dict(check=CHECK, host=host, peer=peer, device=_text(link.get("interface")), field=field, expected=expected,
                            actual="not checked", hint="hosts.%s.rails.pings: the ping's rc was not read as a number" % host,
                            passed=None))
            continue
        passed = rc == 0
        actual = "answers" if passed else "rc %s: %s" % (rc, (stdout or _text(ping.get("stderr")) or "").strip()[-160:])
        hint = "" if passed else ("no answer from %s's rail %s address from %s: check the rule and table on both hosts, "
                                  "the leaf of rail %s, and arp_ignore on the peer" % (peer, rail, address, rail))
        moved = _rx_delta(states, peer, peer_netdev) if peer_netdev else None
        if passed and moved is None and peer_netdev and _rx_given(states, peer):
            # the peer's counters were read, but not its rail NIC's: arrival on that NIC is not proven
            passed = None
            actual = "answers; %s's %s receive count was not read" % (peer, peer_netdev)
            hint = "hosts.%s.rails.rx holds no readable receive count of %s before and after the pings" % (peer, peer_netdev)
        if passed and moved is not None:
            sent = _SENT.search(stdout)
            if sent is None and _SENT_ANY.search(stdout):
                out.append(unreadable_output(host, "rails.pings.stdout", "a count of packets sent that cannot be read",
                                             "the rail %s ping to %s printed a count of packets sent that cannot be read" % (rail, peer),
                                             peer=peer))
                passed = None
                actual = "answers; the count of packets sent was not read"
                hint = "the count of packets sent could not be read (see the input finding)"
            else:
                sent = int(sent.group(1)) if sent else 1
                actual = "answers; %s's %s received +%d packets" % (peer, peer_netdev, moved)
                if moved < sent:
                    passed = False
                    hint = ("%s answered, but its rail %s NIC %s received %d packets for the %d sent: the pings arrived on another "
                            "of its NICs; check the rule and table of rail %s on %s, arp_ignore on %s, and the leaves' cabling"
                            % (peer, rail, peer_netdev, moved, sent, rail, host, peer))
        out.append(dict(check=CHECK, host=host, peer=peer, device=_text(link.get("interface")), field=field,
                        expected=expected, actual=actual, hint=hint, passed=passed))
    return out


_NEIGH_ANSWERED = re.compile(r"\blladdr ([0-9a-fA-F:]+)\b.*\b(REACHABLE|STALE|DELAY|PROBE|PERMANENT|NOARP)\b")


def parse_arp_probe(text):
    """``{address: MAC that answered, or None}`` from the role's ARP probe (``== ADDRESS`` then
    ``ip neigh show`` of that address on the probing netdev)."""
    out, current = {}, None
    for line in (text if isinstance(text, str) else "").splitlines():
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
        cmd = _texts(probe.get("cmd")) if isinstance(probe, dict) else None
        if not (isinstance(item, list) and len(item) == 2 and _text(item[1]) is not None and cmd is not None and len(cmd) > 5):
            continue
        peer, netdev = item[1], cmd[4]
        asked = parse_arp_probe(probe.get("stdout"))
        for address in cmd[5:]:
            rail = next((link.get("rail") for link in _list(_rails_of(states, peer).get("links"))
                         if isinstance(link, dict) and link.get("address") == address and _text(link.get("rail"))), "?")
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


def _rdma_run(run, links):
    """``(link, wanted device, stdout)`` of a rail's ib_write_bw run (``item``: ``[pair, rail position]``,
    ``cmd`` with ``-d DEVICE``), or None when it is not that."""
    cmd = _texts(run.get("cmd")) if isinstance(run, dict) else None
    item = run.get("item") if isinstance(run, dict) else None
    if not (cmd is not None and "-d" in cmd and cmd.index("-d") + 1 < len(cmd) and isinstance(item, list) and len(item) == 2):
        return None
    position = _number(item[1])
    if position is None or not 0 <= position < len(links):
        return None
    return links[position], cmd[cmd.index("-d") + 1], _text(run.get("stdout")) or ""


def rail_peers(states):
    """``{(rail, address): [host, ...]}``: the hosts whose plan (``rails.links``) holds that address
    on that rail, in host order. A rail run's peer is looked up here, so checking every host of a
    fleet stays linear in its size (a scan of every host per run made it quadratic)."""
    index = {}
    for name in sorted(states):
        if not isinstance(name, str):
            continue
        for peer_link in _list(_rails_of(states, name).get("links")):
            if not isinstance(peer_link, dict):
                continue
            key = (peer_link.get("rail"), peer_link.get("address"))
            try:
                index.setdefault(key, []).append(name)
            except TypeError:  # a rail or address of no hashable kind equals no rail name or address text
                continue
    return index


def _rdma_findings(host, runs, states, peers=None):
    """One finding per rail's ib_write_bw (``item``: ``[pair, rail position]``): it ran on the rail's
    device, from the GID of this host's rail address to the GID of the peer's address on that rail."""
    out = []
    links = [link for link in _list(_rails_of(states, host).get("links")) if isinstance(link, dict)]
    for run in runs:
        read = _rdma_run(run, links)
        if read is None:
            continue
        link, wanted, stdout = read
        rail = _text(link.get("rail"))
        named, local, remote = parse_rail_perftest(stdout)
        if peers is None:
            peers = rail_peers(states)
        peer = next((name for name in peers.get((rail, remote), ()) if name != host), None)
        rc = _number(run.get("rc"))
        bw = parse_write_bw(stdout)
        ran = rc == 0 and bw is not None
        passed = ran and named == wanted and local == link.get("address") and peer is not None
        hint = ("ib_write_bw on %s's rail %s (%s, %s) did not run from its rail address to a peer's address on the "
                "same rail: check that both ends' RDMA devices of rail %s are ACTIVE with a RoCE v2 GID of the rail "
                "address (rdma_facts), the rail's rule and table, and the rail's leaf" % (host, rail, wanted, link.get("address"), rail))
        tries = _number(run.get("attempts"))
        # a result that took more than one attempt (validate_rdma_attempts) says so
        tried = " (attempt %d: the ones before were refused, failed or hung)" % tries if tries is not None and tries > 1 else ""
        if ran:
            actual = "%s, GID %s -> %s: %.3f Gb/s%s" % (named or "no device named", local, remote, bw["average_gbps"], tried)
        elif rc is None or (rc == 0 and unreadable_result(stdout) is not None):
            # no rc (false is not 0), or a result row that cannot be read: not measured, never passed nor failed
            passed = None
            actual = "not checked"
            if rc is None:
                hint = "hosts.%s.rails.rdma: the run's rc was not read as a number" % host
            else:
                row = unreadable_result(stdout)
                out.append(unreadable_output(host, "rails.rdma.stdout", "the result row %s" % json.dumps(row),
                                             "the rail %s ib_write_bw printed a result row that cannot be read" % rail))
                hint = "its result row could not be read (see the input finding)"
        else:
            actual = "rc %s%s: %s" % (rc, " after %d attempts" % tries if tried else "", (stdout or _text(run.get("stderr")) or "").strip()[-160:])
        out.append(dict(check=CHECK, host=host, peer=peer, device=named or wanted, field="rail %s RDMA" % rail,
                        expected="ib_write_bw on %s from GID %s to the peer's rail %s GID" % (wanted, link.get("address"), rail),
                        actual=actual, hint="" if passed else hint, passed=passed))
    return out
