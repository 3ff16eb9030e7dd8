#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpudirect_config
short_description: Clear PCIe ACS redirection and put the IOMMU in pass-through for GPUDirect RDMA, only when asked
version_added: 1.0.0
description:
  - Changes the two host-wide settings that M(rdmaops.roce.gpudirect_facts) reports as standing in
    the way of GPUDirect RDMA. Both are left alone by default (C(keep)); naming them is the consent.
  - B(ACS.) With an IOMMU on, the kernel turns on PCIe ACS P2P Request Redirect, Completion
    Redirect and Egress Control on every capable bridge at each boot; GPU-to-NIC traffic then goes
    up to the root complex instead of across the PCIe switch. O(acs=disable) clears those three
    bits (C(setpci -s BDF ECAP_ACS+0x6.w=0000:002c), a value:mask write that leaves the other ACS
    bits alone) on the bridges upstream of a GPU or an RDMA NIC (O(acs_scope=gpu_paths)) or on
    every bridge (O(acs_scope=all)), then reads C(lspci) again to prove it. Because the kernel
    sets the bits again at every boot, a oneshot unit (O(acs_unit)) repeats the writes after each
    boot. It lists every bridge in scope that can redirect, so the run after a reboot changes nothing.
  - B(IOMMU.) O(iommu=passthrough) makes the kernel boot with O(kernel_args) (default C(iommu=pt)),
    with C(grubby) (RHEL family) through C(grubby --update-kernel=ALL --args=...); with
    C(/etc/default/grub) (Debian family) through a drop-in C(/etc/default/grub.d/90-rdmaops-gpudirect.cfg)
    that appends to C(GRUB_CMDLINE_LINUX_DEFAULT), followed by C(update-grub) (or C(grub-mkconfig)).
    Arguments the existing GRUB defaults already give are not added again. The defaults are read
    in the order grub-mkconfig sources them (C(/etc/default/grub), then C(/etc/default/grub.d/*.cfg)
    by name), as data - C(NAME=value), C(NAME+=value), quotes and C($NAME)/C(${NAME}) appends - and
    nothing in them is ever run, in check mode or not; a command substitution there is not run and
    gives a warning. When C(update-grub) fails, the drop-in (and the other changes that can be)
    is put back, so the next run tries again. Nothing takes effect before a reboot, and C(reboot_required) in RV(iommu) says whether the running
    kernel lacks the arguments. This module never reboots.
  - Errors name what is missing before anything is changed (ACS state unreadable, C(setpci) missing,
    no known boot loader configuration).
  - The unit and the GRUB drop-in carry a C(Managed by rdmaops.roce) line; a file at their path without
    it is left alone (the task fails naming it) unless O(adopt=true).
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(setpci) and C(lspci) from pciutils on the managed host for ACS.
  - For O(iommu=passthrough), C(update-grub) (Debian, Ubuntu) or C(grubby) (RHEL family).
options:
  acs:
    description:
      - C(keep) leaves ACS (and any unit an earlier run wrote) alone; C(disable) clears the redirect bits.
    type: str
    choices: [keep, disable]
    default: keep
  acs_scope:
    description:
      - C(gpu_paths) changes only bridges upstream of an NVIDIA GPU or an RDMA NIC (nothing on a host without GPUs);
        C(all) changes every bridge with an ACS capability that can redirect.
    type: str
    choices: [gpu_paths, all]
    default: gpu_paths
  acs_persist:
    description:
      - Write and enable the boot unit that clears the bits again after every boot. Without it the change lasts until the next boot.
    type: bool
    default: true
  acs_unit:
    description:
      - File name of that unit under C(/etc/systemd/system).
    type: str
    default: rdmaops-gpudirect-acs.service
  iommu:
    description:
      - C(keep) leaves the kernel command line alone; C(passthrough) adds O(kernel_args) for the next boot.
    type: str
    choices: [keep, passthrough]
    default: keep
  kernel_args:
    description:
      - Kernel parameters that put the IOMMU in pass-through, each C(NAME) or C(NAME=VALUE).
        NVIDIA documents C(iommu=pt); add C(intel_iommu=on) where SR-IOV virtual functions need the IOMMU.
    type: list
    elements: str
    default: [iommu=pt]
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.owned_files
seealso:
  - module: rdmaops.roce.gpudirect_facts
  - name: NCCL troubleshooting, PCI Access Control Services
    description: Why ACS and IOMMU translation break GPUDirect peer-to-peer traffic.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs
"""

EXAMPLES = r"""
- name: Clear ACS redirection on the GPU/NIC paths and boot with iommu=pt from now on
  rdmaops.roce.gpudirect_config:
    acs: disable
    iommu: passthrough
  register: gpudirect_change

- name: Tell the operator that the IOMMU change waits for a reboot
  ansible.builtin.debug:
    msg: "reboot {{ inventory_hostname }} for {{ gpudirect_change.iommu.kernel_args | join(' ') }}"
  when: gpudirect_change.iommu.reboot_required
"""

RETURN = r"""
acs:
  description:
    - With O(acs=disable) - C(scope), C(targets) (bridges in scope that can redirect; the unit lists them),
      C(redirecting_before) (bridge to the redirect bits that were on), C(redirecting_after) (after the change; empty when it worked),
      C(boot_unit) (path, or null), C(note). Null with O(acs=keep).
  returned: always
  type: dict
  sample: {scope: gpu_paths, targets: ["0000:3a:00.0", "0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"],
           redirecting_before: {"0000:3c:00.0": [ReqRedir, CmpltRedir]}, redirecting_after: {},
           boot_unit: /etc/systemd/system/rdmaops-gpudirect-acs.service, note: null}
iommu:
  description:
    - With O(iommu=passthrough) - C(method) (C(grubby) or C(grub)), C(kernel_args), C(missing_before) (the arguments that were
      not configured), C(boot_config_before) / C(boot_config_after) (grubby - kernel to arguments; grub - the command line the
      GRUB defaults give), C(running_cmdline_has_args), C(reboot_required). Null with O(iommu=keep).
  returned: always
  type: dict
  sample: {method: grub, kernel_args: [iommu=pt], missing_before: [iommu=pt], boot_config_before: "quiet",
           boot_config_after: "quiet iommu=pt", running_cmdline_has_args: false, reboot_required: true}
gpudirect:
  description: The GPUDirect prerequisites as M(rdmaops.roce.gpudirect_facts) reports them, read again after the change.
  returned: always
  type: dict
changes:
  description: One line per change, in order.
  returned: always
  type: list
  elements: str
  sample: ["clear ACS ReqRedir/CmpltRedir on 0000:3c:00.0 (setpci -s 0000:3c:00.0 ECAP_ACS+0x6.w=0000:002c)",
           "write /etc/systemd/system/rdmaops-gpudirect-acs.service", "enable rdmaops-gpudirect-acs.service"]
steps:
  description: What ran after the changes (C(systemctl daemon-reload) when the unit changed, C(update-grub) or
    C(grub-mkconfig) when the drop-in changed).
  returned: when something changed
  type: list
  elements: str
  sample: [systemctl daemon-reload, update-grub]
commands:
  description: The commands that ran (C(lspci), C(setpci), C(grubby), C(update-grub)), in order.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.gpudirect_config import DEFAULT_UNIT, GpuDirectConfig


def main():
    module = AnsibleModule(
        argument_spec=dict(
            acs=dict(type="str", choices=["keep", "disable"], default="keep"),
            acs_scope=dict(type="str", choices=["gpu_paths", "all"], default="gpu_paths"),
            acs_persist=dict(type="bool", default=True),
            acs_unit=dict(type="str", default=DEFAULT_UNIT),
            iommu=dict(type="str", choices=["keep", "passthrough"], default="keep"),
            kernel_args=dict(type="list", elements="str", default=["iommu=pt"]),
            adopt=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    run_module(module, GpuDirectConfig)


if __name__ == "__main__":
    main()
