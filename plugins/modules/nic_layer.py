#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nic_layer
short_description: The MTU of every RDMA link and the RoCE QoS of every RDMA port of a host in one call, QoS re-applied at boot
version_added: 1.0.0
description:
  - Runs, for each link in O(link_mtu.interfaces), the engine of M(rdmaops.roce.link_mtu) (MTU now and persisted,
    management path protected), and then, for each port in O(ports), the engines of M(rdmaops.roce.nic_qos)
    (trust, PFC, ETS, buffers),
    M(rdmaops.roce.roce_ecn) (ECN/DCQCN) and M(rdmaops.roce.roce_tos) (RDMA-CM ToS and RoCE mode),
    planned together, so there is one module round trip per host, one check mode prediction, one diff and one
    truthful result when applying stops part-way (what can be undone is undone, the MTU included).
  - The links share one view of the network configuration, so links configured in the same file (two
    C(iface) stanzas of C(/etc/network/interfaces)) make one write, and each activation command
    (C(netplan generate), C(networkctl reload)) runs once.
  - With O(rails), each RDMA netdev's rail address, routing table, rule and ARP/reverse-path sysctls, in the same
    plan (multi-rail hosts).
  - Installs the boot-time re-apply generated from the same desired state
    (C(/usr/local/sbin/rdmaops-nic-reapply), the template unit C(rdmaops-nic-qos@.service) and a udev rule
    that starts it for every RDMA device that appears, at boot and after a driver reload), because none of
    these settings survives either.
  - A part the driver cannot do (no DCB on the netdev, no OFED ECN tree) is reported once per host and part
    with what to do (O(unsupported=warn)), or fails before anything is changed (O(unsupported=fail)).
  - The fine-grained modules stay for playbooks that call them directly; the C(rdmaops.roce.nic) role
    uses this one.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(ip) from iproute2 on the managed host, and what M(rdmaops.roce.link_mtu) needs for the system that configures each link.
  - For QoS, C(dcb) from iproute2 (5.11 or later) or C(mlnx_qos) from mlnx-tools (part of MLNX_OFED/DOCA-OFED); systemd and udev for the boot-time re-apply.
options:
  link_mtu:
    description:
      - The MTU of the RDMA links, with the options of M(rdmaops.roce.link_mtu); omitted or without
        O(link_mtu.interfaces) to leave MTUs alone.
    type: dict
    suboptions:
      interfaces:
        description:
          - The links, by kernel name, each held to the rule of O(rdmaops.roce.link_mtu#module:interface) (letters,
            digits, C(_), C(.) and C(-); no shell or file syntax).
        type: list
        elements: str
        default: []
      mtu:
        description: The MTU in bytes (required with O(link_mtu.interfaces)).
        type: int
      persist:
        description: As O(rdmaops.roce.link_mtu#module:persist).
        type: bool
        default: true
      backend:
        description: As O(rdmaops.roce.link_mtu#module:backend).
        type: str
        choices: [auto, netplan, networkmanager, networkd, ifupdown, ifcfg, runtime]
        default: auto
      raise_lower:
        description: As O(rdmaops.roce.link_mtu#module:raise_lower).
        type: bool
        default: true
      allow_management_change:
        description: As O(rdmaops.roce.link_mtu#module:allow_management_change).
        type: bool
        default: false
      management_interfaces:
        description: As O(rdmaops.roce.link_mtu#module:management_interfaces).
        type: list
        elements: str
        default: []
  ports:
    description:
      - One entry per RDMA port. At least one of O(ports) and O(link_mtu.interfaces) is needed.
      - With no port, the boot-time re-apply files are removed (there is nothing to re-apply).
    type: list
    elements: dict
    default: []
    suboptions:
      interface:
        description: The netdev of the port (letters, digits, C(_), C(.) and C(-), as O(link_mtu.interfaces)).
        type: str
        required: true
      device:
        description: The RDMA device of the port.
        type: str
        required: true
      port:
        description: The port number of the RDMA device.
        type: int
        default: 1
      qos:
        description: Options of M(rdmaops.roce.nic_qos) without O(rdmaops.roce.nic_qos#module:interface); omitted or empty to leave it.
        type: dict
      ecn:
        description: Options of M(rdmaops.roce.roce_ecn) without O(rdmaops.roce.roce_ecn#module:interface); omitted or empty to leave it.
        type: dict
      tos:
        description: Options of M(rdmaops.roce.roce_tos) without device and port; omitted or empty to leave it.
        type: dict
  rails:
    description:
      - The rail of each RDMA netdev on a multi-rail host (see docs/multirail.md) - its address, a routing table of
        its own with the subnet route and the default route via the rail's gateway, the rule
        C(from <address> lookup <table>), and C(arp_ignore), C(arp_announce), C(rp_filter) on the netdev, now and
        persisted in what configures the link (the backends of M(rdmaops.roce.link_mtu)), in the same run as the MTU.
      - The tables are named C(rdmaops_<netdev>) in C(/etc/iproute2/rt_tables.d/rdmaops.conf); the sysctls persist in
        C(/etc/sysctl.d/90-rdmaops-rails.conf).
      - Omitted or without O(rails.links) to leave addresses, routes and rules alone.
    type: dict
    suboptions:
      links:
        description:
          - One entry per netdev and rail, as the C(rdmaops.roce.roce_rail_links) filter computes them from
            C(roce_fabric.rails).
        type: list
        elements: dict
        default: []
        suboptions:
          rail:
            description:
              - The rail's name (for results and messages, and the comment above its table in C(rt_tables.d)); 1-32
                characters of C(A-Z), C(a-z), C(0-9), C(_) and C(-), the first a letter or a digit. Omitted, the
                netdev's name.
            type: str
          interface:
            description: The netdev (letters, digits, C(_), C(.) and C(-), as O(link_mtu.interfaces)).
            type: str
            required: true
          address:
            description: The netdev's address on the rail (IPv4 or IPv6).
            type: str
            required: true
          prefix:
            description: Its prefix length (31 or 127 for a point-to-point link).
            type: int
            required: true
          network:
            description: The rail's subnet or the link (checked to hold the address).
            type: str
          gateway:
            description: The rail's gateway (the leaf); the table's default route goes there.
            type: str
          table:
            description: The routing table number of the netdev (not 0, 253, 254 or 255).
            type: int
            required: true
          rule_priority:
            description:
              - The priority of the rule C(from <address> lookup <table>); 1000 sits after the local table's rule
                (0) and before main's (32766).
            type: int
            default: 1000
      exclusive:
        description:
          - Remove the other global addresses of the rail's family from the netdevs (V(false) leaves them alone).
          - Link-local IPv6 addresses are always left alone.
          - "A NetworkManager profile loses the other addresses of the family too, and ifcfg its other C(IPADDRn). An address in a
            file of the user's (systemd-networkd's .network, netplan, an ifupdown stanza) is not ours to edit: it comes back when that
            file is applied again (a reboot, C(networkctl reload) after a drop-in changed, C(netplan apply), C(ifup)). systemd 252
            (Debian 12) has no way for a drop-in to clear it (an empty C(Address=) is refused there)."
          - "Never on the management path (the management path of M(rdmaops.roce.link_mtu), with
            O(link_mtu.management_interfaces)): an address that would be removed from such a netdev, live, from
            its NetworkManager profile or from its ifcfg file, is refused before anything is changed, naming the
            netdev and why it is on the path. So is a rule from the SSH connection's own address into a rail's
            table, and the removal of a route of a management netdev from a rail's table."
        type: bool
        default: false
      arp_ignore:
        description: C(net.ipv4.conf.<netdev>.arp_ignore); 1 answers ARP only for an address of the netdev asked.
        type: int
        default: 1
      arp_announce:
        description: C(net.ipv4.conf.<netdev>.arp_announce); 2 sources ARP requests from the netdev's own address.
        type: int
        default: 2
      rp_filter:
        description: C(net.ipv4.conf.<netdev>.rp_filter); 2 (loose) accepts a peer's packet whichever rail it came on.
        type: int
        default: 2
      persist:
        description: Persist in the network configuration and sysctl.d (V(false) sets the live state only).
        type: bool
        default: true
      backend:
        description: As O(rdmaops.roce.link_mtu#module:backend).
        type: str
        choices: [auto, netplan, networkmanager, networkd, ifupdown, ifcfg, runtime]
        default: auto
  unsupported:
    description: What to do about a part the driver cannot do.
    type: str
    choices: [warn, fail]
    default: warn
  boot_reapply:
    description: Install (V(true)) or leave alone (V(false)) the boot-time re-apply.
    type: bool
    default: true
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.disruption
  - rdmaops.roce.owned_files
seealso:
  - module: rdmaops.roce.nic_qos
  - module: rdmaops.roce.roce_ecn
  - module: rdmaops.roce.roce_tos
"""

EXAMPLES = r"""
- name: MTU 9000 and the lossless RoCE profile on two ports
  rdmaops.roce.nic_layer:
    link_mtu:
      mtu: 9000
      interfaces: [ens1f0np0, ens1f1np1]
    ports:
      - interface: ens1f0np0
        device: mlx5_0
        qos: {trust: dscp, pfc: [3]}
        ecn: {priorities: [3], cnp_dscp: 48, cnp_802p_prio: 6}
        tos: {tos: 106, roce_mode: v2}
      - interface: ens1f1np1
        device: mlx5_1
        qos: {trust: dscp, pfc: [3]}
        ecn: {priorities: [3], cnp_dscp: 48, cnp_802p_prio: 6}
        tos: {tos: 106, roce_mode: v2}
"""

RETURN = r"""
disruption:
  description:
    - The most disruptive class of what this run changes (in check mode, would change), V(none) when nothing.
  returned: always
  type: str
  choices: [none, online, link_reset, driver_restart, reboot]
  sample: link_reset
disruptive_changes:
  description: Each change above V(online), most disruptive first, prefixed with its class.
  returned: always
  type: list
  elements: str
  sample: ["link_reset: ens1f0np0: set pfc from [] to [3]"]
held_back:
  description: True when the plan needed more than O(max_disruption) allows, so nothing was changed.
  returned: when held back
  type: bool
  sample: true
pending:
  description: The changes held back by O(max_disruption), in the order they would be made.
  returned: when held back
  type: list
  elements: str
link_mtu:
  description:
    - C(links) holds each link as M(rdmaops.roce.link_mtu) returns it, without C(commands); C(commands) the
      commands that changed or activated something for all links; C(mtu) the MTU asked.
    - C(management_change) is true when a change reached the management path (allowed by
      O(link_mtu.allow_management_change)); re-test the connection then.
  returned: always
  type: dict
  sample: {mtu: 9000, links: [], commands: ["ip link set dev ens1f0np0 mtu 9000"], management_change: false}
ports:
  description: Per port, the result of each part as its fine-grained module returns it.
  returned: always
  type: list
  elements: dict
rails:
  description:
    - C(links), each rail link with its C(backend) and the C(config) file or profile that persists it; C(before)
      and C(after) per netdev, its C(addresses), the C(routes) of its table, its C(rules) and C(sysctls).
  returned: always
  type: dict
unsupported:
  description: Per part (C(qos)), the netdevs it was not applied on and why.
  returned: always
  type: dict
boot_reapply:
  description: The files of the boot-time re-apply (empty when O(boot_reapply=false)).
  returned: always
  type: list
  elements: str
changes:
  description: One line per change, in the order they are (or would be) made.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import NicLayer, argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, NicLayer)


if __name__ == "__main__":
    main()
