#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: ofed_status
short_description: Report the RDMA driver stack, what a provider needs, DKMS and kernel coverage
version_added: 1.0.0
description:
  - Reads, in one round trip, what the C(rdmaops.roce.ofed) role decides on, and changes nothing.
  - The installed stack (flavor, version, loaded driver) is read with the same code as
    M(rdmaops.roce.rdma_facts) and returned as RV(stack).
  - Resolves O(provider=auto), compares the installed stack with the wanted one and returns what it
    needs (RV(needed)) to get bring it there; installs nothing by itself.
  - For OFED stacks, checks every installed kernel (C(/lib/modules/<release>) with the kernel's own
    tree) for the OFED C(mlx5_core) and C(mlx5_ib) modules (C(updates/), C(extra/),
    C(weak-updates/)), and parses C(dkms status) so that a DKMS module registered for OFED must be
    C(installed) for each of those kernels; a gap is reported with the tail of its C(make.log).
  - Finds which netdevs and drivers carry the management connection and decides whether the new
    driver can be loaded by restarting C(openibd), needs a reboot, or has to wait (RV(activation)).
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(dpkg-query) or C(rpm) on the managed host; C(dkms) where the stack builds its modules with DKMS.
options:
  provider:
    description:
      - The wanted stack. V(auto) keeps an installed DOCA-OFED or MLNX_OFED, picks V(doca) when a
        ConnectX NIC (PCI vendor C(0x15b3)) is present, and V(inbox) otherwise.
    type: str
    choices: [auto, doca, mlnx_ofed, inbox]
    default: auto
  state:
    description:
      - V(absent) means back to the distribution's inbox stack.
    type: str
    choices: [present, absent]
    default: present
  doca_profile:
    description: The DOCA-Host profile package whose version identifies the install.
    type: str
    choices: [doca-ofed, doca-roce]
    default: doca-ofed
  doca_version:
    description:
      - Wanted version of the profile package. A DOCA release such as V(3.2.1) matches package
        versions V(3.2.1) and V(3.2.1-<build>...); a value with C(*) is a glob; anything else must
        match exactly.
      - Required when the resolved provider is V(doca) and O(state=present).
    type: str
    default: ""
  mlnx_ofed_version:
    description:
      - Wanted MLNX_OFED version as C(ofed_info -s) prints it (V(24.10-1.1.4.0)). Empty accepts any
        installed MLNX_OFED.
    type: str
    default: ""
  allow_downgrade:
    description:
      - Allow going back to an older release than the installed one (O(doca_version) or O(mlnx_ofed_version)
        older than what is installed). Without it such a version is refused before anything is changed.
    type: bool
    default: false
  inbox_packages:
    description:
      - Packages the inbox stack consists of. Empty means the distribution's, by its package manager
        (apt C(rdma-core), C(ibverbs-providers), C(ibverbs-utils), C(rdmacm-utils), C(infiniband-diags),
        C(perftest); dnf C(rdma-core), C(libibverbs-utils), C(librdmacm-utils), C(infiniband-diags),
        C(perftest)). RV(inbox_packages) returns the list in use.
    type: list
    elements: str
    default: []
  inbox_extra_packages:
    description: More packages for the inbox stack, after O(inbox_packages) (for example C(mstflint)).
    type: list
    elements: str
    default: []
    version_added: 1.2.0
  dkms_modules:
    description:
      - DKMS module names that must be built and installed for every installed kernel when DKMS
        knows them (C(mlnx-ofed-kernel), C(iser), C(isert), C(srp) ...).
    type: list
    elements: str
    default: [mlnx-ofed-kernel]
  kernel_coverage:
    description:
      - What a kernel without OFED modules is. The running kernel is always a problem; with
        V(warn) other installed kernels only give a warning.
    type: str
    choices: [fail, warn]
    default: fail
  management_interface:
    description: The netdev that carries the management connection. Empty finds it from O(management_address).
    type: str
    default: ""
  management_address:
    description:
      - The address this host is managed on (the server side of C(SSH_CONNECTION), or
        C(ansible_default_ipv4.address)); the netdev holding it is the management interface.
    type: str
    default: ""
  reboot:
    description: The reboot policy the activation decision follows (the role's C(ofed_reboot)).
    type: str
    choices: [never, when_required, always]
    default: when_required
  allow_driver_restart:
    description:
      - Consent to restart the driver stack although the management connection, RDMA storage or a
        peer-memory client uses it.
    type: bool
    default: false
  stack_changed:
    description: Whether the caller changed the driver stack in this run (for O(reboot=always)).
    type: bool
    default: false
  fail_on_problems:
    description: Fail, listing every problem, when the stack is not complete (used after an install).
    type: bool
    default: false
  log_lines:
    description: How many lines of a failed DKMS build's C(make.log) to include.
    type: int
    default: 30
extends_documentation_fragment:
  - rdmaops.roce.attributes
attributes:
  check_mode:
    support: full
    description: Only reads the host.
  diff_mode:
    support: none
    description: Changes nothing.
seealso:
  - module: rdmaops.roce.rdma_facts
  - module: rdmaops.roce.ofed_repo
  - module: rdmaops.roce.mlnx_ofed_install
"""

EXAMPLES = r"""
- name: What would it take to get DOCA-OFED 3.2.1 here?
  rdmaops.roce.ofed_status:
    provider: doca
    doca_version: "3.2.1"
    management_address: "{{ ansible_facts['env']['SSH_CONNECTION'].split(' ')[2] }}"
  register: ofed

- name: Fail when any installed kernel lacks the OFED modules
  rdmaops.roce.ofed_status:
    provider: auto
    fail_on_problems: true
"""

RETURN = r"""
stack:
  description: The installed stack as M(rdmaops.roce.rdma_facts) reports it (C(flavor), C(version), C(loaded_driver) ...).
  type: dict
  returned: always
provider:
  description: The resolved provider (V(doca), V(mlnx_ofed) or V(inbox)) and, in RV(provider_reason), why.
  type: str
  returned: always
provider_reason:
  description: Why that provider.
  type: str
  returned: always
target_flavor:
  description: The stack flavor the host should end with (V(doca_ofed), V(mlnx_ofed), V(inbox)).
  type: str
  returned: always
needed:
  description:
    - What the host needs. V(none) (nothing to install), V(install), V(upgrade) (another version), V(downgrade)
      (an older release, only with O(allow_downgrade)), V(switch) (remove RV(remove_flavor) first, then install) or
      V(remove) (back to inbox).
  type: str
  returned: always
  sample: upgrade
needed_reason:
  description: What was compared.
  type: str
  returned: always
  sample: doca-ofed 3.2.1-044000 is installed, 3.3.0 is wanted
remove_flavor:
  description: The flavor to remove for V(switch) and V(remove).
  type: str
  returned: always
package_family:
  description: V(apt) or V(dnf), from the package database found.
  type: str
  returned: always
inbox_packages:
  description: The inbox stack's packages in use (O(inbox_packages) or the distribution's, then O(inbox_extra_packages)).
  type: list
  elements: str
  returned: always
  version_added: 1.2.0
packages:
  description: C(doca_profile) (C(name), C(version)), C(doca_named) (installed packages the DOCA removal recipe matches) and C(inbox_missing).
  type: dict
  returned: always
removal:
  description: What a removal would remove, C(packages) and C(uninstall_script) (C(/usr/sbin/ofed_uninstall.sh) when present).
  type: dict
  returned: always
mellanox_nic:
  description: Whether a ConnectX PCI function is present.
  type: bool
  returned: always
kernels:
  description:
    - One entry per installed kernel with C(release), C(running), C(ofed) (both OFED modules
      found), C(ofed_modules) (path per module), C(inbox_mlx5), C(headers) and C(dkms) (state per
      DKMS module).
  type: list
  elements: dict
  returned: always
kernels_missing:
  description: Installed kernels without the OFED modules (OFED targets only).
  type: list
  elements: str
  returned: always
kernels_to_build:
  description: Kernels without the OFED modules whose headers are installed, so DKMS can build them.
  type: list
  elements: str
  returned: always
dkms:
  description: Parsed C(dkms status) entries (C(module), C(version), C(kernel), C(arch), C(state), C(detail)).
  type: list
  elements: dict
  returned: always
management:
  description:
    - The management connection's C(interface), the C(devices) below it (VLAN parents, bond
      slaves) with their C(driver), C(drivers) and C(on_ofed_driver) (a driver an OFED restart unloads).
    - C(reasons) names every netdev the collection's management-path detector found and why (the one
      named or holding the address, the SSH connection's, the default routes').
  type: dict
  returned: always
restart_required:
  description: Whether the loaded mlx5 driver is not the installed one.
  type: bool
  returned: always
restart_reason:
  description: Why (or why not).
  type: str
  returned: always
restart_risks:
  description: Loaded modules that depend on the RDMA core (storage over RDMA, peer-memory clients).
  type: list
  elements: str
  returned: always
restart_possible:
  description: Whether an openibd service exists to restart an OFED driver with.
  type: bool
  returned: always
activation:
  description: V(none), V(restart), V(reboot) or V(pending) (nothing allowed; a warning says what to do).
  type: str
  returned: always
activation_reason:
  description: Why.
  type: str
  returned: always
disruption:
  description:
    - How disruptive the ofed role's run on this host would be to a workload, in the classes every layer
      reports (see O(rdmaops.roce.nic_layer#module:max_disruption)). V(online) for the inbox userspace
      packages, V(driver_restart) when the new driver is loaded by an openibd restart (or waits for one
      nobody allowed), V(reboot) when a reboot loads it, V(none) when nothing is to be done.
  type: str
  returned: always
  choices: [none, online, driver_restart, reboot]
check_mode:
  description:
    - Whether the module ran in check mode. Roles read this instead of C(ansible_check_mode), which only
      reflects C(--check) on the command line and not C(check_mode) set on a play, block or role.
  type: bool
  returned: always
problems:
  description: What makes the stack incomplete (wrong flavor or version, kernels without modules, DKMS gaps with make.log tails).
  type: list
  elements: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_facts
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.status import argument_spec, gather


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_facts(module, gather)


if __name__ == "__main__":
    main()
