# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ethtool -S <netdev>``: a driver's statistics, and the per-priority flow-control ones of mlx5.

ethtool prints ``NIC statistics:`` and then one ``     <name>: <value>`` line per string the
driver filled (``ethtool.c``'s ``dump_stats``: five spaces, the name, a colon, a space, an
unsigned 64-bit value).  The names are the driver's own: mlx5 fills ``rx_%s_pause``,
``rx_%s_pause_duration``, ``tx_%s_pause``, ``tx_%s_pause_duration`` and ``rx_%s_pause_transition``
with ``prio<N>`` for each priority that has PFC on and ``global`` when link-level pause is on
(``en_stats.c``, ``pport_per_prio_pfc_stats_desc``), so a priority without PFC has no pause line at
all.  One mlx5 version filled ``"tx_pause_storm_warning_events "`` with a trailing space: names are
stripped.  Newer ethtool versions may print per-queue or ``--all-groups`` sections indented more or
under other headers; every ``name: integer`` line is taken, the rest is skipped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_STAT = re.compile(r"^\s+(\S(?:.*\S)?)\s*:\s*(\d+)\s*$")
_PRIO_PAUSE = re.compile(r"(rx|tx)_prio([0-7])_pause(_duration|_transition)?")
_GLOBAL_PAUSE = re.compile(r"(rx|tx)_global_pause(_duration|_transition)?")


def parse_stats(text):
    """``{name: int}`` from ``ethtool -S`` output; None when the text is no statistics dump."""
    if not text or "statistics:" not in text.splitlines()[0]:
        return None
    stats = {}
    for line in text.splitlines()[1:]:
        match = _STAT.match(line)
        if match and match.group(1) not in stats:
            stats[match.group(1)] = int(match.group(2))
    return stats


def pause_counters(stats):
    """The flow-control counters of ``stats``: ``[(direction, priority, kind, value)]`` with
    direction ``rx``/``tx``, priority 0-7 or None for link-level (global) pause, and kind
    ``frames``, ``duration_us`` or ``transitions``; only those the driver printed."""
    kinds = {None: "frames", "_duration": "duration_us", "_transition": "transitions"}
    out = []
    for name, value in sorted(stats.items()):
        match = _PRIO_PAUSE.fullmatch(name)
        if match:
            out.append((match.group(1), int(match.group(2)), kinds[match.group(3)], value))
            continue
        match = _GLOBAL_PAUSE.fullmatch(name)
        if match:
            out.append((match.group(1), None, kinds[match.group(2)], value))
    return out
