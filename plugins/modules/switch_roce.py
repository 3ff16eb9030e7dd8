#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: switch_roce
short_description: The fabric's RoCE QoS profile on a switch (Cumulus NVUE, SONiC; rendered and parsed for EOS, NX-OS, Onyx)
version_added: 1.0.0
description:
  - A network resource module for one switch's lossless RoCE profile, derived from the same
    C(roce_fabric) intent as the hosts (resolved by the code of the C(rdmaops.roce.roce_intent) filter) -
    trust DSCP, the RoCE DSCP to the lossless priority, the CNP DSCP to its strict-priority class, PFC
    on the lossless priority only, ECN/WRED thresholds in bytes and probability, ETS shares, the PFC
    watchdog and the port MTU.
  - Cumulus Linux 5.x is configured over the NVUE REST API (connection C(ansible.netcommon.httpapi) with
    C(ansible_network_os=rdmaops.roce.nvue)); SONiC (community) by a CONFIG_DB patch applied on the
    switch. For Arista EOS, Cisco NX-OS and NVIDIA Onyx the module renders and parses configuration;
    push the rendered lines with the vendor's config module.
  - Compares with what the switch holds as configured (never with hardware-rounded operational values),
    changes nothing when nothing differs, and in check mode predicts C(after) without touching the switch.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - For Cumulus Linux, the collection ansible.netcommon on the controller (connection
    C(ansible.netcommon.httpapi)) and the NVUE REST API enabled on the switch.
  - For SONiC, C(sonic-cfggen), C(config checkpoint), C(config apply-patch) and C(config rollback)
    (sonic-utilities) and the Python package jsonpatch on the switch, as SONiC images carry them.
  - O(state=rendered) and O(state=parsed) need nothing beyond ansible-core.
options:
  config:
    description:
      - The profile. Required for V(merged), V(replaced), V(overridden) and V(rendered); V(deleted)
        without it removes everything of the profile this module owns.
    type: dict
    suboptions:
      fabric:
        description:
          - A C(roce_fabric) mapping (preset plus overrides), resolved and checked exactly as the
            C(rdmaops.roce.roce_intent) filter does. An empty mapping is the lossless profile.
          - The switch uses C(trust), C(roce_dscp), C(roce_priority), C(cnp_dscp), C(cnp_priority),
            C(pfc_priorities), C(ecn_priorities), C(ecn), C(ets), C(pfc_watchdog) and C(switch_mtu)
            (a number or V(max), the largest MTU the NOS accepts).
        type: dict
      interfaces:
        description:
          - The switch ports the profile applies to, named as the NOS names them, matched whole - Cumulus
            C(swp1), C(swp1s0), C(bond1) (a name NVUE's model allows, at most 15 characters; not C(eth0), C(lo),
            C(mgmt)); SONiC C(Ethernet0); EOS C(Ethernet1), C(Ethernet1/1), C(Ethernet1/1/1), C(Port-Channel1);
            NX-OS C(Ethernet1/1), C(Ethernet1/1/1), C(port-channel1); Onyx C(ethernet 1/1), C(Eth1/1) or C(1/1).
          - In every state a name that breaks the NOS's rule is refused before anything is read, rendered or sent.
            Names read back (V(parsed), V(gathered), before and after) that break it are left out of the result
            with a warning; a plan whose commands would name one is refused.
        type: list
        elements: str
  state:
    description:
      - V(merged) sets the profile's values and leaves everything else; V(replaced) makes the QoS objects
        the profile owns exactly the profile on the listed interfaces; V(overridden) does that and removes
        the profile from interfaces not listed; V(deleted) removes what the profile owns.
      - V(gathered) returns the switch's configuration in the shape of O(config); V(rendered) returns the
        configuration for O(config) without a switch; V(parsed) reads O(running_config) without a switch.
    type: str
    choices: [merged, replaced, overridden, deleted, gathered, rendered, parsed]
    default: merged
  os:
    description:
      - The NOS. Defaults to the one C(ansible_network_os) names.
    type: str
    choices: [nvue, sonic, eos, nxos, onyx]
  nos_version:
    description:
      - The NOS version to write for (keys differ by release). Defaults to the version the switch reports,
        and for V(rendered) and V(parsed) to the newest version the module supports.
    type: str
  mtu_policy:
    description:
      - What to do with a C(switch_mtu) above the NOS's maximum. V(clamp) writes the maximum and warns;
        V(fail) refuses, naming the maximum.
    type: str
    choices: [clamp, fail]
    default: clamp
  running_config:
    description:
      - For V(parsed), the configuration to read - CLI text (C(show running-config)) for EOS, NX-OS and
        Onyx, JSON text for NVUE (a revision) and SONiC (CONFIG_DB).
      - Text of the wrong shape (a list where a mapping belongs, text where a number belongs, numbers out of
        range, truncated JSON, YAML where running-config text belongs) fails with one message naming
        O(running_config) and the place in it.
    type: str
extends_documentation_fragment:
  - rdmaops.roce.attributes.action
notes:
  - V(rendered) and V(parsed) need no switch; run them as C(ansible localhost -c local -m rdmaops.roce.switch_roce).
  - For Arista EOS, Cisco NX-OS and NVIDIA Onyx only V(rendered) and V(parsed) are available; push the lines
    with C(arista.eos.eos_config), C(cisco.nxos.nxos_config) or C(ansible.netcommon.cli_config) (Onyx), as the
    collection's docs/switches.md shows. EOS ports take an MTU of at most 9214; Onyx takes ECN thresholds in
    KB (1024 bytes) and refuses byte values that are not whole KB.
seealso:
  - plugin: rdmaops.roce.roce_intent
    plugin_type: filter
"""

EXAMPLES = r"""
- name: The fabric's RoCE profile on a Cumulus leaf
  rdmaops.roce.switch_roce:
    config:
      fabric: "{{ roce_fabric }}"
      interfaces: [swp1, swp2]
    state: merged

- name: The lines for an Arista EOS leaf, without a switch
  rdmaops.roce.switch_roce:
    os: eos
    config:
      fabric: {}
      interfaces: [Ethernet1/1]
    state: rendered
  delegate_to: localhost
  register: eos_roce
"""

RETURN = r"""
before:
  description: The switch's profile before the change, in the shape of O(config).
  returned: for merged, replaced, overridden and deleted
  type: dict
after:
  description: The profile after the change, or as it would be in check mode.
  returned: for merged, replaced, overridden and deleted
  type: dict
commands:
  description: What was sent, or would be - NVUE patch bodies, or SONiC RFC 6902 patch operations.
  returned: for merged, replaced, overridden and deleted
  type: list
gathered:
  description: The switch's profile, in the shape of O(config).
  returned: for gathered
  type: dict
rendered:
  description:
    - The configuration for O(config) - running-config lines in order, indented as C(show running-config)
      prints them (EOS, NX-OS, Onyx); the NVUE JSON body (a dict); the CONFIG_DB tables (SONiC).
  returned: for rendered
  type: raw
parsed:
  description: What O(running_config) says, in the shape of O(config); numbers are integers.
  returned: for parsed
  type: dict
nos_version:
  description: The NOS version written for.
  returned: always
  type: str
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
differences:
  description:
    - When applying failed, the places where the switch's configuration now differs from what was read before the
      change (NVUE paths, SONiC C(TABLE|key) rows); empty when nothing differs. The task then reports
      C(changed=true) whenever this is not empty.
  returned: when an apply failed and the switch was read again (NVUE; SONiC when it still differs after the rollback)
  type: list
  elements: str
revision:
  description: The NVUE revision of a failed apply, to inspect with C(nv config history) and C(nv config diff).
  returned: when an NVUE apply failed
  type: str
checkpoint:
  description: The SONiC checkpoint taken before applying, kept on the switch when the rollback did not restore it.
  returned: when a SONiC apply failed
  type: str
checkpoint_restored:
  description:
    - Whether CONFIG_DB is as it was before the failed SONiC apply (C(config rollback) succeeded and a read
      confirmed it). V(false) also when the checkpoint could not be taken, in which case nothing was applied.
  returned: when a SONiC apply failed
  type: bool
left_changed:
  description:
    - V(true) when the failed apply left the switch changed (SONiC rollback failed or did not restore CONFIG_DB;
      NVUE applied but not saved, or the configuration differs from before). The task then reports C(changed=true).
  returned: when an apply failed and left the switch changed
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.resource import STATES, SwitchRoce


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type="dict", options=dict(
                fabric=dict(type="dict"),
                interfaces=dict(type="list", elements="str"),
            )),
            state=dict(type="str", choices=list(STATES), default="merged"),
            os=dict(type="str", choices=["nvue", "sonic", "eos", "nxos", "onyx"]),
            nos_version=dict(type="str"),
            mtu_policy=dict(type="str", choices=["clamp", "fail"], default="clamp"),
            running_config=dict(type="str"),
        ),
        required_if=[("state", "parsed", ["running_config"]), ("state", "rendered", ["config"])],
        supports_check_mode=True,
    )
    run_module(module, SwitchRoce)


if __name__ == "__main__":
    main()
