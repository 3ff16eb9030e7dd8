# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onyx driver of switch_roce (see resource.py for the driver contract): NVIDIA Onyx
(MLNX-OS), rendered and parsed.

The manual form of NVIDIA's lossless RoCE configuration ("Lossless RoCE Configuration for MLNX-OS
Switches in DSCP-Based QoS Mode"; the commands the mellanox.onyx modules send): per port
``qos trust L3``, ``traffic-class N congestion-control ecn minimum-absolute KB maximum-absolute KB``,
``traffic-class N dcb ets strict|wrr PERCENT``, ``dcb priority-flow-control mode on force`` and
``mtu N force``; globally ``dcb priority-flow-control enable force`` and ``... priority N enable``.
Onyx prints every command on one line (no hierarchy), the interface named in each.

What Onyx configuration does not carry, this driver neither writes nor reports:

- DSCP classification: with ``qos trust L3`` Onyx maps DSCP d to switch-priority d/8 (26 to 3,
  48 to 6) and switch-priority n to traffic class n; the profile's DSCPs must sit in that map
  (refused otherwise), and parse reports no roce_dscp/cnp_dscp.
- The ECN marking probability: absolute thresholds only, marking every packet at the maximum;
  probability_percent must be 100 and is not reported.
- The PFC watchdog: its Onyx command is not in the sources this driver follows, so nothing is
  written for it and parse does not report it.

Thresholds are in KB (1024 bytes); bytes that are not a whole number of KB are refused, naming the
nearest values.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.cli_text import (
    KIB,
    at,
    check_classes,
    config_tree,
    exact_multiple,
    fabric_from_facts,
    natural_key,
    number_list,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.names import PortNames
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import whole

NAME = "NVIDIA Onyx"
VERSIONS = ("3.9", "3.10")
MAX_MTU = 9216
# Ethernet ports as Onyx's CLI spells them: `ethernet 1/1` (the command's words), Eth1/1 (what show
# commands print) or the bare 1/1; 1/1/1 is a split port.  Port channels are not written by this driver.
PORT_NAMES = PortNames(
    NAME,
    r"(?:[Ee]thernet |[Ee]th)?[1-9][0-9]{0,2}/[1-9][0-9]{0,2}(?:/[1-9])?",
    "ethernet 1/1, Eth1/1 or 1/1, and 1/1/1 for a split port (Ethernet ports; this module writes no port-channel)",
)
# The MTUs Onyx takes on a port (`mtu N force`), and the largest ECN threshold in KB it is read with.
MTU_RANGE = (1500, 9216)
MAX_THRESHOLD_KB = (1 << 30) // KIB
# A port range in a command (1/1-1/4) lists at most this many ports.
MAX_RANGE = 128

_IF = r"interface ethernet (\S+) "
_TRUST = re.compile(_IF + r"qos trust (L2|L3|both|port)")
_ECN = re.compile(_IF + r"traffic-class (\d) congestion-control (ecn|both|red) minimum-absolute (\d+) maximum-absolute (\d+)")
_ETS = re.compile(_IF + r"traffic-class (\d) dcb ets (strict|wrr)(?: (\d+))?")
_PFC_MODE = re.compile(_IF + r"(no )?dcb priority-flow-control mode(?: on)?(?: force)?")
_MTU = re.compile(_IF + r"mtu (\d+)(?: force)?")
_PFC_GLOBAL = re.compile(r"(no )?dcb priority-flow-control enable(?: force)?")
_PFC_PRIORITY = re.compile(r"(no )?dcb priority-flow-control priority ([\d ,-]+)(?: enable)?")


def max_mtu(version):
    """Onyx ports take ``mtu 9216 force`` at most."""
    return MAX_MTU


def _port(name):
    """``Eth1/1``, ``ethernet 1/1`` or ``1/1`` -> ``1/1``, the form Onyx commands take."""
    found = re.fullmatch(r"(?:ethernet |eth)?(\d+/\d+(?:/\d+)?)", name, re.IGNORECASE)
    if not found:
        raise InputError("config.interfaces: %s is not an Onyx Ethernet port; name ports as Onyx does: 1/1, "
                         "1/2/1 (a split port) or Eth1/1" % name, option="config")
    return found.group(1)


def _check(profile):
    check_classes(profile, NAME)
    for dscp_key, prio_key in (("roce_dscp", "roce_priority"), ("cnp_dscp", "cnp_priority")):
        if profile[dscp_key] >> 3 != profile[prio_key]:
            prio = profile[prio_key]
            raise InputError(
                "config.fabric.%s=%d: Onyx (trust L3) maps DSCP %d to switch-priority %d, not %s=%d, and this module "
                "writes no DSCP remap for Onyx; use a DSCP from %d to %d, or %s: %d"
                % (dscp_key, profile[dscp_key], profile[dscp_key], profile[dscp_key] >> 3, prio_key, prio,
                   prio * 8, prio * 8 + 7, prio_key, profile[dscp_key] >> 3), option="config")
    if profile["trust"] != "dscp":
        raise InputError("config.fabric.trust=%s: the Onyx rendering trusts L3 (DSCP); use trust: dscp"
                         % profile["trust"], option="config")
    if profile["ecn"]["probability_percent"] != 100:
        raise InputError(
            "config.fabric.ecn.probability_percent=%d: Onyx ECN marks by absolute thresholds, every packet at the "
            "maximum; set probability_percent: 100" % profile["ecn"]["probability_percent"], option="config")


def render(profile, interfaces, version):
    """The configuration lines, ports in Onyx's order, each command naming its port."""
    _check(profile)
    low = exact_multiple(profile, "min_threshold_bytes", KIB, "KB", NAME)
    high = exact_multiple(profile, "max_threshold_bytes", KIB, "KB", NAME)
    roce, cnp = profile["roce_priority"], profile["cnp_priority"]
    ports = sorted(set(_port(name) for name in interfaces), key=natural_key)  # Eth1/1 and 1/1 are one port
    lines = []
    for port in ports:
        prefix = "interface ethernet %s " % port
        lines.append(prefix + "mtu %d force" % profile["switch_mtu"])
        lines.append(prefix + "qos trust L3")
        for tc in profile["ecn_priorities"]:
            lines.append(prefix + "traffic-class %d congestion-control ecn minimum-absolute %d maximum-absolute %d"
                         % (tc, low, high))
        for tc in sorted(set([0, roce, cnp])):
            if tc == cnp:
                lines.append(prefix + "traffic-class %d dcb ets strict" % tc)
            else:
                lines.append(prefix + "traffic-class %d dcb ets wrr %d"
                             % (tc, profile["ets"]["default_percent" if tc == 0 else "roce_percent"]))
        # no PFC: the port's mode is turned off explicitly (the lossy_ecn preset on a port that had it)
        lines.append(prefix + ("dcb priority-flow-control mode on force" if profile["pfc_priorities"]
                               else "no dcb priority-flow-control mode force"))
    if profile["pfc_priorities"]:
        lines.append("dcb priority-flow-control enable force")
        lines.extend("dcb priority-flow-control priority %d enable" % prio for prio in profile["pfc_priorities"])
    return lines


def _expand(name, where=""):
    """``1/1-1/4`` (the range form users type) -> ``["1/1", "1/2", "1/3", "1/4"]``."""
    found = re.fullmatch(r"(\d+)/(\d+)-(\d+)/(\d+)", name)
    if not found or found.group(1) != found.group(3):
        return [name]
    first = whole(found.group(2), 1, 999, "port", where)
    last = whole(found.group(4), first, first + MAX_RANGE - 1, "last port of the range", where)
    return ["%s/%d" % (found.group(1), port) for port in range(first, last + 1)]


def parse(text, version):
    """``{"fabric": ..., "interfaces": [...]}`` from Onyx running-config text (``##`` comments and
    the three-space indentation ``show running-config`` prints are skipped)."""
    ports, trust, ecn, strict, shares, mtus, modes = [], None, {}, set(), {}, {}, {}
    pfc_enabled, priorities = None, set()

    def port(name, where):
        for one in _expand(name, where):
            if one not in ports:
                ports.append(one)

    named = re.compile(_IF + ".*")
    for node in config_tree(text, comments=("#",)):
        line = node.line
        where = at(node)
        found = named.fullmatch(line)
        if found and any(PORT_NAMES.problem(one) for one in _expand(found.group(1), where)):
            # not a port name of Onyx: reported by the engine, the line not read
            port(found.group(1), where)
            continue
        found = _TRUST.fullmatch(line)
        if found:
            port(found.group(1), where)
            trust = {"L3": "dscp", "both": "dscp", "L2": "pcp"}.get(found.group(2), trust)
            continue
        found = _ECN.fullmatch(line)
        if found:
            port(found.group(1), where)
            if found.group(3) in ("ecn", "both"):
                ecn[whole(found.group(2), 0, 7, "traffic-class", where)] = dict(
                    min_threshold_bytes=whole(found.group(4), 0, MAX_THRESHOLD_KB, "minimum-absolute (KB)", where) * KIB,
                    max_threshold_bytes=whole(found.group(5), 0, MAX_THRESHOLD_KB, "maximum-absolute (KB)", where) * KIB)
            continue
        found = _ETS.fullmatch(line)
        if found:
            port(found.group(1), where)
            tc = whole(found.group(2), 0, 7, "traffic-class", where)
            if found.group(3) == "strict":
                strict.add(tc)
            elif found.group(4):
                shares[tc] = whole(found.group(4), 0, 100, "wrr percent", where)
            continue
        found = _PFC_MODE.fullmatch(line)
        if found:
            port(found.group(1), where)
            for one in _expand(found.group(1), where):
                modes[one] = not found.group(2)
            continue
        found = _MTU.fullmatch(line)
        if found:
            for one in _expand(found.group(1), where):
                mtus[one] = whole(found.group(2), MTU_RANGE[0], MTU_RANGE[1], "mtu", where)
            continue
        found = _PFC_GLOBAL.fullmatch(line)
        if found:
            pfc_enabled = not found.group(1)
            continue
        found = _PFC_PRIORITY.fullmatch(line)
        if found:
            (priorities.difference_update if found.group(1) else priorities.update)(number_list(found.group(2), 0, 7, "priority", where))
    pfc = None
    if pfc_enabled is not None or priorities or modes:
        pfc = sorted(priorities) if pfc_enabled is not False and (not modes or any(modes.values())) else []
    # Onyx's trust-L3 map: DSCP d -> switch-priority d/8 -> traffic class d/8
    classified = set(range(8)) if trust == "dscp" else set()
    fabric = fabric_from_facts(trust=trust, classified=classified, pfc=pfc, strict=strict, ecn=ecn, shares=shares,
                               mtus=[mtus[name] for name in ports if name in mtus])
    return dict(fabric=fabric, interfaces=ports)
