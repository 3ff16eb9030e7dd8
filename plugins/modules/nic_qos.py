#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nic_qos
short_description: Set the RoCE QoS of a NIC port (trust, DSCP to priority, PFC, ETS, buffers, cable length)
version_added: 1.0.0
description:
  - Reads the DCB state of one netdev, writes only the parts that differ from what is asked (one command per
    differing part) and reads it back. Changing the PFC bitmap toggles the physical link and changing trust
    re-opens the driver's channels, so a part that already matches is never written.
  - Parts left unset (null) are not touched.
  - Uses iproute2 C(dcb) (read with C(dcb -j)) or C(mlnx_qos) from mlnx-tools (MLNX_OFED, DOCA-OFED); both
    use the kernel's DCB netlink interface, so they agree about the state.
  - A netdev whose driver has no DCB support (C(dcb) answers C(Operation not supported), e.g. virtio_net,
    veth) fails with a message naming the driver.
  - These settings live in the driver and the firmware's runtime state; they are lost on reboot and may be
    lost on a driver reload. The boot-time re-apply is installed by the C(rdmaops.roce.nic) role.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(dcb) from iproute2 (5.11 or later) or C(mlnx_qos) from mlnx-tools (part of MLNX_OFED/DOCA-OFED) on the managed host (O(backend)).
options:
  interface:
    description:
      - The netdev of the RDMA port (e.g. C(ens1f0np0)); a kernel interface name, not starting with C(-).
    type: str
    required: true
  backend:
    description:
      - V(dcb) uses iproute2 C(dcb) (iproute2 5.11 or later). V(mlnx_qos) uses mlnx-tools' C(mlnx_qos).
      - V(auto) uses C(dcb) when it is installed and the netdev answers it, else C(mlnx_qos).
    type: str
    choices: [auto, mlnx_qos, dcb]
    default: auto
  trust:
    description:
      - Which header field classifies received packets into priorities. RoCE fabrics use V(dscp).
      - On mlx5 the trust state is the DSCP application table being non-empty. Setting V(dscp) on a port in
        V(pcp) trust installs the default map (DSCP d to priority d/8, what C(mlnx_qos --trust dscp) does);
        V(pcp) removes every DSCP entry.
    type: str
    choices: [pcp, dscp]
  pfc:
    description:
      - The priorities with priority flow control on, e.g. V([3]); the others are turned off. V([]) turns PFC off.
    type: list
    elements: int
  dscp2prio:
    description:
      - "DSCP to priority entries, as a mapping of DSCP (0-63) to priority (0-7), e.g. V({26: 3, 48: 6}).
        A list of V([dscp, prio]) pairs or V(dscp:prio) strings is accepted too."
      - Only the entries given are set; DSCP values not listed keep their mapping.
      - Any DSCP entry switches an mlx5 port to DSCP trust, so it cannot be combined with O(trust=pcp).
    type: raw
  prio_tc:
    description: The traffic class of each priority 0-7 (8 values).
    type: list
    elements: int
  ets:
    description:
      - Transmission selection per traffic class.
      - C(tsa) lists 8 of V(strict), V(ets), V(vendor); C(bw) lists 8 bandwidth percentages, 0 for non-ets TCs,
        adding up to 100 over the ets TCs.
    type: dict
  buffer_size:
    description:
      - Receive buffer sizes in bytes (8 values). Writing it switches the port to manually managed buffers.
      - Give the sizes as the device reports them (the firmware rounds to its cell size).
    type: list
    elements: int
  prio2buffer:
    description: The receive buffer of each priority 0-7 (8 values).
    type: list
    elements: int
  cable_len:
    description: Cable length in meters (1-999), used by mlx5 to size the PFC headroom (the PFC C(delay)).
    type: int
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
notes:
  - With V(mlnx_qos) and O(ets) set, the state is read with C(mlnx_qos -a) so that TCs without priorities are
    shown too.
"""

EXAMPLES = r"""
- name: Lossless RoCE on priority 3 - DSCP trust, PFC on priority 3 only
  rdmaops.roce.nic_qos:
    interface: ens1f0np0
    trust: dscp
    pfc: [3]

- name: Two ETS classes and explicit DSCP entries
  rdmaops.roce.nic_qos:
    interface: ens1f0np0
    trust: dscp
    dscp2prio: {26: 3, 48: 6}
    prio_tc: [0, 0, 0, 3, 0, 0, 6, 0]
    ets:
      tsa: [ets, strict, strict, ets, strict, strict, strict, strict]
      bw: [50, 0, 0, 50, 0, 0, 0, 0]
    cable_len: 30
"""

RETURN = r"""
interface:
  description: The netdev.
  returned: always
  type: str
backend:
  description: The tool used, V(dcb) or V(mlnx_qos).
  returned: when the netdev was found
  type: str
driver:
  description: The netdev's driver (from C(/sys/class/net/IF/device/driver)); null for a virtual netdev.
  returned: always
  type: str
before:
  description:
    - The state read before any change. Always C(trust) (string), C(pfc) (sorted enabled priorities),
      C(dscp2prio) (DSCP to priority) and C(cable_len); C(prio_tc), C(ets), C(buffer_size) and C(prio2buffer)
      when asked.
  returned: always
  type: dict
  sample: {"trust": "pcp", "pfc": [], "dscp2prio": {}, "cable_len": 7}
after:
  description: The same keys after the change, read back (in check mode, what they would be).
  returned: always
  type: dict
  sample: {"trust": "dscp", "pfc": [3], "dscp2prio": {"26": 3}, "cable_len": 7}
commands:
  description:
    - The setting commands that ran, in order (undo commands run after a failure included); in check mode,
      the ones that would run. Reads are not listed.
  returned: always
  type: list
  elements: str
  sample: ["dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"]
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.nic_qos import NicQos


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            backend=dict(type="str", choices=["auto", "mlnx_qos", "dcb"], default="auto"),
            trust=dict(type="str", choices=["pcp", "dscp"]),
            pfc=dict(type="list", elements="int"),
            dscp2prio=dict(type="raw"),
            prio_tc=dict(type="list", elements="int"),
            ets=dict(type="dict"),
            buffer_size=dict(type="list", elements="int"),
            prio2buffer=dict(type="list", elements="int"),
            cable_len=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    run_module(module, NicQos)


if __name__ == "__main__":
    main()
