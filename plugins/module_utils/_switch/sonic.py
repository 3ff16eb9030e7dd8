# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SONiC (community) driver of switch_roce: CONFIG_DB tables (see resource.py for the contract).

What is written, checked against sonic-net/sonic-buildimage src/sonic-yang-models (releases in
:data:`VERSIONS`): field names, key formats ("Ethernet0|3" for QUEUE/BUFFER_*) and ranges, with every
value a string as CONFIG_DB stores it.

==============================  ===============================================================
DSCP_TO_TC_MAP|ROCE             all 64 DSCPs (unlisted ones on TC0; SONiC's own templates list all
                                64 too), roce_dscp -> roce_priority, cnp_dscp -> cnp_priority
TC_TO_QUEUE_MAP|ROCE            TC n -> queue n (the priority *is* the TC and the queue)
TC_TO_PRIORITY_GROUP_MAP|ROCE   PFC priorities to their own PG, every other TC to PG 0
MAP_PFC_PRIORITY_TO_QUEUE|ROCE  priority n -> queue n (which queue a received pause stops)
PORT_QOS_MAP|<port>             the maps, pfc_enable "3", pfcwd_sw_enable (no priority: "" from 202505
                                on; before, whose YANG pattern refuses "", the field is left out)
WRED_PROFILE|ROCE_ECN           ecn_all, WRED on for every colour with the ECN thresholds (bytes) and
                                probability: with ECN on, SAI marks instead of dropping
SCHEDULER|ROCE_STRICT           STRICT, for the CNP queue
SCHEDULER|ROCE_DWRR_<weight>    DWRR with the ETS share as weight; the weight is in the name because
                                SCHEDULER type/weight are create-only in the YANG model
QUEUE|<port>|<q>                queue 0 and the RoCE queue on DWRR, the CNP queue STRICT, the ECN
                                queues on ROCE_ECN
PFC_WD|<port>                   action drop, detection/restoration 200 ms (pfc_watchdog true)
BUFFER_PG|<port>|<p>            only for a lossless priority no BUFFER_PG row of the port covers yet
BUFFER_QUEUE|<port>|<p>         (the platform's buffers.json.j2 usually covers 3-4 already)
PORT|<port>                     mtu only
==============================  ===============================================================

Rows of PORT_QOS_MAP, QUEUE and PFC_WD for a configured port are written whole: they replace the
switch's row.  PORT rows carry only the mtu.  Buffers: this driver never computes headroom (xoff/xon).
A lossless PG it has to add references a profile the platform already has: ``NULL`` under SONiC's
dynamic buffer model (``DEVICE_METADATA|localhost.buffer_model: dynamic``: buffermgrd computes the
headroom), otherwise the lossless PG profile the port already uses; the egress side uses the
platform's ``egress_lossless_profile``.  Without such a profile the plan refuses, naming the port.
``rendered`` (no switch) assumes the dynamic model.

Acting (the module runs on the switch: SONiC is Debian with python3): ``sonic-cfggen -d
--print-data`` reads the running CONFIG_DB, the change is an RFC 6902 patch computed with the
``jsonpatch`` library (sonic-utilities, which carries the Generic Config Updater, requires it, so every
SONiC image has it), applied with ``config checkpoint``, ``config apply-patch`` (``--dry-run`` in
check mode) and ``config rollback`` to the checkpoint when the apply fails.  The module needs root
(``become``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import re
import tempfile
import time

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, describe
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.names import PortNames, show
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import (
    Int,
    MapOf,
    ReadError,
    Record,
    Text,
    check,
    load_json,
    no_nulls,
    whole,
)

try:
    import jsonpatch
    HAS_JSONPATCH = True
except ImportError:  # rendered/parsed need no jsonpatch; acting states say which package to install
    jsonpatch = None
    HAS_JSONPATCH = False

NAME = "SONiC"
# The releases whose sonic-yang-models the tests validate against (tests/unit/fixtures/sonic_yang/).
VERSIONS = ("202411", "202511")
MAX_MTU = 9216  # sonic-port.yang: mtu range 68..9216

MAP_NAME = "ROCE"
WRED_NAME = "ROCE_ECN"
STRICT_NAME = "ROCE_STRICT"
DWRR_PREFIX = "ROCE_DWRR_"
MAP_TABLES = ("DSCP_TO_TC_MAP", "TC_TO_QUEUE_MAP", "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE")
# PORT_QOS_MAP fields naming a map, and the map table each names.
MAP_FIELDS = (
    ("dscp_to_tc_map", "DSCP_TO_TC_MAP"),
    ("tc_to_queue_map", "TC_TO_QUEUE_MAP"),
    ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP"),
    ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE"),
)
# SONiC's pfcwd defaults (`config pfcwd start_default`): drop, 200 ms detection and restoration.
PFC_WD_ROW = {"action": "drop", "detection_time": "200", "restoration_time": "200"}
ECN_MARKS_GREEN = ("ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all")
# SONiC names front-panel ports Ethernet<N> (N the first lane); the QoS tables the profile writes
# (PORT_QOS_MAP, QUEUE, BUFFER_PG, ...) are keyed by PORT names, so a PortChannel is refused with
# what to list instead.  A name is a CONFIG_DB key part: "|" would make it another key.
PORT_NAMES = PortNames(
    "SONiC",
    r"Ethernet(0|[1-9][0-9]{0,3})",
    "Ethernet0, Ethernet4, Ethernet120 - Ethernet and the port's number, as the PORT table names it",
    refused=((r"PortChannel[0-9]{1,4}", "is a port channel: SONiC's QoS tables (PORT_QOS_MAP, QUEUE, buffers) "
                                        "take its member ports: list those (Ethernet0, Ethernet4)"),),
)
SOURCE = "the switch's CONFIG_DB (sonic-cfggen -d --print-data)"


def _row(**fields):
    return Record(dict(fields))


_TEXT = Text()
_NUMBER = Int(0, 1 << 32, as_text=True)
_PRIORITIES = Text(r"([0-7](,[0-7])*)?", "a list of priorities (0 to 7, comma-separated, e.g. 3,4)")
# The tables the driver reads or plans with, every row a mapping of text as CONFIG_DB holds it.  CONFIG_DB
# never holds null (Redis keeps text): a null table, row or field is malformed, and read as such.
CONFIG_SHAPE = no_nulls(Record({
    "PORT_QOS_MAP": MapOf(Record(dict(
        [(field, _TEXT) for field in ("dscp_to_tc_map", "dot1p_to_tc_map", "tc_to_queue_map", "tc_to_pg_map",
                                      "pfc_to_queue_map")]
        + [("pfc_enable", _PRIORITIES), ("pfcwd_sw_enable", _PRIORITIES)]))),
    "QUEUE": MapOf(_row(scheduler=_TEXT, wred_profile=_TEXT)),
    "WRED_PROFILE": MapOf(Record(dict([("ecn", _TEXT)] + [(field % colour, _NUMBER) for colour in ("green", "yellow", "red")
                                                          for field in ("%s_min_threshold", "%s_max_threshold",
                                                                        "%s_drop_probability")]))),
    "SCHEDULER": MapOf(_row(type=_TEXT, weight=Int(0, 100, as_text=True))),
    "DSCP_TO_TC_MAP": MapOf(MapOf(Int(0, 7, as_text=True), key=r"[0-9]{1,2}", key_what="a DSCP (0 to 63)", low=0, high=63)),
    "TC_TO_QUEUE_MAP": MapOf(MapOf(_TEXT)),
    "TC_TO_PRIORITY_GROUP_MAP": MapOf(MapOf(_TEXT)),
    "MAP_PFC_PRIORITY_TO_QUEUE": MapOf(MapOf(_TEXT)),
    "PFC_WD": MapOf(Record({})),
    "PORT": MapOf(_row(mtu=Int(1, 65535, as_text=True))),
    "BUFFER_PG": MapOf(_row(profile=_TEXT)),
    "BUFFER_QUEUE": MapOf(_row(profile=_TEXT)),
    "BUFFER_PROFILE": MapOf(Record({})),
    "DEVICE_METADATA": MapOf(_row(buffer_model=_TEXT)),
}))
PORT_TABLES = ("PORT_QOS_MAP", "QUEUE", "PFC_WD", "BUFFER_PG", "BUFFER_QUEUE", "PORT")
# The port tables keyed "<port>|<index>"; the others are keyed by the port name whole.
INDEXED_TABLES = ("QUEUE", "BUFFER_PG", "BUFFER_QUEUE")
RELEASE_RE = re.compile(r"(?m)^release:\s*'?([^'\s]+)'?\s*$")
# ASCII digits only: str.isdigit() takes "²", which int() refuses, and \d takes "٣" (Arabic-Indic 3); a
# name with either breaks the naming rule and must still sort, to be left out with a warning.
PORT_ORDER_RE = re.compile(r"([0-9]+)")
DIGITS_RE = re.compile(r"[0-9]+")


def max_mtu(version):
    return MAX_MTU


def _natural(name):
    return [int(part) if DIGITS_RE.fullmatch(part) else part for part in PORT_ORDER_RE.split(name)]


def _priorities_text(priorities):
    return ",".join("%d" % prio for prio in sorted(priorities))


def _dwrr_name(weight):
    return "%s%d" % (DWRR_PREFIX, weight)


def _is_ours(table, name):
    if table in MAP_TABLES:
        return name == MAP_NAME
    if table == "WRED_PROFILE":
        return name == WRED_NAME
    if table == "SCHEDULER":
        return name == STRICT_NAME or (name.startswith(DWRR_PREFIX) and bool(DIGITS_RE.fullmatch(name[len(DWRR_PREFIX):])))
    return False


def _check_profile(profile):
    if profile["trust"] != "dscp":
        raise InputError("config.fabric.trust=%s: the SONiC driver classifies by DSCP (DSCP_TO_TC_MAP); "
                         "set trust: dscp" % profile["trust"], option="config")
    if profile["roce_priority"] == 0:
        raise InputError("config.fabric.roce_priority=0: on SONiC queue 0 is the default class with its own ETS "
                         "share (ets.default_percent); choose another priority, e.g. 3", option="config")
    if profile["cnp_priority"] == 0:
        raise InputError("config.fabric.cnp_priority=0: on SONiC queue 0 is the default class (DWRR), it cannot "
                         "also be the strict-priority CNP queue; choose another priority, e.g. 6", option="config")


def _queue_rows(profile):
    """``{queue: row}`` for one port's QUEUE rows."""
    rows = {}
    rows.setdefault(0, {})["scheduler"] = _dwrr_name(profile["ets"]["default_percent"])
    rows.setdefault(profile["roce_priority"], {})["scheduler"] = _dwrr_name(profile["ets"]["roce_percent"])
    rows.setdefault(profile["cnp_priority"], {})["scheduler"] = STRICT_NAME
    for prio in profile["ecn_priorities"]:
        rows.setdefault(prio, {})["wred_profile"] = WRED_NAME
    return rows


def _global_objects(profile):
    dscp_map = dict(("%d" % dscp, "0") for dscp in range(64))
    dscp_map["%d" % profile["roce_dscp"]] = "%d" % profile["roce_priority"]
    dscp_map["%d" % profile["cnp_dscp"]] = "%d" % profile["cnp_priority"]
    lossless = set(profile["pfc_priorities"])
    ecn = profile["ecn"]
    wred = {"ecn": "ecn_all"}
    for colour in ("green", "yellow", "red"):
        wred["wred_%s_enable" % colour] = "true"
        wred["%s_min_threshold" % colour] = "%d" % ecn["min_threshold_bytes"]
        wred["%s_max_threshold" % colour] = "%d" % ecn["max_threshold_bytes"]
        wred["%s_drop_probability" % colour] = "%d" % ecn["probability_percent"]
    schedulers = {STRICT_NAME: {"type": "STRICT"}}
    for weight in (profile["ets"]["default_percent"], profile["ets"]["roce_percent"]):
        schedulers[_dwrr_name(weight)] = {"type": "DWRR", "weight": "%d" % weight}
    return {
        "DSCP_TO_TC_MAP": {MAP_NAME: dscp_map},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP_NAME: dict(("%d" % tc, "%d" % (tc if tc in lossless else 0)) for tc in range(8))},
        "TC_TO_QUEUE_MAP": {MAP_NAME: dict(("%d" % tc, "%d" % tc) for tc in range(8))},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP_NAME: dict(("%d" % prio, "%d" % prio) for prio in range(8))},
        "WRED_PROFILE": {WRED_NAME: wred},
        "SCHEDULER": schedulers,
    }


def _empty_list_ok(version):
    """Whether the release's pfc_enable/pfcwd_sw_enable pattern accepts "" (202505 on); before it
    "no priority" is written by leaving the field out."""
    return version >= "202505"


def _port_qos_row(profile, version):
    pfc = _priorities_text(profile["pfc_priorities"])
    row = dict((field, MAP_NAME) for field, dummy in MAP_FIELDS)
    row["pfc_enable"] = pfc
    row["pfcwd_sw_enable"] = pfc if profile["pfc_watchdog"] else ""
    if not _empty_list_ok(version):
        row = dict((field, value) for field, value in row.items() if value != "")
    return row


def render(profile, interfaces, version):
    """The CONFIG_DB tables for ``profile`` on ``interfaces`` (dynamic buffer model assumed)."""
    _check_profile(profile)
    tables = _global_objects(profile)
    tables.update(PORT_QOS_MAP={}, QUEUE={}, PFC_WD={}, BUFFER_PG={}, BUFFER_QUEUE={}, PORT={})
    queues = _queue_rows(profile)
    for port in interfaces:
        tables["PORT_QOS_MAP"][port] = _port_qos_row(profile, version)
        for queue in sorted(queues):
            tables["QUEUE"]["%s|%d" % (port, queue)] = dict(queues[queue])
        if profile["pfc_watchdog"]:
            tables["PFC_WD"][port] = dict(PFC_WD_ROW)
        for prio in profile["pfc_priorities"]:
            tables["BUFFER_PG"]["%s|%d" % (port, prio)] = {"profile": "NULL"}
            tables["BUFFER_QUEUE"]["%s|%d" % (port, prio)] = {"profile": "egress_lossless_profile"}
        tables["PORT"][port] = {"mtu": "%d" % profile["switch_mtu"]}
    return dict((table, rows) for table, rows in tables.items() if rows)


# ---------------------------------------------------------------------------------------------- parse

# The largest queue or priority-group index a key may name (ASICs have 8 to 20; ranges beyond are not read).
MAX_INDEX = 63


def _index_range(text, where=""):
    """The indexes of a QUEUE/BUFFER key's index part: "3" -> [3], "3-4" -> [3, 4]; [] if not one."""
    match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", text or "")
    if not match:
        return []
    low = whole(match.group(1), 0, MAX_INDEX, "the index", where)
    high = whole(match.group(2), low, MAX_INDEX, "the last index", where) if match.group(2) is not None else low
    return list(range(low, high + 1))


def _port_rows(config, table, port):
    """``[(key, indexes, row)]`` of a ``<port>|<index>`` keyed table's rows for ``port``."""
    rows = []
    for key, row in (config.get(table) or {}).items():
        name, sep, index = key.partition("|")
        if sep and name == port:
            rows.append((key, _index_range(index, "%s.%s" % (table, key)), row or {}))
    return rows


def _ints(text):
    return sorted(int(part) for part in (text or "").split(",") if DIGITS_RE.fullmatch(part.strip()))


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _one_or_all(values):
    """A single value as itself, several as their sorted list (what the switch says, even if not one)."""
    values = sorted(values)
    return values[0] if len(values) == 1 else values


def parse_raw(raw):
    """The profile a CONFIG_DB (``{TABLE: {key: {field: value}}}``) carries, numbers as ints."""
    if not isinstance(raw, dict):
        raise ReadError("", "is %s where CONFIG_DB's tables (a JSON object) belong" % describe(raw))
    check(CONFIG_SHAPE, raw)
    config = raw
    port_qos = config.get("PORT_QOS_MAP") or {}
    ports = sorted((name for name, row in port_qos.items()
                    if name != "global" and isinstance(row, dict)
                    and (row.get("dscp_to_tc_map") or row.get("dot1p_to_tc_map") or "pfc_enable" in row)),
                   key=_natural)
    fabric = {}
    # The first port whose name follows SONiC's rule speaks for the switch (the engine reports the others).
    readable = [port for port in ports if PORT_NAMES.problem(port) is None]
    if readable:
        fabric = _parse_port(config, readable[0])
    return {"fabric": fabric, "interfaces": ports}


def _parse_port(config, port):
    """The profile of one port (the first configured one speaks for the switch)."""
    fabric = {}
    qos = config["PORT_QOS_MAP"][port]
    global_qos = (config.get("PORT_QOS_MAP") or {}).get("global") or {}
    dscp_map_name = qos.get("dscp_to_tc_map") or global_qos.get("dscp_to_tc_map")
    dscp_map = (config.get("DSCP_TO_TC_MAP") or {}).get(dscp_map_name) if dscp_map_name else None
    if dscp_map_name:
        fabric["trust"] = "dscp"
    elif qos.get("dot1p_to_tc_map"):
        fabric["trust"] = "pcp"
    pfc = _ints(qos.get("pfc_enable"))  # no pfc_enable: PFC is off on the port
    queues = {}
    for dummy, indexes, row in _port_rows(config, "QUEUE", port):
        for index in indexes:
            queues.setdefault(index, {}).update(row)
    wred = config.get("WRED_PROFILE") or {}
    schedulers = config.get("SCHEDULER") or {}
    ecn_queues = sorted(q for q, row in queues.items()
                        if (wred.get(row.get("wred_profile")) or {}).get("ecn") in ECN_MARKS_GREEN)
    strict_queues = sorted(q for q, row in queues.items()
                           if (schedulers.get(row.get("scheduler")) or {}).get("type") == "STRICT")

    def dscps_on(tc):
        return [int(dscp) for dscp, mapped in (dscp_map or {}).items() if _int_or_none(mapped) == tc and DIGITS_RE.fullmatch(dscp)]

    # The RoCE class is the PFC (else ECN) class a DSCP classifies into; the default class 0 only when
    # nothing else is lossless or marked (ECN on queues 0 and 3 of a lossy profile: RoCE is 3).
    candidates = sorted(pfc, key=lambda tc: (tc == 0, tc)) + sorted(ecn_queues, key=lambda tc: (tc == 0, tc))
    mapped = [tc for tc in candidates if tc != 0 and dscps_on(tc)]
    roce = mapped[0] if mapped else (candidates[0] if candidates else None)
    cnp = strict_queues[0] if strict_queues else None

    if roce is not None:
        if dscps_on(roce):
            fabric["roce_dscp"] = _one_or_all(dscps_on(roce))
        fabric["roce_priority"] = roce
    if cnp is not None:
        if dscps_on(cnp):
            fabric["cnp_dscp"] = _one_or_all(dscps_on(cnp))
        fabric["cnp_priority"] = cnp
    fabric["pfc_priorities"] = pfc
    if queues:
        fabric["ecn_priorities"] = ecn_queues
    if ecn_queues:
        source = roce if roce in ecn_queues else ecn_queues[0]
        row = wred.get(queues[source]["wred_profile"]) or {}
        ecn = {}
        for key, field in (("min_threshold_bytes", "green_min_threshold"), ("max_threshold_bytes", "green_max_threshold"),
                           ("probability_percent", "green_drop_probability")):
            if _int_or_none(row.get(field)) is not None:
                ecn[key] = int(row[field])
        if ecn:
            fabric["ecn"] = ecn
    weights = {}
    for key, queue in (("roce_percent", roce), ("default_percent", 0)):
        sched = schedulers.get((queues.get(queue) or {}).get("scheduler")) if queue is not None else None
        if sched and sched.get("type") in ("DWRR", "WRR") and _int_or_none(sched.get("weight")) is not None:
            weights[key] = int(sched["weight"])
    if weights:
        fabric["ets"] = weights
    watchdog_row = (config.get("PFC_WD") or {}).get(port)
    fabric["pfc_watchdog"] = bool(watchdog_row) and not (qos.get("pfcwd_sw_enable") == "" and pfc)
    mtu = _int_or_none(((config.get("PORT") or {}).get(port) or {}).get("mtu"))
    if mtu is not None:
        fabric["switch_mtu"] = mtu
    return fabric


def parse(text, version):
    """The profile of a CONFIG_DB as JSON text (config_db.json, ``show runningconfiguration all``,
    ``sonic-cfggen -d --print-data``)."""
    raw = load_json(text, "a CONFIG_DB as sonic-cfggen -d --print-data or show runningconfiguration all print it")
    return parse_raw(raw)


# ----------------------------------------------------------------------------------------------- plan

def _references(config):
    """Names of maps, schedulers and WRED profiles that rows of ``config`` use, per table."""
    used = dict((table, set()) for table in MAP_TABLES + ("SCHEDULER", "WRED_PROFILE"))
    for row in (config.get("PORT_QOS_MAP") or {}).values():
        for field, table in MAP_FIELDS:
            if row.get(field):
                used[table].add(row[field])
        if row.get("scheduler"):
            used["SCHEDULER"].add(row["scheduler"])
    for row in (config.get("QUEUE") or {}).values():
        if row.get("scheduler"):
            used["SCHEDULER"].add(row["scheduler"])
        if row.get("wred_profile"):
            used["WRED_PROFILE"].add(row["wred_profile"])
    return used


def _uses_ours(config, port):
    row = (config.get("PORT_QOS_MAP") or {}).get(port) or {}
    return any(row.get(field) == MAP_NAME for field, dummy in MAP_FIELDS)


def _queue_uses_ours(row):
    return _is_ours("SCHEDULER", row.get("scheduler") or "") or row.get("wred_profile") == WRED_NAME


def _remove_ours_from_port(desired, port):
    """The profile off ``port``: its PORT_QOS_MAP row if it uses our maps, its QUEUE rows using
    our schedulers or WRED profile.  PFC_WD, buffers and the MTU stay (see DOCUMENTATION)."""
    if _uses_ours(desired, port):
        del desired["PORT_QOS_MAP"][port]
    for key, dummy, row in _port_rows(desired, "QUEUE", port):
        if _queue_uses_ours(row):
            del desired["QUEUE"][key]


def _collect_garbage(desired, keep):
    """Drop our global objects no row uses any more (and that the profile does not write)."""
    used = _references(desired)
    for table in MAP_TABLES + ("SCHEDULER", "WRED_PROFILE"):
        for name in list(desired.get(table) or {}):
            if _is_ours(table, name) and name not in used[table] and name not in keep.get(table, {}):
                del desired[table][name]


def _set_queues(desired, port, queues, exact):
    """The port's QUEUE rows for ``queues``; other rows stay (``exact``: are removed).  A range row
    ("Ethernet0|3-4") that covers one of ours is split so its other queues keep their settings."""
    table = desired.setdefault("QUEUE", {})
    for key, indexes, row in _port_rows(desired, "QUEUE", port):
        if exact:
            del table[key]
        elif set(indexes) & set(queues):
            del table[key]
            for index in indexes:
                if index not in queues:
                    table["%s|%d" % (port, index)] = dict(row)
    for queue in sorted(queues):
        table["%s|%d" % (port, queue)] = dict(queues[queue])


def _set_buffers(desired, port, priorities):
    """Lossless PG/queue buffers for ``priorities`` the port's rows do not cover yet, referencing a
    profile the platform has (never computing headroom)."""
    dynamic = ((desired.get("DEVICE_METADATA") or {}).get("localhost") or {}).get("buffer_model") == "dynamic"
    profiles = desired.get("BUFFER_PROFILE") or {}
    pg_rows = _port_rows(desired, "BUFFER_PG", port)
    queue_rows = _port_rows(desired, "BUFFER_QUEUE", port)
    lossless_pg = sorted(set(row.get("profile") for dummy, dummy2, row in pg_rows
                             if "lossless" in (row.get("profile") or "") and row.get("profile") in profiles))
    for prio in priorities:
        if not any(prio in indexes for dummy, indexes, dummy2 in pg_rows):
            if dynamic:
                profile = "NULL"
            elif lossless_pg:
                profile = lossless_pg[0]
            else:
                raise InputError(
                    "%s has no lossless buffer profile for PG %d (traditional buffer model and no lossless BUFFER_PG on "
                    "the port): this module never computes headroom; give the port its lossless buffers first "
                    "(config qos reload, or the platform's buffer templates), then run again" % (port, prio),
                    option="config")
            desired.setdefault("BUFFER_PG", {})["%s|%d" % (port, prio)] = {"profile": profile}
        if not any(prio in indexes for dummy, indexes, dummy2 in queue_rows):
            if "egress_lossless_profile" not in profiles:
                raise InputError(
                    "%s queue %d needs a lossless egress buffer and BUFFER_PROFILE has no egress_lossless_profile: "
                    "this module only references the platform's profiles; load them (config qos reload), then run "
                    "again" % (port, prio), option="config")
            desired.setdefault("BUFFER_QUEUE", {})["%s|%d" % (port, prio)] = {"profile": "egress_lossless_profile"}


def _desired(state, profile, interfaces, raw, version):
    desired = copy.deepcopy(raw)
    rendered = {}
    if state in ("merged", "replaced", "overridden"):
        _check_profile(profile)
        unknown = [port for port in interfaces if port not in (raw.get("PORT") or {})]
        if unknown:
            # the PORT keys are the switch's text: shown escaped, as every name read back is
            raise InputError("config.interfaces: %s not a port of this switch (its PORT table has %s)"
                             % (", ".join(unknown) + (" is" if len(unknown) == 1 else " are"),
                                ", ".join(show(name) for name in sorted(raw.get("PORT") or {}, key=_natural)[:8])
                                or "none"),
                             option="config")
        rendered = _global_objects(profile)
        for table, rows in rendered.items():
            for name, row in rows.items():
                desired.setdefault(table, {})[name] = copy.deepcopy(row)
        queues = _queue_rows(profile)
        for port in interfaces:
            desired.setdefault("PORT_QOS_MAP", {})[port] = _port_qos_row(profile, version)
            _set_queues(desired, port, queues, exact=state != "merged")
            if profile["pfc_watchdog"]:
                desired.setdefault("PFC_WD", {})[port] = dict(PFC_WD_ROW)
            else:
                (desired.get("PFC_WD") or {}).pop(port, None)
            _set_buffers(desired, port, profile["pfc_priorities"])
            desired["PORT"][port]["mtu"] = "%d" % profile["switch_mtu"]
    if state == "overridden":
        for port in list(desired.get("PORT_QOS_MAP") or {}) + [key.partition("|")[0] for key in desired.get("QUEUE") or {}]:
            if port not in interfaces:
                _remove_ours_from_port(desired, port)
    if state == "deleted":
        ports = interfaces or sorted(set(list(desired.get("PORT_QOS_MAP") or {})
                                         + [key.partition("|")[0] for key in desired.get("QUEUE") or {}]))
        for port in ports:
            _remove_ours_from_port(desired, port)
    if state != "merged":
        _collect_garbage(desired, rendered)
    # CONFIG_DB has no empty tables (the Generic Config Updater refuses a patch leaving one).
    return dict((table, rows) for table, rows in desired.items() if rows != {})


def _create_only_schedulers(ops, raw, desired):
    """SCHEDULER type and weight are create-only: a changed scheduler is removed and added whole."""
    result, redone = [], set()
    for op in ops:
        parts = op["path"].split("/")
        if len(parts) > 3 and parts[1] == "SCHEDULER" and parts[2] in (raw.get("SCHEDULER") or {}):
            name = parts[2].replace("~1", "/").replace("~0", "~")
            if name not in redone:
                redone.add(name)
                result.append({"op": "remove", "path": "/SCHEDULER/%s" % parts[2]})
                result.append({"op": "add", "path": "/SCHEDULER/%s" % parts[2], "value": desired["SCHEDULER"][name]})
            continue
        result.append(op)
    return result


def _without_move_and_copy(ops, raw):
    """``ops`` with every ``move`` and ``copy`` spelled as the plain ``remove`` and ``add`` they stand
    for.  jsonpatch makes a ``move`` of a row removed here and added alike there (a QUEUE row of a
    port the profile leaves, the same row on a port it goes on): ``config apply-patch`` and whoever
    reviews the patch read plain operations better, and every name they touch is in their ``path``."""
    if not any(op["op"] in ("move", "copy") for op in ops):
        return ops
    document = copy.deepcopy(raw)  # each op's value is where the ops before it left the document
    result = []
    for op in ops:
        if op["op"] in ("move", "copy"):
            value = copy.deepcopy(jsonpatch.JsonPointer(op["from"]).resolve(document))
            spelled = [{"op": "add", "path": op["path"], "value": value}]
            if op["op"] == "move":
                spelled.insert(0, {"op": "remove", "path": op["from"]})
        else:
            spelled = [op]
        document = jsonpatch.apply_patch(document, spelled, in_place=True)
        result.extend(spelled)
    return result


def plan(state, profile, interfaces, raw, version):
    """``(ops, predicted)``: the RFC 6902 operations (add, remove and replace only) that take
    CONFIG_DB ``raw`` to ``state``."""
    if not HAS_JSONPATCH:
        raise RdmaopsError("the SONiC driver needs the Python package jsonpatch on the switch (Debian: "
                           "python3-jsonpatch; SONiC images carry it for config apply-patch): install it there")
    desired = _desired(state, profile, interfaces or [], raw, version)
    ops = _without_move_and_copy(jsonpatch.make_patch(raw, desired).patch, raw)
    ops = _create_only_schedulers(ops, raw, desired)
    if not ops:
        return [], raw
    return ops, jsonpatch.apply_patch(raw, ops)


def _port_of_key(table, key):
    """The port name a port table's key names: "Ethernet0|3" of QUEUE -> "Ethernet0"; a PORT_QOS_MAP
    key is the name whole ("Ethernet0|3-4" there is no port of SONiC's)."""
    return key.partition("|")[0] if table in INDEXED_TABLES and isinstance(key, str) else key


def _pointer_ports(pointer, value, raw):
    """The port names an operation at JSON pointer ``pointer`` (with ``value``, for add/replace)
    touches in CONFIG_DB ``raw``: the key under a port table, or, for the table itself, every key it
    holds and every key ``value`` brings (removing the last row removes the whole table)."""
    if not isinstance(pointer, str):
        return []
    parts = pointer.split("/")
    if len(parts) > 2 and parts[1] in PORT_TABLES:
        return [_port_of_key(parts[1], parts[2].replace("~1", "/").replace("~0", "~"))]
    if len(parts) == 2 and parts[1] in PORT_TABLES:
        tables = [parts[1]]
        value = {parts[1]: value}
    elif pointer == "":  # the whole CONFIG_DB
        tables = PORT_TABLES
    else:
        return []
    names = []
    for table in tables:
        for source in (raw, value):
            rows = source.get(table) if isinstance(source, dict) else None
            names.extend(_port_of_key(table, key) for key in (rows if isinstance(rows, dict) else ()))
    return names


def command_ports(ops, raw=None):
    """The port names the RFC 6902 operations ``ops`` write or remove (keys of the port tables) in
    CONFIG_DB ``raw``: where an operation writes (``path``) and where it takes from (``from``)."""
    names = []
    for op in ops:
        if not isinstance(op, dict):
            continue
        for pointer, value in ((op.get("path"), op.get("value")), (op.get("from"), None)):
            for name in _pointer_ports(pointer, value, raw):
                if name not in names:
                    names.append(name)
    return names


def differences(before, after):
    """``TABLE|key`` of every row that differs between two CONFIG_DBs."""
    found = []
    before, after = before or {}, after or {}
    for table in sorted(set(before) | set(after)):
        rows_before, rows_after = before.get(table) or {}, after.get(table) or {}
        if not isinstance(rows_before, dict) or not isinstance(rows_after, dict):
            if rows_before != rows_after:
                found.append(table)
            continue
        for key in sorted(set(rows_before) | set(rows_after)):
            if rows_before.get(key) != rows_after.get(key):
                found.append("%s|%s" % (table, key))
    return found


# ----------------------------------------------------------------------------------------- the switch

class SonicSwitch:
    """The switch the module runs on: CONFIG_DB through sonic-cfggen, changes through the Generic
    Config Updater (``config apply-patch``) under a checkpoint."""

    VERSION_FILE = "/etc/sonic/sonic_version.yml"

    def __init__(self, ctx):
        self.ctx = ctx
        self.runner = ctx.runner
        self.last_read = None

    def version(self):
        text = self.ctx.host.read(self.VERSION_FILE)
        if text is None:
            raise RdmaopsError("%s is missing: this host does not look like a SONiC switch (set os and "
                               "ansible_network_os for the host, or nos_version)" % self.VERSION_FILE)
        match = RELEASE_RE.search(text)
        release = match.group(1) if match else "none"
        if release not in VERSIONS:
            raise InputError(
                "this switch runs SONiC release %s (%s); the module writes for %s: set nos_version to the nearest "
                "of them if that release's YANG models accept the same QoS tables"
                % (release, self.VERSION_FILE, ", ".join(VERSIONS)),
                option="nos_version")
        return release

    def read(self):
        result = self.runner.run(["sonic-cfggen", "-d", "--print-data"])
        data = load_json(result.stdout or "", "CONFIG_DB's tables")
        if not isinstance(data, dict):
            raise ReadError("", "is %s where CONFIG_DB's tables (a JSON object) belong" % describe(data))
        self.last_read = data
        return data

    def _patch_file(self, ops):
        handle, path = tempfile.mkstemp(prefix="rdmaops-roce-", suffix=".json-patch")
        with os.fdopen(handle, "w") as stream:
            json.dump(ops, stream, indent=2, sort_keys=True)
        return path

    def _say(self, result):
        return ((result.stderr or "").strip() or (result.stdout or "").strip() or "no output")[-2000:]

    def dry_run(self, ops):
        path = self._patch_file(ops)
        try:
            result = self.runner.run(["config", "apply-patch", "--dry-run", path], check=False)
        finally:
            os.unlink(path)
        if result.rc != 0:
            raise RdmaopsError("config apply-patch --dry-run refused the patch (nothing was changed): %s"
                               % self._say(result), patch=ops)

    def apply(self, ops):
        checkpoint = "rdmaops-roce-%d-%d" % (int(time.time()), os.getpid())
        saved = self.runner.run(["config", "checkpoint", checkpoint], check=False)
        if saved.rc != 0:
            raise RdmaopsError("config checkpoint %s failed, so nothing was applied: %s" % (checkpoint, self._say(saved)),
                               checkpoint_restored=False)
        path = self._patch_file(ops)
        try:
            result = self.runner.run(["config", "apply-patch", path], check=False)
        finally:
            os.unlink(path)
        if result.rc == 0:
            dropped = self.runner.run(["config", "delete-checkpoint", checkpoint], check=False)
            if dropped.rc != 0:
                self.ctx.warn("the patch applied, but config delete-checkpoint %s failed: %s"
                              % (checkpoint, self._say(dropped)))
            return
        said = self._say(result)
        before = self.last_read
        undone = self.runner.run(["config", "rollback", checkpoint], check=False)
        if undone.rc == 0:
            # Trust, but read: CONFIG_DB after the rollback is compared with what was read before.
            try:
                differ = differences(before, self.read())
            except RdmaopsError as exc:
                differ = ["(CONFIG_DB could not be read again: %s)" % exc.msg]
            if differ:
                raise RdmaopsError(
                    "config apply-patch failed: %s; config rollback %s reported success, yet CONFIG_DB differs from "
                    "before at %s: the checkpoint is kept, inspect it and roll back by hand with: config rollback %s"
                    % (said, checkpoint, ", ".join(differ[:8]), checkpoint),
                    checkpoint_restored=False, checkpoint=checkpoint, differences=differ, left_changed=True)
            self.runner.run(["config", "delete-checkpoint", checkpoint], check=False)
            raise RdmaopsError("config apply-patch failed: %s; rolled back to checkpoint %s, so CONFIG_DB is as it was"
                               % (said, checkpoint), checkpoint_restored=True, checkpoint=checkpoint)
        raise RdmaopsError(
            "config apply-patch failed: %s; and config rollback %s failed too: %s. CONFIG_DB may be partly changed: "
            "the checkpoint is kept, roll back by hand with: config rollback %s"
            % (said, checkpoint, self._say(undone), checkpoint),
            checkpoint_restored=False, checkpoint=checkpoint, left_changed=True)


def connect(ctx):
    return SonicSwitch(ctx)
