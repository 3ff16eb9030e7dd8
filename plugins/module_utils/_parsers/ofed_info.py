# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parser for ``ofed_info -s`` (MLNX_OFED and DOCA-OFED)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_OFED_INFO = re.compile(r"(MLNX_OFED_LINUX|OFED-internal)-([0-9][0-9A-Za-z.]*-[0-9][0-9A-Za-z.]*):?")


def parse_ofed_info(text):
    """Parse ``ofed_info -s`` (one line with a trailing colon).

    ``MLNX_OFED_LINUX-23.10-1.1.9.0:`` gives ``{"distribution": "MLNX_OFED_LINUX",
    "version": "23.10-1.1.9.0", "major": 23}``; anything else gives None.
    """
    for line in (text or "").splitlines():
        match = _OFED_INFO.fullmatch(line.strip())
        if match:
            version = match.group(2)
            try:
                major = int(version.split(".", 1)[0].split("-", 1)[0])
            except ValueError:
                major = None
            return dict(distribution=match.group(1), version=version, major=major)
    return None
