# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks of rdmaops.roce.fabric_check: every host's facts and NIC QoS state, every switch's
gathered state and what the validate role measured, against the resolved fabric intent.

A finding is ``{check, host, peer, device, field, expected, actual, hint, passed}``. ``passed`` is
True or False for a part that was checked and None for a part with no data (not gathered, not
exposed by the driver, not installed) or with data that could not be read (``inputs``): such a part
is reported, never counted as passed.

The verdict is ``passed`` True only when something was checked, nothing failed and nothing the
caller gave was left wholly unchecked: a host or a switch none of whose checks could run, data that
could not be read, perftest asked for and not run. Each such part is named in ``summary.unproven``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import Counter

from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import SWITCH_MTU_MAX_WORD
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.rdma import roce_active_mtu
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import inputs, measure
# the intent check lives in .intent (monitor_collector checks an intent without loading these checks)
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.intent import INTENT_KEYS, check_intent  # noqa: F401 (re-exported)
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.rails import rail_findings, rail_peers

FINDING_KEYS = ("check", "host", "peer", "device", "field", "expected", "actual", "hint", "passed")
REQUIRED_MODULES = ("rdma_cm", "ib_uverbs")
# fields of a switch's gathered "fabric" that equal the intent's key of the same name
SWITCH_SCALARS = ("roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority", "trust")
SWITCH_LISTS = ("pfc_priorities", "ecn_priorities")
SWITCH_ECN = ("min_threshold_bytes", "max_threshold_bytes", "probability_percent")
NOT_CHECKED = "not checked"
HOST_SOURCE = "the validate role's validate_state"
_FRACTION_TEXT = re.compile(r"[0-9]*\.?[0-9]+")
_PORT_NUMBER = re.compile(r"[0-9]{1,9}")
_LINK_RATE = re.compile(r"([0-9]{1,6}(?:\.[0-9]{1,6})?) Gb/sec\b")


def finding(check, host, field, expected, actual, hint, passed, peer=None, device=None):
    return dict(check=check, host=host, peer=peer, device=device, field=field, expected=expected, actual=actual,
                hint=hint if passed is not True else "", passed=passed)


def not_checked(check, host, field, why, peer=None, device=None, expected=None):
    return finding(check, host, field, expected, NOT_CHECKED, why, None, peer=peer, device=device)


def compare(check, host, field, expected, actual, hint, peer=None, device=None):
    """A checked finding: passed when ``actual`` equals ``expected``; None ``actual`` = not checked."""
    if actual is None or expected is None:
        return not_checked(check, host, field, "no value read for %s" % field, peer=peer, device=device, expected=expected)
    return finding(check, host, field, expected, actual, hint, actual == expected, peer=peer, device=device)


def check_fraction(value):
    """min_bw_fraction: a number (or its decimal text, matched whole) above 0 and at most 1."""
    if isinstance(value, str) and _FRACTION_TEXT.fullmatch(value):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError("min_bw_fraction must be a number above 0 and at most 1 (e.g. 0.8), not %s" % inputs.describe(value),
                         option="min_bw_fraction")
    if not 0 < value <= 1:
        raise InputError("min_bw_fraction must be above 0 and at most 1, got %s" % inputs.describe(value), option="min_bw_fraction")
    return float(value)


# hosts -----------------------------------------------------------------------------------------
def _port_order(name):
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses
    return (int(name), name) if _PORT_NUMBER.fullmatch(name) else (-1, name)


def _ports(rdma):
    """``([(device, port name, port, netdev)] of ACTIVE RoCE ports, [what was not read: dev/port whose state is
    unknown, a device whose ports are unknown, or the devices])``."""
    active, unknown = [], []
    devices = rdma.get("devices")
    if devices is None:
        return active, ["rdma.devices (the RDMA devices)"]
    for dev in sorted(devices):
        ports = (devices[dev] or {}).get("ports")
        if ports is None:
            # a device of null, or without its ports: its ports are not known, not absent
            unknown.append("the ports of %s" % dev)
            continue
        for num in sorted(ports, key=_port_order):
            port = ports[num] or {}
            if port.get("link_layer") is None or (port.get("link_layer") == "Ethernet" and port.get("state") is None):
                unknown.append("the link layer or state of %s/%s" % (dev, num))
            elif port["link_layer"] == "Ethernet" and port.get("netdev") and port["state"] == "ACTIVE":
                active.append((dev, num, port, port["netdev"]))
    return active, unknown


def host_findings(host, state, intent):
    """Modules, ports, MTU, active_mtu, GID, QoS (trust, PFC, DSCP map, ECN, ToS, RoCE mode), peermem."""
    rdma = state.get("rdma")
    if not rdma or "devices" not in rdma:
        return [not_checked("facts", host, "rdma", "no readable rdma_facts for this host (unreachable, a task before fabric_check "
                                                   "failed on it, or its facts could not be read)")]
    out = []
    modules = rdma.get("modules") or {}
    for name in REQUIRED_MODULES:
        loaded = modules.get(name)
        out.append(compare("modules", host, name, "loaded", None if loaded is None else ("loaded" if loaded else "not loaded"),
                           "load it: modprobe %s (rdmaops.roce.ofed loads and persists the RDMA modules)" % name))
    ports, unknown = _ports(rdma)
    if ports or not unknown:
        out.append(finding("ports", host, "active_roce_ports", ">= 1", len(ports),
                           "no ACTIVE Ethernet (RoCE) port with a netdev: check the cable, the link and the driver (ibv_devinfo)",
                           len(ports) > 0))
    else:
        out.append(not_checked("ports", host, "active_roce_ports", "not read: %s" % ", ".join(unknown),
                               expected=">= 1"))
    netdevs = rdma.get("netdevs") or {}
    host_mtu = intent["host_mtu"]
    for dev, num, port, netdev in ports:
        device = "%s/%s" % (dev, num)
        out.append(compare("mtu", host, "mtu", host_mtu, (netdevs.get(netdev) or {}).get("mtu"),
                           "set %s's MTU to %s (rdmaops.roce.nic, nic role: link MTU from roce_fabric.host_mtu)" % (netdev, host_mtu),
                           device=device))
        out.append(compare("mtu", host, "active_mtu", roce_active_mtu(host_mtu, port.get("max_mtu") or 4096), port.get("active_mtu"),
                           "RoCE's active_mtu follows the netdev MTU: fix %s's MTU, then check ibv_devinfo" % netdev, device=device))
        if "roce_v2_ipv4_gid_index" not in port:
            out.append(not_checked("gid", host, "roce_v2_ipv4_gid_index", "the RoCE v2 GID index was not read", device=device,
                                   expected="a RoCE v2 IPv4 GID"))
            continue
        gid = port["roce_v2_ipv4_gid_index"]  # null: rdma_facts found no RoCE v2 GID with an IPv4 address
        out.append(finding("gid", host, "roce_v2_ipv4_gid_index", "a RoCE v2 IPv4 GID", gid,
                           "no RoCE v2 GID with an IPv4 address on %s: give %s an IPv4 address" % (device, netdev),
                           gid is not None, device=device))
    out.extend(qos_findings(host, state.get("nic"), ports, intent, state.get("nic_error")))
    if rdma.get("gpus"):
        known = [modules[name] for name in ("nvidia_peermem", "nv_peer_mem") if modules.get(name) is not None]
        if not known:
            out.append(not_checked("peermem", host, "nvidia_peermem", "no module facts for nvidia_peermem on this GPU host",
                                   expected="loaded"))
        else:
            out.append(finding("peermem", host, "nvidia_peermem", "loaded", "loaded" if any(known) else "not loaded",
                               "GPUDirect RDMA needs nvidia_peermem: rdmaops.roce.peermem loads and persists it", any(known)))
    return out


def _nic_port(nic, dev, num):
    for entry in nic or []:
        if entry.get("device") == dev and entry.get("port") == num:
            return entry
    return None


def qos_findings(host, nic, ports, intent, nic_error=None):
    """Trust, PFC, DSCP map, ECN and ToS of every RoCE port, from nic_layer's check-mode ``before``."""
    out = []
    for dev, num, _port, netdev in ports:
        device = "%s/%s" % (dev, num)
        entry = _nic_port(nic, dev, num)
        if entry is None:
            if nic is not None:
                why = "NIC QoS state not gathered for this port"
            elif nic_error:
                why = "NIC QoS state not read: nic_layer failed: %s" % nic_error
            else:
                why = "NIC QoS state not gathered (validate_qos off, nic_layer unavailable, or its output could not be read)"
            out.append(not_checked("qos", host, "trust", why, device=device, expected=intent["trust"]))
            out.append(not_checked("ecn", host, "ecn", why, device=device))
            out.append(not_checked("tos", host, "tos", why, device=device, expected=intent["roce_tos"]))
            continue
        out.extend(_qos_part(host, device, netdev, entry.get("qos"), intent))
        out.extend(_ecn_part(host, device, netdev, entry.get("ecn"), intent))
        out.extend(_tos_part(host, device, dev, num, entry.get("tos"), intent))
    return out


def _qos_part(host, device, netdev, qos, intent):
    before = (qos or {}).get("before")
    if not before:
        why = "the driver exposes no DCB (trust, PFC) on %s" % netdev
        return [not_checked("qos", host, "trust", why, device=device, expected=intent["trust"]),
                not_checked("qos", host, "pfc", why, device=device, expected=sorted(intent["pfc_priorities"]))]
    fix = "rdmaops.roce.nic (nic_qos) sets it from roce_fabric"
    out = [compare("qos", host, "trust", intent["trust"], before.get("trust"), "set %s's trust to %s: %s" % (netdev, intent["trust"], fix),
                   device=device)]
    pfc = before.get("pfc")
    out.append(compare("qos", host, "pfc", sorted(intent["pfc_priorities"]), sorted(pfc) if pfc is not None else None,
                       "PFC must be on for priorities %s only on %s: %s" % (sorted(intent["pfc_priorities"]), netdev, fix), device=device))
    if intent["trust"] == "dscp" and "dscp2prio" in before:
        table = before.get("dscp2prio") or {}
        for dscp, prio in sorted(((int(d), p) for d, p in (intent.get("dscp_to_priority") or {}).items())):
            have = table.get(str(dscp))
            # an empty table maps every DSCP by its top three bits, as the kernel's default does
            if have is None and not table:
                have = dscp >> 3
            out.append(compare("qos", host, "dscp%d_priority" % dscp, prio, have,
                               "DSCP %d must map to priority %d on %s: %s" % (dscp, prio, netdev, fix), device=device))
    return out


def _ecn_part(host, device, netdev, ecn, intent):
    before = (ecn or {}).get("before")
    if not ecn or not ecn.get("supported", True) or not before:
        return [not_checked("ecn", host, "ecn", "the driver exposes no ECN (DCQCN) settings on %s" % netdev, device=device)]
    fix = "rdmaops.roce.nic (roce_ecn) sets it from roce_fabric"
    want = sorted(intent["ecn_priorities"])
    out = []
    for point, label in (("np", "notification point"), ("rp", "reaction point")):
        enabled = (before.get(point) or {}).get("enabled")
        out.append(compare("ecn", host, "ecn_%s_priorities" % point, want, sorted(enabled) if enabled is not None else None,
                           "ECN %s must be on for priorities %s on %s: %s" % (label, want, netdev, fix), device=device))
    np_state = before.get("np") or {}
    out.append(compare("ecn", host, "cnp_dscp", intent["cnp_dscp"], np_state.get("cnp_dscp"),
                       "CNPs must carry DSCP %s on %s: %s" % (intent["cnp_dscp"], netdev, fix), device=device))
    out.append(compare("ecn", host, "cnp_priority", intent["cnp_priority"], np_state.get("cnp_802p_prio"),
                       "CNPs must use priority %s on %s: %s" % (intent["cnp_priority"], netdev, fix), device=device))
    return out


def _tos_part(host, device, dev, num, tos, intent):
    before = (tos or {}).get("before")
    if not before:
        why = "rdma_cm's configfs for %s is absent (rdma_cm not loaded, or configfs not mounted)" % dev
        return [not_checked("tos", host, "tos", why, device=device, expected=intent["roce_tos"])]
    path = "/sys/kernel/config/rdma_cm/%s/ports/%s" % (dev, num)
    out = [compare("tos", host, "tos", intent["roce_tos"], before.get("tos"),
                   "RDMA-CM traffic of %s must carry ToS %s (DSCP %s): %s/default_roce_tos reads otherwise; rdmaops.roce.nic (roce_tos) "
                   "sets and re-applies it" % (device, intent["roce_tos"], intent["roce_dscp"], path), device=device)]
    mode = before.get("roce_mode")
    want = "v2" if intent.get("roce_mode", "RoCE v2") == "RoCE v2" else "v1"
    out.append(compare("tos", host, "roce_mode", want, mode,
                       "RDMA-CM must default to RoCE %s on %s (%s/default_roce_mode)" % (want, device, path), device=device))
    return out


# fleet drift -----------------------------------------------------------------------------------
def _drift_values(rdma):
    stack = rdma.get("stack") or {}
    firmware = sorted(set(dev["fw_ver"] for dev in (rdma.get("devices") or {}).values() if dev and dev.get("fw_ver")))
    return dict(stack_version="%s %s" % (stack.get("flavor"), stack.get("version")) if stack.get("flavor") and stack.get("version")
                else stack.get("flavor"),
                firmware=", ".join(firmware) or None,
                kernel=stack.get("kernel"))


def drift_findings(hosts):
    """Hosts that differ from the fleet's majority in stack version, firmware or kernel. A host
    whose value is unknown (Soft-RoCE has no firmware) is not checked for that field; with no
    majority (a tie), every host is named so the reader sees the split."""
    values = {}
    for host in sorted(hosts):
        rdma = (hosts[host] or {}).get("rdma")
        if rdma and "devices" in rdma:
            values[host] = _drift_values(rdma)
    out = []
    hints = dict(stack_version="install the same driver stack everywhere (rdmaops.roce.ofed, ofed_version)",
                 firmware="update the NIC firmware to the fleet's version (mlxfwmanager / the vendor's bundle)",
                 kernel="boot the fleet's kernel (the driver stack is built per kernel)")
    for field in ("stack_version", "firmware", "kernel"):
        known = dict((host, v[field]) for host, v in values.items() if v[field] is not None)
        counts = Counter(known.values()).most_common()
        majority = counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else None
        for host in sorted(values):
            if host not in known:
                out.append(not_checked("drift", host, field, "%s unknown on this host" % field.replace("_", " ")))
            elif majority is None:
                split = "; ".join("%s on %d host(s)" % (value, count) for value, count in counts)
                out.append(finding("drift", host, field, "one value across the fleet", known[host],
                                   "no majority (%s): %s" % (split, hints[field]), False))
            else:
                out.append(finding("drift", host, field, majority, known[host],
                                   "differs from the fleet's majority: %s" % hints[field], known[host] == majority))
    return out


# switches --------------------------------------------------------------------------------------
def switch_mtu_floor(intent):
    """The least MTU a switch port may have: switch_mtu, or with ``max`` (each NOS's largest, which
    the switch layer clamps per NOS) the hosts' MTU, the frames it must carry."""
    mtu = intent["switch_mtu"]
    return intent["host_mtu"] if mtu == SWITCH_MTU_MAX_WORD else mtu


def switch_findings(switches, intent):
    """Each switch's gathered ``fabric`` and ``interfaces`` (read by ``inputs``) against the intent;
    keys missing = not checked. ``switches`` maps each switch to what was read of it."""
    if not switches:
        return [not_checked("switch", "switches", "fabric", "no switch state given (validate_switch_state): switches not checked")]
    out = []
    for name in sorted(switches):
        fabric = (switches[name] or {}).get("fabric")
        if fabric is None:
            out.append(not_checked("switch", name, "fabric", "no readable gathered fabric state for this switch (switch_roce "
                                                             "state=gathered failed or could not reach it, or its state could not be read)"))
            continue
        fix = "rdmaops.roce.switch_roce sets it from roce_fabric"
        for key in SWITCH_SCALARS:
            out.append(_switch_compare(name, key, intent[key], fabric.get(key), "set the switch's %s to %s: %s" % (key, intent[key], fix)))
        for key in SWITCH_LISTS:
            have = fabric.get(key)
            want = sorted(intent[key])
            out.append(_switch_compare(name, key, want, sorted(have) if have is not None else None,
                                       "the switch must have %s %s, as every host: %s" % (key.replace("_", " "), want, fix)))
        mtu = fabric.get("switch_mtu")
        floor = switch_mtu_floor(intent)
        if mtu is None:
            out.append(not_checked("switch", name, "switch_mtu", "switch_mtu not gathered", expected=intent["switch_mtu"]))
        else:
            out.append(finding("switch", name, "switch_mtu", ">= %s" % floor, mtu,
                               "raise the switch's MTU to %s (host_mtu %s plus headroom)" % (intent["switch_mtu"], intent["host_mtu"]),
                               mtu >= floor))
        ecn = fabric.get("ecn") or {}
        for key in SWITCH_ECN:
            want = (intent.get("ecn") or {}).get(key)
            if want is None:
                continue
            out.append(_switch_compare(name, "ecn.%s" % key, want, ecn.get(key),
                                       "set the switch's ECN/WRED %s to %s: %s" % (key, want, fix)))
        if intent.get("lossless"):
            # absent, like null, is not gathered: not checked, as the other keys of the fabric
            watchdog = fabric.get("pfc_watchdog")
            on = watchdog.get("enabled") if isinstance(watchdog, dict) else watchdog
            if on is None:
                out.append(not_checked("switch", name, "pfc_watchdog", "pfc_watchdog not gathered", expected=True))
            else:
                out.append(finding("switch", name, "pfc_watchdog", True, on,
                                   "enable the PFC watchdog: a stuck receiver must not pause the fabric forever", on is True))
        out.extend(_switch_interfaces(name, (switches[name] or {}).get("interfaces"), intent))
    return out


def _switch_compare(name, key, want, have, hint):
    if have is None:
        return not_checked("switch", name, key, "%s not gathered" % key, expected=want)
    return finding("switch", name, key, want, have, hint, have == want)


def _switch_interfaces(name, interfaces, intent):
    out = []
    for entry in interfaces or []:
        if not isinstance(entry, dict):
            continue  # a name alone: nothing of the port to check
        port = entry.get("name") or entry.get("interface")
        if entry.get("mtu") is not None:
            floor = switch_mtu_floor(intent)
            out.append(finding("switch", name, "mtu", ">= %s" % floor, entry["mtu"],
                               "raise %s's MTU to %s" % (port, intent["switch_mtu"]), entry["mtu"] >= floor, device=port))
        pfc = entry.get("pfc_priorities")
        if pfc is not None:
            want = sorted(intent["pfc_priorities"])
            out.append(finding("switch", name, "pfc_priorities", want, sorted(pfc),
                               "PFC on %s must be on for priorities %s" % (port, want), sorted(pfc) == want, device=port))
    return out


# measurements ----------------------------------------------------------------------------------
def _link_gbps(rate):
    """Gb/s from a port's rate as the kernel writes it (``100 Gb/sec (2X HDR)``), or None."""
    match = _LINK_RATE.match(rate or "")
    return float(match.group(1)) if match else None


def _port_rate(hosts, host, device):
    rdma = (hosts.get(host) or {}).get("rdma") or {}
    dev, _sep, num = str(device or "").partition("/")
    port = ((((rdma.get("devices") or {}).get(dev) or {}).get("ports") or {}).get(num or "1")) or {}
    return _link_gbps(port.get("rate"))


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
            why = ("the path check refused its operands: %s" % _tail(parts["refused"][1]) if "refused" in parts
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
                   "%d/%d replies" % (counts[1], counts[0]) if counts else "no reply (%s)" % _tail(ping.get("stderr") or text),
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
    replies = "%d/%d replies to small pings" % (counts[1], counts[0]) if counts else "no reply to small pings (%s)" % _tail(text)
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


def _tail(text, lines=2):
    return " | ".join((text or "").strip().splitlines()[-lines:])[:400] or "no output"


def rdma_findings(runs, hosts, intent, min_bw_fraction, unreachable=()):
    """ib_write_bw against ``min_bw_fraction`` of the slower end's link rate; ib_write_lat recorded.
    ``runs`` are ``(host, run)``, the host the client. A pair in ``unreachable`` (its small pings
    failed) is not checked: the reachability finding names the fault. Returns ``(findings,
    measurements, unproven)``: ``unproven`` names each test asked for (``requested``) that gave no
    result on a reachable pair."""
    out = []
    measurements = []
    unproven = []
    for host, run in runs:
        test, peer, device = run.get("test"), run.get("peer"), run.get("device")
        check = "rdma_lat" if test == "ib_write_lat" else "rdma_bw"
        field = "latency_usec" if test == "ib_write_lat" else "bandwidth_gbps"
        why = None
        if frozenset((host, peer)) in unreachable:
            out.append(not_checked(check, host, field, "not measured: %s and %s do not reach each other (see the path's "
                                                       "reachability finding)" % (host, peer), peer=peer, device=device))
            continue
        if test is None:
            why = "the run names no test (ib_write_bw or ib_write_lat)"
        elif run.get("skipped"):
            why = run.get("why") or "not run"
        elif run.get("rc") is None:
            why = "the test's result was not recorded"
        if why is not None:
            out.append(not_checked(check, host, field, why, peer=peer, device=device))
            if run.get("requested"):
                unproven.append("%s %s -> %s asked for (validate_rdma) but not measured: %s" % (test or "perftest", host, peer, why))
            continue
        tos = run.get("tos")
        base = dict(tos=tos, gid_index=run.get("gid_index"), transport="RC over RDMA-CM")
        tries = run.get("attempts")
        tries = tries if isinstance(tries, int) and not isinstance(tries, bool) and tries > 1 else None
        if tries:
            # validate_rdma_attempts: the result took more than one run; its measurement says so
            base["attempts"] = tries
        hint_run = "%s %s -> %s failed (rc %s%s): %s; is rdma_cm loaded on both, and the RoCE v2 GID index right?" % (
            test, host, peer, run.get("rc"), ", after %d attempts" % tries if tries else "", _tail(run.get("stderr") or run.get("stdout")))
        unreadable = measure.unreadable_result(run.get("stdout")) if run.get("rc") == 0 else None
        if unreadable is not None:
            # a result row that cannot be read (1.2.3, 400 digits: inf) is no measurement: not checked, never passed
            why = "%s -> %s printed the result row %s" % (test, peer, inputs.describe(unreadable))
            out.append(inputs.unreadable_output(host, "rdma_runs.stdout", inputs.describe(unreadable), why, peer=peer))
            out.append(not_checked(check, host, field, "its result could not be read (see the input finding)", peer=peer, device=device))
            continue
        if test == "ib_write_bw":
            result = measure.parse_write_bw(run.get("stdout")) if run.get("rc") == 0 else None
            rates = [r for r in (_port_rate(hosts, host, device), _port_rate(hosts, peer, run.get("peer_device") or device)) if r]
            link = min(rates) if rates else None
            floor = round(link * min_bw_fraction, 6) if link else None
            if result is None:
                out.append(finding(check, host, "bandwidth_gbps", ">= %s" % floor if floor else "a measurement", "no result", hint_run,
                                   False, peer=peer, device=device))
                continue
            gbps = result["average_gbps"]
            detail = dict(base, link_rate_gbps=link, min_gbps=floor, **result)
            measurements.append(measure.measurement(test, host, "average bandwidth", gbps, "Gb/s", peer=peer, device=device, detail=detail))
            if floor is None:
                out.append(not_checked(check, host, "bandwidth_gbps", "the link rate is unknown: %s Gb/s measured, no threshold" % gbps,
                                       peer=peer, device=device))
            else:
                out.append(finding(check, host, "bandwidth_gbps", ">= %s" % floor, gbps,
                                   "%s Gb/s is below validate_min_bw_fraction %s of the %s Gb/s link: look for PFC pauses, "
                                   "CNPs and out_of_buffer in the counters, and a congested or mis-set switch port" % (
                                       gbps, min_bw_fraction, link), gbps >= floor, peer=peer, device=device))
        else:
            result = measure.parse_write_lat(run.get("stdout")) if run.get("rc") == 0 else None
            if result is None:
                out.append(finding(check, host, "latency_usec", "a measurement", "no result", hint_run, False, peer=peer, device=device))
                continue
            measurements.append(measure.measurement(test, host, "typical latency", result["t_typical"], "usec", peer=peer, device=device,
                                                    detail=dict(base, **result)))
            out.append(finding(check, host, "latency_usec", "a measurement", result["t_typical"], "", True, peer=peer, device=device))
    return out, measurements, unproven


def nccl_findings(runs):
    """nccl-tests all_reduce_perf: NCCL's log must show the IB/RoCE transport and GPUDirect RDMA.
    ``runs`` are ``(host, run)``."""
    out = []
    for host, run in runs:
        if run.get("skipped"):
            out.append(not_checked("nccl", host, "all_reduce_perf", run.get("why") or "not run"))
            continue
        if run.get("rc") is None:
            out.append(not_checked("nccl", host, "all_reduce_perf", "the run's result was not recorded"))
            continue
        log = run.get("stdout") or ""
        out.append(finding("nccl", host, "transport", "NET/IB", "NET/IB" if "NET/IB" in log else "no NET/IB in NCCL's log",
                           "NCCL did not use the RDMA NICs: check NCCL_IB_HCA and NCCL_IB_GID_INDEX (/etc/nccl.conf)",
                           run["rc"] == 0 and "NET/IB" in log))
        gdr = "GDRDMA" in log or "GPU Direct RDMA Enabled" in log
        out.append(finding("nccl", host, "gpudirect", "GPUDirect RDMA", "enabled" if gdr else "not in NCCL's log",
                           "load nvidia_peermem (rdmaops.roce.peermem) and keep GPU and NIC under one PCIe switch", gdr))
    return out


# reading the inputs and the verdict ---------------------------------------------------------------
def read_inputs(hosts, switches):
    """``hosts`` and ``switches`` read (``inputs``): ``(host states, switch states, input findings)``.
    A host's or switch's data that is not the shape its producer writes is left out and named."""
    if not isinstance(hosts, Mapping) or not hosts:
        raise InputError("hosts must map each host's name to its state ({rdma, nic, pings, rdma_runs, counters, nccl}): %s given"
                         % ("none" if not hosts else inputs.describe(hosts)), option="hosts")
    if switches is not None and not isinstance(switches, Mapping):
        raise InputError("switches must map each switch's name to its gathered state ({fabric, interfaces}), not %s"
                         % inputs.describe(switches), option="switches")
    problems = []
    read = []
    for option, given, shape, source in (("hosts", hosts, inputs.HOST, HOST_SOURCE),
                                         ("switches", switches or {}, inputs.SWITCH, "switch_roce's gathered state")):
        # keys such as "1" and 1 name one host: its data is none of theirs (keeping the last would hide the others)
        shared = inputs.collisions(option, given, source)
        problems.extend(shared.values())
        states = {}
        for key in given:
            name, state, found = inputs.read_entry(shape, key, given[key], option, source)
            states[name] = {} if name in shared else (state or {})
            if name not in shared:
                problems.extend(found)
        read.append(states)
    return read[0], read[1], problems


def unproven_parts(findings, hosts, switches, unproven):
    """What keeps the verdict from passing without a failure: nothing checked at all, a host or switch
    of which nothing could be checked, data that could not be read, and ``unproven`` (tests asked for
    that gave no result)."""
    parts = []
    checked_owners = set(f["host"] for f in findings if f["passed"] is not None)
    first_why = {}  # each owner's first not-checked hint, read in one pass
    for f in findings:
        if f["passed"] is None:
            first_why.setdefault(f["host"], f["hint"])
    for kind, names in (("host", hosts), ("switch", switches)):
        for name in sorted(names):
            if name not in checked_owners:
                why = [first_why[name]] if name in first_why else []
                parts.append("%s %s: nothing checked%s" % (kind, name, (" (%s)" % why[0]) if why else ""))
    unreadable = ["%s %s" % (f["host"], f["field"]) for f in findings if f["check"] == "input"]
    if unreadable:
        parts.append("data that could not be read: %s" % ", ".join(unreadable[:10] + (["..."] if len(unreadable) > 10 else [])))
    parts.extend(unproven)
    if not checked_owners:
        parts.insert(0, "nothing was checked")
    return parts


def fabric_check(intent, hosts, switches=None, min_bw_fraction=0.8):
    """Everything fabric_check returns: ``{passed, findings, measurements, summary}``. ``hosts`` maps
    each host to what it read and measured: ``rdma`` (facts), ``nic`` (nic_layer's check-mode ports),
    ``pings``, ``rdma_runs`` and ``nccl`` (lists, the host as the sender or client) and ``counters``
    (``{ports, before, after}``). Data of the wrong type or shape is reported, never checked."""
    intent = check_intent(intent)
    min_bw_fraction = check_fraction(min_bw_fraction)
    states, switch_states, problems = read_inputs(hosts, switches)
    findings = []
    # built once, looked up per host: the work grows with the fleet, not with its square
    problems_of = {}
    for f in problems:
        problems_of.setdefault(f["host"], []).append(f)
    peers = rail_peers(states)
    for host in sorted(states):
        findings.extend(problems_of.get(host, ()))
        findings.extend(host_findings(host, states[host], intent))
        findings.extend(rail_findings(host, states[host], states, peers))  # multi-rail hosts only
    findings.extend(drift_findings(states))
    findings.extend(f for f in problems if f["host"] not in states)
    findings.extend(switch_findings(switch_states, intent))
    pings = [(host, ping) for host in sorted(states) for ping in states[host].get("pings") or []]
    path, measurements, unreachable = path_findings(pings, intent)
    findings.extend(path)
    runs = [(host, run) for host in sorted(states) for run in states[host].get("rdma_runs") or []]
    rdma, rdma_measurements, unproven = rdma_findings(runs, states, intent, min_bw_fraction, unreachable)
    findings.extend(rdma)
    measurements.extend(rdma_measurements)
    for host in sorted(states):
        read = states[host].get("counters")
        if read:
            measurements.extend(measure.counter_deltas(host, [tuple(p) for p in read.get("ports") or []], read.get("before"),
                                                       read.get("after"), intent["pfc_priorities"]))
    findings.extend(nccl_findings([(host, run) for host in sorted(states) for run in states[host].get("nccl") or []]))
    failed = [f for f in findings if f["passed"] is False]
    unproven = unproven_parts(findings, states, switch_states, unproven)
    summary = dict(checked=sum(1 for f in findings if f["passed"] is not None), failed=len(failed),
                   not_checked=sum(1 for f in findings if f["passed"] is None),
                   failed_hosts=sorted(set(f["host"] for f in failed)), unproven=unproven)
    return dict(passed=not failed and not unproven, findings=findings, measurements=measurements, summary=summary)
