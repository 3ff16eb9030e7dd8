#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nic_layer
short_description: The RoCE QoS of every RDMA port of a host in one call, re-applied at boot
version_added: 0.2.0
description:
  - Runs, for each port in O(ports), the engines of M(rdmaops.roce.nic_qos) (trust, PFC, ETS, buffers),
    M(rdmaops.roce.roce_ecn) (ECN/DCQCN) and M(rdmaops.roce.roce_tos) (RDMA-CM ToS and RoCE mode),
    planned together, so there is one module round trip per host, one check mode prediction, one diff and one
    truthful result when applying stops part-way.
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
options:
  ports:
    description:
      - One entry per RDMA port.
    type: list
    elements: dict
    required: true
    suboptions:
      interface:
        description: The netdev of the port.
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
  - rdmaops.roce.owned_files
seealso:
  - module: rdmaops.roce.nic_qos
  - module: rdmaops.roce.roce_ecn
  - module: rdmaops.roce.roce_tos
"""

EXAMPLES = r"""
- name: The lossless RoCE profile on two ports
  rdmaops.roce.nic_layer:
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
ports:
  description: Per port, the result of each part as its fine-grained module returns it.
  returned: always
  type: list
  elements: dict
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
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.nic_layer import NicLayer


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ports=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    interface=dict(type="str", required=True),
                    device=dict(type="str", required=True),
                    port=dict(type="int", default=1),
                    qos=dict(type="dict"),
                    ecn=dict(type="dict"),
                    tos=dict(type="dict"),
                ),
            ),
            unsupported=dict(type="str", choices=["warn", "fail"], default="warn"),
            boot_reapply=dict(type="bool", default=True),
            adopt=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    run_module(module, NicLayer)


if __name__ == "__main__":
    main()
