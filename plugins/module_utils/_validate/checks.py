# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks of rdmaops.roce.fabric_check: every host's facts and NIC QoS state, every switch's
gathered state and what the validate role measured, against the resolved fabric intent.

A finding is ``{check, host, peer, device, field, expected, actual, hint, passed}``. ``passed`` is
True or False for a part that was checked and None for a part with no data (not gathered, not
exposed by the driver, not installed): such a part is reported, never counted as passed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import Counter

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import roce_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import SWITCH_MTU_MAX_WORD
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.rdma import roce_active_mtu
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import measure

FINDING_KEYS = ("check", "host", "peer", "device", "field", "expected", "actual", "hint", "passed")
INTENT_KEYS = ("host_mtu", "switch_mtu", "trust", "roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority",
               "pfc_priorities", "ecn_priorities", "roce_tos", "ecn")
REQUIRED_MODULES = ("rdma_cm", "ib_uverbs")
# fields of a switch's gathered "fabric" that equal the intent's key of the same name
SWITCH_SCALARS = ("roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority", "trust")
SWITCH_LISTS = ("pfc_priorities", "ecn_priorities")
SWITCH_ECN = ("min_threshold_bytes", "max_threshold_bytes", "probability_percent")
NOT_CHECKED = "not checked"


def finding(check, host, field, expected, actual, hint, passed, peer=None, device=None):
    return dict(check=check, host=host, peer=peer, device=device, field=field, expected=expected, actual=actual,
                hint=hint if passed is not True else "", passed=passed)


def not_checked(check, host, field, why, peer=None, device=None, expected=None):
    return finding(check, host, field, expected, NOT_CHECKED, why, None, peer=peer, device=device)


def compare(check, host, field, expected, actual, hint, peer=None, device=None):
    """A checked finding: passed when ``actual`` equals ``expected``; None ``actual`` = not checked."""
    if actual is None:
        return not_checked(check, host, field, "no value read for %s" % field, peer=peer, device=device, expected=expected)
    return finding(check, host, field, expected, actual, hint, actual == expected, peer=peer, device=device)


def check_intent(intent):
    """The resolved intent (the rdmaops.roce.roce_intent filter's output), checked for the keys used."""
    if not isinstance(intent, dict):
        raise InputError("intent must be the resolved fabric intent: roce_fabric | rdmaops.roce.roce_intent", option="intent")
    missing = [key for key in INTENT_KEYS if key not in intent]
    if missing:
        raise InputError("intent lacks %s: pass the resolved intent (roce_fabric | rdmaops.roce.roce_intent), not roce_fabric itself"
                         % ", ".join(missing), option="intent")
    return intent


# hosts -----------------------------------------------------------------------------------------
def host_findings(host, state, intent):
    """Modules, ports, MTU, active_mtu, GID, QoS (trust, PFC, DSCP map, ECN, ToS, RoCE mode), peermem."""
    rdma = (state or {}).get("rdma")
    if not isinstance(rdma, dict) or "devices" not in rdma:
        return [not_checked("facts", host, "rdma", "no rdma_facts for this host (unreachable, or the facts task failed)")]
    out = []
    modules = rdma.get("modules") or {}
    for name in REQUIRED_MODULES:
        loaded = modules.get(name)
        out.append(compare("modules", host, name, "loaded", None if loaded is None else ("loaded" if loaded else "not loaded"),
                           "load it: modprobe %s (rdmaops.roce.ofed loads and persists the RDMA modules)" % name))
    ports = [(dev, num, port, netdev) for dev, num, port, netdev in roce_ports(rdma) if port.get("state") == "ACTIVE"]
    out.append(finding("ports", host, "active_roce_ports", ">= 1", len(ports),
                       "no ACTIVE Ethernet (RoCE) port with a netdev: check the cable, the link and the driver (ibv_devinfo)",
                       len(ports) > 0))
    netdevs = rdma.get("netdevs") or {}
    host_mtu = intent["host_mtu"]
    for dev, num, port, netdev in ports:
        device = "%s/%s" % (dev, num)
        out.append(compare("mtu", host, "mtu", host_mtu, (netdevs.get(netdev) or {}).get("mtu"),
                           "set %s's MTU to %s (rdmaops.roce.nic, nic role: link MTU from roce_fabric.host_mtu)" % (netdev, host_mtu),
                           device=device))
        out.append(compare("mtu", host, "active_mtu", roce_active_mtu(host_mtu, port.get("max_mtu") or 4096), port.get("active_mtu"),
                           "RoCE's active_mtu follows the netdev MTU: fix %s's MTU, then check ibv_devinfo" % netdev, device=device))
        gid = port.get("roce_v2_ipv4_gid_index")
        out.append(finding("gid", host, "roce_v2_ipv4_gid_index", "a RoCE v2 IPv4 GID", gid,
                           "no RoCE v2 GID with an IPv4 address on %s: give %s an IPv4 address" % (device, netdev),
                           gid is not None, device=device))
    out.extend(qos_findings(host, state.get("nic"), ports, intent))
    if rdma.get("gpus"):
        loaded = modules.get("nvidia_peermem") or modules.get("nv_peer_mem")
        out.append(finding("peermem", host, "nvidia_peermem", "loaded", "loaded" if loaded else "not loaded",
                           "GPUDirect RDMA needs nvidia_peermem: rdmaops.roce.peermem loads and persists it", bool(loaded)))
    return out


def _nic_port(nic, dev, num):
    for entry in nic or []:
        if entry.get("device") == dev and str(entry.get("port")) == str(num):
            return entry
    return None


def qos_findings(host, nic, ports, intent):
    """Trust, PFC, DSCP map, ECN and ToS of every RoCE port, from nic_layer's check-mode ``before``."""
    out = []
    for dev, num, _port, netdev in ports:
        device = "%s/%s" % (dev, num)
        entry = _nic_port(nic, dev, num)
        if entry is None:
            why = "NIC QoS state not gathered for this port" if nic is not None else "NIC QoS state not gathered (validate_qos off or nic_layer unavailable)"
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
            have = table.get(str(dscp), table.get(dscp))
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
    firmware = sorted(set(dev.get("fw_ver") for dev in (rdma.get("devices") or {}).values() if dev.get("fw_ver")))
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
        if isinstance(rdma, dict) and "devices" in rdma:
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
    """Each switch's gathered ``fabric`` and ``interfaces`` against the intent; keys missing = not checked."""
    if not switches:
        return [not_checked("switch", "switches", "fabric", "no switch state given (validate_switch_state): switches not checked")]
    out = []
    for name in sorted(switches):
        fabric = (switches[name] or {}).get("fabric")
        if not isinstance(fabric, dict):
            out.append(not_checked("switch", name, "fabric", "no gathered fabric state for this switch"))
            continue
        fix = "rdmaops.roce.switch_roce sets it from roce_fabric"
        for key in SWITCH_SCALARS:
            out.append(_switch_compare(name, key, intent[key], fabric, "set the switch's %s to %s: %s" % (key, intent[key], fix)))
        for key in SWITCH_LISTS:
            have = fabric.get(key)
            want = sorted(intent[key])
            out.append(_switch_compare(name, key, want, dict(((key, sorted(have) if isinstance(have, list) else have),)),
                                       "the switch must have %s %s, as every host: %s" % (key.replace("_", " "), want, fix)))
        mtu = fabric.get("switch_mtu")
        floor = switch_mtu_floor(intent)
        if mtu is None:
            out.append(not_checked("switch", name, "switch_mtu", "switch_mtu not gathered", expected=intent["switch_mtu"]))
        else:
            out.append(finding("switch", name, "switch_mtu", ">= %s" % floor, mtu,
                               "raise the switch's MTU to %s (host_mtu %s plus headroom)" % (intent["switch_mtu"], intent["host_mtu"]),
                               mtu >= floor))
        ecn = fabric.get("ecn")
        for key in SWITCH_ECN:
            want = (intent.get("ecn") or {}).get(key)
            if want is None:
                continue
            out.append(_switch_compare(name, "ecn.%s" % key, want, dict((("ecn.%s" % key, (ecn or {}).get(key)),)),
                                       "set the switch's ECN/WRED %s to %s: %s" % (key, want, fix)))
        if intent.get("lossless") and "pfc_watchdog" in fabric:
            on = fabric["pfc_watchdog"]
            on = on.get("enabled", bool(on)) if isinstance(on, dict) else bool(on)
            out.append(finding("switch", name, "pfc_watchdog", True, on,
                               "enable the PFC watchdog: a stuck receiver must not pause the fabric forever", on is True))
        out.extend(_switch_interfaces(name, (switches[name] or {}).get("interfaces"), intent))
    return out


def _switch_compare(name, key, want, fabric, hint):
    have = fabric.get(key)
    if have is None:
        return not_checked("switch", name, key, "%s not gathered" % key, expected=want)
    return finding("switch", name, key, want, have, hint, have == want)


def _switch_interfaces(name, interfaces, intent):
    out = []
    for entry in interfaces or []:
        if not isinstance(entry, dict):
            continue
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
    """Gb/s from a port's rate as the kernel writes it (``100 Gb/sec (2X HDR)``)."""
    try:
        return float(str(rate).split()[0])
    except (ValueError, IndexError):
        return None


def _port_rate(hosts, host, device):
    rdma = (hosts.get(host) or {}).get("rdma") or {}
    dev, _sep, num = str(device or "").partition("/")
    port = (((rdma.get("devices") or {}).get(dev) or {}).get("ports") or {}).get(num or "1") or {}
    return _link_gbps(port.get("rate"))


def path_findings(pings, intent):
    """One finding per ping: the largest unfragmented frame the intent's MTU allows got through."""
    out = []
    measurements = []
    for ping in pings or []:
        host, peer = ping.get("host"), ping.get("peer")
        size = ping.get("size")
        if ping.get("skipped"):
            out.append(not_checked("path", host, "mtu_path", ping.get("why") or "not run", peer=peer))
            continue
        counts = measure.ping_received(ping.get("stdout"))
        ok = ping.get("rc") == 0 and counts is not None and counts[1] > 0
        out.append(finding("path", host, "mtu_path", "%s-byte frames unfragmented" % intent["host_mtu"],
                           "%d/%d replies" % (counts[1], counts[0]) if counts else "no reply (%s)" % _tail(ping.get("stderr") or ping.get("stdout")),
                           "ping -M do -s %s %s -> %s fails: a host or switch port between them has an MTU below %s "
                           "(switch ports need %s)" % (size, host, ping.get("address"), intent["host_mtu"], intent["switch_mtu"]),
                           ok, peer=peer, device=ping.get("address")))
        measurements.append(measure.measurement("ping", host, "ping -M do", size, "bytes", peer=peer, device=ping.get("address"),
                                                detail=dict(replies=counts[1] if counts else 0, sent=counts[0] if counts else None)))
    return out, measurements


def _tail(text, lines=2):
    return " | ".join((text or "").strip().splitlines()[-lines:]) or "no output"


def rdma_findings(runs, hosts, intent, min_bw_fraction):
    """ib_write_bw against ``min_bw_fraction`` of the slower end's link rate; ib_write_lat recorded."""
    out = []
    measurements = []
    for run in runs or []:
        test, host, peer, device = run.get("test"), run.get("host"), run.get("peer"), run.get("device")
        check = "rdma_bw" if test == "ib_write_bw" else "rdma_lat"
        if run.get("skipped"):
            out.append(not_checked(check, host, test, run.get("why") or "not run", peer=peer, device=device))
            continue
        tos = run.get("tos")
        base = dict(tos=tos, gid_index=run.get("gid_index"), transport="RC over RDMA-CM")
        hint_run = "%s %s -> %s failed (rc %s): %s; is rdma_cm loaded on both, and the RoCE v2 GID index right?" % (
            test, host, peer, run.get("rc"), _tail(run.get("stderr") or run.get("stdout")))
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
    return out, measurements


def nccl_findings(runs):
    """nccl-tests all_reduce_perf: NCCL's log must show the IB/RoCE transport and GPUDirect RDMA."""
    out = []
    for run in runs or []:
        host = run.get("host")
        if run.get("skipped"):
            out.append(not_checked("nccl", host, "all_reduce_perf", run.get("why") or "not run"))
            continue
        log = run.get("stdout") or ""
        out.append(finding("nccl", host, "transport", "NET/IB", "NET/IB" if "NET/IB" in log else "no NET/IB in NCCL's log",
                           "NCCL did not use the RDMA NICs: check NCCL_IB_HCA and NCCL_IB_GID_INDEX (/etc/nccl.conf)",
                           run.get("rc") == 0 and "NET/IB" in log))
        gdr = "GDRDMA" in log or "GPU Direct RDMA Enabled" in log
        out.append(finding("nccl", host, "gpudirect", "GPUDirect RDMA", "enabled" if gdr else "not in NCCL's log",
                           "load nvidia_peermem (rdmaops.roce.peermem) and keep GPU and NIC under one PCIe switch", gdr))
    return out


def fabric_check(intent, hosts, switches=None, min_bw_fraction=0.8):
    """Everything fabric_check returns: ``{passed, findings, measurements, summary}``. ``hosts`` maps
    each host to what it read and measured: ``rdma`` (facts), ``nic`` (nic_layer's check-mode ports),
    ``pings``, ``rdma_runs`` and ``nccl`` (lists, the host as the sender or client) and ``counters``
    (``{ports, before, after}``)."""
    intent = check_intent(intent)
    if not isinstance(hosts, dict) or not hosts:
        raise InputError("hosts must map each host's name to its state ({rdma, nic, pings, rdma_runs, counters, nccl}): none given",
                         option="hosts")
    for host, state in hosts.items():
        if state is not None and not isinstance(state, dict):
            raise InputError("hosts.%s must be the host's state ({rdma, nic, ...})" % host, option="hosts")
    if switches is not None and not isinstance(switches, dict):
        raise InputError("switches must map each switch's name to its gathered state ({fabric, interfaces})", option="switches")
    try:
        min_bw_fraction = float(min_bw_fraction)
    except (TypeError, ValueError):
        raise InputError("min_bw_fraction must be a number between 0 and 1, got %r" % (min_bw_fraction,), option="min_bw_fraction")
    if not 0 < min_bw_fraction <= 1:
        raise InputError("min_bw_fraction must be above 0 and at most 1, got %s" % min_bw_fraction, option="min_bw_fraction")
    states = dict((host, state or {}) for host, state in hosts.items())
    findings = []
    for host in sorted(states):
        findings.extend(host_findings(host, states[host], intent))
    findings.extend(drift_findings(states))
    findings.extend(switch_findings(switches, intent))
    pings = [ping for host in sorted(states) for ping in states[host].get("pings") or []]
    path, measurements = path_findings(pings, intent)
    findings.extend(path)
    runs = [run for host in sorted(states) for run in states[host].get("rdma_runs") or []]
    rdma, rdma_measurements = rdma_findings(runs, states, intent, min_bw_fraction)
    findings.extend(rdma)
    measurements.extend(rdma_measurements)
    for host in sorted(states):
        read = states[host].get("counters")
        if read:
            measurements.extend(measure.counter_deltas(host, [tuple(p) for p in read.get("ports") or []], read.get("before"),
                                                       read.get("after"), intent["pfc_priorities"]))
    findings.extend(nccl_findings([run for host in sorted(states) for run in states[host].get("nccl") or []]))
    failed = [f for f in findings if f["passed"] is False]
    summary = dict(checked=sum(1 for f in findings if f["passed"] is not None), failed=len(failed),
                   not_checked=sum(1 for f in findings if f["passed"] is None),
                   failed_hosts=sorted(set(f["host"] for f in failed)))
    return dict(passed=not failed, findings=findings, measurements=measurements, summary=summary)
