#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: mlxconfig
short_description: Set ConnectX firmware (NV) configuration values, only those that differ
version_added: 1.0.0
description:
  - Reads the firmware configuration of one ConnectX/BlueField function with C(mlxconfig -d DEV -e q)
    (NVIDIA MFT) or C(mstconfig -d BDF -e q) (mstflint, packaged by the distributions), which print the
    same table with C(Default), C(Current) and C(Next Boot) columns.
  - Sets, in one C(TOOL -d DEV -y set KEY=VAL ...) call, only the keys of O(settings) whose C(Next Boot)
    value differs from the one asked, then queries again and fails if a key does not show the asked value.
  - A key the device does not list in its query output (a wrong name, a C(_P2) key on a single-port card)
    is refused before anything is set, naming the key.
  - New values take effect at the next boot (or firmware reset). This module never resets the firmware
    (it does not run C(mlxfwreset)); RV(reboot_required) says whether the running values of the asked keys
    differ from the next-boot ones, and stays true until the host is rebooted.
  - Values stay in the NIC's flash across reboots and driver reloads, so nothing has to be re-applied at boot.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(mlxconfig) from NVIDIA MFT or C(mstconfig) from mstflint on the managed host (O(tool)).
options:
  device:
    description:
      - The NIC function, as its PCI address (V(0000:3b:00.0) or V(3b:00.0), see C(lspci -D -d 15b3:)),
        an MFT device node (V(/dev/mst/mt4129_pciconf0), after C(mst start)) or V(/dev/fwctl/fwctlN).
      - C(mstconfig) takes PCI addresses only.
      - When the host's sysfs lists PCI functions, the address must be one of them and belong to
        Mellanox/NVIDIA (vendor C(0x15b3)).
    type: str
    required: true
  settings:
    description:
      - Parameter names as C(mlxconfig q) prints them (V(ROCE_CC_PRIO_MASK_P1), V(CNP_DSCP_P1),
        V(LINK_TYPE_P1)), each with its value. One element of an array parameter is named
        V(NAME[index]).
      - A value is a number, a boolean (V(true) is C(True(1))), the name the tool shows for an enum
        (V(ETH) for C(ETH(2))) or that text itself (V(ETH(2))). Numbers decide the comparison when the
        tool shows both.
    type: dict
    required: true
  tool:
    description:
      - V(auto) uses C(mlxconfig) when it is on E(PATH), else C(mstconfig) (for a PCI address).
    type: str
    choices: [auto, mlxconfig, mstconfig]
    default: auto
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
notes:
  - Check mode runs only the query, never C(set).
  - The set is one firmware call; if it fails part-way the module cannot tell which keys the firmware
    stored. On a later failure of the same plan (the aggregate NIC call) the old next-boot values are set again.
seealso:
  - name: mstflint
    description: The open-source firmware tools that ship C(mstconfig).
    link: https://github.com/Mellanox/mstflint
"""

EXAMPLES = r"""
- name: Congestion control on priority 3 only, CNPs on DSCP 48 / priority 6 (firmware defaults for the rest)
  rdmaops.roce.mlxconfig:
    device: "0000:3b:00.0"
    settings:
      ROCE_CC_PRIO_MASK_P1: 8
      CNP_DSCP_P1: 48
      CNP_802P_PRIO_P1: 6
  register: nv

- name: Reboot when the firmware holds values that are not active yet
  ansible.builtin.reboot:
  when: nv.reboot_required

- name: Ethernet on both ports, through mstflint
  rdmaops.roce.mlxconfig:
    device: "3b:00.0"
    tool: mstconfig
    settings:
      LINK_TYPE_P1: ETH
      LINK_TYPE_P2: ETH
"""

RETURN = r"""
device:
  description: The device as given.
  returned: always
  type: str
  sample: "0000:3b:00.0"
tool:
  description: The tool that was used.
  returned: when a tool was found
  type: str
  sample: mlxconfig
before:
  description: For each asked key, the values as the tool printed them before any change
    (C(default) only when the firmware reports it).
  returned: always
  type: dict
  sample: {"CNP_DSCP_P1": {"default": "48", "current": "48", "next_boot": "48"}}
after:
  description: The same after the change (re-queried), or as planned in check mode.
  returned: always
  type: dict
  sample: {"LINK_TYPE_P1": {"default": "ETH(2)", "current": "IB(1)", "next_boot": "ETH(2)"}}
changes:
  description: What was set, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: ["mlxconfig set on 0000:3b:00.0 for the next boot: LINK_TYPE_P1 IB(1) -> ETH"]
commands:
  description: The commands that ran (queries included).
  returned: always
  type: list
  elements: str
  sample: ["mlxconfig -d 0000:3b:00.0 -e q", "mlxconfig -d 0000:3b:00.0 -y set LINK_TYPE_P1=ETH"]
reboot_required:
  description: True when an asked key's running (C(Current)) value differs from its next-boot value.
  returned: always
  type: bool
  sample: true
pending:
  description: The asked keys whose running value differs from the next-boot value.
  returned: always
  type: list
  elements: str
  sample: ["LINK_TYPE_P1"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.mlxconfig import MlxconfigEngine


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="str", required=True),
            settings=dict(type="dict", required=True),
            tool=dict(type="str", choices=["auto", "mlxconfig", "mstconfig"], default="auto"),
        ),
        supports_check_mode=True,
    )
    run_module(module, MlxconfigEngine)


if __name__ == "__main__":
    main()
