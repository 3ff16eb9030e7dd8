# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for iproute2 ``dcb -j`` output (``dcb/dcb_*.c``; reference section 2.3).

The top level is one JSON object (not a list).  Shapes by iproute2 generation:

* ``pfc``: ``{"pfc_cap", "macsec_bypass", "delay", "prio_pfc": [8 bools]}`` (``-s`` adds counters);
* ``ets``: ``{"willing", "ets_cap", "cbs", "tc_bw", "pg_bw", "tc_tsa", "prio_tc", "reco_..."}``;
* ``app ... dscp-prio``: ``{"dscp_prio": [[26, 3], ...]}`` in iproute2 5.12 to 6.4, and
  ``[[26, 3, " "], ...]`` from 6.5 on (a literal third element); the key is missing when the
  table holds no DSCP entry;
* ``buffer``: ``{"prio_buffer": [8], "buffer_size": [8 bytes], "total_size": bytes}``.

Every parser returns None for output it cannot read, so the engine can tell "no such state"
from "empty state".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

TSA = ("strict", "cbs", "ets", "vendor")


def _object(text):
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _int_list(value, lo=0, hi=None):
    if not isinstance(value, list) or len(value) != 8:
        return None
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < lo or (hi is not None and item > hi):
            return None
        out.append(item)
    return out


def parse_pfc(text):
    """``dcb -j pfc show dev IF``: ``{"pfc": sorted enabled priorities, "delay": int or None, "pfc_cap"}``."""
    data = _object(text)
    if data is None:
        return None
    bits = data.get("prio_pfc")
    if not isinstance(bits, list) or len(bits) != 8 or not all(isinstance(bit, bool) for bit in bits):
        return None
    delay = data.get("delay")
    return dict(
        pfc=[prio for prio, on in enumerate(bits) if on],
        delay=delay if isinstance(delay, int) and not isinstance(delay, bool) else None,
        pfc_cap=data.get("pfc_cap"),
    )


def parse_ets(text):
    """``dcb -j ets show dev IF``: ``{"prio_tc": [8], "tsa": [8], "bw": [8]}``."""
    data = _object(text)
    if data is None:
        return None
    prio_tc = _int_list(data.get("prio_tc"), 0, 7)
    bw = _int_list(data.get("tc_bw"), 0, 100)
    tsa = data.get("tc_tsa")
    if prio_tc is None or bw is None or not isinstance(tsa, list) or len(tsa) != 8:
        return None
    return dict(prio_tc=prio_tc, tsa=[str(item) for item in tsa], bw=bw)


def parse_app_dscp(text):
    """``dcb -j app show dev IF dscp-prio``: the DSCP entries as a sorted list of ``(dscp, prio)``.

    A DSCP may appear with two priorities on drivers that keep both (not mlx5), so this is a list,
    not a dict.  Pairs are read as their first two items (6.5 added a third).
    """
    data = _object(text)
    if data is None:
        return None
    pairs = data.get("dscp_prio", [])
    if not isinstance(pairs, list):
        return None
    entries = set()
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) < 2:
            return None
        dscp, prio = pair[0], pair[1]
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (dscp, prio)):
            return None
        entries.add((dscp, prio))
    return sorted(entries)


def parse_buffer(text):
    """``dcb -j buffer show dev IF``: ``{"prio2buffer": [8], "buffer_size": [8], "total_size"}``."""
    data = _object(text)
    if data is None:
        return None
    prio2buffer = _int_list(data.get("prio_buffer"), 0, 7)
    sizes = _int_list(data.get("buffer_size"), 0)
    if prio2buffer is None or sizes is None:
        return None
    total = data.get("total_size")
    return dict(prio2buffer=prio2buffer, buffer_size=sizes, total_size=total if isinstance(total, int) else None)


def unsupported(stderr):
    """True when dcb's error says the netdev has no DCB ops (``Attribute read: Operation not supported``)."""
    return "Operation not supported" in (stderr or "")
