# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the kernel shows the hardware, and the PCI identities the collection looks for.

Every reader of the host model takes its paths and vendor ids from here, once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

NET_CLASS = "/sys/class/net"
IB_CLASS = "/sys/class/infiniband"
PCI_DEVICES = "/sys/bus/pci/devices"
MODULES = "/sys/module"
IOMMU_GROUPS = "/sys/kernel/iommu_groups"
IOMMU_CLASS = "/sys/class/iommu"

NVIDIA_VENDOR = "0x10de"
MELLANOX_VENDOR = "0x15b3"
GPU_CLASSES = ("0x0300", "0x0302")  # VGA-compatible and 3D controllers


def kernel_release(host):
    """The running kernel's release (``uname -r``) through the host root, or None."""
    return (host.read("/proc/sys/kernel/osrelease") or "").strip() or None


def int_or_none(value):
    """``int(value)`` for decimal text or a number, None for anything else (None, '', 'auto')."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
