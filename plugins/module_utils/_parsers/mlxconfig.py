# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``mlxconfig -d DEV [-e] q`` (MFT) and ``mstconfig -d BDF [-e] q`` (mstflint).

Both tools share one formatter (mstflint ``mlxconfig/mlxcfg_ui.cpp``):

* the table starts after a header line ``Configurations:`` whose column titles say which value
  columns follow: ``Next Boot`` alone (plain ``q``), ``Default``/``Current``/``Next Boot``
  (``-e q``; a firmware that cannot read one of them leaves it out), plus ``New`` in the
  confirmation table that ``set`` prints;
* each row is ``*`` (next-boot value differs from default/current) or a blank, the parameter
  name (``%-36s``) and one ``%-16s`` field per column; a field of 16 characters or more is
  followed by a single space only, so rows are split on any whitespace (values never hold one),
  not on "two or more spaces";
* a value is a plain number (``148``), ``NAME(number)`` (``True(1)``, ``ETH(2)``,
  ``DEVICE_DEFAULT(0)``), ``Array[a..b]`` (an array parameter: query ``NAME[i]`` to see
  elements) or ``N/A``.

:func:`parse_value` turns one field into ``dict(text, name, number)``; :func:`parse_query` turns
the whole output into ``dict(columns, params={NAME: {"default"|"current"|"next_boot": value}},
device_type, device)``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

COLUMN_TITLES = (("Default", "default"), ("Current", "current"), ("Next Boot", "next_boot"), ("New", "new"))

_NAMED = re.compile(r"(?P<name>[A-Za-z0-9_]+)\((?P<number>[0-9]+)\)")
_ARRAY = re.compile(r"Array\[(?P<first>[0-9]+)\.\.(?P<last>[0-9]+)\]")
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-fA-F]+")
_PARAM = re.compile(r"[A-Z][A-Z0-9_]*(\[[0-9]+\])?")
_HEADER_FIELD = re.compile(r"(?P<key>Device type|Name|Description|Device):\s*(?P<value>.*)")


def parse_value(text):
    """One table field: ``dict(text, name, number)`` (``array`` added for ``Array[a..b]``).

    ``N/A`` (not readable) gives ``None``.
    """
    text = text.strip()
    if text in ("", "N/A"):
        return None
    named = _NAMED.fullmatch(text)
    if named:
        return dict(text=text, name=named.group("name"), number=int(named.group("number")))
    if _NUMBER.fullmatch(text):
        return dict(text=text, name=None, number=int(text, 0))
    array = _ARRAY.fullmatch(text)
    if array:
        return dict(text=text, name=None, number=None, array=[int(array.group("first")), int(array.group("last"))])
    return dict(text=text, name=text, number=None)


def header_columns(line):
    """Column keys named by a ``Configurations:`` header line, in order."""
    rest = line.split("Configurations:", 1)[1]
    found = []
    for title, key in COLUMN_TITLES:
        position = rest.find(title)
        if position >= 0:
            found.append((position, key))
    return [key for _position, key in sorted(found)]


def parse_query(text):
    """The whole output of ``q``/``-e q`` (or the table of ``set``), as a dict.

    ``params`` keeps the tool's order; a row whose field count does not match the header is
    kept under ``unparsed`` so that a caller never mistakes it for a value.
    """
    result = dict(columns=[], params={}, order=[], unparsed=[], device_type=None, device=None, name=None,
                  description=None)
    columns = None
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        if columns is None:
            if line.startswith("Configurations:"):
                columns = header_columns(line)
                result["columns"] = columns
                continue
            header = _HEADER_FIELD.fullmatch(line.strip())
            if header:
                key = header.group("key").lower().replace(" ", "_")
                result[key] = header.group("value").strip() or None
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("The '*' shows") or stripped.startswith("Device Firmware does not support"):
            continue
        if stripped.startswith("-E-") or stripped.startswith("-I-") or stripped.startswith("-W-"):
            continue
        if stripped.startswith("Apply new Configuration") or stripped.startswith("Applying"):
            columns = None  # the table of ``set`` ends with the question
            continue
        fields = stripped.split()
        flagged = fields[0] == "*"
        if flagged:
            fields = fields[1:]
        if len(fields) != len(columns) + 1 or not _PARAM.fullmatch(fields[0]):
            result["unparsed"].append(line)
            continue
        name = fields[0]
        entry = dict((key, parse_value(value)) for key, value in zip(columns, fields[1:]))
        entry["flagged"] = flagged
        if name not in result["params"]:
            result["order"].append(name)
        result["params"][name] = entry
    return result


def same_value(want, have):
    """True when ``want`` (a normalised wish: ``("number", n)`` or ``("name", text)``) is what the
    parsed value ``have`` shows; names compare case-insensitively (``true`` is ``True(1)``)."""
    if have is None:
        return False
    kind, value = want
    if kind == "number":
        return have.get("number") == value
    return have.get("name") is not None and have["name"].lower() == value.lower()


def values_equal(left, right):
    """True when two parsed values mean the same setting (the number decides when both have one)."""
    if left is None or right is None:
        return left is right
    if left.get("number") is not None and right.get("number") is not None:
        return left["number"] == right["number"]
    return left.get("text") == right.get("text")
