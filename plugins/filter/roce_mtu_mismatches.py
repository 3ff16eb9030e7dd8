# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.ports import roce_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import int_or_none
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.rdma import roce_active_mtu


def roce_mtu_mismatches(rdma, host_mtu, interfaces=None, host=None):
    """RoCE ports whose netdev MTU or active_mtu is not what ``host_mtu`` gives (see roce_mtu_mismatches.yml)."""
    if not isinstance(rdma, dict) or "devices" not in rdma:
        raise AnsibleFilterError("roce_mtu_mismatches expects ansible_facts.rdma (run rdmaops.roce.rdma_facts first)")
    mtu = int_or_none(host_mtu)
    if mtu is None:
        raise AnsibleFilterError("roce_mtu_mismatches: host_mtu=%r is not an integer" % (host_mtu,))
    host_mtu = mtu
    netdevs = rdma.get("netdevs") or {}
    out = []
    for device, port_name, port, netdev in roce_ports(rdma, interfaces):
        netdev_mtu = (netdevs.get(netdev) or {}).get("mtu")
        expected = roce_active_mtu(host_mtu, port.get("max_mtu") or 4096)
        problems = []
        if netdev_mtu != host_mtu:
            problems.append("netdev MTU %s, not %d" % (netdev_mtu, host_mtu))
        if port.get("active_mtu") != expected:
            problems.append("active_mtu %s, not %s" % (port.get("active_mtu"), expected))
        if problems:
            out.append(
                dict(
                    host=host,
                    device=device,
                    port=str(port_name),
                    netdev=netdev,
                    netdev_mtu=netdev_mtu,
                    active_mtu=port.get("active_mtu"),
                    expected_active_mtu=expected,
                    mtu_source=port.get("mtu_source"),
                    problem="; ".join(problems),
                )
            )
    return out


class FilterModule:
    def filters(self):
        return {"roce_mtu_mismatches": roce_mtu_mismatches}
