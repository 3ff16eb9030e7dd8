#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpudirect_facts
short_description: Report whether a host meets the GPUDirect RDMA prerequisites (read only)
version_added: 1.0.0
description:
  - Reads the IOMMU mode (C(/proc/cmdline), C(/sys/kernel/iommu_groups/*/type) and the group of each
    NVIDIA GPU and RDMA NIC), the PCIe ACS control bits of every bridge (C(lspci -D -vvv), run once)
    and whether C(nvidia_peermem) (and not the legacy C(nv_peer_mem)) is loaded.
  - Returns C(ansible_facts.gpudirect) with a list of C(problems) phrased as what to change.
    Nothing on the host is changed.
  - On a host without NVIDIA GPUs, C(applicable) is false and no problems are raised.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(lspci) from pciutils on the managed host for the ACS report (O(use_lspci)).
options:
  use_lspci:
    description:
      - Run C(lspci -D -vvv) to read ACS. It must run as root to see PCI capabilities.
      - Without it (or when pciutils is missing) the ACS state is reported as C(unknown), with the reason.
    type: bool
    default: true
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.facts
seealso:
  - name: NCCL troubleshooting, PCI Access Control Services
    description: Why ACS and IOMMU translation break GPUDirect peer-to-peer traffic.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs
"""

EXAMPLES = r"""
- name: Check the GPUDirect RDMA prerequisites
  rdmaops.roce.gpudirect_facts:

- name: Stop when a GPU host is not ready for GPUDirect RDMA
  ansible.builtin.assert:
    that: not ansible_facts['gpudirect']['applicable'] or ansible_facts['gpudirect']['ready']
    fail_msg: "{{ ansible_facts['gpudirect']['problems'] }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpudirect:
      description: GPUDirect RDMA prerequisites.
      returned: always
      type: dict
      contains:
        applicable:
          description: Whether the host has NVIDIA GPUs.
          type: bool
          returned: always
        ready:
          description: GPUs present and no problem found.
          type: bool
          returned: always
        gpus:
          description: PCI addresses of NVIDIA GPUs.
          type: list
          elements: str
          returned: always
        rdma_nics:
          description: PCI addresses of RDMA-capable NICs (an C(infiniband) child in sysfs, or a Mellanox network function).
          type: list
          elements: str
          returned: always
        iommu:
          description:
            - C(mode) is C(off), C(passthrough) or C(translated); C(source) says what it was derived from.
            - C(cmdline) holds the IOMMU-related kernel parameters, C(hardware_units) the entries of
              C(/sys/class/iommu), C(groups) the number of IOMMU groups, C(domain_types) how many groups
              have each default domain type, C(device_domains) the type of the group of each GPU and NIC.
          type: dict
          returned: always
          sample:
            mode: passthrough
            cmdline: {"intel_iommu": "on", "iommu": "pt"}
            device_domains: {"0000:3d:00.0": "identity", "0000:3e:00.0": "identity"}
        acs:
          description:
            - C(status) is C(not_redirecting), C(redirecting) or C(unknown) (with C(reason)).
            - C(redirecting) lists bridges with ReqRedir, CmpltRedir or EgressCtrl enabled;
              C(redirecting_on_gpu_paths) those that lie upstream of a GPU or an RDMA NIC;
              C(devices) maps every function with an ACS capability to its ACSCtl bits.
          type: dict
          returned: always
        peermem:
          description: Whether C(nvidia_peermem) and the legacy C(nv_peer_mem) are loaded.
          type: dict
          returned: always
        problems:
          description: What stands in the way of GPUDirect RDMA, each with the change that fixes it.
          type: list
          elements: str
          returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_facts
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import specs
from ansible_collections.rdmaops.roce.plugins.module_utils._host.gpudirect import gather


def main():
    module = AnsibleModule(
        argument_spec=specs.GPUDIRECT_FACTS,
        supports_check_mode=True,
    )
    run_facts(module, gather)


if __name__ == "__main__":
    main()
