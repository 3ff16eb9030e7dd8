# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm as a rollout's scheduler: what its tools print, read as data, and the commands that
drain, resume and reboot nodes.

Only the client tools run (``scontrol``, ``squeue``), as argv lists, on whichever host has a
working Slurm configuration, each under a time bound (``timeout``: killed with its process group
when it hangs).  Their output formats were recorded from Debian's slurm-wlm 22.05
(tests/unit/fixtures/slurm): ``scontrol show node -o`` prints one line per node whose
``Reason=`` field, when there is one, is the last and may hold spaces; ``squeue`` prints the
fields we ask for with ``-o``.

What they print is read defensively, as text from a cluster that may be odd or hostile: bytes
that are not UTF-8 (a reason someone typed) are decoded with U+FFFD; a node listed twice is
never idle; a state or flag this module does not know is never idle; a job state it does not
know holds the node; a node list it cannot read holds every node it was asked about.  No input
makes the parsers raise.

One read can serve a whole run: :meth:`SlurmBackend.read` with no names reads every node and
every job once; :func:`~.common.select_nodes` picks the nodes of each later decision from it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import CommandError, InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandTimeout
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import (
    COMMAND_TIMEOUT,
    NodeState,
    SchedulerUnavailable,
    check_node_names,
    select_nodes,
    timeout_source,
)

# Node states (the word before the first "+") and flags, as scontrol prints them (Slurm 22.05 to
# 24.x). A state or flag not listed here is not idle (see parse_show_node).
IDLE_STATES = ("IDLE",)
BUSY_STATES = ("ALLOCATED", "MIXED", "COMPLETING")
OUT_OF_SERVICE_STATES = ("DOWN", "FUTURE", "UNKNOWN", "ERROR")
KNOWN_STATES = IDLE_STATES + BUSY_STATES + OUT_OF_SERVICE_STATES
BUSY_FLAGS = ("COMPLETING", "PLANNED")
OUT_OF_SERVICE_FLAGS = ("DRAIN", "FAIL", "REBOOT_ISSUED", "MAINTENANCE", "POWERED_DOWN", "POWERING_DOWN")
# Flags that say nothing about jobs: a node with them and an idle state runs no job.
QUIET_FLAGS = ("CLOUD", "DYNAMIC_FUTURE", "DYNAMIC_NORM", "INVALID_REG", "NOT_RESPONDING", "PERFCTRS", "POWER_DOWN",
               "POWERING_UP", "REBOOT_REQUESTED", "RESERVED", "RESUME", "UNDRAIN")
KNOWN_FLAGS = BUSY_FLAGS + OUT_OF_SERVICE_FLAGS + QUIET_FLAGS
# Job states of a job that no longer (or not yet) holds its nodes; any other state holds them.
ENDED_JOB_STATES = ("PENDING", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                    "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT")
# Kept for callers that listed the holding states: what a job in these states does.
HOLDING_JOB_STATES = ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STAGE_OUT", "SIGNALING")
SQUEUE_FORMAT = "%i|%T|%N|%u|%j"

_REASON = re.compile(r"(?P<text>.*?)(?: \[(?P<user>[^@\]\s]+)@(?P<time>[^\]\s]+)\])?", re.S)
_UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Zero Bytes were transmitted",
                "Communication connection failure")
_NOT_FOUND = re.compile(r"^Node (\S+) not found$", re.M)
_INVALID_NAME = re.compile(r"Invalid node name (\S+)")
# A host list item: literal text and bracketed ranges ("gpu[01-04]", "rack[1-2]-n[1-8]").
_LIST_ITEM = re.compile(r"(?:[^,\[\]]|\[[^\[\]]*\])+")
_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
# Most names expand_simple_list returns (a hostile "n[0-999999999]" is not a list to build).
EXPAND_LIMIT = 65536


def _lines(text):
    """The lines of a tool's output: split at line feeds only (a reason or a job name may hold
    other characters that Python's splitlines would break a line at)."""
    return (text or "").replace("\r", "").split("\n")


def parse_show_node(text):
    """``{name: NodeState}`` from ``scontrol show node -o``; jobs are filled in from squeue.

    A node listed more than once is merged and is never idle (:meth:`NodeState.merge`); a state
    or flag not known here leaves it busy (and a state out of service), never idle."""
    nodes = {}
    for line in _lines(text):
        if not line.startswith("NodeName="):
            continue
        head, has_reason, reason = line.partition(" Reason=")
        fields = {}
        for token in head.split():
            key, sep, value = token.partition("=")
            if sep and key not in fields:
                fields[key] = value
        name = fields.get("NodeName")
        if not name:
            continue
        text = fields.get("State", "").upper().rstrip("*")
        words = text.split("+") if text else []
        state, flags = (words[0], words[1:]) if words else ("UNKNOWN", [])
        # an empty word ("IDLE+") is as unknown as any other
        known = bool(words) and state in KNOWN_STATES and all(flag in KNOWN_FLAGS for flag in flags)
        reason_text, reason_user = None, None
        if has_reason:
            match = _REASON.fullmatch(reason.strip())
            reason_text, reason_user = (match.group("text"), match.group("user")) if match else (reason.strip(), None)
        node = NodeState(
            name=name,
            state=state,
            flags=flags,
            reason=reason_text or None,
            reason_user=reason_user,
            busy=(not known or state in BUSY_STATES or any(flag in BUSY_FLAGS for flag in flags)),
            drained="DRAIN" in flags,
            out_of_service=(state not in IDLE_STATES + BUSY_STATES
                            or any(flag in OUT_OF_SERVICE_FLAGS for flag in flags)),
        )
        if name in nodes:
            nodes[name].merge(node)
        else:
            nodes[name] = node
    return nodes


def parse_squeue(text):
    """The jobs ``squeue -h -o '%i|%T|%N|%u|%j'`` lists: ``[{id, state, nodes, user, name}]``."""
    jobs = []
    for line in _lines(text):
        parts = line.split("|", 4)
        if len(parts) != 5 or not parts[0].strip():
            continue
        jobs.append(dict(id=parts[0].strip(), state=parts[1].strip().upper(), nodes=parts[2].strip(),
                         user=parts[3].strip(), name=parts[4].strip()))
    return jobs


def holds(job):
    """Whether ``job`` holds its nodes: every state but those of a job that ended or waits."""
    return job.get("state") not in ENDED_JOB_STATES


def attach_jobs(states, jobs):
    """Each holding job added to the nodes of ``states`` it runs on; a node with one is busy.

    A node list this module cannot read (not Slurm's host list syntax) holds every node of
    ``states``: a job that cannot be placed is never taken for none.  Returns ``states``."""
    for job in jobs:
        if not holds(job):
            continue
        names = node_list_members(job["nodes"], states)
        for name in (states if names is None else names):
            states[name].jobs.append(job)
    for state in states.values():
        state.busy = state.busy or bool(state.jobs)
    return states


def _list_items(text):
    """``[(pattern, [ranges per bracket])]`` for a host list, or None when it is not one."""
    text = (text or "").strip()
    items = _LIST_ITEM.findall(text)
    if not text or ",".join(items) != text:
        return None
    parsed = []
    for item in items:
        pieces = re.split(r"(\[[^\[\]]*\])", item)
        pattern, ranges = "", []
        for piece in pieces:
            if piece.startswith("["):
                bounds = []
                for part in piece[1:-1].split(","):
                    match = _RANGE.fullmatch(part)
                    if not match:
                        return None
                    low, high = match.group(1), match.group(2) or match.group(1)
                    if int(high) < int(low):
                        return None
                    bounds.append((low, high))
                ranges.append(bounds)
                pattern += "([0-9]+)"
            else:
                pattern += re.escape(piece)
        parsed.append((re.compile(pattern), ranges))
    return parsed


def _in_range(digits, bounds):
    for low, high in bounds:
        number = int(digits)
        if int(low) <= number <= int(high) and "%0*d" % (len(low), number) == digits:
            return True
    return False


def node_list_members(text, names):
    """Which of ``names`` Slurm's host list ``text`` names (``vm1``, ``gpu[007-009,012]``,
    ``rack[1-2]-n[01-08]``), found without expanding the list; None when ``text`` is not a host
    list.  Linear in the list and the names."""
    items = _list_items(text)
    if items is None:
        return None
    found = []
    for name in names:
        for pattern, ranges in items:
            match = pattern.fullmatch(name)
            if match and all(_in_range(digits, bounds) for digits, bounds in zip(match.groups(), ranges)):
                found.append(name)
                break
    return found


def unknown_nodes(text):
    """The node names Slurm said it does not know, from scontrol's or squeue's error text."""
    return sorted(set(_NOT_FOUND.findall(text or "")) | set(_INVALID_NAME.findall(text or "")))


def is_unreachable(text):
    return any(marker in (text or "") for marker in _UNREACHABLE)


class SlurmBackend:
    """Query, drain, resume and reboot Slurm nodes with the client tools.

    ``timeout``: the seconds each command may run (rdmaops_scheduler_timeout)."""

    name = "slurm"

    def __init__(self, runner, timeout=COMMAND_TIMEOUT):
        self.runner = runner
        self.timeout = timeout

    def _run(self, argv, timeout=None, changes=False):
        """``argv`` under the time bound (``timeout``, or the backend's), its output decoded with
        replacement.  ``changes``: the command changes the scheduler (a killed one may have)."""
        bound = timeout or self.timeout
        try:
            return self.runner.run(argv, timeout=bound, errors="replace")
        except CommandTimeout as exc:
            details = dict(exc.details)
            if changes:
                details["left_changed"] = "unknown"
            raise SchedulerUnavailable(
                "Slurm did not answer: `%s` did not finish within %d s (%s) and was killed; %s"
                % (" ".join(argv), bound, timeout_source(bound, self.timeout),
                   "whether Slurm applied it is unknown (the next query shows it), and nothing further was changed"
                   if changes else "nothing was drained or changed"), **details)
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

    def read(self, nodes=None, timeout=None):
        """``{name: NodeState}`` with jobs, in one ``scontrol show node`` and one ``squeue``: of
        ``nodes`` (checked names), or of every node Slurm has when ``nodes`` is None, for a run
        that reads the scheduler once and decides from that read."""
        if nodes is None:
            shown = parse_show_node(self._run(["scontrol", "show", "node", "-o"], timeout).stdout)
            jobs = parse_squeue(self._run(["squeue", "-h", "-o", SQUEUE_FORMAT], timeout).stdout)
            return attach_jobs(shown, jobs)
        nodes = check_node_names(nodes)
        shown = parse_show_node(self._run(["scontrol", "show", "node", "-o", ",".join(nodes)], timeout).stdout)
        # only the nodes asked for: a line for another name (a reason holding a line feed) is ignored
        shown = dict((name, shown[name]) for name in nodes if name in shown)
        missing = [name for name in nodes if name not in shown]
        if missing:
            raise InputError("Slurm does not list the node%s %s: set rdmaops_slurm_node_name to the node's name in "
                             "slurm.conf" % ("s" if len(missing) > 1 else "", ", ".join(missing)),
                             option="rdmaops_slurm_node_name", unknown=missing)
        jobs = parse_squeue(self._run(["squeue", "-h", "-w", ",".join(nodes), "-o", SQUEUE_FORMAT], timeout).stdout)
        return attach_jobs(shown, jobs)

    def query(self, nodes, timeout=None):
        """``{name: NodeState}`` of exactly ``nodes``, in their order."""
        return select_nodes(self.read(nodes, timeout), check_node_names(nodes))

    def drain(self, nodes, reason):
        self._run(["scontrol", "update", "NodeName=" + ",".join(check_node_names(nodes)), "State=DRAIN",
                   "Reason=" + reason], changes=True)

    def resume(self, nodes):
        self._run(["scontrol", "update", "NodeName=" + ",".join(check_node_names(nodes)), "State=RESUME"],
                  changes=True)

    def set_reason(self, nodes, reason):
        """A drained node's reason rewritten (a failed gate names its finding); it stays drained."""
        self.drain(nodes, reason)

    def reboot(self, nodes, reason):
        """Slurm reboots each node once it runs no job, and returns it to service afterwards.
        Only for nodes in service or drained by a rollout: the engine never hands it a node that
        someone else drained (``nextstate=RESUME`` would bring that node back)."""
        self._run(["scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=" + reason,
                   ",".join(check_node_names(nodes))], changes=True)


def expand_simple_list(text, limit=EXPAND_LIMIT):
    """Node names of a squeue node list: plain names and the ``prefix[1-3,5]`` form Slurm prints,
    at most ``limit`` of them (a list that is not a host list gives its items as they are)."""
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", text or ""):
        match = re.fullmatch(r"(.*)\[([^\]]*)\]", part)
        if not match:
            names.append(part)
            continue
        prefix, ranges = match.groups()
        for item in ranges.split(","):
            low, sep, high = item.partition("-")
            if sep and re.fullmatch(r"[0-9]{1,18}", low) and re.fullmatch(r"[0-9]{1,18}", high):
                for number in range(int(low), min(int(high), int(low) + limit) + 1):
                    names.append("%s%0*d" % (prefix, len(low), number))
                    if len(names) >= limit:
                        return names
            else:
                names.append(prefix + item)
        if len(names) >= limit:
            return names[:limit]
    return names[:limit]
