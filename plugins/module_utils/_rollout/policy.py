# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's variables, checked on the controller before any host is contacted.

One message per problem, each naming the variable and the fix; the result is the policy the
rollout play follows (``scheduler``, ``drain``, counts and timeouts as numbers).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import bisect
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import DISRUPTION_CLASSES, disruption_rank
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import NODE_NAME, max_unavailable_count, one_line

SCHEDULERS = ("none", "slurm", "command")
DRAIN = ("auto", "always", "never")
TIMEOUT_ACTIONS = ("fail", "skip")
REBOOT = ("scheduler", "allowed", "never")
GATES = ("validate", "none")
CAPS = DISRUPTION_CLASSES
DEFAULTS = dict(scheduler="none", drain="auto", drain_timeout=3600, drain_timeout_action="fail", max_unavailable=1,
                reboot="scheduler", gate=None, poll_interval=10, max_disruption=None, slurm_node_name=None,
                scheduler_timeout=60)


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
    if isinstance(text, str) and re.fullmatch(r"[0-9]{1,9}", text):  # not isdigit: "²" is a digit to it
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
        scheduler_timeout=_seconds(merged, "scheduler_timeout", problems, minimum=1),
    )
    try:
        policy["max_unavailable"] = max_unavailable_count(merged["max_unavailable"], pool_size(pool))
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


def pool_size(pool):
    """The number of hosts a rollout covers, as a whole number of at least 1 (a list of hosts counts
    its length); anything else is refused with a message, never a Python error."""
    if isinstance(pool, (list, tuple)):
        pool = len(pool)
    if isinstance(pool, str) and pool.strip().isdigit():
        pool = int(pool.strip())
    if isinstance(pool, float) and pool.is_integer():
        pool = int(pool)
    if isinstance(pool, bool) or not isinstance(pool, int) or pool < 0:
        raise RolloutError("the rollout's pool must be a whole number of hosts (or the list of them), not %r" % (pool,))
    return max(1, pool)


def disruption_class(name, what="disruption class"):
    """``name`` checked against the classes.  A missing class (None, empty) is not taken as
    harmless: callers treat it as the most disruptive (``reboot``), see :func:`exceeds`."""
    if name is None or name == "":
        return DISRUPTION_CLASSES[-1]
    if isinstance(name, str) and name in DISRUPTION_CLASSES:
        return name
    raise RolloutError("unknown %s %r: the classes are %s" % (what, name, ", ".join(DISRUPTION_CLASSES)))


def exceeds(disruption, cap):
    """Whether a change of class ``disruption`` goes beyond ``cap`` (None or empty: no cap).  A
    missing class counts as the most disruptive (a layer that did not say what it disrupts is not
    made in place under a job); an unknown one is refused."""
    if cap is None or cap == "":
        if disruption is not None and disruption != "":
            disruption_class(disruption)
        return False
    return disruption_rank(disruption_class(disruption)) > disruption_rank(disruption_class(cap, "disruption cap"))


def highest(classes):
    """The most disruptive of ``classes`` (a list; ``none`` for an empty one).  A missing entry
    counts as ``reboot``; a bare string or number is refused rather than read letter by letter."""
    if classes is None:
        return DISRUPTION_CLASSES[0]
    if isinstance(classes, (str, bytes, dict)) or not isinstance(classes, (list, tuple)):
        raise RolloutError("give a list of disruption classes (%s), not %r" % (", ".join(DISRUPTION_CLASSES), classes))
    names = [disruption_class(name) for name in classes]
    return max(names, key=disruption_rank) if names else DISRUPTION_CLASSES[0]


def plan_waves(hosts, limit, others_out=0, serial=None):
    """Phase two's waves: ``hosts`` is the ordered list of ``(host, status)`` that held something
    back, ``status`` one of ``in`` (in service), ``ours`` (drained by a rollout: an interrupted run)
    or ``out`` (out of service for another reason: down, drained by someone else).  ``limit`` is
    rdmaops_max_unavailable as a count, ``others_out`` the nodes of the pool out of service that are
    not among ``hosts`` (another run's, an admin's), ``serial`` rdmaops_serial when given.

    Hosts already out of service cost no new capacity and go first (finishing them frees theirs).
    A wave takes at most ``limit`` less what is out already, and at most ``serial`` hosts; with no
    capacity left each wave is one host, and the drain waits until the scheduler has room.
    Linear in the number of hosts."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise RolloutError("max_unavailable must be a count of at least 1, not %r" % (limit,))
    if serial is not None and (isinstance(serial, bool) or not isinstance(serial, int) or serial < 1):
        raise RolloutError("rdmaops_serial must be a count of at least 1 for the waves, not %r" % (serial,))
    already, fresh = [], []
    for entry in hosts:
        host, status = entry
        if status not in ("in", "ours", "out"):
            raise RolloutError("unknown host status %r for %s: in, ours or out" % (status, host))
        (fresh if status == "in" else already).append((host, status))
    foreign_out = sum(1 for _host, status in already if status == "out")
    free = limit - int(others_out) - foreign_out
    room = max(1, free)
    size = min(room, serial) if serial else room
    waves = []
    if already:
        # the interrupted ones hold capacity already; the first wave adds only what is left of it
        ours = sum(1 for _host, status in already if status == "ours")
        take = max(0, min(size, free) - ours)
        waves.append([host for host, _status in already] + [host for host, _status in fresh[:take]])
        fresh = fresh[take:]
    for start in range(0, len(fresh), size):
        waves.append([host for host, _status in fresh[start:start + size]])
    return waves


def gate_partners(order, wave, candidates):
    """The hosts a wave's gate pairs with: ``candidates`` (in service, rolled out already) nearest
    the wave in ``order`` (the inventory's), at most one per host of the wave."""
    return gate_partners_all(order, [wave], candidates)[0]


def gate_partners_all(order, waves, candidates):
    """:func:`gate_partners` for every wave at once: the candidates' positions sorted once, then per
    wave a binary search and a walk outwards, so the whole plan is O(n log n) however many waves
    there are (a call per wave would read every candidate per wave)."""
    position = dict((host, index) for index, host in enumerate(order))
    spots = sorted(position[host] for host in set(candidates) if host in position)
    out = []
    for wave in waves:
        members = set(position[host] for host in wave if host in position)
        if not members:
            out.append([])
            continue
        first = min(members)
        right = bisect.bisect_left(spots, first)
        left = right - 1
        chosen = []
        while len(chosen) < len(wave) and (left >= 0 or right < len(spots)):
            # the nearer side first; a tie goes to the earlier host
            if right >= len(spots) or (left >= 0 and first - spots[left] <= spots[right] - first):
                spot, left = spots[left], left - 1
            else:
                spot, right = spots[right], right + 1
            if spot not in members:
                chosen.append(spot)
        out.append([order[spot] for spot in chosen])
    return out


# What a failed task's output says went wrong, in the words of the tool that said it: the package
# manager's script and DKMS lines name the package and the kernel, where the task's own message
# names only the command it ran.
_FAILURE_LINES = (
    # dpkg >= 1.19: " installed mlnx-ofed-kernel-dkms package post-installation script subprocess
    # returned error exit status 10"
    (re.compile(r"(?:installed|new|old) (\S+) package ((?:pre|post)-(?:installation|removal)) script subprocess "
                r"returned error exit status (\d+)"), "{0} {1} failed (exit status {2})"),
    (re.compile(r"Error! Bad return status for module build on kernel: (\S+)"), "DKMS build failed on {0}"),
    (re.compile(r"Error in (PREIN|POSTIN|PREUN|POSTUN|PRETRANS|POSTTRANS) scriptlet in rpm package (\S+)"),
     "{1} {0} scriptlet failed"),
    (re.compile(r"modprobe: ERROR: could not insert '([^']+)': (.+)"), "modprobe {0}: {1}"),
    (re.compile(r"modprobe: FATAL: Module (\S+) not found"), "modprobe {0}: module not found"),
)
# Debian's names for a package's maintainer scripts, shorter than dpkg's words (a reason has 200 characters)
_SCRIPTS = {"pre-installation": "preinst", "post-installation": "postinst", "pre-removal": "prerm",
            "post-removal": "postrm"}
# dpkg's summary of a package it could not configure (a failed script, or a dependency of one):
# named only when no line above says what failed
_NOT_CONFIGURED = re.compile(r"dpkg: error processing (?:package )?(\S+) \(--configure\)")
_FAILURE_MAX = 150


def failure_finding(result):
    """One line saying why a task failed, for a drained host's reason and the rollout's report:
    the package manager's, DKMS's and modprobe's own lines when its output has them (several joined,
    in the order they came), else the message's ``E:`` lines or its first line. ``result`` is the
    failed task's result (anything: it never raises)."""
    if not isinstance(result, dict):
        return "the task failed"
    # a loop's result holds each item's under results: the failed items are read too
    items = result.get("results") if isinstance(result.get("results"), list) else []
    parts = [result] + [item for item in items if isinstance(item, dict) and item.get("failed")]
    lines = "\n".join(_text(part.get(key)) for part in parts for key in ("stdout", "stderr", "msg", "module_stdout",
                                                                         "module_stderr")).splitlines()
    found, unconfigured = [], []
    for line in lines:
        for pattern, form in _FAILURE_LINES:
            match = pattern.search(line)
            if match:
                finding = form.format(*[_SCRIPTS.get(group, group) for group in match.groups()])
                if finding not in found:
                    found.append(finding)
                break
        else:
            match = _NOT_CONFIGURED.search(line)
            if match and match.group(1) not in unconfigured:
                unconfigured.append(match.group(1))
    if not found:
        found = ["%s not configured" % name for name in unconfigured]
    if not found:
        # the first failed item's message says more than a loop's "One or more items failed"
        message = _text((parts[1:] or parts)[0].get("msg")).splitlines()
        errors = [line.strip() for line in message if line.strip().startswith("E: ")]
        found = errors or [next((line.strip() for line in message if line.strip()), "the task failed")]
    return one_line("; ".join(found), _FAILURE_MAX)


def _text(value):
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(item) for item in value)
    text = value if isinstance(value, str) else str(value)
    # control characters (a terminal's colours, a NUL) never reach a scheduler's reason
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", " ", text)
