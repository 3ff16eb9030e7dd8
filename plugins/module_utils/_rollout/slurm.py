# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm as a rollout's scheduler: what its tools print, read as data, and the commands that
drain, resume and reboot nodes.

Only the client tools run (``scontrol``, ``squeue``), as argv lists, on whichever host has a
working Slurm configuration.  Their output formats were recorded from Debian's slurm-wlm 22.05
(tests/unit/fixtures/slurm): ``scontrol show node -o`` prints one line per node whose
``Reason=`` field, when there is one, is the last and may hold spaces; ``squeue`` prints the
fields we ask for with ``-o``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import CommandError, InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import (
    NodeState,
    SchedulerUnavailable,
    check_node_names,
)

# Node states in which a node runs (or finishes) work, and flags that take it out of service.
BUSY_STATES = ("ALLOCATED", "MIXED", "COMPLETING")
BUSY_FLAGS = ("COMPLETING",)
OUT_OF_SERVICE_FLAGS = ("DRAIN", "FAIL", "REBOOT_ISSUED", "MAINTENANCE", "POWERED_DOWN", "POWERING_DOWN")
OUT_OF_SERVICE_STATES = ("DOWN", "FUTURE", "UNKNOWN")
# Job states that still hold a node.
HOLDING_JOB_STATES = ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STAGE_OUT", "SIGNALING")
SQUEUE_FORMAT = "%i|%T|%N|%u|%j"

_REASON = re.compile(r"(?P<text>.*?)(?: \[(?P<user>[^@\]\s]+)@(?P<time>[^\]\s]+)\])?")
_UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Zero Bytes were transmitted",
                "Communication connection failure")
_NOT_FOUND = re.compile(r"^Node (\S+) not found$", re.M)
_INVALID_NAME = re.compile(r"Invalid node name (\S+)")


def parse_show_node(text):
    """``{name: NodeState}`` from ``scontrol show node -o``; jobs are filled in from squeue."""
    nodes = {}
    for line in (text or "").splitlines():
        if not line.startswith("NodeName="):
            continue
        head, has_reason, reason = line.partition(" Reason=")
        fields = {}
        for token in head.split():
            key, sep, value = token.partition("=")
            if sep and key not in fields:
                fields[key] = value
        words = fields.get("State", "UNKNOWN").rstrip("*").split("+")
        reason_text, reason_user = None, None
        if has_reason:
            match = _REASON.fullmatch(reason.strip())
            reason_text, reason_user = match.group("text"), match.group("user")
        nodes[fields["NodeName"]] = NodeState(
            name=fields["NodeName"],
            state=words[0],
            flags=words[1:],
            reason=reason_text,
            reason_user=reason_user,
            busy=words[0] in BUSY_STATES or any(flag in BUSY_FLAGS for flag in words[1:]),
            drained="DRAIN" in words[1:],
            out_of_service=words[0] in OUT_OF_SERVICE_STATES or any(flag in OUT_OF_SERVICE_FLAGS for flag in words[1:]),
        )
    return nodes


def parse_squeue(text):
    """The jobs ``squeue -h -o '%i|%T|%N|%u|%j'`` lists: ``[{id, state, nodes, user, name}]``."""
    jobs = []
    for line in (text or "").splitlines():
        parts = line.split("|", 4)
        if len(parts) != 5 or not parts[0].strip():
            continue
        jobs.append(dict(id=parts[0].strip(), state=parts[1].strip(), nodes=parts[2].strip(),
                         user=parts[3].strip(), name=parts[4].strip()))
    return jobs


def unknown_nodes(text):
    """The node names Slurm said it does not know, from scontrol's or squeue's error text."""
    return sorted(set(_NOT_FOUND.findall(text or "")) | set(_INVALID_NAME.findall(text or "")))


def is_unreachable(text):
    return any(marker in (text or "") for marker in _UNREACHABLE)


class SlurmBackend:
    """Query, drain, resume and reboot Slurm nodes with the client tools."""

    name = "slurm"

    def __init__(self, runner):
        self.runner = runner

    def _run(self, argv):
        try:
            return self.runner.run(argv)
        except CommandError as exc:
            said = exc.output()
            if is_unreachable(said):
                raise SchedulerUnavailable(
                    "Slurm does not answer (%s: %s): nothing was drained or changed; start slurmctld or "
                    "point rdmaops_slurm_controller at a host whose Slurm client reaches it" % (argv[0], said),
                    cmd=exc.details.get("cmd"), rc=exc.details.get("rc"), stderr=exc.details.get("stderr"))
            missing = unknown_nodes(said)
            if missing:
                raise InputError(
                    "Slurm does not know the node%s %s: set rdmaops_slurm_node_name for %s to the node's name "
                    "in slurm.conf (the default is the short inventory name)"
                    % ("s" if len(missing) > 1 else "", ", ".join(missing), "them" if len(missing) > 1 else "it"),
                    option="rdmaops_slurm_node_name", unknown=missing)
            raise RdmaopsError("%s failed (rc=%s): %s" % (" ".join(argv[:3]), exc.details.get("rc"), said or "no output"),
                               **exc.details)

    def query(self, nodes):
        nodes = check_node_names(nodes)
        shown = parse_show_node(self._run(["scontrol", "show", "node", "-o", ",".join(nodes)]).stdout)
        missing = [name for name in nodes if name not in shown]
        if missing:
            raise InputError("Slurm does not list the node%s %s: set rdmaops_slurm_node_name to the node's name in "
                             "slurm.conf" % ("s" if len(missing) > 1 else "", ", ".join(missing)),
                             option="rdmaops_slurm_node_name", unknown=missing)
        jobs = parse_squeue(self._run(["squeue", "-h", "-w", ",".join(nodes), "-o", SQUEUE_FORMAT]).stdout)
        for job in jobs:
            if job["state"] not in HOLDING_JOB_STATES:
                continue
            for name in expand_simple_list(job["nodes"]):
                if name in shown:
                    shown[name].jobs.append(job)
        for state in shown.values():
            state.busy = state.busy or bool(state.jobs)
        return dict((name, shown[name]) for name in nodes)

    def drain(self, nodes, reason):
        self._run(["scontrol", "update", "NodeName=" + ",".join(check_node_names(nodes)), "State=DRAIN",
                   "Reason=" + reason])

    def resume(self, nodes):
        self._run(["scontrol", "update", "NodeName=" + ",".join(check_node_names(nodes)), "State=RESUME"])

    def set_reason(self, nodes, reason):
        """A drained node's reason rewritten (a failed gate names its finding); it stays drained."""
        self.drain(nodes, reason)

    def reboot(self, nodes, reason):
        """Slurm reboots each node once it runs no job, and returns it to service afterwards."""
        self._run(["scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=" + reason,
                   ",".join(check_node_names(nodes))])


def expand_simple_list(text):
    """Node names of a squeue node list: plain names and the ``prefix[1-3,5]`` form Slurm prints."""
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", text or ""):
        match = re.fullmatch(r"(.*)\[([^\]]*)\]", part)
        if not match:
            names.append(part)
            continue
        prefix, ranges = match.groups()
        for item in ranges.split(","):
            low, sep, high = item.partition("-")
            if sep and low.isdigit() and high.isdigit():
                names.extend("%s%0*d" % (prefix, len(low), number) for number in range(int(low), int(high) + 1))
            else:
                names.append(prefix + item)
    return names
