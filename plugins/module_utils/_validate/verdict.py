# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict of rdmaops.roce.fabric_check: the inputs read, every check run, and what keeps it from passing.

The verdict is ``passed`` True only when something was checked, nothing failed and nothing the
caller gave was left wholly unchecked: a host or a switch none of whose checks could run, data that
could not be read, perftest asked for and not run. Each such part is named in ``summary.unproven``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import inputs, measure
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.drift import drift_findings
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.host import host_findings
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.intent import check_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.nccl import nccl_findings
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.path import path_findings
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.rails import rail_findings, rail_peers
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.rdma import rdma_findings
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.switches import switch_findings

HOST_SOURCE = "the validate role's validate_state"

_FRACTION_TEXT = re.compile(r"[0-9]*\.?[0-9]+")


def check_fraction(value):
    """min_bw_fraction: a number (or its decimal text, matched whole) above 0 and at most 1."""
    if isinstance(value, str) and _FRACTION_TEXT.fullmatch(value):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError("min_bw_fraction must be a number above 0 and at most 1 (e.g. 0.8), not %s" % inputs.describe(value),
                         option="min_bw_fraction")
    if not 0 < value <= 1:
        raise InputError("min_bw_fraction must be above 0 and at most 1, got %s" % inputs.describe(value), option="min_bw_fraction")
    return float(value)


def read_inputs(hosts, switches):
    """``hosts`` and ``switches`` read (``inputs``): ``(host states, switch states, input findings)``.
    A host's or switch's data that is not the shape its producer writes is left out and named."""
    if not isinstance(hosts, Mapping) or not hosts:
        raise InputError("hosts must map each host's name to its state ({rdma, nic, pings, rdma_runs, counters, nccl}): %s given"
                         % ("none" if not hosts else inputs.describe(hosts)), option="hosts")
    if switches is not None and not isinstance(switches, Mapping):
        raise InputError("switches must map each switch's name to its gathered state ({fabric, interfaces}), not %s"
                         % inputs.describe(switches), option="switches")
    problems = []
    read = []
    for option, given, shape, source in (("hosts", hosts, inputs.HOST, HOST_SOURCE),
                                         ("switches", switches or {}, inputs.SWITCH, "switch_roce's gathered state")):
        # keys such as "1" and 1 name one host: its data is none of theirs (keeping the last would hide the others)
        shared = inputs.collisions(option, given, source)
        problems.extend(shared.values())
        states = {}
        for key in given:
            name, state, found = inputs.read_entry(shape, key, given[key], option, source)
            states[name] = {} if name in shared else (state or {})
            if name not in shared:
                problems.extend(found)
        read.append(states)
    return read[0], read[1], problems


def unproven_parts(findings, hosts, switches, unproven):
    """What keeps the verdict from passing without a failure: nothing checked at all, a host or switch
    of which nothing could be checked, data that could not be read, and ``unproven`` (tests asked for
    that gave no result)."""
    parts = []
    checked_owners = set(f["host"] for f in findings if f["passed"] is not None)
    first_why = {}  # each owner's first not-checked hint, read in one pass
    for f in findings:
        if f["passed"] is None:
            first_why.setdefault(f["host"], f["hint"])
    for kind, names in (("host", hosts), ("switch", switches)):
        for name in sorted(names):
            if name not in checked_owners:
                why = [first_why[name]] if name in first_why else []
                parts.append("%s %s: nothing checked%s" % (kind, name, (" (%s)" % why[0]) if why else ""))
    unreadable = ["%s %s" % (f["host"], f["field"]) for f in findings if f["check"] == "input"]
    if unreadable:
        parts.append("data that could not be read: %s" % ", ".join(unreadable[:10] + (["..."] if len(unreadable) > 10 else [])))
    parts.extend(unproven)
    if not checked_owners:
        parts.insert(0, "nothing was checked")
    return parts


def fabric_check(intent, hosts, switches=None, min_bw_fraction=0.8):
    """Everything fabric_check returns: ``{passed, findings, measurements, summary}``. ``hosts`` maps
    each host to what it read and measured: ``rdma`` (facts), ``nic`` (nic_layer's check-mode ports),
    ``pings``, ``rdma_runs`` and ``nccl`` (lists, the host as the sender or client) and ``counters``
    (``{ports, before, after}``). Data of the wrong type or shape is reported, never checked."""
    intent = check_intent(intent)
    min_bw_fraction = check_fraction(min_bw_fraction)
    states, switch_states, problems = read_inputs(hosts, switches)
    findings = []
    # built once, looked up per host: the work grows with the fleet, not with its square
    problems_of = {}
    for f in problems:
        problems_of.setdefault(f["host"], []).append(f)
    peers = rail_peers(states)
    for host in sorted(states):
        findings.extend(problems_of.get(host, ()))
        findings.extend(host_findings(host, states[host], intent))
        findings.extend(rail_findings(host, states[host], states, peers))  # multi-rail hosts only
    findings.extend(drift_findings(states))
    findings.extend(f for f in problems if f["host"] not in states)
    findings.extend(switch_findings(switch_states, intent))
    pings = [(host, ping) for host in sorted(states) for ping in states[host].get("pings") or []]
    path, measurements, unreachable = path_findings(pings, intent)
    findings.extend(path)
    runs = [(host, run) for host in sorted(states) for run in states[host].get("rdma_runs") or []]
    rdma, rdma_measurements, unproven = rdma_findings(runs, states, intent, min_bw_fraction, unreachable)
    findings.extend(rdma)
    measurements.extend(rdma_measurements)
    for host in sorted(states):
        read = states[host].get("counters")
        if read:
            measurements.extend(measure.counter_deltas(host, [tuple(p) for p in read.get("ports") or []], read.get("before"),
                                                       read.get("after"), intent["pfc_priorities"]))
    findings.extend(nccl_findings([(host, run) for host in sorted(states) for run in states[host].get("nccl") or []]))
    failed = [f for f in findings if f["passed"] is False]
    unproven = unproven_parts(findings, states, switch_states, unproven)
    summary = dict(checked=sum(1 for f in findings if f["passed"] is not None), failed=len(failed),
                   not_checked=sum(1 for f in findings if f["passed"] is None),
                   failed_hosts=sorted(set(f["host"] for f in failed)), unproven=unproven)
    return dict(passed=not failed and not unproven, findings=findings, measurements=measurements, summary=summary)
