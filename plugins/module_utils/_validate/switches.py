# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's switch checks: each switch's gathered state against the intent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._intent import SWITCH_MTU_MAX_WORD
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import finding, not_checked


# fields of a switch's gathered "fabric" that equal the intent's key of the same name
SWITCH_SCALARS = ("roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority", "trust")

SWITCH_LISTS = ("pfc_priorities", "ecn_priorities")

SWITCH_ECN = ("min_threshold_bytes", "max_threshold_bytes", "probability_percent")


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
