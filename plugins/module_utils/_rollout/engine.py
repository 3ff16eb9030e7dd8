# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``scheduler`` module: a rollout's one place to talk to the cluster's scheduler.

``query`` and ``wait_idle`` only read; ``drain``, ``resume``, ``set_reason`` and ``reboot`` go
through the engine protocol (read -> plan -> apply -> re-read), so check mode changes nothing in
the scheduler and predicts, and a run that stops part-way says which nodes it already drained.
Two rules hold whatever the play asks:

* a node out of service for someone else (drained, or down with a reason not ours) is never
  resumed, nor its reason rewritten, nor handed to the scheduler for a reboot (which would bring
  it back in service): it is reported in ``foreign``, and a reboot it still needs in a warning;
* at most ``max_unavailable`` nodes of the ``pool`` are out of service at once, counting every
  node already drained or down for any reason: nodes beyond it are ``deferred``, untouched.
  Several runs may drain at the same moment (job slices, two operators), so after a drain the pool
  is read again, and when more than ``max_unavailable`` are out then, the nodes this call took out
  are resumed (``stepped_back``, reported with the count that made it step back) and deferred: of
  runs that keep their drain, the last to read saw every other kept drain, so they never add up
  to more than the limit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import random
import time

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.command import CommandBackend
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import (
    COMMAND_TIMEOUT,
    REASON_PREFIX,
    check_node_names,
    command_timeout,
    drain_capacity,
    is_our_reason,
    max_unavailable_count,
    our_reason,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.slurm import SlurmBackend

ACTIONS = ("query", "wait_idle", "drain", "resume", "set_reason", "reboot")


# A read while waiting for jobs to end is bounded by what is left of the wait, but never below this.
MIN_WAIT_READ = 5


def backend_for(ctx, params):
    timeout = command_timeout(params.get("command_timeout", COMMAND_TIMEOUT))
    if params.get("backend") == "command":
        return CommandBackend(ctx.runner, params.get("commands"), timeout=timeout)
    return SlurmBackend(ctx.runner, timeout=timeout)


def _wait_read(backend, nodes, deadline):
    """One read while waiting: within the command timeout, and within what is left of the wait (at
    least MIN_WAIT_READ s), so a scheduler that hangs never holds wait_idle long past its timeout."""
    left = max(MIN_WAIT_READ, int(math.ceil(deadline - time.time())))
    return backend.query(nodes, timeout=min(backend.timeout, left))


def _nodes(params):
    nodes = check_node_names(params.get("nodes"), option="nodes")
    if len(set(nodes)) != len(nodes):
        raise InputError("nodes names a node twice: %s" % ", ".join(sorted(set(n for n in nodes if nodes.count(n) > 1))),
                         option="nodes")
    return nodes


def _report(states):
    return dict((name, state.as_dict()) for name, state in states.items())


def gather(ctx, params):
    """``query`` and ``wait_idle``: read only (check mode does not wait: nothing was drained)."""
    backend = backend_for(ctx, params)
    nodes = _nodes(params)
    pool = check_node_names(params.get("pool") or nodes, option="pool")
    deadline = time.time() + params["timeout"]
    if params["action"] == "wait_idle":
        states = _wait_read(backend, list(dict.fromkeys(nodes + pool)), deadline)
    else:
        states = backend.query(list(dict.fromkeys(nodes + pool)))
    result = dict(nodes=_report(states), backend=backend.name)
    if params.get("max_unavailable") is not None:
        limit = max_unavailable_count(params["max_unavailable"], len(pool))
        free, unavailable = drain_capacity(dict((n, states[n]) for n in pool), limit)
        result.update(max_unavailable=limit, unavailable=unavailable, capacity=free)
    if params["action"] == "wait_idle":
        busy = [name for name in nodes if states[name].busy]
        while busy and not ctx.check_mode and time.time() < deadline:
            time.sleep(min(params["poll_interval"], max(0.0, deadline - time.time())))
            states = _wait_read(backend, nodes, deadline)
            busy = [name for name in nodes if states[name].busy]
        waited = params["timeout"] - max(0, int(deadline - time.time())) if not ctx.check_mode else 0
        result.update(nodes=_report(states), idle=[n for n in nodes if not states[n].busy], busy=busy,
                      waited=waited, timed_out=bool(busy) and not ctx.check_mode,
                      holding=dict((name, ["%s %s (%s, %s)" % (job["id"], job["name"], job["state"], job["user"])
                                           for job in states[name].jobs]) for name in busy))
    return result


class SchedulerChange(Engine):
    """``drain``, ``resume``, ``set_reason`` and ``reboot``, one change per node."""

    commands_key = None

    def validate(self):
        self.backend = backend_for(self.ctx, self.params)
        self.nodes = _nodes(self.params)
        self.pool = check_node_names(self.params.get("pool") or self.nodes, option="pool")
        action = self.params["action"]
        if action in ("drain", "set_reason", "reboot"):
            text = self.params.get("reason")
            if not isinstance(text, str) or not text.strip():
                raise InputError("reason is required with action=%s: what the rollout will change on the node" % action,
                                 option="reason")
            self.reason = our_reason(text)
        self.limit = None
        if action == "drain" and self.params.get("max_unavailable") is not None:
            self.limit = max_unavailable_count(self.params["max_unavailable"], len(self.pool))

    def read(self):
        self.before = self.backend.query(list(dict.fromkeys(self.nodes + self.pool)))
        self.acted, self.deferred, self.foreign, self.skipped = [], [], [], []
        self.taken, self.stepped_back, self.step_back_reason = [], [], None

    def plan(self, plan):
        action = self.params["action"]
        getattr(self, "_plan_" + action)(plan)

    def _plan_drain(self, plan):
        free = None
        if self.limit is not None:
            free, self.unavailable = drain_capacity(dict((n, self.before[n]) for n in self.pool), self.limit)
        for name in self.nodes:
            state = self.before[name]
            if state.foreign:
                # Out of service already, for someone else's reason: ours would overwrite theirs.
                self.foreign.append(name)
                continue
            if state.ours and state.reason == self.reason:
                continue
            if not state.drained and not state.out_of_service:
                if free is not None and free <= 0:
                    self.deferred.append(name)
                    continue
                if free is not None:
                    free -= 1
                self.taken.append(name)
            self.acted.append(name)
            plan.add("drain %s" % name, state.reason if state.drained else None, self.reason,
                     lambda name=name: self.backend.drain([name], self.reason),
                     "drain %s: %s" % (name, self.reason))

    def _plan_set_reason(self, plan):
        for name in self.nodes:
            state = self.before[name]
            if state.foreign:
                self.foreign.append(name)
                continue
            if state.reason == self.reason and state.drained:
                continue
            self.acted.append(name)
            plan.add("reason %s" % name, state.reason, self.reason,
                     lambda name=name: self.backend.set_reason([name], self.reason),
                     "keep %s drained: %s" % (name, self.reason))

    def _plan_resume(self, plan):
        for name in self.nodes:
            state = self.before[name]
            if not state.drained:
                continue
            if not is_our_reason(state.reason):
                # Someone else drained it: never resumed by a rollout.
                self.foreign.append(name)
                continue
            self.acted.append(name)
            plan.add("resume %s" % name, state.reason, None, lambda name=name: self.backend.resume([name]),
                     "resume %s (was: %s)" % (name, state.reason))

    def _plan_reboot(self, plan):
        for name in self.nodes:
            state = self.before[name]
            if state.foreign:
                # Someone else's drain (or down): a reboot with nextstate=RESUME would bring the node
                # back, and a reason of ours would replace theirs. Left exactly as it is, and said.
                self.foreign.append(name)
                self.ctx.warn("%s was not handed to the scheduler for a reboot: it is out of service for someone "
                              "else (%s, reason %r), and keeps that reason and stays out of service. It still needs "
                              "a reboot for: %s; reboot it when their work is done, then run the rollout again"
                              % (name, state.state.lower(), state.reason, self.reason[len(REASON_PREFIX):].strip()))
                continue
            if "REBOOT_REQUESTED" in state.flags or "REBOOT_ISSUED" in state.flags:
                continue
            self.acted.append(name)
            plan.add("reboot %s" % name, None, self.reason, lambda name=name: self.backend.reboot([name], self.reason),
                     "reboot %s when idle, then back in service: %s" % (name, self.reason))

    def step_back(self):
        """After a drain within a limit: the pool read again; when another run drained at the same
        moment and more than the limit are out now, the nodes this call took out go back in service
        (our own drain, just made: no job was placed elsewhere for it) and are deferred."""
        if self.limit is None or not self.taken:
            return self.backend.query(self.nodes)
        now = self.backend.query(list(dict.fromkeys(self.nodes + self.pool)))
        _free, unavailable = drain_capacity(dict((n, now[n]) for n in self.pool), self.limit)
        excess = len(unavailable) - self.limit
        if excess <= 0:
            return now
        back = self.taken[-excess:]
        self.backend.resume(back)
        self.stepped_back = list(back)
        self.step_back_reason = ("%d node(s) of the pool out of service after the drain (%s), more than "
                                 "max_unavailable %d: another run drained at the same time; %s resumed and deferred (it was "
                                 "drained for: %s)" % (len(unavailable), ", ".join(unavailable), self.limit,
                                                       ", ".join(back), self.reason))
        self.acted = [name for name in self.acted if name not in back]
        self.deferred.extend(back)
        # two runs that collided would collide again if they retried in step
        time.sleep(random.uniform(0.0, 2.0))
        return self.backend.query(self.nodes)

    def verify(self):
        action, problems = self.params["action"], []
        after = self.step_back() if action == "drain" else self.backend.query(self.nodes)
        for name in self.acted:
            state = after[name]
            if action in ("drain", "set_reason") and not (state.drained and state.reason == self.reason):
                problems.append("%s is %s (reason %r), not drained with ours" % (name, state.state, state.reason))
            if action == "resume" and state.drained:
                problems.append("%s is still drained (reason %r)" % (name, state.reason))
        self.after = after
        return problems

    def result(self):
        result = dict(backend=self.backend.name, nodes=_report(getattr(self, "after", None) or getattr(self, "before", {})),
                      acted=list(getattr(self, "acted", [])), deferred=list(getattr(self, "deferred", [])),
                      foreign=list(getattr(self, "foreign", [])))
        if getattr(self, "reason", None):
            result["reason"] = self.reason
        if self.limit is not None:
            result.update(max_unavailable=self.limit, unavailable=getattr(self, "unavailable", []))
        if getattr(self, "stepped_back", None):
            result.update(stepped_back=list(self.stepped_back), step_back_reason=self.step_back_reason)
            if not self.acted:
                result["changed"] = False  # drained and resumed again: the scheduler is as it was
        return result
