# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the CLI-configured NOS drivers (eos, nxos, onyx) share: running-config text as a tree,
byte units, and the profile read back from the QoS facts a configuration states.

Each driver reads its own syntax into the same facts (which DSCPs a configuration classifies to
which traffic class, where PFC, ECN, strict priority and DWRR shares are, the watchdog, MTUs) and
:func:`fabric_from_facts` turns them into the profile's keys, so the three parsers agree on what
"the RoCE priority" of a configuration we did not write is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, quoted
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import ReadError, whole

KIB = 1024
# Byte units as EOS and NX-OS spell them.  A kbyte is 1024 bytes, as NVIDIA's own tools count
# (Cumulus shows 150000 B as 146.48 KB).
UNIT_BYTES = {"bytes": 1, "kbytes": KIB, "mbytes": KIB * KIB}

_NUMBERS = re.compile(r"\d+(?:-\d+)?(?:[ ,]+\d+(?:-\d+)?)*")


class Node(object):
    """One running-config line and the lines indented under it."""

    __slots__ = ("line", "children", "number")

    def __init__(self, line, number=0):
        self.line = line
        self.children = []
        self.number = number  # the line's number in the text, for messages

    def __repr__(self):
        return "Node(%r, %d children)" % (self.line, len(self.children))


# How structured data starts (a JSON or YAML mapping or list, a YAML document, Ansible's text of a
# mapping): never how a switch's running-config does.
_STRUCTURED = re.compile(r"[{\[]|---|-( |$)|[A-Za-z_][\w-]*:( |$).*")


def config_tree(text, comments=("!",)):
    """The running-config ``text`` as a list of top-level :class:`Node`, nested by indentation.

    Blank lines, comment lines (starting with one of ``comments`` after the indentation) and
    ``end`` are skipped; tabs count as one column each, which is how the NOSes never indent.
    Text whose first line is structured data (YAML or JSON: a mapping given where the switch's
    text belongs) is refused with ReadError rather than read as "nothing configured".
    """
    roots = []
    stack = []  # (indent, node)
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped == "end" or stripped.startswith(tuple(comments)):
            continue
        if not roots and _STRUCTURED.match(stripped):
            raise ReadError("line %d %s" % (number, "(%s)" % quoted(stripped)),
                            "is structured data (YAML or JSON), not running-config text: give the switch's "
                            "show running-config output as text")
        indent = len(raw) - len(raw.lstrip())
        node = Node(stripped, number)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        (stack[-1][1].children if stack else roots).append(node)
        stack.append((indent, node))
    return roots


def matches(nodes, pattern):
    """``(match, node)`` for each node whose whole line matches ``pattern`` (a compiled regex)."""
    for node in nodes:
        found = pattern.fullmatch(node.line)
        if found:
            yield found, node


def at(node):
    """Where ``node`` is, for a message: its line number and (the start of) the line itself."""
    return "line %d %s" % (node.number, "(%s)" % quoted(node.line))


def number_list(text, low=0, high=None, what="value", where=""):
    """``"24-26 28,30"`` -> ``[24, 25, 26, 28, 30]`` (space or comma separated, ranges inclusive).

    With ``high``, every number must be from ``low`` to ``high`` (ReadError naming ``what`` and
    ``where`` otherwise), checked before a range is expanded: ``0-99999999999`` is refused, not listed.
    """
    if not _NUMBERS.fullmatch(text.strip()):
        return []
    values = []
    for part in re.split(r"[ ,]+", text.strip()):
        first, dummy, last = part.partition("-")
        if high is not None:
            first_value = whole(first, low, high, what, where)
            last_value = whole(last or first, low, high, what, where)
            if last_value < first_value:
                raise ReadError(where, "the %s range %s runs backwards" % (what, part))
        else:
            first_value, last_value = int(first), int(last or first)
        values.extend(range(first_value, last_value + 1))
    return values


def natural_key(name):
    """Sort key that orders Ethernet2 before Ethernet10 and 1/2 before 1/10, as the NOSes list ports.
    ASCII digits only: str.isdigit() takes "²", which int() refuses; such a name sorts as text."""
    return [int(part) if index % 2 else part.lower() for index, part in enumerate(re.split(r"([0-9]+)", name))]


# The largest ECN threshold a configuration may state, in bytes (the intent's own limit: 1 GiB).
MAX_THRESHOLD_BYTES = 1 << 30


def to_bytes(value, unit, where=""):
    """``value`` in ``unit`` (bytes, kbytes, mbytes) as bytes; None for units not made of bytes
    (segments, cells, packets, time: their byte size is the platform's).  A threshold above 1 GiB
    is refused (ReadError at ``where``): no switch buffer holds it."""
    factor = UNIT_BYTES.get(unit.lower())
    if factor is None:
        return None
    number = whole(value, 0, MAX_THRESHOLD_BYTES // factor, "an ECN threshold in %s" % unit.lower(), where)
    return number * factor


def exact_multiple(profile, key, unit_bytes, unit_name, nos_name):
    """``profile['ecn'][key]`` in units of ``unit_bytes``; InputError naming the nearest two
    values the NOS can hold when the bytes are not a whole number of units."""
    value = profile["ecn"][key]
    units, rest = divmod(value, unit_bytes)
    if not rest:
        return units
    low, high = units * unit_bytes, (units + 1) * unit_bytes
    raise InputError(
        "config.fabric.ecn.%s=%d: %s takes ECN thresholds in %s (%d bytes), and %d is not a whole number of "
        "them; set %s to %d (%d %s) or %d (%d %s)"
        % (key, value, nos_name, unit_name, unit_bytes, value, key, low, units, unit_name, high, units + 1, unit_name),
        option="config",
    )


def threshold_unit(profile):
    """``(unit, min, max)`` for NOSes that take bytes, kbytes or mbytes: the largest unit that holds
    both thresholds exactly, so nothing is ever rounded."""
    low, high = profile["ecn"]["min_threshold_bytes"], profile["ecn"]["max_threshold_bytes"]
    for unit in ("mbytes", "kbytes", "bytes"):
        size = UNIT_BYTES[unit]
        if low % size == 0 and high % size == 0:
            return unit, low // size, high // size
    raise AssertionError("bytes always divide")  # pragma: no cover


def check_classes(profile, nos_name):
    """Refuse profiles the CLI renderings cannot write apart: the RoCE and CNP classes each need a
    queue of their own beside the default class 0, which takes default_percent of the link."""
    for key in ("roce_priority", "cnp_priority"):
        if profile[key] == 0:
            raise InputError(
                "config.fabric.%s=0 is the default traffic class on %s, which carries ets.default_percent of "
                "the link: choose 1-7 (3 for RoCE and 6 for CNPs by convention)" % (key, nos_name),
                option="config",
            )


def _default_last(tc):
    return (tc == 0, tc)


def _first(candidates):
    for value in candidates:
        return value
    return None


def fabric_from_facts(trust=None, dscp_to_tc=None, classified=(), pfc=None, strict=(), ecn=None,
                      shares=None, watchdog=None, mtus=()):
    """The profile keys a configuration carries, from the facts a driver read.

    trust       "dscp" or "pcp", None when the configuration does not say
    dscp_to_tc  {dscp: traffic class} the configuration classifies explicitly
    classified  further traffic classes something (802.1p, CoS) classifies into
    pfc         the priorities with PFC on (a list), None when the configuration says nothing of PFC
    strict      traffic classes the configuration makes strict priority
    ecn         {traffic class: {min_threshold_bytes, max_threshold_bytes, probability_percent}}
                (keys absent where the configuration does not say, or says in units not of bytes)
    shares      {traffic class: DWRR percent}
    watchdog    True/False, None when the configuration does not say
    mtus        the MTUs of the profile's interfaces

    The RoCE priority is the PFC (else ECN) class that a DSCP or CoS classifies into, the CNP
    priority the strict class that one does; their DSCP is the lowest mapped to them.  Nothing is
    checked against the intent's rules: a configuration with two PFC priorities says so.
    """
    dscp_to_tc = dscp_to_tc or {}
    ecn = ecn or {}
    shares = shares or {}
    mapped = set(dscp_to_tc.values()) | set(classified)
    fabric = {}
    if trust is not None:
        fabric["trust"] = trust
    # the default class 0 is the RoCE class only when nothing else is lossless or marked
    lossless = sorted(pfc or [], key=_default_last) + sorted(ecn, key=_default_last)
    roce = _first(tc for tc in lossless if tc in mapped)
    if roce is None:
        roce = _first(lossless)
    if roce is not None:
        fabric["roce_priority"] = roce
        dscps = sorted(d for d, tc in dscp_to_tc.items() if tc == roce)
        if dscps:
            fabric["roce_dscp"] = dscps[0]
    cnp = _first(tc for tc in sorted(strict) if tc in mapped and tc != roce)
    if cnp is not None:
        fabric["cnp_priority"] = cnp
        dscps = sorted(d for d, tc in dscp_to_tc.items() if tc == cnp)
        if dscps:
            fabric["cnp_dscp"] = dscps[0]
    if pfc is not None:
        fabric["pfc_priorities"] = sorted(set(pfc))
    if ecn:
        fabric["ecn_priorities"] = sorted(ecn)
        thresholds = ecn.get(roce, ecn[sorted(ecn)[0]])
        if thresholds:
            fabric["ecn"] = dict(thresholds)
    ets = {}
    if roce is not None and roce in shares:
        ets["roce_percent"] = shares[roce]
    if 0 in shares and roce != 0:
        ets["default_percent"] = shares[0]
    if ets:
        fabric["ets"] = ets
    if watchdog is not None:
        fabric["pfc_watchdog"] = watchdog
    if mtus:
        # the fabric's MTU is what every listed port carries: the smallest of them
        fabric["switch_mtu"] = min(mtus)
    return fabric
