# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eos driver of switch_roce (see resource.py for the driver contract): Arista EOS, rendered
and parsed.

The profile is an EOS ``qos profile`` applied to the ports with ``service-profile``, plus the
global ``qos map dscp ... to traffic-class`` lines.  :func:`structured_config` is the same profile
in the data model of Arista's AVD (``eos_cli_config_gen``: ``qos.map.dscp``, ``qos_profiles``,
``ethernet_interfaces``), and :func:`render` writes, line for line, what AVD renders from it (the
unit tests compare the two with pyavd).  Every line is in AVD's data model.

EOS spells ECN thresholds with an explicit unit; the largest of mbytes/kbytes/bytes that holds
both thresholds exactly is written (a kbyte being 1024 bytes), so nothing is rounded.  EOS
hardware ports take MTUs up to 9214 (vEOS: 9194).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._switch.cli_text import (
    at,
    check_classes,
    config_tree,
    fabric_from_facts,
    matches,
    natural_key,
    number_list,
    threshold_unit,
    to_bytes,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.names import PortNames
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import ReadError, whole

NAME = "Arista EOS"
VERSIONS = ("4.32", "4.33", "4.34")
MAX_MTU = 9214
PROFILE_NAME = "RDMAOPS_ROCE"
# Ports as EOS's running-config prints them: Ethernet<port>, Ethernet<module>/<port> and
# Ethernet<module>/<port>/<lane> (a split port), Port-Channel<n>.
PORT_NAMES = PortNames(
    NAME,
    r"Ethernet[1-9][0-9]{0,2}(/[1-9][0-9]{0,2}){0,2}|Port-Channel[1-9][0-9]{0,3}",
    "Ethernet1, Ethernet1/1, Ethernet1/1/1 (a split port) or Port-Channel1, spelled as show running-config prints them",
)
_PORT_CHANNEL = re.compile(r"Port-Channel\d+")
# The MTUs EOS takes on a port.
MTU_RANGE = (68, 65535)

_QOS_MAP = re.compile(r"qos map dscp ([\d ,-]+) to traffic-class (\d)")
_QOS_PROFILE = re.compile(r"qos profile (\S+)")
_INTERFACE = re.compile(r"interface (\S+)")
_TRUST = re.compile(r"qos trust (dscp|cos|disabled)")
_PFC_ON = re.compile(r"(no )?priority-flow-control( on)?")
_PFC_PRIORITY = re.compile(r"priority-flow-control priority (\d) (no-drop|drop)")
_WATCHDOG = re.compile(r"(no )?priority-flow-control pause watchdog")
_TX_QUEUE = re.compile(r"(?:uc-)?tx-queue (\d)")
_STRICT = re.compile(r"(no )?priority(?: strict)?")
_BANDWIDTH = re.compile(r"bandwidth percent (\d+)")
_ECN = re.compile(
    r"random-detect ecn minimum-threshold (\d+) (\S+) maximum-threshold (\d+) (\S+)"
    r"(?: max-mark-probability (\d+))?(?: weight (\d+))?"
)
_MTU = re.compile(r"mtu (\d+)")
_SERVICE_PROFILE = re.compile(r"service-profile (\S+)")


def max_mtu(version):
    """EOS rejects MTUs above 9214 on hardware ports ("% Max MTU ... is 9214")."""
    return MAX_MTU


def _queues(profile):
    """``{tx-queue: settings}`` in AVD's ``tx_queues`` shape, the RoCE and default queues weighted."""
    queues = {}
    for tc in (0, profile["roce_priority"]):
        queues[tc] = dict(id=tc, priority="no priority",
                          bandwidth_percent=profile["ets"]["default_percent" if tc == 0 else "roce_percent"])
    queues[profile["cnp_priority"]] = dict(id=profile["cnp_priority"], priority="priority strict")
    unit, low, high = threshold_unit(profile)
    for tc in profile["ecn_priorities"]:
        queue = queues.setdefault(tc, dict(id=tc))
        queue["random_detect"] = dict(ecn=dict(threshold=dict(
            units=unit, min=low, max=high, max_probability=profile["ecn"]["probability_percent"])))
    return [queues[tc] for tc in sorted(queues)]


def structured_config(profile, interfaces):
    """The profile as AVD ``eos_cli_config_gen`` structured configuration (a dict)."""
    check_classes(profile, NAME)
    pfc = dict(enabled=bool(profile["pfc_priorities"]),
               priorities=[dict(priority=prio, no_drop=True) for prio in profile["pfc_priorities"]])
    if profile["pfc_watchdog"]:
        pfc["watchdog"] = dict(enabled=True)
    if not pfc["priorities"]:
        del pfc["priorities"]
    dscp_map = sorted([(profile["roce_dscp"], profile["roce_priority"]), (profile["cnp_dscp"], profile["cnp_priority"])])
    return dict(
        qos=dict(map=dict(dscp=["%d to traffic-class %d" % pair for pair in dscp_map])),
        qos_profiles=[dict(
            name=PROFILE_NAME,
            trust="cos" if profile["trust"] == "pcp" else "dscp",
            priority_flow_control=pfc,
            tx_queues=_queues(profile),
        )],
        ethernet_interfaces=[dict(name=name, mtu=profile["switch_mtu"], service_profile=PROFILE_NAME)
                             for name in sorted(interfaces, key=natural_key) if not _PORT_CHANNEL.fullmatch(name)],
        port_channel_interfaces=[dict(name=name, mtu=profile["switch_mtu"], service_profile=PROFILE_NAME)
                                 for name in sorted(interfaces, key=natural_key) if _PORT_CHANNEL.fullmatch(name)],
    )


def render(profile, interfaces, version):
    """The running-config lines AVD renders from :func:`structured_config`, in AVD's order."""
    config = structured_config(profile, interfaces)
    qos_profile = config["qos_profiles"][0]
    pfc = qos_profile["priority_flow_control"]
    lines = ["!", "qos profile %s" % qos_profile["name"], "   qos trust %s" % qos_profile["trust"]]
    lines.append("   priority-flow-control on" if pfc["enabled"] else "   no priority-flow-control")
    lines.extend("   priority-flow-control priority %d no-drop" % entry["priority"] for entry in pfc.get("priorities", ()))
    if "watchdog" in pfc:
        lines.append("   priority-flow-control pause watchdog")
    for queue in qos_profile["tx_queues"]:
        lines += ["   !", "   tx-queue %d" % queue["id"]]
        if "priority" in queue:
            lines.append("      %s" % queue["priority"])
        if "bandwidth_percent" in queue:
            lines.append("      bandwidth percent %d" % queue["bandwidth_percent"])
        if "random_detect" in queue:
            threshold = queue["random_detect"]["ecn"]["threshold"]
            lines.append("      random-detect ecn minimum-threshold %(min)d %(units)s maximum-threshold %(max)d %(units)s "
                         "max-mark-probability %(max_probability)d" % threshold)
    # AVD writes the port channels before the Ethernet ports
    for interface in config["port_channel_interfaces"] + config["ethernet_interfaces"]:
        lines += ["!", "interface %s" % interface["name"], "   mtu %d" % interface["mtu"],
                  "   service-profile %s" % interface["service_profile"]]
    lines.append("!")
    lines.extend("qos map dscp %s" % entry for entry in config["qos"]["map"]["dscp"])
    return lines


class _Block(object):
    """The QoS statements of one qos profile or interface."""

    def __init__(self):
        self.trust = self.pfc_on = self.watchdog = None
        self.pfc = {}
        self.strict, self.shares, self.ecn = set(), {}, {}

    def read(self, nodes):
        for node in nodes:
            line = node.line
            for pattern, handler in ((_TRUST, self._trust), (_PFC_PRIORITY, self._priority), (_PFC_ON, self._pfc_on),
                                     (_WATCHDOG, self._watchdog), (_TX_QUEUE, self._queue)):
                found = pattern.fullmatch(line)
                if found:
                    handler(found, node)
                    break

    def _trust(self, found, node):
        self.trust = {"dscp": "dscp", "cos": "pcp"}.get(found.group(1))

    def _priority(self, found, node):
        self.pfc[whole(found.group(1), 0, 7, "priority", at(node))] = found.group(2) == "no-drop"

    def _pfc_on(self, found, node):
        self.pfc_on = not found.group(1)

    def _watchdog(self, found, node):
        self.watchdog = not found.group(1)

    def _queue(self, found, node):
        tc = whole(found.group(1), 0, 7, "tx-queue", at(node))
        for child in node.children:
            strict = _STRICT.fullmatch(child.line)
            if strict:
                (self.strict.discard if strict.group(1) else self.strict.add)(tc)
            share = _BANDWIDTH.fullmatch(child.line)
            if share:
                self.shares[tc] = whole(share.group(1), 0, 100, "bandwidth percent", at(child))
            ecn = _ECN.fullmatch(child.line)
            if ecn:
                where = at(child)
                low, high = to_bytes(ecn.group(1), ecn.group(2), where), to_bytes(ecn.group(3), ecn.group(4), where)
                marks = {}
                if low is not None and high is not None:
                    marks.update(min_threshold_bytes=low, max_threshold_bytes=high)
                if ecn.group(5):
                    marks["probability_percent"] = whole(ecn.group(5), 0, 100, "max-mark-probability", where)
                self.ecn[tc] = marks

    def merge(self, other):
        """Interface statements override those of the profile the interface uses."""
        self.trust = other.trust if other.trust is not None else self.trust
        self.pfc_on = other.pfc_on if other.pfc_on is not None else self.pfc_on
        self.watchdog = other.watchdog if other.watchdog is not None else self.watchdog
        self.pfc.update(other.pfc)
        self.strict |= other.strict
        self.shares.update(other.shares)
        self.ecn.update(other.ecn)


def _carries_qos(node):
    block = _Block()
    try:
        block.read(node.children)
    except ReadError:
        return True
    return (block.pfc_on is not None or block.pfc or block.ecn or block.trust is not None
            or any(_SERVICE_PROFILE.fullmatch(child.line) for child in node.children))


def parse(text, version):
    """``{"fabric": ..., "interfaces": [...]}`` from EOS running-config text (ours, AVD's, anyone's).

    The interfaces are those with a ``service-profile`` or QoS statements of their own; the fabric
    is what their profiles and statements say.  With no such interface, every qos profile counts.
    """
    tree = config_tree(text)
    dscp_to_tc = {}
    for found, node in matches(tree, _QOS_MAP):
        tc = whole(found.group(2), 0, 7, "traffic-class", at(node))
        for dscp in number_list(found.group(1), 0, 63, "DSCP", at(node)):
            dscp_to_tc[dscp] = tc
    profiles = {}
    for found, node in matches(tree, _QOS_PROFILE):
        block = profiles.setdefault(found.group(1), _Block())
        block.read(node.children)
    facts, interfaces, mtus = _Block(), [], []
    for found, node in matches(tree, _INTERFACE):
        own, used, mtu = _Block(), None, None
        if PORT_NAMES.problem(found.group(1)):
            # not a port name of EOS: reported by the engine, its statements not read
            if _carries_qos(node):
                interfaces.append(found.group(1))
            continue
        own.read(node.children)
        for child in node.children:
            service = _SERVICE_PROFILE.fullmatch(child.line)
            used = service.group(1) if service else used
            size = _MTU.fullmatch(child.line)
            mtu = whole(size.group(1), MTU_RANGE[0], MTU_RANGE[1], "mtu", at(child)) if size else mtu
        if used is None and own.pfc_on is None and not own.pfc and not own.ecn and own.trust is None:
            continue
        interfaces.append(found.group(1))
        if mtu is not None:
            mtus.append(mtu)
        if used in profiles:
            facts.merge(profiles[used])
        facts.merge(own)
    if not interfaces:
        for block in profiles.values():
            facts.merge(block)
    pfc = None
    if facts.pfc_on is not None or facts.pfc:
        pfc = [prio for prio, no_drop in sorted(facts.pfc.items()) if no_drop] if facts.pfc_on is not False else []
    watchdog = facts.watchdog
    if watchdog is None and pfc is not None:
        # EOS prints the watchdog line only when it is on
        watchdog = False
    fabric = fabric_from_facts(trust=facts.trust, dscp_to_tc=dscp_to_tc, pfc=pfc, strict=facts.strict, ecn=facts.ecn,
                               shares=facts.shares, watchdog=watchdog, mtus=mtus)
    return dict(fabric=fabric, interfaces=interfaces)
