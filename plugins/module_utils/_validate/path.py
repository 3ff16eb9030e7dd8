# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's path checks: reachability and the intent's MTU unfragmented, with what each end saw."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import inputs, measure
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import finding, not_checked, tail


def path_findings(pings, intent):
    """Per ping record (``(host, ping)``, the host the sender): plain reachability first (the
    ``reachability`` finding: small pings, ARP on the fabric netdev), then the largest unfragmented
    frame the intent's MTU allows (``mtu_path``), which only a reachable pair is checked for.
    Returns ``(findings, measurements, unreachable)``: ``unreachable`` holds each pair (a frozenset
    of the two hosts) whose small pings failed."""
    out = []
    measurements = []
    unreachable = set()
    for host, ping in pings:
        peer = ping.get("peer")
        if ping.get("skipped"):
            out.append(not_checked("path", host, "mtu_path", ping.get("why") or "not run", peer=peer))
            continue
        if ping.get("rc") is None:
            out.append(not_checked("path", host, "mtu_path", "the ping's result was not recorded", peer=peer,
                                   device=ping.get("address")))
            continue
        bad = measure.path_operands_problem(ping)
        if bad:
            out.append(inputs.unreadable_output(host, "pings.address", bad[0], bad[1], peer=peer))
            out.append(not_checked("path", host, "mtu_path", "not a path check of an address (see the input finding)", peer=peer))
            continue
        parts = measure.parse_path_check(ping.get("stdout"), ping.get("nonce"))
        unreadable = [name for name, part in sorted(parts.items()) if name in ("small", "jumbo") and measure.unreadable_ping_summary(part[1])]
        if not parts and measure.unreadable_ping_summary(ping.get("stdout")):
            unreadable = ["jumbo"]
        if unreadable:
            # a count of more digits than ping writes: neither an answer nor a loss
            out.append(inputs.unreadable_output(host, "pings.stdout", "a ping summary of unreadable counts",
                                                "the %s ping to %s (%s) printed a summary whose counts cannot be read"
                                                % (" and ".join(unreadable), peer, ping.get("address")), peer=peer))
            out.append(not_checked("path", host, "mtu_path", "its ping's summary could not be read (see the input finding)", peer=peer,
                                   device=ping.get("address")))
            continue
        if "refused" in parts or ("small" not in parts and ping.get("nonce") is not None):
            # the script refused an operand, or no line of its output carries this run's nonce: its
            # output cannot be read as a result (and nothing in it is believed)
            why = ("the path check refused its operands: %s" % tail(parts["refused"][1]) if "refused" in parts
                   else "the path check's output holds no result line of this run (none carries its nonce)")
            out.append(inputs.unreadable_output(host, "pings.stdout", "no result of this run", "%s (peer %s)" % (why, peer), peer=peer))
            out.append(not_checked("path", host, "mtu_path", why, peer=peer, device=ping.get("address")))
            continue
        if "small" not in parts:
            # a plain ping -M do (an older role): its output is the jumbo ping's
            jumbo = (ping["rc"], ping.get("stdout"))
        else:
            reached = _reachability(host, ping, parts)
            out.append(reached)
            if reached["passed"] is not True:
                unreachable.add(frozenset((host, peer)))
                out.append(not_checked("path", host, "mtu_path", "not reachable: see the reachability finding of %s -> %s" % (host, peer),
                                       peer=peer, device=ping.get("address")))
                continue
            if "jumbo" not in parts:
                out.append(not_checked("path", host, "mtu_path", "the jumbo ping did not run", peer=peer, device=ping.get("address")))
                continue
            jumbo = parts["jumbo"]
        out.append(_mtu_path(host, ping, jumbo, intent))
        counts = measure.ping_received(jumbo[1])
        measurements.append(measure.measurement("ping", host, "ping -M do", ping.get("size"), "bytes", peer=peer, device=ping.get("address"),
                                                detail=dict(replies=counts[1] if counts else 0, sent=counts[0] if counts else None)))
    return out, measurements, unreachable


def _mtu_path(host, ping, jumbo, intent):
    rc, text = jumbo
    counts = measure.ping_received(text)
    ok = rc == 0 and counts is not None and counts[1] > 0
    return finding("path", host, "mtu_path", "%s-byte frames unfragmented" % intent["host_mtu"],
                   "%d/%d replies" % (counts[1], counts[0]) if counts else "no reply (%s)" % tail(ping.get("stderr") or text),
                   "ping -M do -s %s %s -> %s fails: a host or switch port between them has an MTU below %s "
                   "(switch ports need %s)" % (ping.get("size"), host, ping.get("address"), intent["host_mtu"], intent["switch_mtu"]),
                   ok, peer=ping.get("peer"), device=ping.get("address"))


def _link_words(netdev, link):
    """What ``ip -s -j link`` says of a netdev, for a hint: carrier, state, error counters."""
    if link is None:
        return None
    carrier = {True: "carrier up", False: "NO CARRIER", None: "carrier unknown"}[link["carrier"]] if link["up"] else "set down"
    counters = ", ".join("%s %s %s" % (way.upper(), name.replace("_", " "), link["%s_%s" % (way, name)])
                         for way, name in measure.LINK_COUNTERS if link["%s_%s" % (way, name)] is not None)
    return "%s: %s (%s)%s" % (netdev, carrier, link["operstate"] or "state unknown", ", " + counters if counters else "")


def _evidence(parts, netdev, address):
    """``(words, facts)`` from a path check's evidence parts (``neigh``, ``link``, ``kernel``)."""
    neighbour = measure.parse_neighbour(parts["neigh"][1], address) if "neigh" in parts else None
    link = measure.parse_link(parts["link"][1]) if "link" in parts else None
    kernel = measure.kernel_lines(parts["kernel"][1]) if "kernel" in parts else []
    words = []
    if neighbour is not None:
        words.append("neighbour %s %s on %s" % (address, "absent" if neighbour == "none" else neighbour, netdev))
    if link is not None:
        words.append(_link_words(netdev, link))
    if kernel:
        words.append("kernel: %s" % " | ".join(kernel[-3:]))
    return words, dict(neighbour=neighbour, link=link, kernel=kernel)


def _reachability(host, ping, parts):
    """The ``reachability`` finding of one path check: passed when the small pings were answered;
    otherwise what the sender (and, when read, the peer) could see of the path, and where to look."""
    peer, address, netdev = ping.get("peer"), ping.get("address"), ping.get("netdev") or "the fabric netdev"
    rc, text = parts["small"]
    counts = measure.ping_received(text)
    replies = "%d/%d replies to small pings" % (counts[1], counts[0]) if counts else "no reply to small pings (%s)" % tail(text)
    if rc == 0 and counts is not None and counts[1] > 0:
        return finding("path", host, "reachability", "replies to small pings", replies, "", True, peer=peer, device=netdev)
    words, seen = _evidence(parts, netdev, address)
    actual = "; ".join([replies] + ["%s: %s" % (host, word) for word in words])
    peer_parts = measure.parse_path_check(ping.get("peer_evidence"), ping.get("nonce"))
    peer_seen = dict(link=None, kernel=[])
    if peer_parts:
        peer_words, peer_seen = _evidence(peer_parts, ping.get("peer_netdev") or "its fabric netdev", ping.get("source") or host)
        actual += "".join("; %s: %s" % (peer, word) for word in peer_words)
    causes = []
    for who, facts in ((host, seen), (peer, peer_seen)):
        link = facts.get("link") or {}
        if link and not link.get("up"):
            causes.append("%s's fabric netdev is set down (ip link set dev ... up, or the nic role)" % who)
        elif link.get("carrier") is False:
            causes.append("%s's fabric netdev has no carrier (the NIC, the cable or the switch port is down)" % who)
        if facts.get("kernel"):
            causes.append("%s's kernel reports transmit timeouts or a link down on its fabric netdev: its NIC stopped "
                          "transmitting (the driver or the NIC needs a reset; a reboot brings it back)" % who)
        elif link.get("tx_errors"):
            causes.append("%s's fabric netdev counts %s TX errors" % (who, link["tx_errors"]))
    if not causes and seen.get("neighbour") in ("INCOMPLETE", "FAILED"):
        causes.append("%s gets no ARP reply from %s: %s does not answer on the fabric, or a switch port between them drops it"
                      % (host, address, peer))
    hint = "%s cannot reach %s (%s) over %s: %s; check the NICs, the cable and the switch port between them (ip -s link show, " \
           "ip neigh, dmesg on both)" % (host, peer, address, netdev, "; ".join(causes) or "small pings get no reply")
    return finding("path", host, "reachability", "replies to small pings", actual, hint, False, peer=peer, device=netdev)
