# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Any other scheduler, through the site's own commands.

Each command is a shell command line the site writes (it is theirs to trust); the node and our
reason reach it as the environment variables ``RDMAOPS_NODE`` and ``RDMAOPS_REASON``, never by
pasting them into the line, so a reason cannot change what runs.

* ``busy``: exit 0 printing nothing when the node runs no job; exit 0 printing the jobs (one per
  line) when it does; any other exit status means the scheduler did not answer.
* ``drain`` / ``resume``: exit 0 when done.
* ``state`` (optional): prints ``available``, ``drained`` or ``down`` and, after a space, the
  drain reason.  Without it a node counts as available unless this rollout drained it (its own
  reason is then known from ``drain``'s effect only through ``state``), and a drain by someone
  else cannot be recognised: say so in the site's runbook.
* ``reboot`` (optional): asks the scheduler to reboot the node when idle.

Every command runs under a time bound (``timeout``, rdmaops_scheduler_timeout): one that runs
longer is killed with its process group (``/bin/sh`` and whatever it started, unless that left
the group itself) and the module fails naming it.  What a command prints is decoded with U+FFFD
for bytes that are not UTF-8.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner, CommandTimeout
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import (
    COMMAND_TIMEOUT,
    NodeState,
    SchedulerUnavailable,
    check_node_names,
    timeout_source,
)

COMMANDS = ("busy", "drain", "resume", "state", "reboot")
STATES = ("available", "drained", "down")


class CommandBackend:
    """``runner``: the run's CommandRunner (an AnsibleModule is wrapped in one); ``timeout``: the
    seconds each command may run."""

    name = "command"

    def __init__(self, runner, commands, timeout=COMMAND_TIMEOUT):
        self.runner = runner if isinstance(runner, CommandRunner) else CommandRunner(runner)
        self.timeout = timeout
        self.commands = dict((key, value) for key, value in (commands or {}).items() if value)
        unknown = sorted(set(self.commands) - set(COMMANDS))
        if unknown:
            raise InputError("rdmaops_scheduler_commands has unknown key%s %s: the keys are %s"
                             % ("s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(COMMANDS)),
                             option="rdmaops_scheduler_commands")
        missing = [key for key in ("busy", "drain", "resume") if not self.commands.get(key)]
        if missing:
            raise InputError("rdmaops_scheduler: command needs rdmaops_scheduler_commands.%s (a shell command line; "
                             "the node is in $RDMAOPS_NODE)" % ", .".join(missing), option="rdmaops_scheduler_commands")
        for key, value in self.commands.items():
            if not isinstance(value, str) or not value.strip():
                raise InputError("rdmaops_scheduler_commands.%s must be a command line (a string)" % key,
                                 option="rdmaops_scheduler_commands")
        self.ran = []

    def _run(self, key, node, reason="", timeout=None):
        line = self.commands[key]
        bound = timeout or self.timeout
        self.ran.append("%s (RDMAOPS_NODE=%s)" % (line, node))
        try:
            done = self.runner.run(["/bin/sh", "-c", line], check=False, timeout=bound, errors="replace",
                                   environ=dict(RDMAOPS_NODE=node, RDMAOPS_REASON=reason))
        except CommandTimeout as exc:
            details = dict(exc.details, cmd=line, node=node)
            if key not in ("busy", "state"):
                details["left_changed"] = "unknown"
            raise SchedulerUnavailable(
                "the scheduler's %s command for %s did not finish within %d s (%s) and was killed with its "
                "process group: %s; %s" % (
                    key, node, bound, timeout_source(bound, self.timeout), line,
                    "nothing was drained or changed" if key in ("busy", "state") else
                    "whether it took effect is unknown, and nothing further was changed"), **details)
        rc, out, err = done.rc, done.stdout, done.stderr
        if rc != 0:
            raise SchedulerUnavailable(
                "the scheduler's %s command failed for %s (rc=%d): %s; nothing further was drained or changed"
                % (key, node, rc, (err or out or "no output").strip()),
                cmd=line, rc=rc, stdout=out, stderr=err, node=node)
        return out

    def read(self, nodes, timeout=None):
        """``{name: NodeState}`` of ``nodes``: the site's commands read one node at a time, so there
        is no reading of every node at once."""
        return self.query(nodes, timeout)

    def query(self, nodes, timeout=None):
        result = {}
        for node in check_node_names(nodes):
            jobs = [line.strip() for line in self._run("busy", node, timeout=timeout).split("\n") if line.strip()]
            state, reason = "available", None
            if self.commands.get("state"):
                # the first line only: a reason cannot go on to a second
                said = self._run("state", node, timeout=timeout).strip().split("\n")[0].strip()
                state, _sep, reason = said.partition(" ")
                if state not in STATES:
                    raise RdmaopsError("the scheduler's state command printed %r for %s: it must print one of %s, "
                                       "then optionally a space and the drain reason" % (said[:80], node, ", ".join(STATES)),
                                       node=node)
            result[node] = NodeState(
                name=node, state=state.upper(), reason=reason or None, busy=bool(jobs),
                drained=state == "drained", out_of_service=state != "available",
                jobs=[dict(id=line, state="RUNNING", nodes=node, user="", name="") for line in jobs])
        return result

    def drain(self, nodes, reason):
        for node in check_node_names(nodes):
            self._run("drain", node, reason)

    def set_reason(self, nodes, reason):
        self.drain(nodes, reason)

    def resume(self, nodes):
        for node in check_node_names(nodes):
            self._run("resume", node)

    def reboot(self, nodes, reason):
        if not self.commands.get("reboot"):
            raise InputError("rdmaops_scheduler_commands.reboot is not set: the scheduler cannot be asked to reboot "
                             "%s; set it, or rdmaops_reboot: allowed to let the rollout reboot idle hosts itself"
                             % ", ".join(nodes), option="rdmaops_scheduler_commands")
        for node in check_node_names(nodes):
            self._run("reboot", node, reason)
