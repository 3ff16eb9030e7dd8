# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validators for parameters: every one matches the whole value.

``re.match(r"...$")`` accepts a trailing newline (``$`` matches before it), which once let a
sysctl key ending in ``\\n`` write a broken file.  Validation here uses ``fullmatch`` only and
raises :class:`InputError` naming the option and the fix, before anything is touched.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError

# A file name (not a path) that is safe to put in /etc/...: no separators, no leading dot or dash.
FILE_NAME = re.compile(r"[A-Za-z0-9_@+][A-Za-z0-9_.@+-]{0,200}")


def full_match(pattern, value):
    """True when ``value`` is text and ``pattern`` (a string or compiled regex) matches all of it."""
    if not isinstance(value, str):
        return False
    if isinstance(pattern, str):
        pattern = re.compile(pattern)
    return pattern.fullmatch(value) is not None


def require(key, value, pattern, what):
    """Return ``value`` when it matches ``pattern`` entirely, else raise InputError."""
    if not full_match(pattern, value):
        raise InputError("%s=%r is not %s" % (key, value, what), option=key)
    return value


def not_option_like(key, value):
    """Refuse values a command would read as an option (``-r``, ``--help``)."""
    if isinstance(value, str) and value.startswith("-"):
        raise InputError("%s=%r starts with '-', which the tool would read as an option" % (key, value), option=key)
    return value


def file_name(key, value, suffix=""):
    """A plain file name (no directory part, no '..', nothing hidden), optionally with ``suffix``."""
    if not full_match(FILE_NAME, value) or (suffix and not value.endswith(suffix)) or value in (".", ".."):
        raise InputError(
            "%s=%r must be a plain file name (letters, digits, '_', '-', '.', '@', '+'; no '/' and not "
            "starting with '.' or '-')%s" % (key, value, ", ending in %s" % suffix if suffix else ""),
            option=key,
        )
    return value


def absolute_path(key, value, under=None):
    """An absolute path with no '.' or '..' component, optionally inside ``under``."""
    parts = value.split("/") if isinstance(value, str) else []
    if (not parts or parts[0] != "" or any(part in (".", "..") for part in parts[1:])
            or "\x00" in value or "\n" in value or value.endswith("/")):
        raise InputError(
            "%s=%r must be an absolute file path without '.' or '..' components" % (key, value), option=key
        )
    if under and not value.startswith(under.rstrip("/") + "/"):
        raise InputError("%s=%r must be a file in %s" % (key, value, under), option=key)
    return value
