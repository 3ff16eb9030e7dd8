#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rdma_facts
short_description: Gather RDMA devices, ports, GIDs, netdevs, driver stack and GPU affinity
version_added: 1.0.0
description:
  - Reads the host's RDMA state and returns it as C(ansible_facts.rdma).
  - sysfs first; tools only where they add facts C(/sys) lacks, each run at most once per host
    (C(ibv_devinfo) for port MTUs, C(ip -j addr show) for addresses, C(ofed_info -s) for the
    OFED flavour and version, C(dpkg-query) or C(rpm) for the rdma-core version).
  - Hosts with no RDMA device, empty GID slots, ports without a netdev and missing tools all
    give correct partial facts.
author:
  - rdmaops developers (@rdmaops)
requirements:
  - Nothing beyond Python on the managed host; it reads sysfs. Where they are installed it also asks
    C(ibv_devinfo) (rdma-core's ibverbs-utils), C(rdma) (iproute2) and C(ofed_info) (MLNX_OFED/DOCA-OFED),
    unless O(use_tools=false).
options:
  use_tools:
    description:
      - Run the helper tools listed above when they are installed.
      - With V(false) only sysfs and procfs are read; port MTUs are then derived from the
        netdev MTU the way the kernel derives them, and addresses come from the RoCE GIDs.
    type: bool
    default: true
  gpu_topology:
    description:
      - Also list NVIDIA GPUs on the PCI bus and, for every RDMA device, how each GPU reaches
        it (same PCIe switch, same host bridge, same NUMA node, or across NUMA nodes).
    type: bool
    default: true
  os_facts:
    description:
      - Also return the facts of ansible-core's C(distribution), C(platform), C(python) and C(env) fact
        collectors, keyed as M(ansible.builtin.setup) returns them (C(ansible_facts.distribution),
        C(ansible_facts.kernel), C(ansible_facts.architecture), C(ansible_facts.python), C(ansible_facts.env),
        ...), so a play that needs only those saves the C(setup) round trip. C(site.yml)'s preflight uses it.
      - These are read from the running system, also under C(RDMAOPS_HOST_ROOT).
    type: bool
    default: false
  observe:
    description:
      - Also report what is at each path of O(observe.files), the text of each file of O(observe.texts) and,
        where systemd runs, the state of each unit of O(observe.units) (one C(systemctl is-active) for all), in
        RV(observed). Nothing is changed.
      - C(site.yml)'s preflight uses it for the files and units of the layers whose module a no-op run can
        leave out (the RDMA core modules' files, NCCL's file, the monitor's collector). When what the host has is
        what the module would write, the layer is not run on the host again. The NCCL layer's file is judged with
        the RDMA state this call reads and the default route of C(/proc/net/route) (a text).
    type: dict
    suboptions:
      files:
        description: Absolute paths (at most 64).
        type: list
        elements: path
        default: []
      texts:
        description: Absolute paths of small files whose text is reported (at most 64, up to 64 KiB each).
        type: list
        elements: path
        default: []
      units:
        description: systemd unit names (at most 64).
        type: list
        elements: str
        default: []
  plans:
    description:
      - Also run the read of each later layer named here, with that module's options, and return what the
        module would return in RV(plans). Nothing is changed.
      - C(site.yml)'s preflight uses it so that a layer whose read finds nothing to change costs no module
        call of its own. The role compares its options with the ones the read ran with, and runs its module
        as before when they differ, when the read found something to change or failed, or when an earlier
        layer changed the host in the run.
    type: dict
    version_added: 1.2.0
    suboptions:
      ofed_status:
        description:
          - The options of M(rdmaops.roce.ofed_status) (it only reads), checked against that module's
            argument spec; the driver stack is the one this call reads.
        type: dict
      tuning_layer:
        description:
          - The options of M(rdmaops.roce.tuning_layer), run in check mode whatever the task's. With its
            O(rdmaops.roce.tuning_layer#module:gpudirect), the GPUDirect RDMA report is also returned as
            C(ansible_facts.gpudirect), as that module returns it.
        type: dict
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.facts
seealso:
  - name: rdma_cm configfs, RoCE GIDs and sysfs
    description: Kernel documentation of the InfiniBand sysfs class.
    link: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband
"""

EXAMPLES = r"""
- name: Gather RDMA facts
  rdmaops.roce.rdma_facts:

- name: Show the RoCE v2 GID index NCCL should use on the first port of mlx5_0
  ansible.builtin.debug:
    msg: "{{ ansible_facts['rdma']['devices']['mlx5_0']['ports']['1']['roce_v2_ipv4_gid_index'] }}"

- name: Fail when the loaded driver does not match the installed OFED
  ansible.builtin.assert:
    that: ansible_facts['rdma']['stack']['loaded_driver'] != 'inbox' or ansible_facts['rdma']['stack']['flavor'] == 'inbox'
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    rdma:
      description: The host's RDMA state.
      returned: always
      type: dict
      contains:
        devices:
          description:
            - RDMA devices by name (C(mlx5_0), C(rocep1s0f0), C(rxe0) ...).
            - Each has C(driver), C(fw_ver), C(node_guid), C(sys_image_guid), C(node_type), C(hca_type),
              C(board_id), C(pci_address), C(numa_node), C(virtual) (no PCI function, e.g. Soft-RoCE),
              C(gpu_affinity) (list of C(gpu), C(relation)) and C(ports).
            - C(ports) maps the port number (a string) to C(state), C(phys_state), C(link_layer),
              C(netdev), C(active_mtu) and C(max_mtu) (bytes), C(mtu_source) (C(ibv_devinfo) or
              C(derived_from_netdev_mtu)), C(rate), C(gids) and C(roce_v2_ipv4_gid_index).
            - C(gids) lists the populated GID slots as C(index), C(type) (as the kernel says it,
              C(RoCE v2), C(IB/RoCE v1)), C(gid), C(netdev), C(ipv4).
            - C(roce_v2_ipv4_gid_index) is the lowest RoCE v2 GID index that carries one of the
              netdev's IPv4 addresses, or null.
          type: dict
          returned: always
          sample:
            mlx5_0:
              driver: mlx5_core
              fw_ver: 28.39.1002
              pci_address: "0000:3b:00.0"
              numa_node: 0
              ports:
                "1":
                  state: ACTIVE
                  link_layer: Ethernet
                  netdev: ens1f0np0
                  active_mtu: 4096
                  roce_v2_ipv4_gid_index: 3
        netdevs:
          description: The netdevs behind RDMA ports, with C(ibdev), C(port), C(mtu), C(operstate),
            C(carrier), C(address), C(driver), C(pci_address), C(ipv4) and C(ipv4_source) (C(ip) or C(gids)).
            On a multi-rail host (C(rails) of M(rdmaops.roce.nic_layer) applied), each rail netdev also has
            C(ipv6) (its global IPv6 addresses) and C(rails), one entry per rail with C(rail) (its name),
            C(table), C(table_name) and C(rules) (each rule of the table, as C(1000 from 10.0.0.2 lookup 100)).
          type: dict
          returned: always
        stack:
          description:
            - The RDMA driver stack. C(flavor) is one of C(doca_ofed), C(mlnx_ofed), C(inbox), C(none).
            - C(version) is the OFED version for OFED flavours and the rdma-core package version for inbox.
            - C(loaded_driver) is C(ofed), C(inbox) or null (mlx5_core not loaded); C(kernel),
              C(mlx5_core_version) and C(evidence) say what the decision was based on.
          type: dict
          returned: always
        modules:
          description: For each of rdma_cm, ib_uverbs, ib_umad, ib_core, mlx5_core, mlx5_ib, nvidia,
            nvidia_peermem, nv_peer_mem and rdma_rxe, whether it is loaded (or built in), i.e.
            whether C(/sys/module/<name>) exists.
          type: dict
          returned: always
        gpus:
          description: NVIDIA GPUs on the PCI bus with C(pci_address), C(device_id), C(numa_node).
          type: list
          elements: dict
          returned: when O(gpu_topology=true)
        warnings:
          description: Inconsistencies found while reading, e.g. an IPv4 address without a RoCE v2
            GID or an OFED install whose modules are not the ones loaded.
          type: list
          elements: str
          returned: always
plans:
  description:
    - With O(plans), per layer, what its module would return (in check mode for C(tuning_layer)), with
      C(params) (the options it ran with, defaults filled in) and C(failed) (false), or C(failed) true and
      C(msg) where the module would fail. Not a fact, so never cached.
  returned: with O(plans)
  type: dict
  version_added: 1.2.0
  sample:
    tuning_layer: {changed: false, failed: false, changes: [], params: {sysctl: {path: /etc/sysctl.d/90-rdmaops-roce.conf}}}
observed:
  description:
    - With O(observe), what each path holds and each unit's state. Not a fact, so never cached.
    - C(files) maps each path to C(type) (V(file), V(link), V(dir), V(absent) or V(other)), with C(sha256)
      (a file's content) or C(target) (a symlink's, as written).
    - C(texts) maps each path of O(observe.texts) to its text, or null (absent, unreadable, over 64 KiB).
    - C(systemd) is true where systemd runs; C(units) maps each unit to its C(is-active) state (C(active),
      C(inactive), ...), or null without systemd.
  returned: with O(observe)
  type: dict
  sample:
    files:
      /etc/modules-load.d/rdmaops-roce.conf: {type: file, sha256: 9f2c...}
      /etc/modprobe.d/rdmaops-roce.conf: {type: absent}
    systemd: true
    units: {rdmaops-roce-monitor.timer: active}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_facts
from ansible_collections.rdmaops.roce.plugins.module_utils._preflight.layers import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            use_tools=dict(type="bool", default=True),
            gpu_topology=dict(type="bool", default=True),
            os_facts=dict(type="bool", default=False),
            observe=dict(type="dict", options=dict(files=dict(type="list", elements="path", default=[]),
                                                   texts=dict(type="list", elements="path", default=[]),
                                                   units=dict(type="list", elements="str", default=[]))),
            plans=dict(type="dict", options=dict(ofed_status=dict(type="dict"), tuning_layer=dict(type="dict"))),
        ),
        supports_check_mode=True,
    )
    run_facts(module, gather)


if __name__ == "__main__":
    main()
