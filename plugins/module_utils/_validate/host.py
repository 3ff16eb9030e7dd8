# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's host checks: modules, RoCE ports, MTU, active_mtu, the RoCE v2 GID and peermem."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.rdma import roce_active_mtu
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import compare, finding, not_checked
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.qos import qos_findings

REQUIRED_MODULES = ("rdma_cm", "ib_uverbs")

_PORT_NUMBER = re.compile(r"[0-9]{1,9}")


def _port_order(name):
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses
    return (int(name), name) if _PORT_NUMBER.fullmatch(name) else (-1, name)


def _ports(rdma):
    """``([(device, port name, port, netdev)] of ACTIVE RoCE ports, [what was not read: dev/port whose state is
    unknown, a device whose ports are unknown, or the devices])``."""
    active, unknown = [], []
    devices = rdma.get("devices")
    if devices is None:
        return active, ["rdma.devices (the RDMA devices)"]
    for dev in sorted(devices):
        ports = (devices[dev] or {}).get("ports")
        if ports is None:
            # a device of null, or without its ports: its ports are not known, not absent
            unknown.append("the ports of %s" % dev)
            continue
        for num in sorted(ports, key=_port_order):
            port = ports[num] or {}
            if port.get("link_layer") is None or (port.get("link_layer") == "Ethernet" and port.get("state") is None):
                unknown.append("the link layer or state of %s/%s" % (dev, num))
            elif port["link_layer"] == "Ethernet" and port.get("netdev") and port["state"] == "ACTIVE":
                active.append((dev, num, port, port["netdev"]))
    return active, unknown


def host_findings(host, state, intent):
    """Modules, ports, MTU, active_mtu, GID, QoS (trust, PFC, DSCP map, ECN, ToS, RoCE mode), peermem."""
    rdma = state.get("rdma")
    if not rdma or "devices" not in rdma:
        return [not_checked("facts", host, "rdma", "no readable rdma_facts for this host (unreachable, a task before fabric_check "
                                                   "failed on it, or its facts could not be read)")]
    out = []
    modules = rdma.get("modules") or {}
    for name in REQUIRED_MODULES:
        loaded = modules.get(name)
        out.append(compare("modules", host, name, "loaded", None if loaded is None else ("loaded" if loaded else "not loaded"),
                           "load it: modprobe %s (rdmaops.roce.ofed loads and persists the RDMA modules)" % name))
    ports, unknown = _ports(rdma)
    if ports or not unknown:
        out.append(finding("ports", host, "active_roce_ports", ">= 1", len(ports),
                           "no ACTIVE Ethernet (RoCE) port with a netdev: check the cable, the link and the driver (ibv_devinfo)",
                           len(ports) > 0))
    else:
        out.append(not_checked("ports", host, "active_roce_ports", "not read: %s" % ", ".join(unknown),
                               expected=">= 1"))
    netdevs = rdma.get("netdevs") or {}
    host_mtu = intent["host_mtu"]
    for dev, num, port, netdev in ports:
        device = "%s/%s" % (dev, num)
        out.append(compare("mtu", host, "mtu", host_mtu, (netdevs.get(netdev) or {}).get("mtu"),
                           "set %s's MTU to %s (rdmaops.roce.nic, nic role: link MTU from roce_fabric.host_mtu)" % (netdev, host_mtu),
                           device=device))
        out.append(compare("mtu", host, "active_mtu", roce_active_mtu(host_mtu, port.get("max_mtu") or 4096), port.get("active_mtu"),
                           "RoCE's active_mtu follows the netdev MTU: fix %s's MTU, then check ibv_devinfo" % netdev, device=device))
        if "roce_v2_ipv4_gid_index" not in port:
            out.append(not_checked("gid", host, "roce_v2_ipv4_gid_index", "the RoCE v2 GID index was not read", device=device,
                                   expected="a RoCE v2 IPv4 GID"))
            continue
        gid = port["roce_v2_ipv4_gid_index"]  # null: rdma_facts found no RoCE v2 GID with an IPv4 address
        out.append(finding("gid", host, "roce_v2_ipv4_gid_index", "a RoCE v2 IPv4 GID", gid,
                           "no RoCE v2 GID with an IPv4 address on %s: give %s an IPv4 address" % (device, netdev),
                           gid is not None, device=device))
    out.extend(qos_findings(host, state.get("nic"), ports, intent, state.get("nic_error")))
    if rdma.get("gpus"):
        known = [modules[name] for name in ("nvidia_peermem", "nv_peer_mem") if modules.get(name) is not None]
        if not known:
            out.append(not_checked("peermem", host, "nvidia_peermem", "no module facts for nvidia_peermem on this GPU host",
                                   expected="loaded"))
        else:
            out.append(finding("peermem", host, "nvidia_peermem", "loaded", "loaded" if any(known) else "not loaded",
                               "GPUDirect RDMA needs nvidia_peermem: rdmaops.roce.peermem loads and persists it", any(known)))
    return out
