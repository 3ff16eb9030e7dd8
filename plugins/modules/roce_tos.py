#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: roce_tos
short_description: Set the RDMA-CM default ToS and RoCE mode of an RDMA port, and the OFED global traffic class
version_added: 1.0.0
description:
  - Sets C(default_roce_tos) and C(default_roce_mode) of one RDMA device port through configfs
    (C(/sys/kernel/config/rdma_cm/<device>/ports/<port>/)). On the live host it mounts configfs when it
    is not mounted and creates the device's C(rdma_cm) group when it does not exist yet.
  - These defaults apply to RDMA-CM connections that do not choose their own ToS. With O(traffic_class)
    it also sets the MLNX_OFED / DOCA-OFED global override C(/sys/class/infiniband/<device>/tc/<port>/traffic_class),
    which applies to every RoCEv2 QP, plain verbs included; it is touched only when asked.
  - Reads every value first, writes only what differs and reads back what it wrote. Only the running
    state is changed; it is lost when the RDMA device goes away (driver reload, reboot).
  - A ToS or traffic class whose two ECN bits are CE (0b11) is refused before anything is touched.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - configfs and the C(rdma_cm) kernel module on the managed host; the traffic-class override needs MLNX_OFED/DOCA-OFED's mlx5 sysfs tree.
options:
  device:
    description: The RDMA device, e.g. C(mlx5_0) or C(rxe0).
    type: str
    required: true
  port:
    description: The port of the device.
    type: int
    default: 1
  tos:
    description:
      - The default ToS byte of RDMA-CM connections, C(DSCP << 2 | ECN bits), 0-255; 106 is DSCP 26 with ECT(0).
    type: int
  roce_mode:
    description: The default RoCE version of RDMA-CM connections (C(RoCE v2) or C(IB/RoCE v1) in configfs).
    type: str
    choices: [v1, v2]
  traffic_class:
    description:
      - The global traffic class override of the port (OFED only), 0-255; V(-1) clears it.
      - On a driver without it the task fails before anything is changed.
    type: int
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
notes:
  - Runtime state only; re-applying it at boot and after a driver reload is the job of the C(rdmaops.roce.nic) role.
  - A configfs group the module created is removed again when a later change fails; removing it does not
    reset values (the kernel keeps them per device).
seealso:
  - module: rdmaops.roce.roce_ecn
"""

EXAMPLES = r"""
- name: RoCE v2 and DSCP 26 with ECT(0) for RDMA-CM connections
  rdmaops.roce.roce_tos:
    device: mlx5_0
    tos: 106
    roce_mode: v2

- name: Also force the traffic class of every QP (OFED)
  rdmaops.roce.roce_tos:
    device: mlx5_0
    tos: 106
    traffic_class: 106
"""

RETURN = r"""
device:
  description: The RDMA device.
  returned: always
  type: str
  sample: mlx5_0
port:
  description: The port.
  returned: always
  type: int
  sample: 1
before:
  description: C(tos) and C(roce_mode) (null while the configfs group does not exist), and C(traffic_class) when
    asked (null when unset; rule lines in C(traffic_class_rules)), before any change.
  returned: always
  type: dict
  sample: {"tos": 0, "roce_mode": "v2"}
after:
  description: The same, read back after the change, or as it would be in check mode.
  returned: always
  type: dict
  sample: {"tos": 106, "roce_mode": "v2"}
configfs_mounted:
  description: Whether configfs was mounted before the module ran.
  returned: always
  type: bool
group_created:
  description: Whether the module created the device's C(rdma_cm) configfs group.
  returned: always
  type: bool
commands:
  description: Commands that ran (the configfs mount, when needed).
  returned: always
  type: list
  elements: str
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: ["set default_roce_tos of mlx5_0 port 1 to 106 (was 0)"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.tos import RoceTos


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="str", required=True),
            port=dict(type="int", default=1),
            tos=dict(type="int"),
            roce_mode=dict(type="str", choices=["v1", "v2"]),
            traffic_class=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    run_module(module, RoceTos)


if __name__ == "__main__":
    main()
