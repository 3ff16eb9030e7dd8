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

# C isspace(): space, \t, \n, \v, \f, \r.
IFNAME = re.compile(r"(?!\.\.?\Z)[^/: \t\n\v\f\r]{1,15}")
RULE = "1-15 bytes, not '.' or '..', no '/', ':' or whitespace"


def valid_ifname(name):
    """True when ``name`` is a name the kernel accepts for a netdev."""
    return isinstance(name, str) and len(name.encode("utf-8")) <= 15 and IFNAME.fullmatch(name) is not None


def check_ifname(key, name):
    """Return ``name``, or raise InputError naming the option and the rule."""
    if not valid_ifname(name):
        raise InputError("%s=%r is not a kernel interface name (%s)" % (key, name, RULE), option=key)
    return name
