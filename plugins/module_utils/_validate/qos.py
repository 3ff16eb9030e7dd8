# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's QoS checks of every RoCE port: trust, PFC, the DSCP map, ECN and the rdma_cm ToS."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import compare, not_checked


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
