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
)

# Keys a user may set; everything else is a typo and is refused.
USER_KEYS = set(DEFAULTS) | set(["pfc_priorities", "ecn_priorities", "roce_tos"])
ECN_KEYS = set(DEFAULTS["ecn"])

MTU_MIN = 1280  # the IPv6 minimum; RoCE needs at least 1024 bytes of payload
MTU_MAX = 9216  # the largest L2 MTU common switch ASICs accept
ECT0 = 2  # ECN-capable transport codepoint the NICs set on RoCE packets


class IntentError(ValueError):
    """One or more problems with ``roce_fabric``; ``problems`` lists each with its fix."""

    def __init__(self, problems):
        self.problems = problems
        super(IntentError, self).__init__(
            "roce_fabric is not valid:\n" + "\n".join("  - " + problem for problem in problems)
        )


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(problems, key, value, low, high, hint):
    if not _is_int(value) or not low <= value <= high:
        problems.append("roce_fabric.%s=%r: must be an integer %d..%d (%s)" % (key, value, low, high, hint))
        return False
    return True


def _check_priorities(problems, key, value):
    if not isinstance(value, list) or not all(_is_int(item) and 0 <= item <= 7 for item in value):
        problems.append("roce_fabric.%s=%r: must be a list of priorities 0..7, e.g. [3]" % (key, value))
        return False
    if len(set(value)) != len(value):
        problems.append("roce_fabric.%s=%r: lists a priority twice" % (key, value))
        return False
    return True


def resolve_intent(raw):
    """Validate ``raw`` (the user's ``roce_fabric``) and return the complete intent.

    Raises :class:`IntentError` listing every problem found.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise IntentError(["roce_fabric must be a mapping (preset plus overrides), got %s" % type(raw).__name__])
    problems = []
    unknown = sorted(set(raw) - USER_KEYS)
    if unknown:
        problems.append(
            "roce_fabric has unknown key(s) %s; known keys: %s" % (", ".join(unknown), ", ".join(sorted(USER_KEYS)))
        )
    intent = copy.deepcopy(DEFAULTS)
    for key, value in raw.items():
        if key == "ecn" and isinstance(value, dict):
            bad = sorted(set(value) - ECN_KEYS)
            if bad:
                problems.append(
                    "roce_fabric.ecn has unknown key(s) %s; known keys: %s" % (", ".join(bad), ", ".join(sorted(ECN_KEYS)))
                )
            intent["ecn"].update(value)
        elif key in USER_KEYS:
            intent[key] = value

    preset = intent["preset"]
    if preset not in PRESETS:
        problems.append("roce_fabric.preset=%r: choose one of %s" % (preset, ", ".join(sorted(PRESETS))))
        raise IntentError(problems)
    if intent["trust"] not in ("dscp", "pcp"):
        problems.append("roce_fabric.trust=%r: choose dscp (routed RoCEv2, recommended) or pcp (VLAN priority)" % (intent["trust"],))

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

    mode = PRESETS[preset]
    roce_prio = intent["roce_priority"] if prio_ok else None
    if "pfc_priorities" not in raw:
        intent["pfc_priorities"] = [roce_prio] if mode["pfc"] == "roce" and roce_prio is not None else []
    if "ecn_priorities" not in raw:
        intent["ecn_priorities"] = [roce_prio] if roce_prio is not None else []
    if _check_priorities(problems, "pfc_priorities", intent["pfc_priorities"]) and roce_prio is not None:
        if mode["pfc"] == "roce" and intent["pfc_priorities"] != [roce_prio]:
            problems.append(
                "roce_fabric.pfc_priorities=%r: the lossless preset enables PFC on the RoCE priority only (%s); "
                "PFC on other priorities spreads pause storms" % (intent["pfc_priorities"], roce_prio)
            )
        if mode["pfc"] == "none" and intent["pfc_priorities"]:
            problems.append(
                "roce_fabric.pfc_priorities=%r: the lossy_ecn preset uses no PFC; remove pfc_priorities or use "
                "preset: lossless" % (intent["pfc_priorities"],)
            )
    if _check_priorities(problems, "ecn_priorities", intent["ecn_priorities"]) and roce_prio is not None:
        if roce_prio not in intent["ecn_priorities"]:
            problems.append(
                "roce_fabric.ecn_priorities=%r: must include the RoCE priority %s, DCQCN depends on ECN marks there"
                % (intent["ecn_priorities"], roce_prio)
            )

    host_ok = _check_int(problems, "host_mtu", intent["host_mtu"], MTU_MIN, MTU_MAX, "9000 for jumbo RoCE")
    switch_ok = _check_int(problems, "switch_mtu", intent["switch_mtu"], MTU_MIN, MTU_MAX, "9216 on most switches")
    if host_ok and switch_ok and intent["host_mtu"] > intent["switch_mtu"]:
        problems.append(
            "roce_fabric.host_mtu=%d is above switch_mtu=%d: the switch would drop every full-size frame; "
            "lower host_mtu or raise switch_mtu" % (intent["host_mtu"], intent["switch_mtu"])
        )

    if "roce_tos" not in raw and dscp_ok:
        intent["roce_tos"] = (intent["roce_dscp"] << 2) | ECT0
    if "roce_tos" in intent and _check_int(problems, "roce_tos", intent["roce_tos"], 0, 255, "ToS = DSCP << 2 | ECN bits, 106 for DSCP 26"):
        if dscp_ok and intent["roce_tos"] >> 2 != intent["roce_dscp"]:
            problems.append(
                "roce_fabric.roce_tos=%d carries DSCP %d but roce_dscp is %d; use %d (or drop roce_tos to derive it)"
                % (intent["roce_tos"], intent["roce_tos"] >> 2, intent["roce_dscp"], (intent["roce_dscp"] << 2) | ECT0)
            )

    ecn = intent["ecn"]
    if not isinstance(raw.get("ecn", {}), dict):
        problems.append("roce_fabric.ecn must be a mapping with %s" % ", ".join(sorted(ECN_KEYS)))
    else:
        low_ok = _check_int(problems, "ecn.min_threshold_bytes", ecn["min_threshold_bytes"], 1, 1 << 30, "queue depth where ECN marking starts")
        high_ok = _check_int(problems, "ecn.max_threshold_bytes", ecn["max_threshold_bytes"], 1, 1 << 30, "queue depth where marking reaches its probability")
        if low_ok and high_ok and ecn["min_threshold_bytes"] >= ecn["max_threshold_bytes"]:
            problems.append(
                "roce_fabric.ecn.min_threshold_bytes=%d must be below max_threshold_bytes=%d"
                % (ecn["min_threshold_bytes"], ecn["max_threshold_bytes"])
            )
        _check_int(problems, "ecn.probability_percent", ecn["probability_percent"], 1, 100, "marking probability at the max threshold")
    if not isinstance(intent["global_pause"], bool):
        problems.append("roce_fabric.global_pause=%r: must be true or false" % (intent["global_pause"],))
    elif intent["global_pause"] and intent["pfc_priorities"]:
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
