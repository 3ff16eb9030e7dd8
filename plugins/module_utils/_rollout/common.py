# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every scheduler backend shares: a node's state, our drain reason, node-name and
``max_unavailable`` rules.  Pure Python: the controller-side policy filter uses it too."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError

#: Every drain reason the rollout writes starts with this, and only such drains are ever resumed.
REASON_PREFIX = "rdmaops.roce:"
REASON_MAX = 200
# A node name as schedulers spell them: a host name, no list or range syntax, no spaces.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_COUNT = re.compile(r"[0-9]{1,6}")
_PERCENT = re.compile(r"([0-9]{1,3})%")


class SchedulerUnavailable(RdmaopsError):
    """The scheduler did not answer: the rollout stops before it drains or changes anything."""


class NodeState:
    """One node as the scheduler reports it."""

    __slots__ = ("name", "state", "flags", "reason", "reason_user", "busy", "drained", "out_of_service", "jobs")

    def __init__(self, name, state, flags=None, reason=None, reason_user=None, busy=False, drained=False,
                 out_of_service=False, jobs=None):
        self.name = name
        self.state = state
        self.flags = list(flags or [])
        self.reason = reason
        self.reason_user = reason_user
        self.busy = busy
        self.drained = drained
        self.out_of_service = out_of_service
        self.jobs = list(jobs or [])

    @property
    def ours(self):
        """Drained by a rollout (our reason), so a rollout may resume it."""
        return self.drained and is_our_reason(self.reason)

    def as_dict(self):
        return dict(name=self.name, state=self.state, flags=self.flags, reason=self.reason,
                    reason_user=self.reason_user, busy=self.busy, drained=self.drained,
                    out_of_service=self.out_of_service, ours=self.ours, jobs=self.jobs)


def is_our_reason(reason):
    return bool(reason) and reason.startswith(REASON_PREFIX)


def our_reason(text):
    """``rdmaops.roce: <text>`` on one line, short enough for any scheduler's reason field."""
    text = " ".join(str(text).split())
    reason = "%s %s" % (REASON_PREFIX, text)
    return reason if len(reason) <= REASON_MAX else reason[:REASON_MAX - 3] + "..."


def check_node_names(nodes, option="nodes"):
    """The names, each checked whole against :data:`NODE_NAME` (a list or range would address
    other nodes than the ones meant)."""
    if isinstance(nodes, str) or not isinstance(nodes, (list, tuple)) or not nodes:
        raise InputError("%s must be a non-empty list of node names" % option, option=option)
    bad = [name for name in nodes if not isinstance(name, str) or not NODE_NAME.fullmatch(name)]
    if bad:
        raise InputError(
            "%s: %s %s not a node name (letters, digits, '.', '_' and '-', starting with a letter or digit, at "
            "most 63 characters; no lists, ranges or spaces)" % (
                option, ", ".join(repr(name) for name in bad), "is" if len(bad) == 1 else "are"),
            option=option)
    return list(nodes)


def max_unavailable_count(value, pool, option="rdmaops_max_unavailable"):
    """How many of ``pool`` hosts may be drained or down at once.

    ``value`` is a count (``2``) or a percentage of the pool (``"25%"``, rounded down, at least 1
    so a rollout can make progress).  Anything else is refused, naming the variable.
    """
    if isinstance(value, bool):
        value = None
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        text = None
    if text is not None and _COUNT.fullmatch(text):
        count = int(text)
        if count < 1:
            raise InputError("%s is 0: no host could ever be drained; give at least 1 (a count) or a percentage"
                             % option, option=option)
        return count
    match = _PERCENT.fullmatch(text) if text is not None else None
    if match and 1 <= int(match.group(1)) <= 100:
        return max(1, int(math.floor(pool * int(match.group(1)) / 100.0)))
    raise InputError("%s is %r: give a count of hosts (1, 2, ...) or a percentage of the rollout's hosts "
                     "from 1%% to 100%% (\"25%%\")" % (option, value), option=option)


def drain_capacity(states, limit, ours_in_batch=()):
    """How many more nodes may be drained now: ``limit`` less every node of the pool that is
    already out of service (drained by anyone, down, rebooting), ours included."""
    unavailable = [name for name, state in states.items() if state.out_of_service or state.drained]
    return max(0, limit - len(unavailable)), sorted(unavailable)
