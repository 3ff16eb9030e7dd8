# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel command line the GRUB defaults give, read without running them.

``grub-mkconfig`` sources ``/etc/default/grub`` and then every ``/etc/default/grub.d/*.cfg`` in
name order with ``/bin/sh``: whatever those files contain runs.  This module must be able to
tell (also in check mode) whether ``iommu=pt`` is already there, so it reads the files as data:
a small reader of the shell-variable assignments GRUB defaults are made of, that never executes
anything.

What it understands: ``NAME=value`` and ``NAME+=value`` (also after ``export``), values built of
unquoted text, ``'single'`` and ``"double"`` quotes, backslash escapes and line continuations,
``$NAME``, ``${NAME}`` and ``${NAME:-word}``/``${NAME-word}``/``${NAME:+word}``/``${NAME+word}``
expansions (so ``GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"`` appends, as in
cloud-image drop-ins), comments, and statements separated by newlines, ``;``, ``&&`` and ``||``.
Everything else (commands, conditionals, functions) is skipped: its assignments are still read,
in order, as if the conditions held.  A command substitution (``$(...)``, backquotes) or a
positional parameter is never run or guessed: it counts as unknown, and :meth:`notes` says which
part of the command line could not be known.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError

CMDLINE_VARS = ("GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?=)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+=?])(.*))?", re.S)
# Words after which the next word is again at the start of a command (so may be an assignment).
_KEYWORDS = ("export", "readonly", "then", "do", "else", "elif", "if", "while", "until", "{", "}", "!", "fi", "done")
_WORD_END = " \t\n;&|()<>"


class GrubDefaults:
    """Shell variables set by the GRUB defaults files, read in the order grub-mkconfig sources them."""

    def __init__(self):
        self.values = {}
        self.unknown = {}  # variable -> the parts of its value that were not run, "file line N: $(...)"
        self._text = ""
        self._i = 0
        self._origin = ""

    # -- the command line ---------------------------------------------------------------------
    def cmdline(self):
        """The words of ``GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT``, as grub-mkconfig joins them."""
        return ("%s %s" % tuple(self.values.get(name, "") for name in CMDLINE_VARS)).split()

    def notes(self):
        """One sentence per command line variable that holds parts this reader did not run."""
        return [
            "%s is set with %s, which rdmaops.roce never runs: the arguments it would give are not counted"
            % (name, ", ".join(self.unknown[name]))
            for name in CMDLINE_VARS
            if self.unknown.get(name)
        ]

    # -- reading ------------------------------------------------------------------------------
    def source(self, text, origin):
        """Read one file's assignments (``origin`` names it in messages)."""
        self._text, self._i, self._origin = text or "", 0, origin
        text = self._text
        command_start = True
        while self._i < len(text):
            c = text[self._i]
            if c in " \t":
                self._i += 1
            elif c == "\\" and text[self._i + 1:self._i + 2] == "\n":
                self._i += 2
            elif c in "\n;&|()":
                command_start = True
                self._i += 1
            elif c == "#":
                end = text.find("\n", self._i)
                self._i = len(text) if end < 0 else end
            elif c in "<>":
                while self._i < len(text) and text[self._i] in "<>&|0123456789":
                    self._i += 1
                self._skip_blanks()
                self._word()  # the redirection's target
            else:
                match = _ASSIGN.match(text, self._i) if command_start else None
                if match:
                    self._i = match.end()
                    self._assign(match.group(1), match.group(2) == "+=")
                    continue  # more assignments, or a command, may follow
                word, _unknown = self._word()
                command_start = word in _KEYWORDS

    def _assign(self, name, append):
        value, unknown = self._word()
        if append:
            value = self.values.get(name, "") + value
            unknown = self.unknown.get(name, []) + unknown
        self.values[name] = value
        self.unknown[name] = unknown

    # -- words --------------------------------------------------------------------------------
    def _where(self, index=None):
        index = self._i if index is None else index
        return "%s line %d" % (self._origin, self._text.count("\n", 0, index) + 1)

    def _fail(self, what, index):
        raise RdmaopsError(
            "%s: %s; rdmaops.roce reads the GRUB defaults without running them and cannot tell what kernel "
            "command line they give: fix the file (grub-mkconfig would fail on it too)" % (self._where(index), what),
            path=self._origin,
        )

    def _skip_blanks(self):
        while self._i < len(self._text) and self._text[self._i] in " \t":
            self._i += 1

    def _word(self):
        """The value of the word at the cursor and the unknown parts in it; the cursor moves past it."""
        text = self._text
        parts, unknown = [], []
        while self._i < len(text):
            c = text[self._i]
            if c in _WORD_END:
                break
            if c == "\\":
                nxt = text[self._i + 1:self._i + 2]
                if nxt != "\n":
                    parts.append(nxt)
                self._i += 2
            elif c == "'":
                end = text.find("'", self._i + 1)
                if end < 0:
                    self._fail("a single quote is not closed", self._i)
                parts.append(text[self._i + 1:end])
                self._i = end + 1
            elif c == '"':
                self._double_quoted(parts, unknown)
            elif c == "$":
                self._dollar(parts, unknown)
            elif c == "`":
                self._backquote(unknown)
            else:
                parts.append(c)
                self._i += 1
        return "".join(parts), unknown

    def _double_quoted(self, parts, unknown):
        text = self._text
        start = self._i
        self._i += 1
        while True:
            if self._i >= len(text):
                self._fail("a double quote is not closed", start)
            c = text[self._i]
            if c == '"':
                self._i += 1
                return
            if c == "\\" and text[self._i + 1:self._i + 2] in ("$", "`", '"', "\\", "\n"):
                if text[self._i + 1] != "\n":
                    parts.append(text[self._i + 1])
                self._i += 2
            elif c == "$":
                self._dollar(parts, unknown)
            elif c == "`":
                self._backquote(unknown)
            else:
                parts.append(c)
                self._i += 1

    def _dollar(self, parts, unknown):
        text = self._text
        start = self._i
        nxt = text[start + 1:start + 2]
        if nxt == "(":
            self._i = self._closing_paren(start + 1)
            unknown.append("%s: %s" % (self._where(start), text[start:self._i]))
        elif nxt == "{":
            end = text.find("}", start + 2)
            if end < 0:
                self._fail("a ${ is not closed", start)
            self._i = end + 1
            self._parameter(text[start + 2:end], parts, unknown, start)
        elif _NAME.match(text, start + 1):
            name = _NAME.match(text, start + 1).group(0)
            self._i = start + 1 + len(name)
            parts.append(self.values.get(name, ""))
            unknown.extend(self.unknown.get(name, []))
        elif nxt and nxt in "0123456789@*#?$!-":
            self._i = start + 2
            unknown.append("%s: $%s" % (self._where(start), nxt))
        else:
            parts.append("$")
            self._i = start + 1

    def _parameter(self, inner, parts, unknown, start):
        match = _PARAM.fullmatch(inner)
        if not match or (match.group(3) and re.search(r"[$`\\'\"]", match.group(3))):
            unknown.append("%s: ${%s}" % (self._where(start), inner))
            return
        name, op, word = match.group(1), match.group(2), match.group(3) or ""
        is_set = name in self.values
        value, from_var = self.values.get(name, ""), True
        if op in (":-", ":=", ":?"):
            if not value:
                value, from_var = word, False
        elif op in ("-", "=", "?"):
            if not is_set:
                value, from_var = word, False
        elif op == ":+":
            value, from_var = (word if value else ""), False
        elif op == "+":
            value, from_var = (word if is_set else ""), False
        if op in (":=", "=") and not from_var:
            self.values[name] = value
        parts.append(value)
        if from_var:
            unknown.extend(self.unknown.get(name, []))

    def _backquote(self, unknown):
        text = self._text
        start = self._i
        index = start + 1
        while index < len(text) and text[index] != "`":
            index += 2 if text[index] == "\\" else 1
        if index >= len(text):
            self._fail("a backquote is not closed", start)
        self._i = index + 1
        unknown.append("%s: %s" % (self._where(start), text[start:self._i]))

    def _closing_paren(self, index):
        """The index just after the parenthesis that closes the one at ``index`` (quotes skipped)."""
        text = self._text
        depth = 0
        start = index
        while index < len(text):
            c = text[index]
            if c == "\\":
                index += 2
                continue
            if c == "'":
                end = text.find("'", index + 1)
                if end < 0:
                    break
                index = end + 1
                continue
            if c == '"':
                index += 1
                while index < len(text) and text[index] != '"':
                    index += 2 if text[index] == "\\" else 1
                index += 1
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return index + 1
            index += 1
        self._fail("a $( is not closed", start - 1)


def read_defaults(host, main, dropin_dir, skip=()):
    """A :class:`GrubDefaults` read from ``main`` and the ``*.cfg`` files of ``dropin_dir`` in the order
    grub-mkconfig sources them (name order, hidden files left out, as the shell's glob does),
    leaving out the host paths in ``skip``.  Returns ``(defaults, paths read)``."""
    defaults = GrubDefaults()
    paths = [main] + ["%s/%s" % (dropin_dir, name) for name in sorted(host.listdir(dropin_dir))
                      if name.endswith(".cfg") and not name.startswith(".")]
    read = []
    for path in paths:
        if path in skip:
            continue
        text = files.read_text(host, path)
        if text is None:
            continue
        defaults.source(text, path)
        read.append(path)
    return defaults, read
