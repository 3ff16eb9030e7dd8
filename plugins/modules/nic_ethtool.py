#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nic_ethtool
short_description: Set global pause, ring sizes and adaptive coalescing of NICs, and keep them across reboots
version_added: 0.1.0
description:
  - For each interface, reads the link-level (global) pause, the RX/TX ring sizes and adaptive interrupt
    coalescing with C(ethtool -a), C(-g) and C(-c), sets with C(-A), C(-G) and C(-C) only what differs, and
    reads back what it set.
  - A knob the driver does not implement (the query fails, or the driver prints C(n/a) for it), a ring
    size above the driver's maximum and a setting the driver refuses are listed in RV(unsupported) with the
    reason. O(unsupported) decides whether that is a warning or a failure.
  - With O(persist=true), one udev rule per interface re-applies the supported settings whenever the netdev
    appears (boot, driver reload, hot plug), in C(/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules).
  - Options left unset (null) are not touched, neither now nor in the rule.
author:
  - rdmaops developers (@rdmaops)
options:
  interfaces:
    description: The netdevs to tune (the RDMA NICs' netdevs, e.g. C(ens1f0np0)).
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
      - V(fail) fails the task when any asked knob is unsupported (after applying the supported ones).
    type: str
    choices: [warn, fail]
    default: warn
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
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
  description: The udev rules file.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner, ToolNotFound
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.ethtool import EthtoolError, NicKnobs
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", required=True),
            global_pause=dict(type="bool"),
            rings=dict(type="dict"),
            adaptive_rx=dict(type="bool"),
            adaptive_tx=dict(type="bool"),
            persist=dict(type="bool", default=True),
            unsupported=dict(type="str", choices=["warn", "fail"], default="warn"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    rings = dict((k, v) for k, v in (params["rings"] or {}).items())
    for key, value in rings.items():
        if isinstance(value, str) and value != "max":
            try:
                rings[key] = int(value)
            except ValueError:
                module.fail_json(msg="rings.%s=%r: use a positive number of descriptors or 'max'" % (key, value))
    runner = CommandRunner(module)
    try:
        if not runner.has("ethtool"):
            raise ToolNotFound("ethtool")
        knobs = NicKnobs(
            HostRoot(),
            runner,
            params["interfaces"],
            global_pause=params["global_pause"],
            rings=rings,
            adaptive_rx=params["adaptive_rx"],
            adaptive_tx=params["adaptive_tx"],
            persist=params["persist"],
        )
        plan = Plan()
        knobs.plan(plan)
        plan.apply(module.check_mode)
    except (EthtoolError, ToolNotFound) as exc:
        module.fail_json(msg=str(exc))
    problems = {} if module.check_mode else knobs.verify()
    if problems:
        module.fail_json(msg="ethtool reports other values after setting them: %s" % problems, unsupported=knobs.unsupported)

    done = Plan()
    for change in plan:
        name, _sep, knob = change.key.partition(" ")
        if (name, knob) not in knobs.failed:
            done.add(change.key, change.before, change.after, change.action, change.description, change.header)
    result = done.result(module.check_mode, module._diff)
    result.update(state=knobs.state, unsupported=knobs.unsupported, rules_path=knobs.rules_path)
    if knobs.unsupported and params["unsupported"] == "fail":
        module.fail_json(msg="unsupported NIC settings: %s" % knobs.unsupported, **result)
    for name, knobs_of in sorted(knobs.unsupported.items()):
        for knob, reason in sorted(knobs_of.items()):
            module.warn("%s: %s not applied: %s" % (name, knob, reason))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
