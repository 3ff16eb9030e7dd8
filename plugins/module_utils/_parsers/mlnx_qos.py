# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parser for what ``mlnx_qos -i IF`` prints (Mellanox/mlnx-tools ``python/mlnx_qos``).

The layout is ``pretty_print()``'s (../shared/reference/nic-ground-truth.md, section 1.4):

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
    \\tprio:3 dscp:26,
    Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=2044224
    Cable len: 7
    PFC configuration:
    \\tpriority    0   1   2   3   4   5   6   7
    \\tenabled     0   0   0   1   0   0   0   0
    \\tbuffer      0   0   0   1   0   0   0   0
    tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%
    \\t priority:  0

Tool generations handled: before 2023-05 the buffer line ended in ``total_size=N`` (commit b8c08c5
made it ``max_buffer_size=N``), before 2024-11 a ``default priority:`` line followed the dscp2prio
block, and any build prints an lldpad warning first when lldpad runs.  The order of the DSCPs in
a ``prio:`` line follows the kernel's app list and means nothing; a long list is split over
several lines with the same prefix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_TRUST = re.compile(r"Priority trust state:\s*(\S+)")
_DCBX = re.compile(r"DCBX mode:\s*(.*\S)")
_DSCP_LINE = re.compile(r"prio:(\d+)\s+dscp:((?:\d+,)*\d*)")
_BUFFER = re.compile(r"Receive buffer size \(bytes\):\s*([\d,]*?),?(?:(max_buffer_size|total_size)=(\d+))?")
_CABLE = re.compile(r"(?i)cable[_ ]len\w*\s*:\s*(\d+)")
_TC = re.compile(r"tc:\s*(\d+)\s+ratelimit:\s*(unlimited|[\d.]+ Gbps),\s*tsa:\s*(vendor|strict|ets|unknown)(?:,\s*bw:\s*(\d+)%)?")
_TC_PRIO = re.compile(r"priority:\s+(\d+)")
_ROW = re.compile(r"(priority|enabled|buffer)((?:\s+\d+)+)")


def _ints(text):
    return [int(item) for item in text.split(",") if item.strip() != ""]


def parse_mlnx_qos(text):
    """``mlnx_qos -i IF`` output as a dict.

    Keys: ``dcbx`` (text or None), ``trust`` (``pcp``/``dscp``/``none`` or None), ``dscp2prio``
    (``{dscp: prio}``, empty unless trust is dscp), ``buffer_size`` (8 bytes values or None),
    ``max_buffer_size`` (or None), ``cable_len`` (or None), ``pfc`` (sorted enabled priorities, or
    None when the table is missing), ``prio2buffer`` (8 values or None), ``tcs``
    (``{tc: {"ratelimit", "tsa", "bw", "priorities"}}``) and ``prio_tc`` (8 TCs, None where a
    priority was not printed).
    """
    state = dict(dcbx=None, trust=None, dscp2prio={}, buffer_size=None, max_buffer_size=None, cable_len=None,
                 pfc=None, prio2buffer=None, tcs={}, prio_tc=None)
    rows = {}
    current_tc = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _DCBX.fullmatch(line)
        if match:
            state["dcbx"] = match.group(1)
            continue
        match = _TRUST.fullmatch(line)
        if match:
            state["trust"] = match.group(1)
            continue
        match = _DSCP_LINE.fullmatch(line)
        if match:
            prio = int(match.group(1))
            for dscp in _ints(match.group(2)):
                state["dscp2prio"][dscp] = prio
            continue
        match = _BUFFER.fullmatch(line)
        if match:
            sizes = _ints(match.group(1))
            state["buffer_size"] = sizes if len(sizes) == 8 else None
            if match.group(3):
                state["max_buffer_size"] = int(match.group(3))
            continue
        match = _CABLE.fullmatch(line)
        if match:
            state["cable_len"] = int(match.group(1))
            continue
        match = _ROW.fullmatch(line)
        if match and current_tc is None:
            rows[match.group(1)] = [int(item) for item in match.group(2).split()]
            continue
        match = _TC.fullmatch(line)
        if match:
            current_tc = int(match.group(1))
            tsa = match.group(3)
            bw = int(match.group(4)) if match.group(4) is not None else (0 if tsa in ("strict", "vendor") else None)
            state["tcs"][current_tc] = dict(ratelimit=match.group(2), tsa=tsa, bw=bw, priorities=[])
            continue
        match = _TC_PRIO.fullmatch(line)
        if match and current_tc is not None:
            state["tcs"][current_tc]["priorities"].append(int(match.group(1)))
            continue
        # Anything else (lldpad warning, 'default priority:', 'dscp2prio mapping:', 'PFC configuration:',
        # 'Buffers commands are not supported ...') carries nothing we manage.
    enabled = rows.get("enabled")
    if enabled is not None and len(enabled) == 8:
        state["pfc"] = sorted(prio for prio, on in enumerate(enabled) if on)
    buffers = rows.get("buffer")
    if buffers is not None and len(buffers) == 8:
        state["prio2buffer"] = buffers
    if state["tcs"]:
        prio_tc = [None] * 8
        for tc, info in state["tcs"].items():
            for prio in info["priorities"]:
                if 0 <= prio < 8:
                    prio_tc[prio] = tc
        state["prio_tc"] = prio_tc
    if state["trust"] != "dscp":
        state["dscp2prio"] = {}
    return state


def ets_of(state):
    """``{"tsa": [8], "bw": [8]}`` from a parsed state, None where a TC was not printed."""
    tcs = state.get("tcs") or {}
    tsa = [tcs[tc]["tsa"] if tc in tcs else None for tc in range(8)]
    bw = [tcs[tc]["bw"] if tc in tcs else None for tc in range(8)]
    return dict(tsa=tsa, bw=bw)
