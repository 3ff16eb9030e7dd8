# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets never leave a module: credentials in URLs are masked in every message, result and diff.

A repository URL may carry ``user:token@``.  The engine passes the whole result, every warning
and every failure through :func:`redact` before Ansible sees it, so no caller can forget.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

MASK = "********"

# scheme://userinfo@host...: the userinfo is everything between '//' and the last '@' before
# the first '/', '?' or '#' after it (RFC 3986, section 3.2.1).
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s@]*(?:@[^/?#\s@]*)*)@")


def redact_text(text, secrets=()):
    """``text`` with URL credentials and every string in ``secrets`` masked."""
    if not isinstance(text, str) or not text:
        return text
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return text


def has_credentials(url):
    """True when ``url`` carries a user name or password."""
    return bool(isinstance(url, str) and _URL_USERINFO.search(url))


def redact(value, secrets=()):
    """A copy of ``value`` (dicts, lists, tuples and text, nested) with every secret masked."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return dict((redact(key, secrets), redact(item, secrets)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item, secrets) for item in value)
    return value
