# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shapes a value may have: one vocabulary for every reader.

The shapes (:class:`Text`, :class:`Int`, :class:`Bool`, :class:`Name`, :class:`Record`,
:class:`MapOf`, :class:`ListOf`, :class:`Tuple`, :class:`Anything`, :class:`Either`) declare what a
value should be, with ``wanted``, its words for a message.  Two readers walk them:

- :func:`check` here, strict: the switch parsers check the parts of a JSON configuration they read
  (``running_config``, or the switch's answer) and the first mismatch raises :class:`ReadError`
  with the place (``qos.mapping.default-global.dscp.26.switch-priority``, or ``line 12``) and what
  is wrong there; the CLI parsers check each number they take with :func:`whole`.  Parts a driver
  does not read are not checked: a switch's configuration holds much more than the profile.
- fabric_check's ``_validate.inputs.Reader``, lenient: what cannot be read is left out and named
  in one finding, so it is never compared.

Both word the value they found with ``_core.errors.describe``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError, describe

INT_RANGE = (-(1 << 63), (1 << 63) - 1)


class ReadError(RdmaopsError):
    """A configuration could not be read: ``where`` in it, ``what`` is wrong there."""

    def __init__(self, where, what):
        # "qos.pfc is a list ...", "line 3 (...): mtu 99999 is outside ..."
        joined = "%s %s" if what.startswith(("is ", "has ", "names ")) else "%s: %s"
        super(ReadError, self).__init__(joined % (where, what) if where else what, where=where)
        self.where = where
        self.what = what


def _join(where, key):
    return "%s.%s" % (where, key) if where else "%s" % key


class Shape(object):
    """Base.  ``wanted``: the shape in words.  ``check(value, where)`` (the strict reader, for the
    shapes a switch parser checks) raises ReadError.  ``None`` (absent, or JSON null) passes unless
    :func:`no_nulls` made the shape refuse null: a configuration that never holds null (CONFIG_DB
    keeps every value as text) is malformed where it does, and its code would trip over it."""

    nullable = True
    wanted = "anything"

    def check(self, value, where):
        raise NotImplementedError

    def absent(self, value, where, wanted):
        """True when ``value`` is None and may be; ReadError when it is None and may not."""
        if value is not None:
            return False
        if self.nullable:
            return True
        raise ReadError(where, "is null where %s belongs" % wanted)


class Text(Shape):
    """Text: optionally matching ``pattern`` whole (``what`` says the form in words), or one of ``choices``."""

    def __init__(self, pattern=None, what=None, choices=None):
        self.pattern = re.compile(pattern) if pattern else None
        self.what = what
        self.choices = choices
        self.wanted = "one of %s" % ", ".join(choices) if choices else "text"

    def check(self, value, where):
        if self.absent(value, where, "text"):
            return
        if not isinstance(value, str):
            raise ReadError(where, "is %s where text belongs" % describe(value))
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise ReadError(where, "is %s, not %s" % (describe(value), self.what))


class Int(Shape):
    """A whole number from ``low`` to ``high``; ``unit`` and ``example`` for the words (``a whole
    number of bytes from 0 to 65536, such as 9216``).  ``as_text``: the strict reader wants CONFIG_DB's
    decimal text (the lenient one reads a number or its decimal digits either way)."""

    def __init__(self, low=INT_RANGE[0], high=INT_RANGE[1], unit=None, example=None, as_text=False):
        self.low, self.high, self.as_text = low, high, as_text
        if as_text:
            self.wanted = "decimal text from %d to %d (CONFIG_DB keeps numbers as text)" % (low, high)
            return
        wanted = "a whole number" + (" of %s" % unit if unit else "")
        if (low, high) != INT_RANGE:
            wanted += " from %d to %d" % (low, high)
        self.wanted = wanted + (", such as %s" % example if example is not None else "")

    def check(self, value, where):
        if self.absent(value, where, self.wanted):
            return
        if self.as_text:
            if not isinstance(value, str) or not re.fullmatch(r"[0-9]{1,20}", value):
                raise ReadError(where, "is %s where %s belongs" % (describe(value), self.wanted))
            number = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ReadError(where, "is %s where %s belongs" % (describe(value), self.wanted))
            number = value
        if not self.low <= number <= self.high:
            raise ReadError(where, "is %s, outside %d to %d" % (describe(value), self.low, self.high))


class Bool(Shape):
    """True or false (the lenient reader also takes Ansible's boolean words)."""
    wanted = "true or false"


class Name(Shape):
    """A name that YAML may have read as a number (a port ``1``): text either way."""
    wanted = "a name"


class Record(Shape):
    """A mapping whose named fields have their shapes (``Record({"switch-priority": Int(0, 7)})`` or
    ``Record(mtu=MTU)``); other keys are not read, so not checked."""

    wanted = "a mapping"

    def __init__(self, fields=None, **named):
        self.fields = dict(fields or {}, **named)

    def check(self, value, where):
        if self.absent(value, where, "a mapping"):
            return
        if not isinstance(value, dict):
            raise ReadError(where, "is %s where a mapping belongs" % describe(value))
        for key, shape in self.fields.items():
            if key in value:  # an absent field is not read; a null one is checked (no_nulls refuses it)
                shape.check(value[key], _join(where, key))


class MapOf(Shape):
    """A mapping of names to values of one shape, ``item``; for the strict reader, every key may have
    to match ``key`` (a pattern, ``key_what`` its words) and, as a number, lie from ``low`` to ``high``."""

    wanted = "a mapping"

    def __init__(self, item, key=None, key_what=None, low=None, high=None):
        self.item = item
        self.key = re.compile(key) if key else None
        self.key_what = key_what
        self.low, self.high = low, high

    def check(self, value, where):
        if self.absent(value, where, "a mapping"):
            return
        if not isinstance(value, dict):
            raise ReadError(where, "is %s where a mapping belongs" % describe(value))
        for key, item in value.items():
            if self.key is not None:
                if not isinstance(key, str) or not self.key.fullmatch(key):
                    raise ReadError(where, "has the key %s, not %s" % (describe(key), self.key_what))
                if self.low is not None and not self.low <= int(key) <= self.high:
                    raise ReadError(where, "has the key %s, outside %d to %d" % (key, self.low, self.high))
            self.item.check(item, _join(where, key))


class ListOf(Shape):
    """A list of one shape. ``whole``: one unreadable item makes the list unreadable (a list of
    priorities compared as a whole); otherwise unreadable items are left out (records each checked
    on its own). ``length``: the exact number of items."""

    def __init__(self, item, whole=True, length=None):
        self.item, self.whole, self.length = item, whole, length
        self.wanted = "a list" if length is None else "a list of %d" % length


class Tuple(Shape):
    """A list of exactly one item per shape, each item of its own shape (a loop's ``item``, such as
    ``[[host, peer], link]``); one item that is null or cannot be read makes it unreadable."""

    def __init__(self, *shapes):
        self.shapes = shapes
        self.length = len(shapes)
        self.wanted = "a list of %d" % len(shapes)


class Anything(Shape):
    """Any value (only its presence is used)."""


class Either(Shape):
    """The first of ``shapes`` that reads the value without a problem."""

    def __init__(self, *shapes):
        self.shapes = shapes
        self.wanted = " or ".join(shape.wanted for shape in shapes)


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
