#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: firmware_layer
short_description: The firmware (NV) configuration of every ConnectX card of a host, from the fabric intent
version_added: 1.2.0
description:
  - Sets, for every ConnectX/BlueField card of the host, the firmware values the fabric intent implies, in one
    module run per host, with the engine of M(rdmaops.roce.mlxconfig) (C(mlxconfig) from NVIDIA MFT, or
    C(mstconfig) from mstflint).
  - From O(intent), on every port the card lists (C(_P1), and C(_P2) on a dual-port card) - C(CNP_DSCP_P<n>)
    (the DSCP of congestion notification packets), C(CNP_802P_PRIO_P<n>) (their 802.1p priority) and
    C(ROCE_CC_PRIO_MASK_P<n>) (the priorities with congestion control, one bit per priority of
    C(ecn_priorities), the RoCE priority's bit by default).
  - O(settings) adds values for keys of the collection's allow-list; O(extra) passes any other key as given.
    A key outside the allow-list in O(settings), or a derived key set by hand, is refused before anything runs.
  - Without O(devices), the cards are the PCI functions sysfs lists with vendor C(0x15b3), one per card (its
    lowest function; virtual functions left out). A host without one reports C(no_device) and runs nothing.
  - New values take effect at the next boot, so the layer's class is C(reboot). A key whose running value is not
    its next-boot value (set by an earlier run that was not followed by a reboot) makes it C(reboot) too, so a
    capped run (O(max_disruption)) holds the host back for a rollout that drains and reboots it.
  - After a reboot, the values this module set in an earlier boot must be running. If they are not, it fails
    (see O(check_active)), because the card's firmware was not reloaded.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(mlxconfig) from NVIDIA MFT or C(mstconfig) from mstflint on a host that has a ConnectX card.
options:
  intent:
    description:
      - The fabric intent as the rdmaops.roce.roce_intent filter resolves it, or just its C(cnp_dscp),
        C(cnp_priority) and C(ecn_priorities). Omitted, nothing is derived.
    type: dict
  settings:
    description:
      - More firmware values, as C(mlxconfig q) names them. Keys of the allow-list only. Device keys are
        C(ATS_ENABLED), C(PCI_WR_ORDERING), C(ADVANCED_PCI_SETTINGS), C(MAX_ACC_OUT_READ), C(SRIOV_EN),
        C(NUM_OF_VFS) and C(ROCE_ADAPTIVE_ROUTING_EN). Per-port keys are C(LINK_TYPE), C(KEEP_ETH_LINK_UP),
        C(KEEP_IB_LINK_UP), C(KEEP_LINK_UP_ON_BOOT), C(LLDP_NB_DCBX), C(LLDP_NB_RX_MODE), C(LLDP_NB_TX_MODE),
        C(DCBX_IEEE), C(DCBX_CEE), C(DCBX_WILLING), C(NUM_OF_TC), C(NUM_OF_PFC), C(MIN_TIME_BETWEEN_CNPS),
        C(ROCE_CC_CNP_MODERATION), C(CLAMP_TGT_RATE) and C(CLAMP_TGT_RATE_AFTER_TIME_INC); give them with
        C(_P1)/C(_P2), or bare for every port the card lists.
      - Values as M(rdmaops.roce.mlxconfig) takes them (a number, a boolean, an enum name such as V(ETH)).
    type: dict
    default: {}
  extra:
    description:
      - Raw firmware keys outside the allow-list, as C(mlxconfig q) prints them, set as given on every card.
        The card must list each one, or nothing is set.
    type: dict
    default: {}
  devices:
    description:
      - The cards, one PCI address (or MFT device) each. Empty - every ConnectX/BlueField card sysfs lists.
    type: list
    elements: str
    default: []
  tool:
    description:
      - V(auto) uses C(mlxconfig) when it is on E(PATH), else C(mstconfig).
    type: str
    choices: [auto, mlxconfig, mstconfig]
    default: auto
  check_active:
    description:
      - Fail when a value this module set in an earlier boot is still not the running one.
      - It keeps what it set, and the boot it set it in (the kernel's boot id), in
        C(/var/lib/rdmaops/firmware-next-boot.json).
    type: bool
    default: true
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.disruption
notes:
  - Check mode runs only the queries.
  - The module never resets the firmware and never reboots; RV(reboot_required) says a reboot is needed.
seealso:
  - module: rdmaops.roce.mlxconfig
"""

EXAMPLES = r"""
- name: Firmware values from the fabric intent, GPUDirect's ATS on
  rdmaops.roce.firmware_layer:
    intent: "{{ roce_fabric | default({}) | rdmaops.roce.roce_intent }}"
    settings:
      ATS_ENABLED: true
  register: fw

- name: Say when a reboot is needed
  ansible.builtin.debug:
    msg: "reboot needed for {{ fw.reboot_pending | join(', ') }}"
  when: fw.reboot_required
"""

RETURN = r"""
no_device:
  description: True when the host has no ConnectX/BlueField card; nothing ran.
  returned: always
  type: bool
devices:
  description: Per card, what M(rdmaops.roce.mlxconfig) returns (C(before), C(after), C(tool)), with
    C(reboot_pending) (its keys whose running value is not the next-boot one) and C(unsupported) (derived
    keys its firmware does not offer).
  returned: always
  type: dict
  sample: {"0000:3d:00.0": {"tool": "mlxconfig", "reboot_required": true, "reboot_pending": ["ROCE_CC_PRIO_MASK_P1"]}}
reboot_required:
  description: True when a key of any card waits for a reboot (after this run's change, or an earlier one).
  returned: always
  type: bool
reboot_pending:
  description: The keys waiting for a reboot, as C(DEVICE KEY).
  returned: always
  type: list
  elements: str
  sample: ["0000:3d:00.0 ROCE_CC_PRIO_MASK_P1"]
changes:
  description: What was set, or would be in check mode.
  returned: always
  type: list
  elements: str
commands:
  description: The commands that ran.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import max_disruption_spec
from ansible_collections.rdmaops.roce.plugins.module_utils._firmware.layer import FirmwareLayer


def main():
    module = AnsibleModule(
        argument_spec=dict(
            intent=dict(type="dict"),
            settings=dict(type="dict", default={}),
            extra=dict(type="dict", default={}),
            devices=dict(type="list", elements="str", default=[]),
            tool=dict(type="str", choices=["auto", "mlxconfig", "mstconfig"], default="auto"),
            check_active=dict(type="bool", default=True),
            max_disruption=max_disruption_spec(),
        ),
        supports_check_mode=True,
    )
    run_module(module, FirmwareLayer)


if __name__ == "__main__":
    main()
