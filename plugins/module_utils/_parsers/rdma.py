# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for kernel attribute formats and tool output.

No I/O here: every function takes text and returns data, and is tested against output
captured from the real tools (tests/unit/fixtures).  Formats are documented next to each
parser with the tool source that produces them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import re

# IB MTU enum values (ib_verbs.h enum ib_mtu): 1..5 = 256..4096 bytes.
IB_MTUS = (256, 512, 1024, 2048, 4096)
# iboe_get_mtu() (include/rdma/ib_addr.h): GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4.
ROCE_HEADER_BYTES = 96

_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_HOST_BRIDGE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")


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


def is_pci_address(name):
    return bool(name) and bool(_PCI_ADDRESS.match(name))


def pci_chain(device_path):
    """PCI components of a sysfs device path, host bridge first.

    ``/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0`` gives
    ``["pci0000:3a", "0000:3a:00.0", "0000:3b:00.0"]``; a virtual device gives ``[]``.
    """
    chain = []
    for part in (device_path or "").split("/"):
        if _HOST_BRIDGE.match(part) or _PCI_ADDRESS.match(part):
            chain.append(part)
    return chain


def pci_relation(chain_a, chain_b, numa_a, numa_b):
    """How two PCI endpoints reach each other, in the terms of ``nvidia-smi topo -m``.

    ``same_pcie_switch`` (PIX/PXB): they share PCI bridges below the host bridge, so
    peer-to-peer traffic never reaches the CPU; ``same_host_bridge`` (PHB); ``same_numa_node``
    (NODE); ``cross_numa`` (SYS); None when either side is not a PCI device.
    """
    if len(chain_a) < 2 or len(chain_b) < 2:
        return None
    shared = 0
    for part_a, part_b in zip(chain_a[:-1], chain_b[:-1]):
        if part_a != part_b:
            break
        shared += 1
    # shared counts the host bridge plus every common bridge below it.
    if shared >= 3:
        return "same_pcie_switch"
    if shared >= 1:
        return "same_host_bridge"
    if numa_a is not None and numa_a == numa_b:
        return "same_numa_node"
    return "cross_numa"


def decode_gid(text):
    """Decode a sysfs GID (``%pI6`` full form).

    Return ``(gid, ipv4)`` where ``gid`` is the text as the kernel printed it and ``ipv4``
    the IPv4 address of an IPv4-mapped GID; ``(None, None)`` for an empty (all-zero) slot or
    text that is not a GID.
    """
    if not text:
        return None, None
    text = text.strip()
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
_DEVINFO_FIELD = re.compile(r"^\t+(\w+):\s*(.*?)\s*$")
_DEVINFO_MTU = re.compile(r"^(\d+)\s*\(\d+\)$")
_DEVINFO_STATE = re.compile(r"^(\w+)\s*\((\d+)\)$")


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
        match = _DEVINFO_FIELD.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if key == "GID":
            continue
        target = port if port is not None and line.startswith("\t\t\t") else device
        if key in ("max_mtu", "active_mtu"):
            mtu = _DEVINFO_MTU.match(value)
            target[key] = int(mtu.group(1)) if mtu else None
        elif key in ("state", "phys_state"):
            state = _DEVINFO_STATE.match(value)
            target[key] = state.group(1) if state else value
        else:
            target[key] = value
    return devices


_OFED_INFO = re.compile(r"^(MLNX_OFED_LINUX|OFED-internal)-([0-9][0-9A-Za-z.]*-[0-9][0-9A-Za-z.]*):?\s*$")


def parse_ofed_info(text):
    """Parse ``ofed_info -s`` (one line with a trailing colon).

    ``MLNX_OFED_LINUX-23.10-1.1.9.0:`` gives ``{"distribution": "MLNX_OFED_LINUX",
    "version": "23.10-1.1.9.0", "major": 23}``; anything else gives None.
    """
    for line in (text or "").splitlines():
        match = _OFED_INFO.match(line.strip())
        if match:
            version = match.group(2)
            try:
                major = int(version.split(".", 1)[0].split("-", 1)[0])
            except ValueError:
                major = None
            return dict(distribution=match.group(1), version=version, major=major)
    return None


def parse_ip_addr_json(text):
    """Parse ``ip -j addr show`` (iproute2): ``{ifname: {"ipv4": [...], "ipv6": [...]}}``.

    Addresses are ``address/prefixlen`` strings normalised through :mod:`ipaddress`.
    Malformed JSON gives ``{}`` so that a broken tool only costs facts, never the run.
    """
    try:
        links = json.loads(text or "[]")
    except ValueError:
        return {}
    result = {}
    if not isinstance(links, list):
        return result
    for link in links:
        name = link.get("ifname") if isinstance(link, dict) else None
        if not name:
            continue
        entry = result.setdefault(name, {"ipv4": [], "ipv6": []})
        for info in link.get("addr_info") or []:
            local, prefix = info.get("local"), info.get("prefixlen")
            if local is None or prefix is None:
                continue
            try:
                iface = ipaddress.ip_interface(u"%s/%s" % (local, prefix))
            except ValueError:
                continue
            entry["ipv4" if iface.version == 4 else "ipv6"].append(str(iface))
    return result
