# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one interface-name rule: the kernel's own (``dev_valid_name`` in net/core/dev.c).

A netdev name is 1 to 15 bytes (IFNAMSIZ - 1), is not ``.`` or ``..``, and holds no ``/``,
no ``:`` and no whitespace.  (``eth0:1`` is an address label, not an interface.)  Every module
that takes an interface checks it here, so no two modules disagree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError

# C isspace(): space, \t, \n, \v, \f, \r (NUL ends a C string, so it cannot be in a name).
IFNAME = re.compile(r"(?!\.\.?\Z)[^/: \t\n\v\f\r\x00]{1,15}")
RULE = "1-15 bytes, not '.' or '..', no '/', ':' or whitespace"
# The kernel's isspace() (lib/ctype.c) also counts the byte 0xA0 (Latin-1 no-break space), so a
# UTF-8 name with that byte in it (U+00A0, 'à' = C3 A0 ...) is refused too.
_KERNEL_SPACE_BYTE = b"\xa0"


def valid_ifname(name):
    """True when ``name`` is a name the kernel accepts for a netdev."""
    if not isinstance(name, str):
        return False
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates cannot be sent to the kernel
        return False
    return len(raw) <= 15 and _KERNEL_SPACE_BYTE not in raw and IFNAME.fullmatch(name) is not None


def check_ifname(key, name):
    """Return ``name``, or raise InputError naming the option and the rule."""
    if not valid_ifname(name):
        raise InputError("%s=%r is not a kernel interface name (%s)" % (key, name, RULE), option=key)
    return name
