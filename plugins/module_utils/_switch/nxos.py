# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nxos driver of switch_roce (see resource.py for the driver contract): Cisco NX-OS (Nexus
9000, 8-queue QoS template), rendered and parsed.

NX-OS has no "trust DSCP" switch: classification is a ``type qos`` policy-map whose class-maps
match the DSCPs and ``set qos-group`` (the traffic class), applied to the ports.  Lossless and
MTU live in the system ``type network-qos`` policy (``pause pfc-cos``, class ``mtu``), queues in
the system ``type queuing output`` policy (``priority level 1``, ``bandwidth remaining percent``,
``random-detect ... ecn``), as in Cisco's Nexus 9000 QoS configuration guide and its RoCEv2
examples.  Ports get ``priority-flow-control mode`` and the PFC watchdog
(``priority-flow-control watch-dog-interval on|off``).

The parser reads the same objects in configurations we did not write: class-maps matching DSCP
lists and ranges or CoS, the system-defined ``c-8q-nqN`` / ``c-out-8q-qN`` classes, and policies
that are defined but not applied when none is applied.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.cli_text import (
    at,
    check_classes,
    config_tree,
    fabric_from_facts,
    matches,
    number_list,
    threshold_unit,
    to_bytes,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.names import PortNames
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import whole

NAME = "Cisco NX-OS"
VERSIONS = ("10.3", "10.4", "10.5")
MAX_MTU = 9216
ROCE_CLASS, CNP_CLASS = "RDMAOPS_ROCE", "RDMAOPS_CNP"
QOS_POLICY, QUEUING_POLICY, NETWORK_POLICY = "RDMAOPS_ROCE_IN", "RDMAOPS_ROCE_OUT", "RDMAOPS_ROCE_NQ"
# Ports as NX-OS's running-config prints them: Ethernet<slot>/<port>, Ethernet<slot>/<port>/<lane>
# (a breakout port), port-channel<n> (1-4096).
PORT_NAMES = PortNames(
    NAME,
    r"Ethernet[1-9][0-9]{0,2}/[1-9][0-9]{0,2}(/[1-9][0-9]?)?|port-channel[1-9][0-9]{0,3}",
    "Ethernet1/1, Ethernet1/1/1 (a breakout port) or port-channel1, spelled as show running-config prints them",
)
# The MTUs NX-OS takes on a port or network-qos class.
MTU_RANGE = (576, 9216)

_CLASS_MAP = re.compile(r"class-map type qos(?: match-(?:all|any))? (\S+)")
_MATCH = re.compile(r"match (dscp|cos) ([\d ,-]+)")
_POLICY = re.compile(r"policy-map type (qos|queuing|network-qos) (\S+)")
_CLASS = re.compile(r"class(?: type (?:qos|queuing|network-qos))? (\S+)")
_SET_GROUP = re.compile(r"set qos-group (\d)")
_QUEUE_NAME = re.compile(r"c-(?:out-)?(?:8q-)?q(\d|-default)")
_NQ_NAME = re.compile(r"c-(?:8q-)?nq(\d|-default)")
_PRIORITY = re.compile(r"priority(?: level \d)?")
_BANDWIDTH = re.compile(r"bandwidth(?: remaining)? percent (\d+)")
_WRED = re.compile(
    r"random-detect minimum-threshold (\d+) (\S+) maximum-threshold (\d+) (\S+)"
    r"(?: drop-probability (\d+))?(?: weight \d+)?( ecn)?"
)
_PAUSE = re.compile(r"pause pfc-cos ([\d ,-]+)")
_MTU = re.compile(r"mtu (\d+)")
_SERVICE = re.compile(r"service-policy type (qos input|queuing output|network-qos) (\S+)")
_INTERFACE = re.compile(r"interface (\S+)")
_PFC_MODE = re.compile(r"priority-flow-control mode (on|off|auto)(?: send-tlv)?")
_WATCHDOG = re.compile(r"(no )?priority-flow-control watch-dog-interval(?: (on|off))?")


def max_mtu(version):
    """Nexus 9000 ports and network-qos classes take MTUs up to 9216."""
    return MAX_MTU


def _queue_class(tc):
    return "c-out-8q-q-default" if tc == 0 else "c-out-8q-q%d" % tc


def _nq_class(tc):
    return "c-8q-nq-default" if tc == 0 else "c-8q-nq%d" % tc


def render(profile, interfaces, version):
    """The running-config lines, in the order NX-OS prints them (class-maps, policy-maps, system
    qos, interfaces), indented two spaces a level."""
    check_classes(profile, NAME)
    if profile["trust"] != "dscp":
        raise InputError(
            "config.fabric.trust=%s: the NX-OS rendering classifies RoCE and CNPs by DSCP (class-maps matching "
            "roce_dscp and cnp_dscp); use trust: dscp" % profile["trust"], option="config")
    roce, cnp, mtu = profile["roce_priority"], profile["cnp_priority"], profile["switch_mtu"]
    unit, low, high = threshold_unit(profile)
    wred = ("    random-detect minimum-threshold %d %s maximum-threshold %d %s drop-probability %d weight 0 ecn"
            % (low, unit, high, unit, profile["ecn"]["probability_percent"]))
    lines = [
        "class-map type qos match-all %s" % ROCE_CLASS,
        "  match dscp %d" % profile["roce_dscp"],
        "class-map type qos match-all %s" % CNP_CLASS,
        "  match dscp %d" % profile["cnp_dscp"],
        "policy-map type qos %s" % QOS_POLICY,
        "  class %s" % ROCE_CLASS,
        "    set qos-group %d" % roce,
        "  class %s" % CNP_CLASS,
        "    set qos-group %d" % cnp,
        "policy-map type queuing %s" % QUEUING_POLICY,
    ]
    # NX-OS lists the queuing classes from q7 down to q-default
    for tc in sorted(set([0, roce, cnp] + profile["ecn_priorities"]), reverse=True):
        tc_lines = []
        if tc == cnp:
            tc_lines.append("    priority level 1")
        if tc in (0, roce):
            tc_lines.append("    bandwidth remaining percent %d"
                            % profile["ets"]["default_percent" if tc == 0 else "roce_percent"])
        if tc in profile["ecn_priorities"]:
            tc_lines.append(wred)
        lines += ["  class type queuing %s" % _queue_class(tc)] + tc_lines
    lines.append("policy-map type network-qos %s" % NETWORK_POLICY)
    for tc in sorted(profile["pfc_priorities"], reverse=True):
        lines += ["  class type network-qos %s" % _nq_class(tc), "    mtu %d" % mtu, "    pause pfc-cos %d" % tc]
    lines += ["  class type network-qos %s" % _nq_class(0), "    mtu %d" % mtu]
    lines += [
        "system qos",
        "  service-policy type network-qos %s" % NETWORK_POLICY,
        "  service-policy type queuing output %s" % QUEUING_POLICY,
    ]
    for name in interfaces:
        lines += [
            "interface %s" % name,
            "  mtu %d" % mtu,
            "  priority-flow-control mode %s" % ("on" if profile["pfc_priorities"] else "off"),
            "  priority-flow-control watch-dog-interval %s" % ("on" if profile["pfc_watchdog"] else "off"),
            "  service-policy type qos input %s" % QOS_POLICY,
        ]
    return lines


def _tc(found, where):
    return 0 if found.group(1) == "-default" else whole(found.group(1), 0, 7, "queue", where)


def _policies(tree):
    """``{kind: {name: [class nodes]}}`` for the qos, queuing and network-qos policy-maps."""
    policies = dict(qos={}, queuing={}, nq={})
    for found, node in matches(tree, _POLICY):
        kind = {"network-qos": "nq"}.get(found.group(1), found.group(1))
        policies[kind].setdefault(found.group(2), []).extend(node.children)
    return policies


def _applied(policies, wanted):
    """The policies named in ``wanted`` that exist, or all of that kind when none is applied."""
    named = [policies[name] for name in wanted if name in policies]
    return named or list(policies.values())


def parse(text, version):
    """``{"fabric": ..., "interfaces": [...]}`` from NX-OS running-config text.

    The interfaces are those with a ``type qos`` input policy or a PFC mode; the fabric is what
    the policies they and ``system qos`` apply say (every policy of a kind, when none is applied).
    """
    tree = config_tree(text)
    class_maps = {}
    for found, node in matches(tree, _CLASS_MAP):
        entry = class_maps.setdefault(found.group(1), dict(dscp=[], cos=[]))
        for match, child in matches(node.children, _MATCH):
            high = 63 if match.group(1) == "dscp" else 7
            entry[match.group(1)].extend(number_list(match.group(2), 0, high, match.group(1), at(child)))
    policies = _policies(tree)
    applied = dict(qos=[], queuing=[], nq=[])
    for found, node in matches(tree, re.compile(r"system qos")):
        for service, dummy in matches(node.children, _SERVICE):
            applied[{"qos input": "qos", "queuing output": "queuing", "network-qos": "nq"}[service.group(1)]].append(service.group(2))
    interfaces, mtus, modes, watchdog = [], [], [], None
    for found, node in matches(tree, re.compile(r"(no )?priority-flow-control watch-dog-interval(?: (on|off))?")):
        watchdog = not found.group(1) and found.group(2) != "off"
    for found, node in matches(tree, _INTERFACE):
        used, mode, mtu = None, None, None
        if PORT_NAMES.problem(found.group(1)):
            # not a port name of NX-OS: reported by the engine, its statements not read
            if any(_SERVICE.fullmatch(child.line) or _PFC_MODE.fullmatch(child.line) for child in node.children):
                interfaces.append(found.group(1))
            continue
        for child in node.children:
            service = _SERVICE.fullmatch(child.line)
            if service and service.group(1) == "qos input":
                used = service.group(2)
            pfc_mode = _PFC_MODE.fullmatch(child.line)
            mode = pfc_mode.group(1) if pfc_mode else mode
            size = _MTU.fullmatch(child.line)
            mtu = whole(size.group(1), MTU_RANGE[0], MTU_RANGE[1], "mtu", at(child)) if size else mtu
            dog = _WATCHDOG.fullmatch(child.line)
            if dog:
                watchdog = not dog.group(1) and dog.group(2) != "off"
        if used is None and mode is None:
            continue
        interfaces.append(found.group(1))
        if used:
            applied["qos"].append(used)
        if mode:
            modes.append(mode)
        if mtu is not None:
            mtus.append(mtu)
    dscp_to_tc, classified, trust = {}, set(), None
    for classes in _applied(policies["qos"], applied["qos"]):
        for found, node in matches(classes, _CLASS):
            group = None
            for setting, child in matches(node.children, _SET_GROUP):
                group = whole(setting.group(1), 0, 7, "qos-group", at(child))
            matched = class_maps.get(found.group(1))
            if group is None or matched is None:
                continue
            for dscp in matched["dscp"]:
                dscp_to_tc.setdefault(dscp, group)
            if matched["cos"]:
                classified.add(group)
            trust = "dscp" if matched["dscp"] else (trust or "pcp")
    strict, shares, ecn = set(), {}, {}
    for classes in _applied(policies["queuing"], applied["queuing"]):
        for found, node in matches(classes, _CLASS):
            queue = _QUEUE_NAME.fullmatch(found.group(1))
            if not queue:
                continue
            tc = _tc(queue, at(node))
            for child in node.children:
                where = at(child)
                if _PRIORITY.fullmatch(child.line):
                    strict.add(tc)
                share = _BANDWIDTH.fullmatch(child.line)
                if share:
                    shares[tc] = whole(share.group(1), 0, 100, "bandwidth percent", where)
                wred = _WRED.fullmatch(child.line)
                if wred and wred.group(6):
                    low = to_bytes(wred.group(1), wred.group(2), where)
                    high = to_bytes(wred.group(3), wred.group(4), where)
                    marks = {}
                    if low is not None and high is not None:
                        marks.update(min_threshold_bytes=low, max_threshold_bytes=high)
                    if wred.group(5):
                        marks["probability_percent"] = whole(wred.group(5), 0, 100, "drop-probability", where)
                    ecn[tc] = marks
    pfc = None
    network = _applied(policies["nq"], applied["nq"])
    if network:
        pfc = []
        for classes in network:
            for found, node in matches(classes, _CLASS):
                for pause, child in matches(node.children, _PAUSE):
                    pfc.extend(number_list(pause.group(1), 0, 7, "pfc-cos", at(child)))
    if modes and all(mode == "off" for mode in modes):
        pfc = []
    fabric = fabric_from_facts(trust=trust, dscp_to_tc=dscp_to_tc, classified=classified, pfc=pfc, strict=strict,
                               ecn=ecn, shares=shares, watchdog=watchdog, mtus=mtus)
    return dict(fabric=fabric, interfaces=interfaces)
