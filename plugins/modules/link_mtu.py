#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: link_mtu
short_description: Set a link's MTU now and persistently, in whatever configures it, without cutting the management path
version_added: 1.0.0
description:
  - Sets the MTU of O(interface) in the running kernel (C(ip link set dev IF mtu N)) and in the network
    configuration system that configures the link on this host, changing only the MTU there.
  - Devices below the link come first. Raising a VLAN raises its parent, raising a bond raises its members,
    raising a bridge raises its ports (unless O(raise_lower=false)); a link never exceeds the device it sits on.
    Lower devices raised this way are persisted too, except bond members, which take the bond's MTU when
    they are enslaved.
  - "Persistence per backend, each keeping everything else in the files it touches:
    C(netplan) - a drop-in C(/etc/netplan/90-rdmaops-<id>.yaml) that sets only C(mtu) of the matching
    definition (netplan merges files in name order), rendered with C(netplan generate), then
    C(networkctl reload) or C(nmcli connection reload) for the renderer; C(netplan apply) is never run.
    C(networkmanager) - C(nmcli connection modify <uuid> 802-3-ethernet.mtu N) and, for the active device,
    C(nmcli device modify) (no reactivation); with NetworkManager not running, the keyfile's C([ethernet] mtu=)
    is edited in place (mode kept, 0600).
    C(networkd) - a drop-in C(<file>.network.d/90-rdmaops-mtu.conf) with C([Link] MTUBytes=) for the .network
    file networkd applied to the link, then C(networkctl reload) when networkd runs.
    C(ifupdown) - the C(mtu) option of the link's C(iface) stanza in C(/etc/network/interfaces) or a file it
    sources (C(pre-up ip link set dev IF mtu N) for methods that ignore C(mtu), such as C(inet dhcp));
    a link no stanza mentions gets an C(allow-hotplug)/C(iface IF inet manual)/C(mtu) block, which sets no address.
    C(ifcfg) - the C(MTU=) line of C(/etc/sysconfig/network-scripts/ifcfg-IF)."
  - With O(backend=auto) the configuration system is the one that configures the link here, asked in this
    order - netplan (a definition matches the link by name, C(match) or C(set-name)), NetworkManager
    (running and managing the device with a profile), systemd-networkd (the .network file it applied, or the
    first that matches), ifupdown (a stanza), ifcfg (a file), a NetworkManager keyfile (NetworkManager not running).
    When none does, an ifupdown stanza is added on hosts that use ifupdown (and no NetworkManager, networkd or
    netplan); anywhere else the module fails and says what it checked, because a new profile in a network manager
    would hand it the link and drop the addresses it did not set.
  - The drop-ins this module writes whole (C(/etc/netplan/90-rdmaops-<id>.yaml), C(<file>.network.d/90-rdmaops-mtu.conf))
    carry a C(Managed by rdmaops.roce) line; one at that path without it is left alone unless O(adopt=true). Files in
    which only the MTU is edited (an C(iface) stanza, an ifcfg file, a NetworkManager keyfile) are the user's and
    are edited in place, every other byte kept.
  - A configuration shared with other links (a netplan C(match) or a .network file that selects several
    existing links) is refused, because its MTU would change all of them.
  - "The management path is protected: the interface holding the server address of this SSH connection
    (E(SSH_CONNECTION), read from the module's ancestors when C(become) cleared it), the interface of the route
    back to the SSH client, every interface carrying a default route, those in O(management_interfaces),
    and every device below any of them. A change to any of them, live or persistent, is refused unless
    O(allow_management_change=true). When allowed, after the change the module checks that the connection's
    address is still on the same interface and that interface is up, that the route to the SSH client
    leaves through the same interface, and that no default route was lost; it fails when any of these differ.
    Re-test the connection itself afterwards, for example with M(ansible.builtin.wait_for_connection)."
  - The result is re-read after the change (the kernel's MTU of every device changed, and the configuration's
    effective value); any difference fails with what differs.
  - "Failures tell what stayed: when a change or an activation command fails part-way, what can be undone is
    undone (the old live MTU set again, files put back, a NetworkManager profile given its old value). A
    configuration that C(netplan generate) rejects is rolled back entirely: the files and the live MTU. The
    failed result then has C(changed=false), or C(changed=true) with C(applied) naming what stayed applied
    (for example after C(networkctl reload) failed, which validates nothing); C(rolled_back) and C(not_applied)
    name the rest."
author:
  - rdmaops developers (@rdmaops)
options:
  interface:
    description:
      - The link whose MTU is set, by its kernel name (C(ens1f0np0), C(bond0), C(bond0.100)).
      - "It is written into the network configuration and onto command lines, so it must be 1-15 characters of
        C(A-Z), C(a-z), C(0-9), C(_), C(.) and C(-), the first a letter, a digit or C(_). The kernel allows more (a
        name such as C(r0;reboot)), but such a name would be shell or file syntax in an ifupdown C(pre-up) line or an
        ifcfg file; it is refused, naming the option, before anything is read or changed. A device below the link
        (a bond member, a VLAN parent) whose MTU would be persisted is held to the same rule."
    type: str
    required: true
  mtu:
    description:
      - The MTU in bytes. RoCE uses the largest InfiniBand MTU (256 to 4096) that fits in this MTU minus 96 bytes
        of headers, so 4192 or more gives RoCE 4096; 9000 is the usual jumbo value.
    type: int
    required: true
  persist:
    description:
      - Also write the MTU to the configuration that the link is set up from at boot.
      - With V(false) only the running kernel is changed (the same as O(backend=runtime)).
    type: bool
    default: true
  backend:
    description:
      - Which configuration system persists the MTU. V(auto) finds the one that configures the link (see above).
      - V(runtime) changes only the running kernel.
      - A named backend that does not configure the link fails, except V(ifupdown), which adds a stanza.
    type: str
    choices: [auto, netplan, networkmanager, networkd, ifupdown, ifcfg, runtime]
    default: auto
  allow_management_change:
    description:
      - Change the MTU even where the change reaches the management path (see above). The connectivity checks
        listed above then run after the change.
    type: bool
    default: false
  management_interfaces:
    description:
      - More interfaces to protect as management interfaces, in addition to the ones detected.
    type: list
    elements: str
    default: []
  raise_lower:
    description:
      - Raise the devices below the link (VLAN parent, bond members, bridge ports) whose MTU is below O(mtu),
        before the link. With V(false) the module fails instead.
    type: bool
    default: true
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.owned_files
requirements:
  - C(ip) from iproute2 on the managed host.
  - For netplan, PyYAML importable by the module's Python (netplan itself depends on it) and C(netplan).
  - For a running NetworkManager, C(nmcli).
seealso:
  - name: netplan YAML reference
    description: How netplan merges files and matches devices.
    link: https://netplan.readthedocs.io/en/stable/netplan-yaml/
  - name: systemd.network
    description: MTUBytes= in the [Link] section and drop-in directories.
    link: https://www.freedesktop.org/software/systemd/man/latest/systemd.network.html
  - name: interfaces(5)
    description: ifupdown's interfaces file, its methods and their mtu option.
    link: https://manpages.debian.org/bookworm/ifupdown/interfaces.5.en.html
"""

EXAMPLES = r"""
- name: MTU 9000 on the RDMA link, now and after reboots
  rdmaops.roce.link_mtu:
    interface: ens1f0np0
    mtu: 9000

- name: A VLAN on a bond; the bond and its members are raised first
  rdmaops.roce.link_mtu:
    interface: bond0.100
    mtu: 9000

- name: Only the running kernel (an experiment, gone at the next boot)
  rdmaops.roce.link_mtu:
    interface: ens1f1np1
    mtu: 9000
    backend: runtime

- name: The management NIC itself, knowingly
  rdmaops.roce.link_mtu:
    interface: eno1
    mtu: 9000
    allow_management_change: true
  register: mgmt_mtu

- name: Re-test the connection after a management change
  ansible.builtin.wait_for_connection:
    timeout: 60
  when: mgmt_mtu.management.change
"""

RETURN = r"""
interface:
  description: The link.
  returned: always
  type: str
  sample: ens1f0np0
mtu:
  description: The MTU asked for.
  returned: always
  type: int
  sample: 9000
backend:
  description: The configuration system that persists the link's MTU (C(runtime) when nothing is persisted).
  returned: always
  type: str
  sample: netplan
config:
  description:
    - Where the link's MTU is persisted - C(backend), C(interface), C(path) (file written, or the profile's file),
      C(mtu) (the value found there before), plus per backend C(definition), C(origin), C(renderer) (netplan),
      C(profile), C(uuid), C(active), C(mode) (networkmanager), C(network_file) (networkd), C(files), C(created) (ifupdown).
  returned: always
  type: dict
  sample: {backend: netplan, interface: ens1f0np0, path: /etc/netplan/90-rdmaops-fabric0.yaml, mtu: null,
           definition: ethernets.fabric0, origin: /etc/netplan/50-cloud-init.yaml, renderer: networkd}
configs:
  description: The same for every device persisted (the link, then lower devices raised for it).
  returned: always
  type: list
  elements: dict
before:
  description: C(runtime) - the kernel's MTU of the link and every device below it; C(persistent) - the configured MTU per device (null when unset).
  returned: always
  type: dict
  sample: {runtime: {bond0.100: 1500, bond0: 1500, ens1f0: 1500, ens1f1: 1500}, persistent: {bond0.100: null, bond0: 1500}}
after:
  description: The same after the change (in check mode, what it would be).
  returned: always
  type: dict
  sample: {runtime: {bond0.100: 9000, bond0: 9000, ens1f0: 9000, ens1f1: 9000}, persistent: {bond0.100: 9000, bond0: 9000}}
changes:
  description: One line per change, in the order they are (or would be) made.
  returned: always
  type: list
  elements: str
  sample:
    - "runtime: ip link set dev bond0 mtu 9000 (was 1500), below bond0.100"
    - "runtime: ip link set dev bond0.100 mtu 9000 (was 1500)"
    - "ifupdown: /etc/network/interfaces sets mtu 9000 for bond0.100"
commands:
  description:
    - The commands that changed or activated something (read-only queries left out), including those that undid a
      change after a failure; in check mode, the activation commands that would run.
  returned: always
  type: list
  elements: str
  sample: ["ip link set dev ens1f0np0 mtu 9000", "netplan generate", "networkctl reload"]
steps:
  description: The activation commands run (or, in check mode, to be run) after the changes, when there are any.
  returned: when something changes
  type: list
  elements: str
  sample: ["netplan generate", "networkctl reload"]
management:
  description:
    - C(interfaces) - the detected management interfaces, each with why; C(protected) - those and every
      device below them; C(change) - whether this run changed something on that path; C(retest) - the checks
      made after such a change.
  returned: always
  type: dict
  sample: {interfaces: {ens3: ["holds 10.0.2.15, the address this SSH connection came in on", "carries an IPv4 default route"]},
           protected: [ens3], change: false, retest: []}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.stacks import BACKEND_CHOICES
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.mtu import LinkMtu


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interface=dict(type="str", required=True),
            mtu=dict(type="int", required=True),
            persist=dict(type="bool", default=True),
            backend=dict(type="str", default="auto", choices=list(BACKEND_CHOICES)),
            allow_management_change=dict(type="bool", default=False),
            management_interfaces=dict(type="list", elements="str", default=[]),
            raise_lower=dict(type="bool", default=True),
            adopt=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    run_module(module, LinkMtu)


if __name__ == "__main__":
    main()
