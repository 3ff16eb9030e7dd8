#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nic_ethtool
short_description: Set global pause, ring sizes and adaptive coalescing of NICs, and keep them across reboots
version_added: 1.0.0
description:
  - For each interface, reads the link-level (global) pause, the RX/TX ring sizes and adaptive interrupt
    coalescing with C(ethtool -a), C(-g) and C(-c), sets with C(-A), C(-G) and C(-C) only what differs, and
    reads back what it set.
  - A knob the driver does not implement (the query fails, or the driver prints C(n/a) for it), a ring
    size above the driver's maximum and a setting the driver refuses are listed in RV(unsupported) with the
    reason. O(unsupported) decides whether that is a warning or a failure.
  - With O(persist=true), one udev rule per interface re-applies the supported settings whenever the netdev
    appears (boot, driver reload, hot plug), in C(/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules).
    That file holds one line per interface, keyed by its name; a call rewrites only the lines of the
    interfaces it names and keeps the other interfaces' lines, so calls for different interfaces
    (one per play, one per NIC) all stay persistent.
  - Options left unset (null) are not touched, neither now nor in the rule.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(ethtool) and udev on the managed host.
options:
  interfaces:
    description:
      - The netdevs to tune (the RDMA NICs' netdevs, e.g. C(ens1f0np0)).
      - Each must be a kernel interface name (1 to 15 bytes, not C(.) or C(..), no C(/), C(:) or
        whitespace), must not start with C(-) and, with O(persist=true), must not hold C(") or a glob
        character; checked before anything is read.
    type: list
    elements: str
    required: true
  global_pause:
    description:
      - Link-level flow control (802.3x pause) in both directions, and its autonegotiation.
      - V(false) turns it off, which NVIDIA recommends when PFC is in use (a port runs either global pause
        or PFC). Null leaves it alone.
    type: bool
  rings:
    description:
      - RX and TX ring sizes in descriptors, or V(max) for the driver's pre-set maximum.
      - Keys C(rx) and C(tx); a missing or null key is left alone.
    type: dict
  adaptive_rx:
    description: Adaptive RX interrupt coalescing. Null leaves it alone.
    type: bool
  adaptive_tx:
    description: Adaptive TX interrupt coalescing. Null leaves it alone.
    type: bool
  persist:
    description: Keep the settings across reboots and driver reloads with a udev rule.
    type: bool
    default: true
  unsupported:
    description:
      - V(warn) applies what the driver supports and warns about each knob it does not.
      - V(fail) fails the task when any asked knob is unsupported (after applying the supported ones;
        before anything is changed when there is nothing supported to apply, and in check mode).
    type: str
    choices: [warn, fail]
    default: warn
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.owned_files
notes:
  - Needs C(ethtool). The udev rule calls it by the absolute path found on the host.
"""

EXAMPLES = r"""
- name: PFC fabric - global pause off, largest rings, adaptive coalescing on
  rdmaops.roce.nic_ethtool:
    interfaces: [ens1f0np0, ens1f1np1]
    global_pause: false
    rings: {rx: max, tx: max}
    adaptive_rx: true
    adaptive_tx: true
"""

RETURN = r"""
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: ["ens1f0np0: set rx ring from 1024 to 8192", "write /etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"]
state:
  description: What ethtool reported for each interface before any change (C(pause), C(rings), C(coalesce);
    a knob the driver does not report has C(error)).
  returned: always
  type: dict
unsupported:
  description: For each interface, the knobs that could not be read or set, with the reason.
  returned: always
  type: dict
  sample: {"eth0": {"global pause": "ethtool -a failed (rc=1): netlink error: Operation not supported"}}
rules_path:
  description: The udev rules file (one line per interface; lines of interfaces not named in this call are kept).
  returned: always
  type: str
  sample: /etc/udev/rules.d/90-rdmaops-roce-ethtool.rules
commands:
  description: The ethtool commands that ran, in order.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import specs
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.ethtool import NicEthtoolEngine


def main():
    module = AnsibleModule(
        argument_spec=dict(specs.NIC_KNOBS, interfaces=dict(type="list", elements="str", required=True), **specs.ADOPT),
        supports_check_mode=True,
    )
    run_module(module, NicEthtoolEngine)


if __name__ == "__main__":
    main()
