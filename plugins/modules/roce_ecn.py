#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: roce_ecn
short_description: Set ECN (DCQCN) per priority and the congestion control parameters of a ConnectX port
version_added: 1.0.0
description:
  - Enables or disables ECN per priority for the notification point (NP, the receiver that sends CNPs)
    and the reaction point (RP, the sender that slows down), and sets the CNP DSCP, the CNP 802.1p
    priority and the other DCQCN parameters, through the MLNX_OFED / DOCA-OFED sysfs tree
    C(/sys/class/net/<interface>/ecn/roce_np/) and C(.../roce_rp/).
  - Reads every value first and writes only those that differ, then reads back what it wrote.
    Only the running state is changed; it is lost at the next reboot or firmware reset.
  - An inbox (upstream) mlx5 driver, a virtual function and other NICs have no such tree. What this
    host cannot do is refused before anything is changed (O(unsupported=fail)), or reported as a warning
    and in RV(unsupported) (O(unsupported=warn)). Either way the message names the persistent firmware
    alternative, the mlxconfig / mstconfig NV parameters (C(ROCE_CC_PRIO_MASK_P1), C(CNP_DSCP_P1) ...)
    with their values, also returned in RV(firmware_alternative).
  - Options left unset are not touched.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - The mlx5 ECN sysfs tree (C(/sys/class/net/<netdev>/ecn)) that MLNX_OFED/DOCA-OFED's driver provides on the managed host.
options:
  interface:
    description: The netdev of the ConnectX port (a physical function), e.g. C(ens1f0np0).
    type: str
    required: true
  priorities:
    description:
      - Priorities (0-7) on which ECN is enabled, for both the notification and the reaction point.
      - Priorities not listed are left as they are, unless O(exclusive=true).
    type: list
    elements: int
  np_priorities:
    description: Priorities with ECN enabled at the notification point; overrides O(priorities) for it.
    type: list
    elements: int
  rp_priorities:
    description: Priorities with ECN enabled at the reaction point; overrides O(priorities) for it.
    type: list
    elements: int
  exclusive:
    description: Disable ECN on every priority that is not listed (per point).
    type: bool
    default: false
  cnp_dscp:
    description: DSCP (0-63) of the congestion notification packets (C(roce_np/cnp_dscp)); 48 by default.
    type: int
  cnp_802p_prio:
    description: 802.1p priority (0-7) of the congestion notification packets (C(roce_np/cnp_802p_prio)).
    type: int
  min_time_between_cnps:
    description: Minimum time between two CNPs sent for one flow, in microseconds (C(roce_np/min_time_between_cnps)).
    type: int
  rp_params:
    description:
      - Reaction point (DCQCN rate limiter) parameters, each a file in C(roce_rp/) named like the key.
      - The clamp flags take 0 or 1, C(dce_tcp_g) and C(initial_alpha_value) 0-1023, C(rpg_min_dec_fac)
        1-100; the firmware decides the rest and a value it refuses fails the task with the old values put back.
    type: dict
    suboptions:
      clamp_tgt_rate: {type: int, description: C(clamp_tgt_rate).}
      clamp_tgt_rate_after_time_inc: {type: int, description: C(clamp_tgt_rate_after_time_inc).}
      rpg_time_reset: {type: int, description: C(rpg_time_reset).}
      rpg_byte_reset: {type: int, description: C(rpg_byte_reset).}
      rpg_threshold: {type: int, description: C(rpg_threshold).}
      rpg_max_rate: {type: int, description: C(rpg_max_rate).}
      rpg_ai_rate: {type: int, description: C(rpg_ai_rate).}
      rpg_hai_rate: {type: int, description: C(rpg_hai_rate).}
      rpg_gd: {type: int, description: C(rpg_gd).}
      rpg_min_dec_fac: {type: int, description: C(rpg_min_dec_fac).}
      rpg_min_rate: {type: int, description: C(rpg_min_rate).}
      rate_to_set_on_first_cnp: {type: int, description: C(rate_to_set_on_first_cnp).}
      dce_tcp_g: {type: int, description: C(dce_tcp_g).}
      dce_tcp_rtt: {type: int, description: C(dce_tcp_rtt).}
      rate_reduce_monitor_period: {type: int, description: C(rate_reduce_monitor_period).}
      initial_alpha_value: {type: int, description: C(initial_alpha_value).}
  unsupported:
    description:
      - What to do when the driver lacks the tree or a file for an option (inbox driver, virtual function,
        older OFED).
      - V(fail) fails before anything is changed; V(warn) applies what the driver has, warns once and
        lists the options in RV(unsupported).
    type: str
    choices: [fail, warn]
    default: fail
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
notes:
  - Runtime state only; re-applying it at boot and after a driver reload is the job of the C(rdmaops.roce.nic) role.
seealso:
  - module: rdmaops.roce.roce_tos
"""

EXAMPLES = r"""
- name: ECN on the RoCE priority, CNPs with DSCP 48 on priority 6
  rdmaops.roce.roce_ecn:
    interface: ens1f0np0
    priorities: [3]
    cnp_dscp: 48
    cnp_802p_prio: 6

- name: On hosts that may run the inbox driver, warn instead of failing
  rdmaops.roce.roce_ecn:
    interface: ens1f0np0
    priorities: [3]
    unsupported: warn
  register: ecn
"""

RETURN = r"""
interface:
  description: The netdev.
  returned: always
  type: str
  sample: ens1f0np0
supported:
  description: Whether the netdev has the ECN sysfs tree.
  returned: always
  type: bool
before:
  description: Per point (C(np), C(rp)) the priorities with ECN enabled (C(enabled), sorted) and every parameter the driver shows, before any change.
  returned: always
  type: dict
  sample: {"np": {"enabled": [0, 1, 2, 3, 4, 5, 6, 7], "cnp_dscp": 48, "cnp_802p_prio": 6, "min_time_between_cnps": 4}, "rp": {"enabled": [3]}}
after:
  description: The same after the change (read back), or as it would be in check mode.
  returned: always
  type: dict
unsupported:
  description: Options this host's driver cannot apply at runtime.
  returned: always
  type: list
  elements: str
  sample: ["priorities", "cnp_dscp"]
firmware_alternative:
  description: The mlxconfig / mstconfig NV parameters that give the unsupported options persistently (C(params),
    C(command), C(device), C(notes), C(takes_effect)).
  returned: when some option is unsupported
  type: dict
  sample:
    params: {"ROCE_CC_PRIO_MASK_P1": 8, "CNP_DSCP_P1": 48}
    command: ["mlxconfig", "-y", "-d", "0000:3d:00.0", "set", "CNP_DSCP_P1=48", "ROCE_CC_PRIO_MASK_P1=8"]
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: ["disable ECN on ens1f0np0 notification point priority 0 from 1 to 0"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.ecn import RP_PARAMS, RoceEcn


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            priorities=dict(type="list", elements="int"),
            np_priorities=dict(type="list", elements="int"),
            rp_priorities=dict(type="list", elements="int"),
            exclusive=dict(type="bool", default=False),
            cnp_dscp=dict(type="int"),
            cnp_802p_prio=dict(type="int"),
            min_time_between_cnps=dict(type="int"),
            rp_params=dict(type="dict", options=dict((name, dict(type="int")) for name in sorted(RP_PARAMS))),
            unsupported=dict(type="str", choices=["fail", "warn"], default="fail"),
        ),
        supports_check_mode=True,
    )
    run_module(module, RoceEcn)


if __name__ == "__main__":
    main()
