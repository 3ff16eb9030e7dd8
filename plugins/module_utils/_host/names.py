# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interface-name rules: the kernel's own, and the stricter one for names this collection writes.

The kernel's (``dev_valid_name`` in net/core/dev.c): a netdev name is 1 to 15 bytes (IFNAMSIZ - 1),
is not ``.`` or ``..``, and holds no ``/``, no ``:`` and no whitespace.  (``eth0:1`` is an address
label, not an interface.)  Every module that takes an interface checks it here, so no two modules
disagree.

That rule still lets ``r0;reboot``, ``$(id)``, quotes and backquotes through, and a netdev name
is written into files that are shell or have a syntax of their own: ifupdown's ``up`` lines run
through ``/bin/sh``, an ifcfg file is sourced by the network scripts, ``=`` is ifupdown's logical
interface separator, ``#`` starts a comment in every one of them, ``*``/``?``/``[`` are globs in a
systemd-networkd or netplan ``match``, ``%`` is a systemd specifier.  So a name that reaches a
network configuration file or a command line (link_mtu, nic_layer and its rails) must also pass
:data:`NETDEV_RULE`: letters, digits, ``_``, ``.`` and ``-``, starting with a letter, a digit or
``_`` -- the names udev, the installers and ``ip link add`` give in practice, safe in all five
configuration systems and in a shell word.  The names written are shell-quoted as well.

Rail names follow the controller's plan (``roce_rail_plan``): :data:`RAIL_NAME_RULE`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six.moves import shlex_quote

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


# The tool's rule, within the kernel's: safe as a word of sh, in an ifupdown stanza, an ifcfg file,
# a networkd or netplan match, a NetworkManager property and an rt_tables line.
NETDEV = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")
NETDEV_RULE = ("1-15 characters of A-Z, a-z, 0-9, '_', '.' and '-', the first a letter, a digit or '_' "
               "(such as ens1f0np0, eth1.100, bond_rdma)")


def valid_netdev(name):
    """True when ``name`` is a kernel interface name that may be written into network configuration."""
    return valid_ifname(name) and NETDEV.fullmatch(name) is not None


def check_netdev(key, name):
    """Return ``name``, or raise InputError naming the option and the allowed form.

    For every name written into a network configuration file or put on a command line: the
    kernel's rule and :data:`NETDEV_RULE`."""
    if not valid_ifname(name):
        raise InputError("%s=%s is not a kernel interface name (%s); use %s" % (key, _shown(name), RULE, NETDEV_RULE), option=key)
    if not valid_netdev(name):
        raise InputError("%s=%s is refused: the kernel allows it, but it holds a character that is shell or file syntax in the "
                         "network configuration it is written into (ifupdown, ifcfg, networkd, netplan, NetworkManager). Use %s"
                         % (key, _shown(name), NETDEV_RULE), option=key)
    return name


def shell_netdev(name, key="interface"):
    """``name`` as one word of a shell line (ifupdown's ``up``/``pre-up``): checked, then quoted.

    A name that passes :func:`check_netdev` needs no quotes, so the line reads as before; the
    quoting is the second wall, should a name ever reach here unchecked."""
    return shlex_quote(check_netdev(key, name))


# A rail's name, as the controller's plan gives it (roce_rail_plan): written into rt_tables.d's
# comment line and into messages.
RAIL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
RAIL_NAME_RULE = "1-32 characters of A-Z, a-z, 0-9, '_' and '-', the first a letter or a digit (such as rail0)"


def check_rail_name(key, name):
    """Return ``name``, or raise InputError naming the option and the allowed form."""
    if not isinstance(name, str) or RAIL_NAME.fullmatch(name) is None:
        raise InputError("%s=%s is not a rail name: use %s" % (key, _shown(name), RAIL_NAME_RULE), option=key)
    return name


def _shown(value, limit=40):
    """A user's value for a message: quoted and cut short (hostile input can be long), never a type name."""
    if isinstance(value, str):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if value is None:
        return "nothing"
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return str(value)
    return "a %s" % ("list" if isinstance(value, (list, tuple)) else "mapping" if isinstance(value, dict) else "non-text value")
