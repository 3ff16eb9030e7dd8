# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error family of the collection.

Every failure a module can report is an :class:`RdmaopsError`: a message written for the person
running the playbook, plus ``details`` that become keys of the failed result.  The engine
(``engine.py``) is the only place that turns one into ``fail_json``; it adds what the plan had
applied, rolled back or left undone, so no module writes its own try/except tail.

A message words the value it names in YAML's words, never with a Python type name: :func:`kind`
(``a number``), :func:`shown` (the value: ``5``, ``"9k"``, ``null``) and :func:`describe` (both:
``a number (5)``, ``text ("9k")``, ``a mapping``).  The roce_fabric intent, the rail plan, the switch
parsers and fabric_check's inputs all use these three.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.six.moves.collections_abc import Mapping

SHOWN = 40


class RdmaopsError(Exception):
    """A failure with a message for people and ``details`` for the result."""

    def __init__(self, msg, **details):
        super(RdmaopsError, self).__init__(msg)
        self.msg = msg
        self.details = details


class InputError(RdmaopsError):
    """A parameter is wrong: refused before anything on the host is touched."""


class RefusedError(RdmaopsError):
    """A change that would be unsafe (the management path, a file we do not own) was refused."""


class ToolNotFound(RdmaopsError):
    """A required executable is not on PATH."""

    def __init__(self, tool):
        super(ToolNotFound, self).__init__(
            "%s was not found on PATH (nor in /sbin, /usr/sbin, /usr/local/sbin); install the "
            "package that provides it or make it reachable" % tool,
            tool=tool,
        )
        self.tool = tool


class CommandError(RdmaopsError):
    """A command exited with a status the caller did not accept."""

    def __init__(self, result, msg=None):
        super(CommandError, self).__init__(
            msg or "command failed with rc=%d: %s" % (result.rc, " ".join(result.cmd)),
            cmd=result.cmd,
            rc=result.rc,
            stdout=result.stdout,
            stderr=result.stderr,
        )
        self.result = result

    def output(self):
        """What the tool said about its failure, stderr first."""
        return ((self.result.stderr or "").strip() or (self.result.stdout or "").strip())


class VerifyError(RdmaopsError):
    """After applying, the host does not report what was asked (the re-read step)."""


def kind(value):
    """``value``'s kind in YAML's words, never a Python type name: ``null``, ``a boolean``, ``a number``,
    ``a decimal number``, ``text``, ``a mapping``, ``a list`` (for a message that shows the value already)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "a value of another kind"


def quoted(text, limit=SHOWN):
    """``text`` in double quotes as YAML and JSON write it, cut once its written form passes ``limit``
    characters (``"abc"...``); the cut falls between characters, never inside an escape such as ``\\u001f``."""
    written = json.dumps(text)
    if limit is None or len(written) <= limit + 2:
        return written
    pieces, length = [], 0
    for char in text:
        piece = json.dumps(char)[1:-1]
        if length + len(piece) > limit:
            break
        pieces.append(piece)
        length += len(piece)
    return '"' + "".join(pieces) + '"...'


def shown(value, limit=SHOWN):
    """``value`` as YAML writes it, for a message: text quoted (and cut), a number, true, false, null;
    a mapping, a list or anything else by its kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # a number too long to show (or for Python to print: 4300 digits) by its size
        return "%d" % value if value.bit_length() <= 64 else "a number of %d bits" % value.bit_length()
    if isinstance(value, float):
        return ("%r" % value)[:SHOWN]
    if isinstance(value, str):
        return quoted(value, limit)
    return kind(value)


def describe(value):
    """``value``'s kind with the value when it is a scalar: ``a number (5)``, ``text ("x")``, ``a mapping``."""
    if value is None or isinstance(value, (Mapping, list, tuple)):
        return kind(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return shown(value)
    if not isinstance(value, (bool, int, float, str)):
        return kind(value)
    return "%s (%s)" % (kind(value), shown(value))
