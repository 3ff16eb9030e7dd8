# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor-neutral switch profile: what every NOS renderer writes and every parser reads back.

``switch_roce``'s ``config`` is ``{fabric: <roce_fabric>, interfaces: [names]}``.  The fabric is
resolved by the same code as the ``roce_intent`` filter (:func:`resolve_intent`), then reduced to
the keys a switch configuration carries (:data:`FABRIC_KEYS`).  That reduced mapping is the
*profile*: renderers take it, parsers return it (``{"fabric": profile, "interfaces": [...]}``),
and ``parse(render(profile)) == profile`` for every NOS.

Units are the intent's: ECN thresholds in bytes, probability in percent, MTU in bytes, shares in
percent.  Each NOS renderer converts to its own spelling (Onyx KB, EOS kbytes, ...).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import (
    IntentError,
    SWITCH_MTU_MAX_WORD,
    resolve_intent,
)

# The intent keys a switch's QoS configuration carries, in the profile's order.
#   trust            "dscp" (classify by DSCP) or "pcp" (by 802.1p)
#   roce_dscp        DSCP of RoCE data -> roce_priority (lossless, PFC + ECN)
#   roce_priority
#   cnp_dscp         DSCP of congestion notifications -> cnp_priority (strict-priority queue)
#   cnp_priority
#   pfc_priorities   sorted list of the priorities with PFC on (tx and rx)
#   ecn_priorities   sorted list of the traffic classes with ECN marking
#   ecn              {min_threshold_bytes, max_threshold_bytes, probability_percent}
#   ets              {roce_percent, default_percent}: DWRR shares of the RoCE and default class
#   pfc_watchdog     true: the PFC watchdog is on for the lossless priority
#   switch_mtu       port MTU in bytes (an integer once resolved for a NOS)
FABRIC_KEYS = (
    "trust",
    "roce_dscp",
    "roce_priority",
    "cnp_dscp",
    "cnp_priority",
    "pfc_priorities",
    "ecn_priorities",
    "ecn",
    "ets",
    "pfc_watchdog",
    "switch_mtu",
)

MTU_POLICIES = ("clamp", "fail")


def fabric_profile(intent):
    """The switch profile of a resolved intent (``switch_mtu`` may still be ``"max"``)."""
    profile = dict((key, copy.deepcopy(intent[key])) for key in FABRIC_KEYS)
    profile["pfc_priorities"] = sorted(profile["pfc_priorities"])
    profile["ecn_priorities"] = sorted(profile["ecn_priorities"])
    return profile


def resolve_config(config):
    """Check ``switch_roce``'s ``config`` and return ``(intent, profile, interfaces)``.

    Raises :class:`InputError` naming the key and the fix; the fabric's problems are the
    ``roce_intent`` filter's own words.
    """
    if config is None:
        raise InputError("config is required for this state: give config: {fabric: {...}, interfaces: [swp1, ...]}",
                         option="config")
    if not isinstance(config, Mapping):
        raise InputError("config must be a mapping with fabric and interfaces, e.g. config: {fabric: {}, interfaces: [swp1]}",
                         option="config")
    unknown = sorted(str(key) for key in config if key not in ("fabric", "interfaces"))
    if unknown:
        raise InputError("config has unknown key(s) %s; known keys: fabric, interfaces" % ", ".join(unknown),
                         option="config")
    try:
        intent = resolve_intent(config.get("fabric"))
    except IntentError as exc:
        raise InputError("config.fabric: %s" % exc, option="config", problems=exc.problems)
    interfaces = config.get("interfaces")
    if interfaces is None:
        interfaces = []
    if not isinstance(interfaces, list) or not all(isinstance(name, str) and name.strip() == name and name
                                                   for name in interfaces):
        raise InputError("config.interfaces must be a list of interface names as the switch spells them, "
                         "e.g. [swp1, swp2] or [Ethernet0]", option="config")
    if len(set(interfaces)) != len(interfaces):
        raise InputError("config.interfaces names an interface twice: list each once", option="config")
    return intent, fabric_profile(intent), list(interfaces)


def resolve_mtu(profile, intent, nos_name, nos_max, policy, warn):
    """``profile`` with ``switch_mtu`` an integer the NOS accepts.

    ``max`` becomes ``nos_max``.  A number above ``nos_max`` is clamped with a warning
    (``policy="clamp"``) or refused naming the maximum (``policy="fail"``).  Either way the
    result must still carry the hosts' frames (``host_mtu``).
    """
    profile = dict(profile)
    mtu = profile["switch_mtu"]
    if mtu == SWITCH_MTU_MAX_WORD:
        mtu = nos_max
    elif mtu > nos_max:
        if policy == "fail":
            raise InputError(
                "config.fabric.switch_mtu=%d is above the largest MTU %s accepts (%d): set switch_mtu: %d "
                "(or max), or mtu_policy: clamp to write %d" % (mtu, nos_name, nos_max, nos_max, nos_max),
                option="mtu_policy",
            )
        warn("config.fabric.switch_mtu=%d is above the largest MTU %s accepts: %d written instead "
             "(set switch_mtu: max to say so, or mtu_policy: fail to refuse)" % (mtu, nos_name, nos_max))
        mtu = nos_max
    if mtu < intent["host_mtu"]:
        raise InputError(
            "%s's largest MTU %d is below the hosts' host_mtu=%d: the switch would drop every full-size "
            "frame; lower host_mtu to %d or less" % (nos_name, mtu, intent["host_mtu"], mtu),
            option="config",
        )
    profile["switch_mtu"] = mtu
    return profile
