# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for RDMA kernel attribute formats and verbs tool output.

No I/O here: every function takes text and returns data, and is tested against output
captured from the real tools (tests/unit/fixtures).  Formats are documented next to each
parser with the tool source that produces them.

Parsers of other tool families live next to this one: :mod:`.pci` (sysfs PCI paths, lspci,
the kernel command line), :mod:`.iproute` (``ip -j``) and :mod:`.ofed_info`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

# IB MTU enum values (ib_verbs.h enum ib_mtu): 1..5 = 256..4096 bytes.
IB_MTUS = (256, 512, 1024, 2048, 4096)
# iboe_get_mtu() (include/rdma/ib_addr.h): GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4.
ROCE_HEADER_BYTES = 96


def parse_numbered_state(text):
    """sysfs ``state``/``phys_state``/``node_type`` read ``"4: ACTIVE"``: return ``("ACTIVE", 4)``."""
    if text is None:
        return None, None
    number, sep, name = text.partition(":")
    if not sep:
        return text.strip() or None, None
    try:
        return name.strip(), int(number)
    except ValueError:
        return text.strip(), None


ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def decode_gid(text):
    """Decode a sysfs GID (``%pI6`` full form).

    Return ``(gid, ipv4)`` where ``gid`` is the text as the kernel printed it and ``ipv4``
    the IPv4 address of an IPv4-mapped GID; ``(None, None)`` for an empty (all-zero) slot or
    text that is not a GID.
    """
    if not text:
        return None, None
    text = text.strip()
    if text == ZERO_GID:
        # most of a GID table (rxe: 1024 slots, mlx5: 255 per port) is empty: no address parsing for those
        return None, None
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None, None
    if int(address) == 0:
        return None, None
    mapped = address.ipv4_mapped
    return text, (str(mapped) if mapped is not None else None)


def roce_active_mtu(netdev_mtu, max_mtu=4096):
    """The RoCE path MTU the kernel derives from a netdev MTU (``iboe_get_mtu``).

    The largest IB MTU that fits in the netdev MTU minus the RoCE headers, capped at the
    port's ``max_mtu``: 9000 gives 4096, 1500 gives 1024.
    """
    if netdev_mtu is None:
        return None
    room = netdev_mtu - ROCE_HEADER_BYTES
    fitting = [mtu for mtu in IB_MTUS if mtu <= room and (max_mtu is None or mtu <= max_mtu)]
    return fitting[-1] if fitting else None


_DEVINFO_HCA = re.compile(r"^hca_id:\s*(\S+)")
_DEVINFO_PORT = re.compile(r"^\t\tport:\s*(\d+)")
_DEVINFO_FIELD = re.compile(r"\t+(\w+):\s*(.*?)\s*")
_DEVINFO_MTU = re.compile(r"(\d+)\s*\(\d+\)")
_DEVINFO_STATE = re.compile(r"(\w+)\s*\((\d+)\)")


def parse_ibv_devinfo(text):
    """Parse plain ``ibv_devinfo`` output (rdma-core ``libibverbs/examples/devinfo.c``).

    Return ``{hca_id: {field: value, ..., "ports": {"1": {field: value}}}}``.  ``max_mtu``
    and ``active_mtu`` become integers in bytes; ``state``/``phys_state`` keep the name
    (``PORT_ACTIVE``).  ``-v`` output parses too; GID lines and capability lists are ignored.
    """
    devices = {}
    device = port = None
    for line in (text or "").splitlines():
        match = _DEVINFO_HCA.match(line)
        if match:
            device = devices.setdefault(match.group(1), {"ports": {}})
            port = None
            continue
        if device is None:
            continue
        match = _DEVINFO_PORT.match(line)
        if match:
            port = device["ports"].setdefault(match.group(1), {})
            continue
        match = _DEVINFO_FIELD.fullmatch(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if key == "GID":
            continue
        target = port if port is not None and line.startswith("\t\t\t") else device
        if key in ("max_mtu", "active_mtu"):
            mtu = _DEVINFO_MTU.fullmatch(value)
            target[key] = int(mtu.group(1)) if mtu else None
        elif key in ("state", "phys_state"):
            state = _DEVINFO_STATE.fullmatch(value)
            target[key] = state.group(1) if state else value
        else:
            target[key] = value
    return devices
