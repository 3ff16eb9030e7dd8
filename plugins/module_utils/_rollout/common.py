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
#: Seconds any one scheduler command (Slurm's client tools, a site's command) may run before it is
#: killed with its process group (rdmaops_scheduler_timeout, the module's command_timeout).
COMMAND_TIMEOUT = 60
# A node name as schedulers spell them: a host name, no list or range syntax, no spaces.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_COUNT = re.compile(r"[0-9]{1,6}")
_PERCENT = re.compile(r"([0-9]{1,3})%")


class SchedulerUnavailable(RdmaopsError):
    """The scheduler did not answer: the rollout stops before it drains or changes anything."""


class NodeState:
    """One node as the scheduler reports it."""

    __slots__ = ("name", "state", "flags", "reason", "reason_user", "busy", "drained", "out_of_service", "jobs",
                 "listed")

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
        # How many times the scheduler listed the node in one read (more than once: see merge).
        self.listed = 1

    @property
    def ours(self):
        """Drained by a rollout (our reason), so a rollout may resume it."""
        return self.drained and is_our_reason(self.reason)

    @property
    def foreign(self):
        """Out of service for someone else: drained with a reason that is not ours (or with none
        we could read), or down, failed or in maintenance with a reason that is not ours (an admin's,
        Slurm's own "Not responding").  A rollout never rewrites such a reason, never resumes the
        node and never asks the scheduler to reboot it (which would bring it back)."""
        if is_our_reason(self.reason):
            return False
        return self.drained or (self.out_of_service and bool(self.reason))

    def merge(self, other):
        """The same node listed again in one read (a node in two partitions, a line a reason with
        a line break forged): never idle, and out of service or drained if either listing says so.
        The reason kept is one that is not ours when either listing has one: two listings never
        make a node look drained by a rollout (and so resumable) unless both say so."""
        self.listed += 1
        self.busy = True
        self.drained = self.drained or other.drained
        self.out_of_service = self.out_of_service or other.out_of_service
        self.flags = self.flags + [flag for flag in other.flags if flag not in self.flags]
        if other.reason is None or other.reason == self.reason:
            pass
        elif self.reason is None or (is_our_reason(self.reason) and not is_our_reason(other.reason)):
            self.reason, self.reason_user = other.reason, other.reason_user
        elif is_our_reason(self.reason):
            # two different reasons of ours: neither is trusted to be the node's
            self.reason, self.reason_user = "listed twice with different reasons: %s / %s" % (self.reason, other.reason), None
        if other.state != self.state:
            self.state = "%s/%s" % (self.state, other.state)
        return self

    def as_dict(self):
        return dict(name=self.name, state=self.state, flags=self.flags, reason=self.reason,
                    reason_user=self.reason_user, busy=self.busy, drained=self.drained,
                    out_of_service=self.out_of_service, ours=self.ours, foreign=self.foreign, jobs=self.jobs)


def is_our_reason(reason):
    return bool(reason) and reason.startswith(REASON_PREFIX)


def one_line(text, limit):
    """``text`` on one line (every run of whitespace one space), cut to ``limit`` characters with "..."."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def our_reason(text):
    """``rdmaops.roce: <text>`` on one line, short enough for any scheduler's reason field."""
    return one_line("%s %s" % (REASON_PREFIX, text), REASON_MAX)


def select_nodes(states, nodes, option="rdmaops_slurm_node_name"):
    """``{name: NodeState}`` for ``nodes``, in their order, out of one read of more nodes (a run
    reads the scheduler once and every later decision picks its nodes from that read).  A node the
    read does not list is refused, naming ``option``."""
    missing = [name for name in nodes if name not in states]
    if missing:
        raise InputError("the scheduler does not list the node%s %s: set rdmaops_slurm_node_name to the node's "
                         "name in the scheduler" % ("s" if len(missing) > 1 else "", ", ".join(missing)),
                         option=option, unknown=missing)
    return dict((name, states[name]) for name in nodes)


def timeout_source(bound, timeout):
    """What set a command's time bound, for a message: the scheduler timeout, or the end of a wait."""
    return "rdmaops_scheduler_timeout" if bound == timeout else "what was left of the wait for jobs to end"


def command_timeout(value, option="command_timeout"):
    """The time bound of one scheduler command: whole seconds, at least 1."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and _COUNT.fullmatch(text):
        text = int(text)
    if isinstance(text, bool) or not isinstance(text, int) or text < 1:
        raise InputError("%s is %r: give the seconds one scheduler command may run before it is killed, a whole "
                         "number of at least 1 (default %d)" % (option, value, COMMAND_TIMEOUT), option=option)
    return text


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
