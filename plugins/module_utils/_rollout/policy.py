# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's variables, checked on the controller before any host is contacted.

One message per problem, each naming the variable and the fix; the result is the policy the
rollout play follows (``scheduler``, ``drain``, counts and timeouts as numbers).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import DISRUPTION_CLASSES, disruption_rank
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import NODE_NAME, max_unavailable_count

SCHEDULERS = ("none", "slurm", "command")
DRAIN = ("auto", "always", "never")
TIMEOUT_ACTIONS = ("fail", "skip")
REBOOT = ("scheduler", "allowed", "never")
GATES = ("validate", "none")
CAPS = DISRUPTION_CLASSES
DEFAULTS = dict(scheduler="none", drain="auto", drain_timeout=3600, drain_timeout_action="fail", max_unavailable=1,
                reboot="scheduler", gate=None, poll_interval=10, max_disruption=None, slurm_node_name=None)


class RolloutError(InputError):
    """Every problem with the rollout's variables, in one message."""


def _choice(settings, key, choices, problems):
    value = settings.get(key)
    if isinstance(value, str) and value in choices:
        return value
    problems.append("rdmaops_%s=%r: choose one of %s" % (key, value, ", ".join(choices)))
    return None


def _seconds(settings, key, problems, minimum=0):
    value = settings.get(key)
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.isdigit():
        text = int(text)
    if isinstance(text, bool) or not isinstance(text, int) or text < minimum:
        problems.append("rdmaops_%s=%r: give a whole number of seconds, at least %d" % (key, value, minimum))
        return None
    return text


def resolve_policy(settings, pool):
    """``settings``: the rollout variables without their ``rdmaops_`` prefix (missing ones take the
    defaults); ``pool``: the number of hosts the rollout covers.  Returns the policy; raises
    :class:`RolloutError` listing every problem."""
    if not isinstance(settings, dict):
        raise RolloutError("the rollout settings must be a mapping of rdmaops_* variables")
    merged = dict(DEFAULTS)
    merged.update((key, value) for key, value in settings.items() if value is not None)
    problems = []
    policy = dict(scheduler=_choice(merged, "scheduler", SCHEDULERS, problems))
    if merged["gate"] is None:
        merged["gate"] = "none" if merged["scheduler"] == "none" else "validate"
    policy.update(
        drain=_choice(merged, "drain", DRAIN, problems),
        drain_timeout_action=_choice(merged, "drain_timeout_action", TIMEOUT_ACTIONS, problems),
        reboot=_choice(merged, "reboot", REBOOT, problems),
        gate=_choice(merged, "gate", GATES, problems),
        drain_timeout=_seconds(merged, "drain_timeout", problems),
        poll_interval=_seconds(merged, "poll_interval", problems, minimum=1),
    )
    try:
        policy["max_unavailable"] = max_unavailable_count(merged["max_unavailable"], max(1, int(pool)))
    except InputError as exc:
        problems.append(exc.msg)
    cap = merged["max_disruption"]
    if cap is not None and not (isinstance(cap, str) and cap in CAPS):
        problems.append("rdmaops_max_disruption=%r: choose one of %s, or leave it unset" % (cap, ", ".join(CAPS)))
    policy["max_disruption"] = cap
    name = merged["slurm_node_name"]
    if name is not None and not (isinstance(name, str) and NODE_NAME.fullmatch(name)):
        problems.append("rdmaops_slurm_node_name=%r: give the node's name as the scheduler spells it (letters, digits, "
                        "'.', '_', '-'; no lists or ranges)" % (name,))
    if policy["scheduler"] == "command":
        commands = merged.get("scheduler_commands")
        if not isinstance(commands, dict) or not all(commands.get(key) for key in ("busy", "drain", "resume")):
            problems.append("rdmaops_scheduler: command needs rdmaops_scheduler_commands with busy, drain and resume "
                            "command lines (the node is in $RDMAOPS_NODE, the reason in $RDMAOPS_REASON)")
    if problems:
        raise RolloutError("; ".join(problems))
    policy["enabled"] = policy["scheduler"] != "none"
    return policy


def exceeds(disruption, cap):
    """Whether a change of class ``disruption`` goes beyond ``cap`` (None: no cap)."""
    if cap is None or cap == "":
        return False
    return disruption_rank(disruption or "none") > disruption_rank(cap)
