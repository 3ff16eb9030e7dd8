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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import (
    NodeState,
    SchedulerUnavailable,
    check_node_names,
)

COMMANDS = ("busy", "drain", "resume", "state", "reboot")
STATES = ("available", "drained", "down")


class CommandBackend:
    name = "command"

    def __init__(self, module, commands):
        self.module = module
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

    def _run(self, key, node, reason=""):
        line = self.commands[key]
        self.ran.append("%s (RDMAOPS_NODE=%s)" % (line, node))
        rc, out, err = self.module.run_command(
            ["/bin/sh", "-c", line], check_rc=False,
            environ_update=dict(RDMAOPS_NODE=node, RDMAOPS_REASON=reason, LANG="C", LC_ALL="C"))
        if rc != 0:
            raise SchedulerUnavailable(
                "the scheduler's %s command failed for %s (rc=%d): %s; nothing further was drained or changed"
                % (key, node, rc, (err or out or "no output").strip()),
                cmd=line, rc=rc, stdout=out, stderr=err, node=node)
        return out

    def query(self, nodes):
        result = {}
        for node in check_node_names(nodes):
            jobs = [line.strip() for line in self._run("busy", node).splitlines() if line.strip()]
            state, reason = "available", None
            if self.commands.get("state"):
                said = self._run("state", node).strip()
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
