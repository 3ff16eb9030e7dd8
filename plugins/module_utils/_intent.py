# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric's QoS intent, written once and resolved the same way for every layer.

Users write ``roce_fabric`` (a preset plus overrides).  :func:`resolve_intent` checks it and
returns the complete intent every role derives from: host NIC QoS, switch QoS, the RDMA-CM
ToS, NCCL's traffic class, MTUs.  A bad intent fails here, naming the key and the fix,
before any host or switch is touched: a host/switch mismatch is worse than no QoS at all.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import kind, shown
# The two low ToS bits are the ECN field (RFC 3168): the intent's ToS is DSCP << 2 | ECN bits.
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.codepoints import (
    CE,
    ECN_MASK,
    ECT0,
)

PRESETS = {
    # PFC and ECN on the RoCE priority: the NVIDIA "lossless RoCE" profile.
    "lossless": dict(pfc="roce", ecn="roce"),
    # ECN only, no PFC anywhere (relies on DCQCN alone; needs a switch with deep buffers).
    "lossy_ecn": dict(pfc="none", ecn="roce"),
}

DEFAULTS = dict(
    preset="lossless",
    trust="dscp",
    roce_dscp=26,
    roce_priority=3,
    cnp_dscp=48,
    cnp_priority=6,
    host_mtu=9000,
    switch_mtu=9216,
    global_pause=False,
    ecn=dict(min_threshold_bytes=150000, max_threshold_bytes=1500000, probability_percent=100),
    # Switch egress scheduling: the RoCE class and the default class share the link by DWRR
    # (the CNP class is strict priority and takes no share).
    ets=dict(roce_percent=50, default_percent=50),
    # The switches' PFC watchdog breaks pause storms (a stuck receiver must not stall the fabric).
    pfc_watchdog=True,
)

# Keys a user may set; everything else is a typo and is refused.
# ``rails`` (the address plan of multi-rail hosts) is passed through as given: it is checked and
# computed on the controller by _rails (netaddr), which the modules on the hosts never import.
USER_KEYS = set(DEFAULTS) | set(["pfc_priorities", "ecn_priorities", "roce_tos", "rails"])
ECN_KEYS = set(DEFAULTS["ecn"])
ETS_KEYS = set(DEFAULTS["ets"])
# switch_mtu may say "max": the largest MTU each switch's NOS accepts (the switch layer clamps).
SWITCH_MTU_MAX_WORD = "max"

MTU_MIN = 1280  # the IPv6 minimum; RoCE needs at least 1024 bytes of payload
MTU_MAX = 9216  # the largest L2 MTU common switch ASICs accept

# The keys whose values are mappings of their own: (known keys, an example entry).
SUB_MAPPINGS = {
    "ecn": (ECN_KEYS, "probability_percent: 100"),
    "ets": (ETS_KEYS, "roce_percent: 50, default_percent: 50"),
}

# A key as a user writes one: a plain name, matched whole (a trailing newline is not a name).
KEY_NAME = re.compile(r"[a-z][a-z0-9_]*")


class IntentError(ValueError):
    """One or more problems with ``roce_fabric``; ``problems`` lists each with its fix."""

    def __init__(self, problems):
        self.problems = problems
        super(IntentError, self).__init__(
            "roce_fabric is not valid:\n" + "\n".join("  - " + problem for problem in problems)
        )


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value):
    return isinstance(value, str)


def _is_list(value):
    return isinstance(value, list)


def _scalar(value):
    """A scalar as a message shows it (text quoted whole, so stray whitespace shows); None for anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return shown(value, None)
    return None


def _show(value):
    """``value`` for a message: a scalar or a list of scalars as written, None for anything bigger."""
    if _is_list(value):
        items = [_scalar(item) for item in value]
        return None if None in items else "[" + ", ".join(items) + "]"
    return _scalar(value)


def _at(key, value):
    """``roce_fabric.key=value``, or ``roce_fabric.key`` when the value is too big to show."""
    shown = _show(value)
    return "roce_fabric.%s" % key + ("" if shown is None else "=" + shown)


def _not_kind(value, wanted):
    """The wrong kind of value the user gave (``, not a list``), or "" when the kind is right."""
    given = kind(value)
    if given == wanted:
        return ""
    if _is_text(value) and wanted in ("a number", "a boolean"):
        return ", not text (write it without quotes)"
    return ", not %s" % given


def _key_name(key):
    """A key for a message: a plain name as is, anything else quoted or described."""
    if _is_text(key) and KEY_NAME.fullmatch(key):
        return key
    return _scalar(key) or kind(key)


def _check_keys(problems, where, mapping, known, example):
    """Refuse keys that are not text, and text keys that are not known (typos, stray whitespace)."""
    not_text = [key for key in mapping if not _is_text(key)]
    if not_text:
        problems.append(
            "%s has key(s) %s that are not names: write each key as a name such as %s%s; known keys: %s"
            % (
                where,
                ", ".join(sorted(_key_name(key) for key in not_text)),
                example,
                " (YAML reads an unquoted yes/no/on/off/true/false as true/false: quote it)"
                if any(isinstance(key, bool) for key in not_text) else "",
                ", ".join(sorted(known)),
            )
        )
    unknown = [key for key in mapping if _is_text(key) and key not in known]
    if unknown:
        stray = any(key.strip() in known for key in unknown)
        problems.append(
            "%s has unknown key(s) %s; known keys: %s%s"
            % (
                where,
                ", ".join(sorted(_key_name(key) for key in unknown)),
                ", ".join(sorted(known)),
                " (remove the whitespace around the key)" if stray else "",
            )
        )


def _check_int(problems, key, value, low, high, hint):
    if not _is_int(value) or not low <= value <= high:
        problems.append(
            "%s: must be an integer %d..%d (%s)%s" % (_at(key, value), low, high, hint, _not_kind(value, "a number"))
        )
        return False
    return True


def _check_choice(problems, key, value, choices, fix):
    """Text that must be one of ``choices``, compared whole: ``'dscp\n'`` is not ``dscp``."""
    if _is_text(value) and value in choices:
        return True
    stray = _is_text(value) and value.strip() in choices
    problems.append(
        "%s: %s%s" % (_at(key, value), fix, "; remove the whitespace around it" if stray else _not_kind(value, "text"))
    )
    return False


def _check_priorities(problems, key, value):
    if not _is_list(value) or not all(_is_int(item) and 0 <= item <= 7 for item in value):
        problems.append("%s: must be a list of priorities 0..7, e.g. [3]%s" % (_at(key, value), _not_kind(value, "a list")))
        return False
    if len(set(value)) != len(value):
        problems.append("%s: lists a priority twice" % _at(key, value))
        return False
    return True


def resolve_intent(raw):
    """Validate ``raw`` (the user's ``roce_fabric``) and return the complete intent.

    Raises :class:`IntentError` listing every problem found; every problem names the key and the
    fix in the words of YAML (a mapping, a list, text, a number), whatever the input holds.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        shown = _show(raw)
        raise IntentError([
            "roce_fabric must be a mapping (a preset plus overrides, e.g. roce_fabric: {preset: lossless}), not %s%s"
            % (kind(raw), "" if shown is None else " (%s)" % shown)
        ])
    problems = []
    _check_keys(problems, "roce_fabric", raw, USER_KEYS, "preset or host_mtu")
    intent = copy.deepcopy(DEFAULTS)
    ecn_ok = ets_ok = True
    for key, value in raw.items():
        if not _is_text(key) or key not in USER_KEYS:
            continue
        if key in SUB_MAPPINGS:
            known, example = SUB_MAPPINGS[key]
            if isinstance(value, Mapping):
                _check_keys(problems, "roce_fabric." + key, value, known, example.split(":")[0])
                intent[key].update((name, item) for name, item in value.items() if _is_text(name) and name in known)
            else:
                if key == "ecn":
                    ecn_ok = False
                else:
                    ets_ok = False
                problems.append(
                    "%s: must be a mapping with %s, e.g. %s: {%s}%s"
                    % (_at(key, value), ", ".join(sorted(known)), key, example, _not_kind(value, "a mapping"))
                )
        else:
            intent[key] = value

    mode = None
    if _check_choice(problems, "preset", intent["preset"], PRESETS, "choose one of %s (e.g. preset: lossless)" % ", ".join(sorted(PRESETS))):
        mode = PRESETS[intent["preset"]]
    _check_choice(problems, "trust", intent["trust"], ("dscp", "pcp"), "choose dscp (routed RoCEv2, recommended) or pcp (VLAN priority)")

    dscp_ok = _check_int(problems, "roce_dscp", intent["roce_dscp"], 0, 63, "the DSCP RoCE traffic is marked with, 26 by convention")
    dscp_ok &= _check_int(problems, "cnp_dscp", intent["cnp_dscp"], 0, 63, "the DSCP of congestion notification packets, 48 by convention")
    prio_ok = _check_int(problems, "roce_priority", intent["roce_priority"], 0, 7, "the priority RoCE traffic maps to, 3 by convention")
    prio_ok &= _check_int(problems, "cnp_priority", intent["cnp_priority"], 0, 7, "the priority of CNPs, 6 by convention")
    if dscp_ok and intent["roce_dscp"] == intent["cnp_dscp"]:
        problems.append("roce_fabric.cnp_dscp=%d equals roce_dscp: CNPs must be marked apart from the data they throttle" % intent["cnp_dscp"])
    if prio_ok and intent["roce_priority"] == intent["cnp_priority"]:
        problems.append(
            "roce_fabric.cnp_priority=%d equals roce_priority: CNPs need their own (strict) priority, "
            "or they queue behind the congestion they report" % intent["cnp_priority"]
        )

    roce_prio = intent["roce_priority"] if prio_ok else None
    if "pfc_priorities" not in raw:
        intent["pfc_priorities"] = [roce_prio] if mode and mode["pfc"] == "roce" and roce_prio is not None else []
    if "ecn_priorities" not in raw:
        intent["ecn_priorities"] = [roce_prio] if roce_prio is not None else []
    pfc_ok = _check_priorities(problems, "pfc_priorities", intent["pfc_priorities"])
    if pfc_ok and mode and roce_prio is not None:
        if mode["pfc"] == "roce" and intent["pfc_priorities"] != [roce_prio]:
            problems.append(
                "roce_fabric.pfc_priorities=%s: the lossless preset enables PFC on the RoCE priority only (%s); "
                "PFC on other priorities spreads pause storms" % (_show(intent["pfc_priorities"]), roce_prio)
            )
        if mode["pfc"] == "none" and intent["pfc_priorities"]:
            problems.append(
                "roce_fabric.pfc_priorities=%s: the lossy_ecn preset uses no PFC; remove pfc_priorities or use "
                "preset: lossless" % (_show(intent["pfc_priorities"]),)
            )
    if _check_priorities(problems, "ecn_priorities", intent["ecn_priorities"]) and roce_prio is not None:
        if roce_prio not in intent["ecn_priorities"]:
            problems.append(
                "roce_fabric.ecn_priorities=%s: must include the RoCE priority %s, DCQCN depends on ECN marks there"
                % (_show(intent["ecn_priorities"]), roce_prio)
            )

    host_ok = _check_int(problems, "host_mtu", intent["host_mtu"], MTU_MIN, MTU_MAX, "9000 for jumbo RoCE")
    if intent["switch_mtu"] == SWITCH_MTU_MAX_WORD:
        # Each switch gets the largest MTU its NOS accepts, at least as large as any host MTU here.
        switch_ok = False
    else:
        switch_ok = _check_int(
            problems, "switch_mtu", intent["switch_mtu"], MTU_MIN, MTU_MAX,
            "9216 on most switches, or max for the largest each switch's NOS accepts",
        )
    if host_ok and switch_ok and intent["host_mtu"] > intent["switch_mtu"]:
        problems.append(
            "roce_fabric.host_mtu=%d is above switch_mtu=%d: the switch would drop every full-size frame; "
            "lower host_mtu or raise switch_mtu" % (intent["host_mtu"], intent["switch_mtu"])
        )

    # ToS = DSCP << 2 | ECN bits.  A sender marks ECT(0), ECT(1) or Not-ECT; CE (0b11) is the
    # switch's "congestion experienced" mark, and a ToS carrying it makes every packet look congested.
    if "roce_tos" not in raw and dscp_ok:
        intent["roce_tos"] = (intent["roce_dscp"] << 2) | ECT0
    if "roce_tos" in intent and _check_int(problems, "roce_tos", intent["roce_tos"], 0, 255, "ToS = DSCP << 2 | ECN bits, 106 for DSCP 26"):
        tos = intent["roce_tos"]
        fix = (intent["roce_dscp"] << 2) | ECT0 if dscp_ok else (tos & ~ECN_MASK) | ECT0
        if dscp_ok and tos >> 2 != intent["roce_dscp"]:
            problems.append(
                "roce_fabric.roce_tos=%d carries DSCP %d but roce_dscp is %d; use %d (or drop roce_tos to derive it)"
                % (tos, tos >> 2, intent["roce_dscp"], fix)
            )
        if tos & ECN_MASK == CE:
            problems.append(
                "roce_fabric.roce_tos=%d sets the ECN bits (the two low bits) to CE, 0b11 (congestion experienced), "
                "which only a congested switch may set: every RoCE packet would report congestion; keep them at "
                "ECT(0) 0b10, ECT(1) 0b01 or Not-ECT 0b00: use %d (DSCP %d with ECT(0)), or drop roce_tos to derive it"
                % (tos, fix, fix >> 2)
            )

    ecn = intent["ecn"]
    if ecn_ok:
        low_ok = _check_int(problems, "ecn.min_threshold_bytes", ecn["min_threshold_bytes"], 1, 1 << 30, "queue depth where ECN marking starts")
        high_ok = _check_int(problems, "ecn.max_threshold_bytes", ecn["max_threshold_bytes"], 1, 1 << 30, "queue depth where marking reaches its probability")
        if low_ok and high_ok and ecn["min_threshold_bytes"] >= ecn["max_threshold_bytes"]:
            problems.append(
                "roce_fabric.ecn.min_threshold_bytes=%d must be below max_threshold_bytes=%d"
                % (ecn["min_threshold_bytes"], ecn["max_threshold_bytes"])
            )
        _check_int(problems, "ecn.probability_percent", ecn["probability_percent"], 1, 100, "marking probability at the max threshold")
    if ets_ok:
        ets = intent["ets"]
        shares_ok = _check_int(problems, "ets.roce_percent", ets["roce_percent"], 1, 99, "the RoCE class's share of the link")
        shares_ok &= _check_int(problems, "ets.default_percent", ets["default_percent"], 1, 99, "the default class's share of the link")
        if shares_ok and ets["roce_percent"] + ets["default_percent"] != 100:
            problems.append(
                "roce_fabric.ets: roce_percent=%d and default_percent=%d must add up to 100 (e.g. 50 and 50)"
                % (ets["roce_percent"], ets["default_percent"])
            )
    if not isinstance(intent["pfc_watchdog"], bool):
        problems.append(
            "%s: must be true or false%s" % (_at("pfc_watchdog", intent["pfc_watchdog"]), _not_kind(intent["pfc_watchdog"], "a boolean"))
        )
    if not isinstance(intent["global_pause"], bool):
        problems.append(
            "%s: must be true or false%s" % (_at("global_pause", intent["global_pause"]), _not_kind(intent["global_pause"], "a boolean"))
        )
    elif intent["global_pause"] and pfc_ok and intent["pfc_priorities"]:
        problems.append("roce_fabric.global_pause=true conflicts with PFC: a port runs either link-level pause or PFC, set it to false")

    if problems:
        raise IntentError(problems)

    pfc = set(intent["pfc_priorities"])
    intent["pfc_enabled"] = [1 if prio in pfc else 0 for prio in range(8)]
    intent["pfc_bitmap"] = ",".join(str(bit) for bit in intent["pfc_enabled"])
    intent["dscp_to_priority"] = {intent["roce_dscp"]: intent["roce_priority"], intent["cnp_dscp"]: intent["cnp_priority"]}
    intent["roce_mode"] = "RoCE v2"
    intent["lossless"] = bool(pfc)
    return intent
