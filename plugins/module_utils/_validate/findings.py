# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every check of rdmaops.roce.fabric_check returns: a finding.

A finding is ``{check, host, peer, device, field, expected, actual, hint, passed}``. ``passed`` is
True or False for a part that was checked and None for a part with no data (not gathered, not
exposed by the driver, not installed) or with data that could not be read (``inputs``): such a part
is reported, never counted as passed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

FINDING_KEYS = ("check", "host", "peer", "device", "field", "expected", "actual", "hint", "passed")

NOT_CHECKED = "not checked"


def finding(check, host, field, expected, actual, hint, passed, peer=None, device=None):
    return dict(check=check, host=host, peer=peer, device=device, field=field, expected=expected, actual=actual,
                hint=hint if passed is not True else "", passed=passed)


def not_checked(check, host, field, why, peer=None, device=None, expected=None):
    return finding(check, host, field, expected, NOT_CHECKED, why, None, peer=peer, device=device)


def compare(check, host, field, expected, actual, hint, peer=None, device=None):
    """A checked finding: passed when ``actual`` equals ``expected``; None ``actual`` = not checked."""
    if actual is None or expected is None:
        return not_checked(check, host, field, "no value read for %s" % field, peer=peer, device=device, expected=expected)
    return finding(check, host, field, expected, actual, hint, actual == expected, peer=peer, device=device)


def tail(text, lines=2):
    return " | ".join((text or "").strip().splitlines()[-lines:])[:400] or "no output"
