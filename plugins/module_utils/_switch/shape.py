# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading configuration of the wrong shape: one clear message naming the place, never Python's.

The parsers read ``running_config`` text (``parsed``) and the switch's own answer (``gathered``,
the acting states).  Before a JSON configuration is read, :func:`check` walks the parts of it the
driver reads against a small declarative shape (mappings where NVUE/CONFIG_DB have mappings,
whole numbers in range where they have numbers, text where they have text); the CLI parsers check
each number they take with :func:`whole`.  A mismatch raises :class:`ReadError` with the place
(``qos.mapping.default-global.dscp.26.switch-priority``, or ``line 12``) and what is wrong there;
the engine prefixes the source (``running_config``, or the switch's answer).  Parts a driver does
not read are not checked: a switch's configuration holds much more than the profile.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError

SHOWN = 40


class ReadError(RdmaopsError):
    """A configuration could not be read: ``where`` in it, ``what`` is wrong there."""

    def __init__(self, where, what):
        # "qos.pfc is a list ...", "line 3 (...): mtu 99999 is outside ..."
        joined = "%s %s" if what.startswith(("is ", "has ", "names ")) else "%s: %s"
        super(ReadError, self).__init__(joined % (where, what) if where else what, where=where)
        self.where = where
        self.what = what


def kind(value):
    """``value``'s kind in YAML/JSON words (never a Python type name), with the value when short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean (%s)" % ("true" if value else "false")
    if isinstance(value, int):
        text = "%d" % value if abs(value) < 10 ** 30 else "a number of %d digits" % len("%d" % abs(value))
        return "a number (%s)" % text
    if isinstance(value, float):
        return "a number with a fraction (%s)" % ("%r" % value)[:SHOWN]
    if isinstance(value, str):
        shown = json.dumps(value[:SHOWN])
        return "text (%s)" % (shown if len(value) <= SHOWN else shown[:-1] + '..."')
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "a value of another kind"


def _join(where, key):
    return "%s.%s" % (where, key) if where else "%s" % key


class Shape(object):
    """Base: ``check(value, where)`` raises ReadError.  ``None`` (absent, or JSON null) passes unless
    :func:`no_nulls` made the shape refuse null: a configuration that never holds null (CONFIG_DB
    keeps every value as text) is malformed where it does, and its code would trip over it."""

    nullable = True

    def check(self, value, where):
        raise NotImplementedError

    def absent(self, value, where, wanted):
        """True when ``value`` is None and may be; ReadError when it is None and may not."""
        if value is not None:
            return False
        if self.nullable:
            return True
        raise ReadError(where, "is null where %s belongs" % wanted)


class Int(Shape):
    """A whole number from ``low`` to ``high`` (JSON numbers; ``as_text``: CONFIG_DB's decimal text)."""

    def __init__(self, low, high, as_text=False):
        self.low, self.high, self.as_text = low, high, as_text

    def check(self, value, where):
        wanted = ("decimal text from %d to %d (CONFIG_DB keeps numbers as text)" if self.as_text
                  else "a whole number from %d to %d") % (self.low, self.high)
        if self.absent(value, where, wanted):
            return
        if self.as_text:
            if not isinstance(value, str) or not re.fullmatch(r"[0-9]{1,20}", value):
                raise ReadError(where, "is %s where %s belongs" % (kind(value), wanted))
            number = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ReadError(where, "is %s where %s belongs" % (kind(value), wanted))
            number = value
        if not self.low <= number <= self.high:
            raise ReadError(where, "is %s, outside %d to %d" % (kind(value), self.low, self.high))


class Text(Shape):
    """Text, optionally matching ``pattern`` whole (``what`` says the form in words)."""

    def __init__(self, pattern=None, what=None):
        self.pattern = re.compile(pattern) if pattern else None
        self.what = what

    def check(self, value, where):
        if self.absent(value, where, "text"):
            return
        if not isinstance(value, str):
            raise ReadError(where, "is %s where text belongs" % kind(value))
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise ReadError(where, "is %s, not %s" % (kind(value), self.what))


class Map(Shape):
    """A mapping whose named ``fields`` have their shapes; other keys are not read, so not checked."""

    def __init__(self, fields):
        self.fields = fields

    def check(self, value, where):
        if self.absent(value, where, "a mapping"):
            return
        if not isinstance(value, dict):
            raise ReadError(where, "is %s where a mapping belongs" % kind(value))
        for key, shape in self.fields.items():
            if key in value:  # an absent field is not read; a null one is checked (no_nulls refuses it)
                shape.check(value[key], _join(where, key))


class Each(Shape):
    """A mapping whose every key passes ``key`` (a pattern and its words) and every value ``item``."""

    def __init__(self, item, key=None, key_what=None, low=None, high=None):
        self.item = item
        self.key = re.compile(key) if key else None
        self.key_what = key_what
        self.low, self.high = low, high

    def check(self, value, where):
        if self.absent(value, where, "a mapping"):
            return
        if not isinstance(value, dict):
            raise ReadError(where, "is %s where a mapping belongs" % kind(value))
        for key, item in value.items():
            if self.key is not None:
                if not isinstance(key, str) or not self.key.fullmatch(key):
                    raise ReadError(where, "has the key %s, not %s" % (kind(key), self.key_what))
                if self.low is not None and not self.low <= int(key) <= self.high:
                    raise ReadError(where, "has the key %s, outside %d to %d" % (key, self.low, self.high))
            self.item.check(item, _join(where, key))


def no_nulls(shape):
    """``shape`` (and every shape inside it) refusing null wherever it checks a value; returns it."""
    shape.nullable = False
    for inner in list(getattr(shape, "fields", {}).values()) + [getattr(shape, "item", None)]:
        if inner is not None:
            no_nulls(inner)
    return shape


def check(shape, value, where=""):
    """Raise ReadError when ``value`` does not have ``shape``."""
    shape.check(value, where)


def whole(text, low, high, what, where):
    """The number ``text`` (decimal digits a CLI regex matched) when it is from ``low`` to ``high``;
    ReadError naming ``what`` and ``where`` otherwise (also for digit strings too long to be numbers)."""
    if len(text) > 12:
        raise ReadError(where, "%s %s... (%d digits) is outside %d to %d" % (what, text[:12], len(text), low, high))
    number = int(text)
    if not low <= number <= high:
        raise ReadError(where, "%s %d is outside %d to %d" % (what, number, low, high))
    return number


def load_json(text, what):
    """The JSON value of ``text``, or ReadError saying where the text stops being JSON (``what``:
    the configuration it should be, for the message)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ReadError("", "is nested too deeply to be %s" % what)
    except ValueError as exc:
        line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        if line is None:  # not a syntax error: a number longer than Python reads (thousands of digits)
            raise ReadError("", "holds a number too long to be read: it is not %s" % what)
        raise ReadError("line %s, column %s" % (line, column),
                        "the text stops being JSON there (truncated, or not JSON): it is not %s" % what)
