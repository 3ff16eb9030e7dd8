# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvue driver of switch_roce: NVIDIA Cumulus Linux 5.x over the NVUE REST API.

The profile is one NVUE root PATCH body (what ``nv set`` writes), keyed as the NVUE object model
of the release it is written for (checked against NVIDIA's published models, nvueschema):

``qos roce``                      the RoCE macro on (``enable: on`` up to 5.14, ``state: enabled``
                                  from 5.15, which renamed the key), ``mode lossless`` (PFC) or
                                  ``lossy`` (no PFC); NVUE derives the buffers and pools from it,
                                  so no ASIC-specific buffer size is ever templated
``qos mapping default-global``    ``trust l3`` (DSCP) or ``l2`` (PCP); the RoCE and CNP DSCPs to
                                  their switch priorities
``qos egress-queue-mapping``      those switch priorities to the traffic classes of the same number
``qos pfc default-global``        PFC (tx and rx) on ``pfc_priorities`` only; absent without PFC
``qos congestion-control``        ECN on ``ecn_priorities``: min/max thresholds in bytes (NVUE's own
                                  unit, so nothing is converted) and the marking probability
``qos egress-scheduler``          the CNP class strict; the RoCE class and TC0 DWRR with the ETS shares
``interface <port> link mtu``     ``switch_mtu`` (NVUE accepts 552..9216)
``interface <port> qos pfc-watchdog``  ``state enable|disable`` (NVUE 5.6 and later only)

The explicit keys pin every value of the profile on top of the macro's defaults (NVIDIA documents
tuning the macro's mapping, PFC and scheduler this way); ``nv unset`` is a PATCH with ``null``.

The acting part compares the profile with the *applied* revision (``?rev=applied&filled=false``),
never with operational values (NVUE reports thresholds as the ASIC rounded them), and computes
the PATCH bodies that take it there: ``commands`` is ``[unset body, set body]`` (NVUE takes set
or unset content in one PATCH, not both), empty when nothing differs - then no revision is made.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, describe
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.names import PortNames
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import (
    Int,
    MapOf,
    ReadError,
    Record,
    Text,
    check,
    load_json,
)

NAME = "NVIDIA Cumulus Linux (NVUE)"
# The NVUE releases whose object model we write (each tested against nvueschema's model of it).
# 5.0 to 5.2 are not among them: their model has only the `qos roce` macro, none of the explicit
# mapping, PFC, congestion-control and scheduler objects the profile needs.
VERSIONS = tuple("5.%d" % minor for minor in range(3, 19))
MAX_MTU = 9216
PROFILE = "default-global"
# NVUE 5.15 renamed `qos roce enable on|off` to `qos roce state enabled|disabled`.
ROCE_STATE_SINCE = (5, 15)
# The PFC watchdog (`interface <port> qos pfc-watchdog`) exists from NVUE 5.6.
PFC_WATCHDOG_SINCE = (5, 6)
TRUST_WORDS = {"dscp": "l3", "pcp": "l2"}
# The interface names NVUE's object model allows (nvueschema's InterfaceName, the same in every
# release 5.0-5.18, matched whole here: its own `$` would let a trailing newline through), at most
# 15 characters as Linux takes them; the management and loopback ones never carry the profile.
PORT_NAMES = PortNames(
    "Cumulus Linux (NVUE)",
    r"(swp|bond|br|vlan|peerlink|erspan)[a-zA-Z0-9_./-]*",
    "swp1, swp1s0 (a breakout port), bond1, peerlink - a name NVUE's model allows: swp, bond, peerlink, vlan, "
    "br or erspan, then letters, digits and _ . / -",
    refused=((r"(eth|lo|mgmt)[a-zA-Z0-9_./-]*",
              "is a management or loopback interface: the RoCE profile never goes on it; list switch ports "
              "(swp1, swp1s0, bond1)"),),
    max_length=15,
)
# Where a message says the switch's answer came from.
SOURCE = "the switch's applied configuration (NVUE GET /nvue_v1/?rev=applied)"

# The parts of an NVUE configuration tree the parser reads, and their shapes (NVUE's object model:
# priorities and traffic classes 0-7 as keys, DSCPs 0-63, numbers as JSON numbers).
_PRIORITY = dict(key=r"[0-9]", key_what="a priority or traffic class (0 to 7)", low=0, high=7)
CONFIG_SHAPE = Record({
    "qos": Record({
        "roce": Record({"mode": Text(), "enable": Text(), "state": Text()}),
        "mapping": Record({PROFILE: Record({
            "trust": Text(),
            "dscp": MapOf(Record({"switch-priority": Int(0, 7)}), key=r"[0-9]{1,2}", key_what="a DSCP (0 to 63)",
                          low=0, high=63),
        })}),
        "egress-queue-mapping": Record({PROFILE: Record({
            "switch-priority": MapOf(Record({"traffic-class": Int(0, 7)}), **_PRIORITY)})}),
        "egress-scheduler": Record({PROFILE: Record({
            "traffic-class": MapOf(Record({"mode": Text(), "bw-percent": Int(0, 100)}), **_PRIORITY)})}),
        "pfc": Record({PROFILE: Record({"switch-priority": MapOf(Record({}), **_PRIORITY)})}),
        "congestion-control": Record({PROFILE: Record({"traffic-class": MapOf(Record({
            "ecn": Text(), "min-threshold": Int(0, 1 << 32), "max-threshold": Int(0, 1 << 32),
            "probability": Int(0, 100)}), **_PRIORITY)})}),
    }),
    "interface": MapOf(Record({"link": Record({"mtu": Int(1, 65535)}),
                              "qos": Record({"pfc-watchdog": Record({"state": Text()})})})),
})


def _vtuple(version):
    match = re.match(r"(\d+)\.(\d+)", str(version))
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def max_mtu(version):
    return MAX_MTU


def has_pfc_watchdog(version):
    return _vtuple(version) >= PFC_WATCHDOG_SINCE


def roce_on(version):
    """The ``qos roce`` key and value that switch the RoCE macro on in ``version``."""
    if _vtuple(version) >= ROCE_STATE_SINCE:
        return "state", "enabled"
    return "enable", "on"


def render(profile, interfaces, version):
    """The NVUE root PATCH body (a dict) that sets ``profile`` on ``interfaces``."""
    roce, cnp = profile["roce_priority"], profile["cnp_priority"]
    if roce == 0 or cnp == 0:
        raise InputError(
            "config.fabric: NVUE's traffic class 0 is the default class (it takes ets.default_percent); "
            "use a roce_priority and cnp_priority other than 0 (3 and 6 by convention)", option="config")
    if profile["pfc_watchdog"] and interfaces and not has_pfc_watchdog(version):
        raise InputError(
            "config.fabric.pfc_watchdog: NVUE %s has no PFC watchdog (it came with Cumulus Linux 5.6): set "
            "pfc_watchdog: false for this switch, or upgrade it" % version, option="config")
    key, on = roce_on(version)
    pfc = profile["pfc_priorities"]
    qos = {
        "roce": {key: on, "mode": "lossless" if pfc else "lossy"},
        "mapping": {PROFILE: {
            "trust": TRUST_WORDS[profile["trust"]],
            "dscp": {str(profile["roce_dscp"]): {"switch-priority": roce},
                     str(profile["cnp_dscp"]): {"switch-priority": cnp}},
        }},
        "egress-queue-mapping": {PROFILE: {"switch-priority": {
            str(roce): {"traffic-class": roce}, str(cnp): {"traffic-class": cnp}}}},
    }
    if pfc:
        qos["pfc"] = {PROFILE: {"switch-priority": dict((str(prio), {}) for prio in pfc),
                                "tx": "enable", "rx": "enable"}}
    ecn = profile["ecn"]
    qos["congestion-control"] = {PROFILE: {"traffic-class": dict(
        (str(tc), {"ecn": "enable", "min-threshold": ecn["min_threshold_bytes"],
                   "max-threshold": ecn["max_threshold_bytes"], "probability": ecn["probability_percent"]})
        for tc in profile["ecn_priorities"])}}
    qos["egress-scheduler"] = {PROFILE: {"traffic-class": {
        str(cnp): {"mode": "strict"},
        str(roce): {"mode": "dwrr", "bw-percent": profile["ets"]["roce_percent"]},
        "0": {"mode": "dwrr", "bw-percent": profile["ets"]["default_percent"]},
    }}}
    body = {"qos": qos}
    if interfaces:
        ports = {}
        for name in interfaces:
            port = {"link": {"mtu": profile["switch_mtu"]}}
            if has_pfc_watchdog(version):
                port["qos"] = {"pfc-watchdog": {"state": "enable" if profile["pfc_watchdog"] else "disable"}}
            ports[name] = port
        body["interface"] = ports
    return body


def _dig(tree, *path):
    for key in path:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(key)
    return tree


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def _never_fabric(name):
    """Whether ``name`` is one the naming rule refuses as never carrying the profile (management,
    loopback: eth0, eth0.10, lo, mgmt): its MTU is the switch's own business, not the profile's."""
    return isinstance(name, str) and any(pattern.fullmatch(name) for pattern, dummy in PORT_NAMES.refused)


def _profile_ports(config):
    """The fabric interfaces carrying a part of the profile (an MTU or a PFC watchdog), in order.
    Names the naming rule refuses as management or loopback are no fabric port: neither read nor
    changed (the same rule, so an eth0.10 with an MTU is never a name the user has to fix)."""
    ports = _dig(config, "interface") or {}
    return [name for name, port in ports.items()
            if isinstance(port, dict) and not _never_fabric(name)
            and (_dig(port, "link", "mtu") is not None or _dig(port, "qos", "pfc-watchdog") is not None)]


def parse_raw(raw, version=None):
    """What an NVUE configuration tree (a revision, ``filled=false``) says, in the shape of ``config``.

    Reads any configuration, also ones we did not write: the CNP is the DSCP whose switch priority
    goes to a strict traffic class, RoCE the other DSCP (preferring one on a PFC or ECN priority).
    """
    check(CONFIG_SHAPE, raw)
    config = raw if isinstance(raw, dict) else {}
    fabric = {}
    qos = _dig(config, "qos") or {}
    mapping = _dig(qos, "mapping", PROFILE) or {}
    words = dict((word, name) for name, word in TRUST_WORDS.items())
    if mapping.get("trust") is not None:
        fabric["trust"] = words.get(mapping["trust"], mapping["trust"])
    queue_map = _dig(qos, "egress-queue-mapping", PROFILE, "switch-priority") or {}

    def tc_of(prio):
        return _int(_dig(queue_map, str(prio), "traffic-class")) if str(prio) in queue_map else prio

    scheduler = _dig(qos, "egress-scheduler", PROFILE, "traffic-class") or {}
    strict = set(_int(tc) for tc, entry in scheduler.items() if _dig(entry, "mode") == "strict")
    pfc = _dig(qos, "pfc", PROFILE)
    pfc_prios = sorted(_int(prio) for prio in (_dig(pfc, "switch-priority") or {})) if pfc is not None else None
    mode = _dig(qos, "roce", "mode")
    if pfc_prios is None and mode == "lossy":
        pfc_prios = []
    congestion = _dig(qos, "congestion-control", PROFILE, "traffic-class") or {}
    ecn_tcs = sorted(_int(tc) for tc, entry in congestion.items() if _dig(entry, "ecn") == "enable")

    dscps = sorted((_int(dscp), _int(_dig(entry, "switch-priority")))
                   for dscp, entry in (_dig(mapping, "dscp") or {}).items() if _dig(entry, "switch-priority") is not None)
    cnp = [(dscp, prio) for dscp, prio in dscps if tc_of(prio) in strict]
    if len(cnp) == 1:
        fabric["cnp_dscp"], fabric["cnp_priority"] = cnp[0]
    rest = [pair for pair in dscps if pair not in cnp]
    preferred = [pair for pair in rest if pair[1] in (pfc_prios or []) or tc_of(pair[1]) in ecn_tcs]
    roce = (preferred or rest)[:1]
    if roce:
        fabric["roce_dscp"], fabric["roce_priority"] = roce[0]
    if pfc_prios is not None:
        fabric["pfc_priorities"] = pfc_prios
    if congestion:
        fabric["ecn_priorities"] = ecn_tcs
    ecn_tc = tc_of(fabric["roce_priority"]) if "roce_priority" in fabric else (ecn_tcs[0] if ecn_tcs else None)
    entry = congestion.get(str(ecn_tc)) if ecn_tc is not None else None
    if isinstance(entry, dict):
        ecn = {}
        for key, word in (("min_threshold_bytes", "min-threshold"), ("max_threshold_bytes", "max-threshold"),
                          ("probability_percent", "probability")):
            if entry.get(word) is not None:
                ecn[key] = _int(entry[word])
        if ecn:
            fabric["ecn"] = ecn
    if "roce_priority" in fabric:
        roce_share = _dig(scheduler, str(tc_of(fabric["roce_priority"])), "bw-percent")
        default_share = _dig(scheduler, "0", "bw-percent")
        if roce_share is not None and default_share is not None:
            fabric["ets"] = {"roce_percent": _int(roce_share), "default_percent": _int(default_share)}

    interfaces = _profile_ports(config)
    # The fabric is read from the ports whose names follow NVUE's rule (the engine reports the others).
    readable = [name for name in interfaces if PORT_NAMES.problem(name) is None]
    watchdogs = [_dig(config, "interface", name, "qos", "pfc-watchdog", "state") for name in readable]
    if version is not None and not has_pfc_watchdog(version):
        fabric["pfc_watchdog"] = False  # this release has none
    elif any(state is not None for state in watchdogs):
        fabric["pfc_watchdog"] = all(state == "enable" for state in watchdogs)
    mtus = [_int(_dig(config, "interface", name, "link", "mtu")) for name in readable]
    mtus = [mtu for mtu in mtus if mtu is not None]
    if mtus:
        # Ports that disagree report the smallest: the one that drops the hosts' frames first.
        fabric["switch_mtu"] = min(mtus)
    ordered = dict((key, fabric[key]) for key in (
        "trust", "roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority", "pfc_priorities", "ecn_priorities",
        "ecn", "ets", "pfc_watchdog", "switch_mtu") if key in fabric)
    return {"fabric": ordered, "interfaces": interfaces}


def parse(text, version):
    """``parse_raw`` of JSON text: a revision as ``GET /nvue_v1/?rev=applied`` returns it, or a body."""
    data = load_json(text, "an NVUE configuration: give the output of `nv config show -o json` or of "
                           "GET /nvue_v1/?rev=applied&filled=false")
    # `nv config show -o json` prints a list: a {"header": ...} and {"set": {...}} change sets
    if isinstance(data, list) and all(isinstance(item, dict) for item in data):
        merged = {}
        for item in data:
            if isinstance(item.get("set"), dict):
                merged = apply_patch(merged, item["set"])
        data = merged
    if not isinstance(data, dict):
        raise ReadError("", "is %s where an NVUE configuration tree (a JSON object) belongs" % describe(data))
    if "set" in data and isinstance(data["set"], dict) and len(data) == 1:
        data = data["set"]
    return parse_raw(data, version)


# --- what the profile owns, and the PATCH bodies that change it ---------------------------------

def _owned(config, interfaces, all_ports):
    """The part of ``config`` the profile owns: the objects ``render`` writes (the whole object, so
    ``replaced`` removes what it does not write), on ``interfaces`` (or every profile port)."""
    qos = _dig(config, "qos") or {}
    owned = {}
    if isinstance(qos.get("roce"), dict):
        owned.setdefault("qos", {})["roce"] = copy.deepcopy(qos["roce"])
    mapping = _dig(qos, "mapping", PROFILE)
    if isinstance(mapping, dict):
        part = dict((key, copy.deepcopy(mapping[key])) for key in ("trust", "dscp") if key in mapping)
        if part:
            owned.setdefault("qos", {})["mapping"] = {PROFILE: part}
    for section in ("egress-queue-mapping", "pfc", "congestion-control", "egress-scheduler"):
        value = _dig(qos, section, PROFILE)
        if value is not None:
            owned.setdefault("qos", {})[section] = {PROFILE: copy.deepcopy(value)}
    ports = _profile_ports(config) if all_ports else list(interfaces)
    for name in ports:
        port = _dig(config, "interface", name) or {}
        part = {}
        if _dig(port, "link", "mtu") is not None:
            part["link"] = {"mtu": port["link"]["mtu"]}
        if _dig(port, "qos", "pfc-watchdog") is not None:
            part["qos"] = {"pfc-watchdog": copy.deepcopy(port["qos"]["pfc-watchdog"])}
        if part:
            owned.setdefault("interface", {})[name] = part
    return owned


def _set_body(want, have):
    """The part of ``want`` that ``have`` does not already hold (a set PATCH)."""
    body = {}
    for key, value in want.items():
        current = have.get(key) if isinstance(have, dict) else None
        if isinstance(value, dict) and value and isinstance(current, dict):
            part = _set_body(value, current)
            if part:
                body[key] = part
        elif isinstance(value, dict) and not value:
            if not isinstance(current, dict):
                body[key] = {}
        elif current != value:
            body[key] = value
    return body


# The objects the profile owns, as paths ("*": any interface): ``replaced`` and ``deleted`` unset
# these whole (or what inside them the profile does not write), never anything above them.
OWNED = (
    ("qos", "roce"),
    ("qos", "mapping", PROFILE, "trust"),
    ("qos", "mapping", PROFILE, "dscp"),
    ("qos", "egress-queue-mapping", PROFILE),
    ("qos", "pfc", PROFILE),
    ("qos", "congestion-control", PROFILE),
    ("qos", "egress-scheduler", PROFILE),
    ("interface", "*", "link", "mtu"),
    ("interface", "*", "qos", "pfc-watchdog"),
)


def _within_owned(path):
    return any(len(path) >= len(unit) and all(want in ("*", got) for want, got in zip(unit, path))
               for unit in OWNED)


def _unset_body(have, want, path=()):
    """``null`` for everything the profile owns in ``have`` that ``want`` does not carry (an unset PATCH)."""
    body = {}
    for key, value in have.items():
        here = path + (key,)
        inner = want.get(key) if isinstance(want, dict) else None
        if inner is None and _within_owned(here):
            body[key] = None
        elif isinstance(value, dict):
            part = _unset_body(value, inner if isinstance(inner, dict) else {}, here)
            if part:
                body[key] = part
    return body


def apply_patch(config, body):
    """``config`` after NVUE applies the PATCH ``body`` (``null`` unsets; dicts merge)."""
    result = copy.deepcopy(config) if isinstance(config, dict) else {}
    for key, value in body.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = apply_patch(result.get(key) if isinstance(result.get(key), dict) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def plan(state, profile, interfaces, raw, version):
    """``(commands, predicted_raw)``: the PATCH bodies taking the applied revision ``raw`` to ``state``."""
    raw = raw if isinstance(raw, dict) else {}
    if state == "deleted":
        want = {}
        have = _owned(raw, interfaces, all_ports=profile is None)
    else:
        want = render(profile, interfaces, version)
        have = _owned(raw, interfaces, all_ports=state == "overridden")
    unset = _unset_body(have, want) if state != "merged" else {}
    setting = _set_body(want, raw)
    commands = [body for body in (unset, setting) if body]
    predicted = raw
    for body in commands:
        predicted = apply_patch(predicted, body)
    return commands, predicted


def command_ports(commands, raw=None):
    """The interface names the PATCH bodies ``commands`` write or unset (each body names its
    interfaces itself: ``raw``, the applied configuration, is not needed)."""
    names = []
    for body in commands:
        for name in (body.get("interface") or {}) if isinstance(body, dict) else ():
            if name not in names:
                names.append(name)
    return names


def differences(before, after, path=()):
    """The dotted paths where two configuration trees differ (what a failed apply left changed)."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after), key=str):
            found += differences(before.get(key), after.get(key), path + (str(key),))
        return found
    return [".".join(path) or "(the whole configuration)"] if before != after else []


# --- the switch, through our httpapi plugin (rdmaops.roce.nvue) ---------------------------------

class NvueSwitch:
    """The switch behind ``ansible.netcommon.httpapi`` with ``ansible_network_os=rdmaops.roce.nvue``."""

    def __init__(self, connection, ctx):
        self.connection = connection
        self.ctx = ctx
        self.last_read = None

    def _call(self, method, *args):
        # ConnectionError comes from ansible.module_utils.connection; its text is NVUE's own.
        from ansible.module_utils.connection import ConnectionError as AnsibleConnectionError
        try:
            return getattr(self.connection, method)(*args)
        except AnsibleConnectionError as exc:
            raise RdmaopsError("NVUE API: %s" % exc)

    def version(self):
        release = self._call("nvue_release")
        version = "%d.%d" % _vtuple(release)
        if version not in VERSIONS:
            raise InputError(
                "the switch runs NVUE %s, a release this module does not know (it writes for %s to %s): set "
                "nos_version to the nearest known release to write its keys" % (release, VERSIONS[0], VERSIONS[-1]),
                option="nos_version")
        return version

    def read(self):
        config = self._call("get_config", "applied")
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise ReadError("", "is %s where a configuration tree (a JSON object) belongs" % describe(config))
        raw = dict((key, config[key]) for key in ("qos", "interface") if key in config)
        self.last_read = raw
        return raw

    # How many differing places a message lists; the result's `differences` has them all.
    LISTED = 8

    def apply(self, commands):
        # What was read before the change: the comparison after a failure is with this, never with
        # a later read.
        before = copy.deepcopy(self.last_read)
        outcome = self._call("commit", commands)
        if outcome.get("state") == "applied" and outcome.get("saved", True):
            return
        revision = outcome.get("revision")
        text = outcome.get("message") or outcome.get("state")
        state = outcome.get("state")
        details = dict(revision=revision, nvue_state=state)
        # Any failed apply: read rev=applied again and compare it with what was read before.
        try:
            now = self.read()
        except RdmaopsError as exc:
            now, unread = None, exc.msg
        else:
            unread = None
            differ = differences(before, now)
            details.update(differences=differ)
            try:
                details["after"] = parse_raw(now)
            except ReadError:
                pass
        if now is None:
            touched = True
            said = ("the applied configuration could not be read again (%s): it may have changed; inspect revision %s "
                    "(nv config history, nv config diff)" % (unread, revision))
        elif differ:
            touched = True
            more = len(differ) - self.LISTED
            listed = ", ".join(differ[:self.LISTED]) + (" and %d more" % more if more > 0 else "")
            said = ("the applied configuration now differs from before at %s: inspect revision %s "
                    "(nv config history, nv config diff)" % (listed, revision))
        else:
            touched = False
            said = "the applied configuration is unchanged"
        # The engine reports changed=true for a failure that left the switch changed.
        details["changed"] = details["left_changed"] = touched or state == "applied"
        if state == "applied":
            # The change is live but not in the startup configuration: a reboot would lose it.
            raise RdmaopsError("NVUE applied revision %s but could not save it to the startup configuration: %s; "
                               "the running switch has the change (run nv config save on it)" % (revision, text),
                               **details)
        if state == "rejected":
            raise RdmaopsError("NVUE refused the change for revision %s before applying anything: %s%s" % (
                revision, text, "" if not touched else "; yet %s" % said), **details)
        if state == "invalid":
            raise RdmaopsError("NVUE found revision %s invalid and applied nothing: %s%s" % (
                revision, text, "" if not touched else "; yet %s" % said), **details)
        if state == "timeout":
            raise RdmaopsError("NVUE revision %s did not finish applying in time (last state %s); %s%s" % (
                revision, outcome.get("last_state"), said,
                "" if touched else ", but it may still apply: check nv config history"), **details)
        raise RdmaopsError("NVUE could not apply revision %s (%s): %s; %s" % (revision, state, text, said), **details)


def connect(ctx):
    socket_path = getattr(ctx.module, "_socket_path", None)
    if not socket_path:
        raise InputError(
            "this state talks to the switch over the NVUE REST API: run it with connection ansible.netcommon.httpapi "
            "and ansible_network_os rdmaops.roce.nvue (state rendered and parsed need no switch)", option="state")
    from ansible.module_utils.connection import Connection
    return NvueSwitch(Connection(socket_path), ctx)
