#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tuning_layer
short_description: Kernel parameters, locked memory, NIC knobs and the GPUDirect RDMA report of a host in one call
version_added: 1.0.0
description:
  - Runs the engines of M(rdmaops.roce.sysctl_profile) (O(sysctl)), M(rdmaops.roce.memlock) (O(memlock)) and
    M(rdmaops.roce.nic_ethtool) (O(nic)) planned together, so there is one module round trip per host, one
    check mode prediction, one diff and one truthful result when applying stops part-way (what can be
    undone is undone, in every part).
  - With O(gpudirect), reads the GPUDirect RDMA prerequisites as M(rdmaops.roce.gpudirect_facts) does, after
    applying, and returns them as C(ansible_facts.gpudirect).
  - A part whose option is omitted is left alone. Each part's result is what its module returns, with the
    part's own C(changed) and C(changes).
  - The fine-grained modules stay for playbooks that call them directly; the C(rdmaops.roce.tuning) role
    uses this one.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(ethtool) and udev for the NIC part, systemd for the locked-memory part, C(lspci) from pciutils for the GPUDirect report, on the managed host.
options:
  sysctl:
    description: The options of M(rdmaops.roce.sysctl_profile); omitted to leave kernel parameters alone.
    type: dict
    suboptions:
      settings:
        description: As O(rdmaops.roce.sysctl_profile#module:settings) (required with O(sysctl.state=present)).
        type: dict
      path:
        description: As O(rdmaops.roce.sysctl_profile#module:path).
        type: path
        default: /etc/sysctl.d/90-rdmaops-roce.conf
      state:
        description: As O(rdmaops.roce.sysctl_profile#module:state).
        type: str
        choices: [present, absent]
        default: present
      apply_runtime:
        description: As O(rdmaops.roce.sysctl_profile#module:apply_runtime).
        type: bool
        default: true
      runtime_errors:
        description: As O(rdmaops.roce.sysctl_profile#module:runtime_errors).
        type: str
        choices: [fail, warn]
        default: fail
  memlock:
    description: The options of M(rdmaops.roce.memlock); omitted to leave the locked-memory limit alone.
    type: dict
    suboptions:
      limit:
        description: As O(rdmaops.roce.memlock#module:limit).
        type: str
        default: unlimited
      domains:
        description: As O(rdmaops.roce.memlock#module:domains).
        type: list
        elements: str
        default: ['*', root]
      limits_file:
        description: As O(rdmaops.roce.memlock#module:limits_file).
        type: path
        default: /etc/security/limits.d/90-rdmaops-roce-memlock.conf
      systemd_dropin:
        description: As O(rdmaops.roce.memlock#module:systemd_dropin).
        type: path
        default: /etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf
  nic:
    description: The options of M(rdmaops.roce.nic_ethtool); omitted to leave the NIC knobs alone.
    type: dict
    suboptions:
      interfaces:
        description:
          - As O(rdmaops.roce.nic_ethtool#module:interfaces).
          - Empty or omitted for the netdevs of the host's RDMA ports, as sysfs lists them; with none, the part
            is reported C(skipped).
        type: list
        elements: str
        default: []
      global_pause:
        description: As O(rdmaops.roce.nic_ethtool#module:global_pause).
        type: bool
      rings:
        description: As O(rdmaops.roce.nic_ethtool#module:rings).
        type: dict
      adaptive_rx:
        description: As O(rdmaops.roce.nic_ethtool#module:adaptive_rx).
        type: bool
      adaptive_tx:
        description: As O(rdmaops.roce.nic_ethtool#module:adaptive_tx).
        type: bool
      persist:
        description: As O(rdmaops.roce.nic_ethtool#module:persist).
        type: bool
        default: true
      unsupported:
        description: As O(rdmaops.roce.nic_ethtool#module:unsupported).
        type: str
        choices: [warn, fail]
        default: warn
  gpudirect:
    description: The options of M(rdmaops.roce.gpudirect_facts); omitted not to read the GPUDirect RDMA report.
    type: dict
    suboptions:
      use_lspci:
        description: As O(rdmaops.roce.gpudirect_facts#module:use_lspci).
        type: bool
        default: true
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.disruption
  - rdmaops.roce.owned_files
seealso:
  - module: rdmaops.roce.sysctl_profile
  - module: rdmaops.roce.memlock
  - module: rdmaops.roce.nic_ethtool
  - module: rdmaops.roce.gpudirect_facts
"""

EXAMPLES = r"""
- name: The RDMA host tuning in one call
  rdmaops.roce.tuning_layer:
    sysctl:
      settings:
        net.core.rmem_max: 268435456
        net.core.wmem_max: 268435456
    memlock: {}
    nic:
      global_pause: false
      rings: {rx: max, tx: max}
    gpudirect: {}
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
sysctl:
  description: What M(rdmaops.roce.sysctl_profile) returns, with this part's C(changed) and C(changes).
  returned: when O(sysctl) is given
  type: dict
memlock:
  description: What M(rdmaops.roce.memlock) returns, with this part's C(changed) and C(changes).
  returned: when O(memlock) is given
  type: dict
nic:
  description:
    - What M(rdmaops.roce.nic_ethtool) returns, with this part's C(changed) and C(changes).
    - C(skipped) true and C(msg) when no interface was named and the host has no RDMA netdev.
  returned: when O(nic) is given
  type: dict
ansible_facts:
  description: C(gpudirect), as M(rdmaops.roce.gpudirect_facts) returns it.
  returned: when O(gpudirect) is given
  type: dict
changes:
  description: Every change of every part, in the order they are (or would be) made.
  returned: always
  type: list
  elements: str
commands:
  description: Commands that ran.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import specs
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.layer import TuningLayer


def main():
    module = AnsibleModule(argument_spec=specs.layer_argument_spec(), supports_check_mode=True)
    run_module(module, TuningLayer)


if __name__ == "__main__":
    main()
