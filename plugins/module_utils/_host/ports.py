# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RoCE ports of a host's RDMA facts, without the facts reader.

The NIC layer, the NCCL configuration, the monitor's collector and the controller's filters walk
the facts the same way; the NIC layer does not read facts, so it imports this and not
:mod:`.rdma_facts` (whose parsers a module would otherwise load on the host for nothing).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def roce_ports(rdma, interfaces=None):
    """``(device, port name, port, netdev)`` for every Ethernet (RoCE) port with a netdev in the
    facts ``rdma`` (``ansible_facts.rdma``), devices and ports in order; only netdevs in
    ``interfaces`` (a list, or one name) when given."""
    if isinstance(interfaces, str):
        # one netdev name, not a list of its characters
        interfaces = [interfaces]
    wanted = set(interfaces) if interfaces else None
    for device in sorted(rdma["devices"]):
        ports = rdma["devices"][device].get("ports") or {}
        for port_name in sorted(ports, key=lambda name: int(name) if str(name).isdigit() else 0):
            port = ports[port_name]
            netdev = port.get("netdev")
            if port.get("link_layer") == "Ethernet" and netdev and (wanted is None or netdev in wanted):
                yield device, port_name, port, netdev
