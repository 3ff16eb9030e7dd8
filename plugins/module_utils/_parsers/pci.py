# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for PCI topology and what the kernel says about it: sysfs device paths,
``lspci -D -vvv`` ACS capabilities and the kernel command line.

No I/O here: every function takes text and returns data.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_HOST_BRIDGE = re.compile(r"pci[0-9a-f]{4}:[0-9a-f]{2}")

# Kernel parameters that decide the IOMMU mode (and pci=, which carries config_acs=).
CMDLINE_KEYS = ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict", "pci")

_LSPCI_HEADER = re.compile(r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (.*)")
_ACS_FLAG = re.compile(r"([A-Za-z]+)([+-])")


def is_pci_address(name):
    """True for a full PCI address in the kernel's form (``0000:3b:00.0``)."""
    return isinstance(name, str) and _PCI_ADDRESS.fullmatch(name) is not None


def pci_chain(device_path):
    """PCI components of a sysfs device path, host bridge first.

    ``/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0`` gives
    ``["pci0000:3a", "0000:3a:00.0", "0000:3b:00.0"]``; a virtual device gives ``[]``.
    """
    chain = []
    for part in (device_path or "").split("/"):
        if _HOST_BRIDGE.fullmatch(part) or _PCI_ADDRESS.fullmatch(part):
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


def parse_cmdline(text):
    """The IOMMU-related parameters of a kernel command line (the last one of a name wins)."""
    params = {}
    for token in (text or "").split():
        if token == "--":
            break
        name, _sep, value = token.partition("=")
        if name in CMDLINE_KEYS:
            params[name] = value
    return params


def parse_lspci_acs(text):
    """``{bdf: {"name", "acs_cap"/"acs_ctl" (flag -> bool) or None, "access_denied"}}`` from ``lspci -D -vvv``."""
    devices = {}
    current = None
    for line in (text or "").splitlines():
        match = _LSPCI_HEADER.fullmatch(line)
        if match:
            current = match.group(1).lower()
            devices[current] = dict(name=match.group(2).strip(), acs_cap=None, acs_ctl=None, access_denied=False)
            continue
        if current is None:
            continue
        stripped = line.strip()
        for label, key in (("ACSCap:", "acs_cap"), ("ACSCtl:", "acs_ctl")):
            if stripped.startswith(label):
                devices[current][key] = dict((flag, sign == "+") for flag, sign in _ACS_FLAG.findall(stripped[len(label):]))
        if "<access denied>" in stripped:
            devices[current]["access_denied"] = True
    return devices
