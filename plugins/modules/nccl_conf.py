#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nccl_conf
short_description: Write NCCL's RoCE settings into /etc/nccl.conf from this host's RDMA devices and the fabric intent
version_added: 1.0.0
description:
  - Reads the host's RDMA devices (the same reader as rdmaops.roce.rdma_facts) and writes one marked
    block of C(NAME=VALUE) lines into O(path), which NCCL reads at start-up.
  - "C(NCCL_IB_HCA): the RoCE ports (Ethernet link layer, with a netdev) on O(interfaces), or on every
    RDMA netdev when O(interfaces) is empty (the selection rdmaops.roce.nic makes), written as
    C(=mlx5_0:1,mlx5_1:1) (exact names, so C(mlx5_1) does not also select C(mlx5_10))."
  - "C(NCCL_IB_GID_INDEX): the measured RoCE v2 GID index of those ports (the GID of the netdev's IPv4
    address, C(roce_v2_ipv4_gid_index) in rdma_facts), unless O(gid_index) is given. NCCL takes one
    index for every device: ports that disagree fail the task, naming each port and its index."
  - "C(NCCL_IB_TC): O(tc), the ToS byte of the fabric intent, so NCCL's plain-verbs QPs carry the RoCE
    DSCP that the NICs and switches give PFC and ECN."
  - "C(NCCL_SOCKET_IFNAME): C(=<interface>) of O(socket_ifname), or of the interface of the IPv4 default
    route (the management network) when it is not given."
  - "C(NCCL_IB_TIMEOUT) and C(NCCL_IB_RETRY_CNT) from O(ib_timeout) and O(ib_retry_cnt), and any
    O(extra) variables."
  - A port without a RoCE v2 GID for an IPv4 address (a link that is down or has no address) is left
    out with a warning and listed in RV(skipped); when O(interfaces) names it, the task fails instead.
  - Lines outside the block are kept byte for byte. NCCL takes the first line for a name, so a line
    outside the block that sets one of the block's names to another value fails the task before
    anything is written, naming the line; one that repeats the same value gives a warning.
  - Needs no GPU and no NCCL installed; the file only matters to NCCL when it starts.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(ip) from iproute2 on the managed host (the default route's interface, when O(socket_ifname) is not given).
options:
  path:
    description:
      - The file NCCL reads. NCCL always reads C(/etc/nccl.conf); another path only helps jobs that
        set C(NCCL_CONF_FILE) (NCCL 2.23 or later) to it.
    type: path
    default: /etc/nccl.conf
  state:
    description:
      - V(present) writes the block; V(absent) removes it (and the file when nothing else is left in it).
    type: str
    choices: [present, absent]
    default: present
  interfaces:
    description:
      - The fabric links (netdevs) whose RoCE ports NCCL uses. Empty, every netdev behind an RDMA port.
      - Give the same list as the nic role's C(nic_interfaces).
    type: list
    elements: str
    default: []
  tc:
    description:
      - C(NCCL_IB_TC), the IPv4 ToS byte of NCCL's RoCE traffic (DSCP << 2 | ECN bits), C(roce_tos) of
        the resolved intent (C(roce_fabric | rdmaops.roce.roce_intent)); 106 for DSCP 26 with ECT(0).
      - Required with O(state=present). A value with both ECN bits set (CE) is refused.
    type: int
  gid_index:
    description:
      - C(NCCL_IB_GID_INDEX) when it must not be the measured index (0 to 255).
    type: int
  socket_ifname:
    description:
      - The interface NCCL's bootstrap and socket transport use (written as C(=<name>), an exact name).
      - When not given, the interface of the IPv4 default route with the lowest metric; a host without
        one fails the task and asks for this option.
    type: str
  ib_timeout:
    description:
      - C(NCCL_IB_TIMEOUT), the verbs ACK timeout exponent (4.096 us x 2^value per attempt), 1 to 31.
      - NCCL's default in current releases is 20 (about 4.3 s per attempt); older ones used less (18 in
        2.19), so writing it keeps every release on the same value. Raise it (22 or 23 is common) on very large fabrics or where NCCL fails with
        C(ibv_poll_cq) error 12 (IBV_WC_RETRY_EXC_ERR).
    type: int
    default: 20
  ib_retry_cnt:
    description:
      - C(NCCL_IB_RETRY_CNT), how many times a QP retransmits before the connection fails, 0 to 7 (the
        verbs field is 3 bits). NCCL's default, 7, is also the maximum.
    type: int
    default: 7
  extra:
    description:
      - More NCCL variables to write into the block, e.g. C(NCCL_IB_QPS_PER_CONNECTION). Names must
        match C(NCCL_[A-Z0-9_]+) and not be one of the names above (they have their own options);
        values are single lines of at most 1023 bytes.
    type: dict
    default: {}
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.disruption
  - rdmaops.roce.owned_files
notes:
  - "How NCCL reads the file (C(src/misc/param.cc)): C(NAME=VALUE) with the name taken verbatim up to
    the first C(=), a comment only when the line starts with C(#), and C(setenv) without overwrite,
    so the environment, then C($NCCL_CONF_FILE) or C(~/.nccl.conf), win over this file."
  - The values are read on the host when the module runs; run it after the nic layer so the fabric
    links have their addresses (the RoCE v2 GID index follows them).
seealso:
  - name: NCCL environment variables
    description: NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_IB_TC, NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT and NCCL_SOCKET_IFNAME.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
  - module: rdmaops.roce.rdma_facts
"""

EXAMPLES = r"""
- name: NCCL on the fabric's RoCE ports, marked with the intent's ToS
  rdmaops.roce.nccl_conf:
    tc: "{{ (roce_fabric | default({}) | rdmaops.roce.roce_intent)['roce_tos'] }}"

- name: Only the ports behind two links, bootstrap over bond0, longer timeout for a large fabric
  rdmaops.roce.nccl_conf:
    interfaces: [ens1f0np0, ens2f0np0]
    tc: 106
    socket_ifname: bond0
    ib_timeout: 22

- name: Remove the block again
  rdmaops.roce.nccl_conf:
    state: absent
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
path:
  description: The file.
  returned: always
  type: str
  sample: /etc/nccl.conf
settings:
  description: The variables of the block and their values as written.
  returned: always
  type: dict
  sample: {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "106", "NCCL_SOCKET_IFNAME": "=eno1",
           "NCCL_IB_TIMEOUT": "20", "NCCL_IB_RETRY_CNT": "7"}
ports:
  description: The RoCE ports in C(NCCL_IB_HCA), each with C(device), C(port), C(netdev) and its RoCE v2 C(gid_index).
  returned: always
  type: list
  elements: dict
  sample: [{"device": "mlx5_0", "port": 1, "netdev": "ens1f0np0", "gid_index": 3}]
skipped:
  description: RoCE ports left out, each with C(device), C(port), C(netdev) and C(reason).
  returned: always
  type: list
  elements: dict
  sample: [{"device": "mlx5_1", "port": 1, "netdev": "ens1f1np1", "reason": "no RoCE v2 GID for an IPv4 address on ens1f1np1 (state DOWN): ..."}]
socket_ifname_source:
  description: Where C(NCCL_SOCKET_IFNAME) came from, C(socket_ifname) or C(default route).
  returned: with state=present
  type: str
  sample: default route
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: ["update /etc/nccl.conf"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import max_disruption_spec
from ansible_collections.rdmaops.roce.plugins.module_utils._nccl.conf import NcclConf


def main():
    module = AnsibleModule(
        argument_spec=dict(
            max_disruption=max_disruption_spec(),
            path=dict(type="path", default="/etc/nccl.conf"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            interfaces=dict(type="list", elements="str", default=[]),
            tc=dict(type="int"),
            gid_index=dict(type="int"),
            socket_ifname=dict(type="str"),
            ib_timeout=dict(type="int", default=20),
            ib_retry_cnt=dict(type="int", default=7),
            extra=dict(type="dict", default={}),
            adopt=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ["tc"])],
        supports_check_mode=True,
    )
    run_module(module, NcclConf)


if __name__ == "__main__":
    main()
