# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus' text exposition format (version 0.0.4), the one node_exporter's textfile collector reads.

Each family is ``# HELP``, ``# TYPE`` and its samples, families in the order they were added,
samples in the order they were added; a family with no sample is left out entirely (a counter the
driver lacks gives no series, never a made-up zero). Label values are escaped as the format says
(backslash, double quote, newline); metric and label names are checked against the format's
grammar, and a driver's counter name is turned into one (:func:`metric_name`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

PREFIX = "rdmaops_roce_"
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]+")
TYPES = ("counter", "gauge", "untyped")


def metric_name(*parts):
    """``rdmaops_roce_<parts joined by _>``, every run of characters a metric name may not hold
    (``.``, ``-``, spaces in some drivers' names) turned into one ``_``."""
    name = PREFIX + "_".join(_NOT_NAME.sub("_", str(part)).strip("_") for part in parts if part)
    return name.lower()


def utf8(value):
    """``value`` as text that encodes to valid UTF-8: a byte that is not UTF-8 (a name the kernel
    gave as bytes, read through surrogateescape) and a lone surrogate are written as ``\\xff`` /
    ``\\udc80`` text; node_exporter refuses a whole file that holds one byte of invalid UTF-8."""
    text = str(value)
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "backslashreplace")
    return data.decode("utf-8", "backslashreplace")


def _escape(value):
    return utf8(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text):
    return utf8(text).replace("\\", "\\\\").replace("\n", "\\n")


def _value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


class Family:
    def __init__(self, name, kind, help_text):
        if not _NAME.fullmatch(name):
            raise ValueError("%r is not a Prometheus metric name" % (name,))
        if kind not in TYPES:
            raise ValueError("%r is not a metric type" % (kind,))
        if kind == "counter" and not name.endswith("_total"):
            raise ValueError("counter %s must end in _total" % name)
        self.name = name
        self.kind = kind
        self.help = help_text
        self.samples = []
        self._seen = set()

    def add(self, value, **labels):
        """One sample; a repeated label set is ignored (the first one read wins). ValueError for a
        value that is not a number (before anything is rendered)."""
        if isinstance(value, str) or not isinstance(value, (bool, int, float)):
            raise ValueError("%s: the value %s is not a number" % (self.name, utf8(repr(value))[:40]))
        for label in labels:
            if not _LABEL.fullmatch(label) or label.startswith("__"):
                raise ValueError("%r is not a Prometheus label name" % (label,))
        key = tuple(sorted((k, str(v)) for k, v in labels.items() if v is not None))
        if key in self._seen:
            return
        self._seen.add(key)
        self.samples.append((key, value))

    def render(self):
        lines = ["# HELP %s %s" % (self.name, _help(self.help)), "# TYPE %s %s" % (self.name, self.kind)]
        for key, value in self.samples:
            labels = ",".join('%s="%s"' % (k, _escape(v)) for k, v in key)
            lines.append("%s%s %s" % (self.name, "{%s}" % labels if labels else "", _value(value)))
        return lines


class Exposition:
    """The families of one collection run, and comment lines (``# ...``) to go before them."""

    def __init__(self):
        self.families = []
        self._by_name = {}
        self.comments = []

    def family(self, name, kind, help_text):
        """The family ``name`` (made on first use; its type and help are those of the first use)."""
        if name not in self._by_name:
            family = Family(name, kind, help_text)
            self._by_name[name] = family
            self.families.append(family)
        family = self._by_name[name]
        if family.kind != kind:
            raise ValueError("%s is a %s, not a %s" % (name, family.kind, kind))
        return family

    def add(self, name, kind, help_text, value, **labels):
        self.family(name, kind, help_text).add(value, **labels)

    def comment(self, text):
        # a comment is one line of valid UTF-8; "# HELP" and "# TYPE" would be read as metadata
        text = " ".join(utf8(text).split())
        if text.startswith(("HELP ", "TYPE ")):
            text = "- " + text
        self.comments.append("# " + text)

    def render(self):
        lines = list(self.comments)
        for family in self.families:
            if family.samples:
                lines.extend(family.render())
        return "\n".join(lines) + "\n"
