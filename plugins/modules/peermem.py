#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: peermem
short_description: Load, persist and prove the GPUDirect RDMA peer-memory module (or choose DMA-BUF)
version_added: 1.0.0
description:
  - Decides how GPU memory is registered for RDMA on this host, then makes it so and proves it,
    in one call.
  - B(Which module.) C(nvidia-peermem) for NVIDIA drivers R470 and later (it ships with the
    driver); the legacy C(nv_peer_mem) (Mellanox/nv_peer_memory) only for older drivers. A loaded
    C(nv_peer_mem) next to a driver that wants C(nvidia-peermem) is refused with the steps to
    remove it, because only one peer-memory client may be loaded.
  - B(Whether DMA-BUF serves instead.) DMA-BUF (C(ibv_reg_dmabuf_mr)) needs no peer-memory module.
    It is usable when the kernel is 5.12 or newer (RDMA dma-buf registration), the NVIDIA driver is
    the I(open) kernel module flavour (C(Open Kernel Module) in C(/proc/driver/nvidia/version), or
    license C(Dual MIT/GPL)) of R515 or later, and the verbs library has C(ibv_reg_dmabuf_mr)
    (rdma-core 34 or later, DOCA-OFED, MLNX_OFED 5.5 or later; read from O(rdma_stack)).
  - B(Peer-memory API.) C(nvidia-peermem) registers with C(ib_register_peer_memory_client), which only
    the MLNX_OFED / DOCA-OFED C(ib_core) exports. It is looked up in C(/proc/kallsyms) once C(ib_core)
    is loaded; an OFED C(mlx5_core) (C(/sys/module/mlx5_core/version)) also counts as evidence.
  - B(Loading) goes through the same engine as M(rdmaops.roce.kernel_modules) (C(modprobe), options
    from a C(/etc/modprobe.d) file of its own, re-read of C(/sys/module) afterwards).
  - B(Boot.) A oneshot systemd unit loads the module after the RDMA core (C(After=openibd.service
    rdma-hw.target rdma-load-modules@rdma.service rdma-load-modules@roce.service
    systemd-modules-load.service), C(PartOf=openibd.service) so that an C(openibd) restart unloads and
    reloads it). C(/etc/modules-load.d) is not used because it runs before C(openibd) has loaded OFED.
    The unit is enabled with a symlink in C(multi-user.target.wants), as C(systemctl enable) does.
  - B(Proof.) After loading, the module must be live in C(/sys/module), the kernel log written while
    it loaded must have no C(Unknown symbol), C(disagrees about version of symbol) or parameter
    errors, and the paths NCCL and NVSHMEM look for (C(/sys/kernel/mm/memory_peers/nv_mem/version),
    C(/sys/module/nvidia_peermem/version)) are reported.
  - B(Failures are explained.) C(Invalid argument) with a silent kernel log means the NVIDIA driver was
    built before OFED (C(nvidia-peermem) compiled without the OFED symbols); symbol-version errors mean it
    was built against another OFED. Both are fixed by rebuilding the NVIDIA kernel modules after OFED,
    for example C(dkms install nvidia/<version> -k <kernel> --force); the message says so with the
    host's versions filled in.
  - Without an NVIDIA GPU or driver the module returns C(skipped) with the reason, unless
    O(required=true), which fails.
  - A unit file at O(unit) or a file at O(modprobe_file) that rdmaops.roce did not write (no
    C(Managed by rdmaops.roce) line) is neither overwritten nor removed unless O(adopt=true).
  - When the load fails, the files this run wrote are put back and the task fails naming what
    stayed applied (C(applied)) and what was not done (C(not_applied)).
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(modprobe) from kmod and systemd on the managed host.
  - To load it (O(mode=auto) or O(mode=peermem)), the NVIDIA driver's C(nvidia-peermem) module built against the installed RDMA stack.
options:
  mode:
    description:
      - V(auto) loads the peer-memory module when the RDMA core can take it; when it cannot (inbox RDMA
        core, module not installed) and DMA-BUF is usable, it chooses DMA-BUF; otherwise it skips with
        the reason (or fails with O(required=true)).
      - V(peermem) always loads the peer-memory module and fails, with the fix, when it cannot.
      - V(dmabuf) loads nothing and removes the boot unit this module wrote; it fails when a DMA-BUF
        prerequisite is known to be missing.
    type: str
    choices: [auto, peermem, dmabuf]
    default: auto
  required:
    description:
      - Fail instead of skipping when the host has no NVIDIA GPU or driver, or when V(auto) finds
        neither peer memory nor DMA-BUF possible.
    type: bool
    default: false
  options:
    description:
      - Options for the peer-memory module, written to O(modprobe_file), for example
        V(peerdirect_support=1) for MLNX_OFED 4.9 LTS.
    type: str
    default: ""
  persist:
    description:
      - Write and enable the boot unit O(unit) that loads the module after the RDMA core.
    type: bool
    default: true
  reload:
    description:
      - Reload the module when it runs with other options than O(options). This interrupts
        GPUDirect RDMA users and fails when the module is in use.
    type: bool
    default: false
  unit:
    description:
      - File name of the boot unit in C(/etc/systemd/system), ending in C(.service) (a plain file name,
        no C(/)).
    type: str
    default: rdmaops-peermem.service
  modprobe_file:
    description:
      - The C(.conf) file directly in C(/etc/modprobe.d) that holds O(options); removed when O(options)
        is empty.
    type: path
    default: /etc/modprobe.d/rdmaops-peermem.conf
  rdma_stack:
    description:
      - The RDMA stack as M(rdmaops.roce.rdma_facts) reports it (C(ansible_facts.rdma.stack)), used for the
        DMA-BUF user-space check (C(flavor) and C(version)).
      - Without it that check is unknown, so V(auto) does not choose DMA-BUF.
    type: dict
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.disruption
  - rdmaops.roce.owned_files
notes:
  - The role C(rdmaops.roce.peermem) wraps this module (facts, report); use the role in playbooks.
  - C(systemctl daemon-reload) runs after the unit changes, only when the host root is C(/) and
    systemd is running.
seealso:
  - module: rdmaops.roce.kernel_modules
  - module: rdmaops.roce.rdma_facts
  - name: GPUDirect RDMA, Using nvidia-peermem
    description: NVIDIA's documentation of the module.
    link: https://docs.nvidia.com/cuda/gpudirect-rdma/
"""

EXAMPLES = r"""
- name: Gather RDMA facts (the stack is used for the DMA-BUF check)
  rdmaops.roce.rdma_facts:

- name: Load and persist nvidia-peermem, or use DMA-BUF where peermem cannot work
  rdmaops.roce.peermem:
    rdma_stack: "{{ ansible_facts['rdma']['stack'] }}"

- name: GPU nodes must have peer memory; fail loudly otherwise
  rdmaops.roce.peermem:
    mode: peermem
    required: true
    rdma_stack: "{{ ansible_facts['rdma']['stack'] }}"
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
msg:
  description: The decision and its reason (why it was skipped, which module, or why DMA-BUF).
  returned: always
  type: str
peermem:
  description: What was found, decided and proven.
  returned: always
  type: dict
  contains:
    action:
      description: V(load) (the module is loaded or kept), V(dmabuf), V(skip) or V(fail).
      type: str
      returned: always
    module:
      description: V(nvidia_peermem), V(nv_peer_mem), or null.
      type: str
      returned: always
    reason:
      description: Why.
      type: str
      returned: always
    driver_version:
      description: The NVIDIA driver version, or null.
      type: str
      returned: always
    driver_flavor:
      description: V(open), V(proprietary) or null.
      type: str
      returned: always
    peer_memory_api:
      description: Whether the loaded RDMA core exports the peer-memory API; null when unknown.
      type: bool
      returned: always
    dmabuf:
      description: C(usable) (true, false or null) and C(checks), each with C(check), C(ok) and C(detail).
      type: dict
      returned: always
    loaded:
      description: Whether the module is loaded after the run.
      type: bool
      returned: always
    loaded_now:
      description: Whether this run loaded it (in check mode, would load it).
      type: bool
      returned: always
    kernel_log:
      description: Kernel log lines written while this run loaded the module (null when it did not, or
        when C(dmesg) could not be read).
      type: list
      elements: str
      returned: always
    gdr_detect_paths:
      description: Which of the paths NCCL, NVSHMEM and UCC use to detect peer memory exist.
      type: list
      elements: str
      returned: always
    memory_peers_version:
      description: C(/sys/kernel/mm/memory_peers/nv_mem/version) when present.
      type: str
      returned: always
    diagnosis:
      description: On a failed load, C(category) and C(explanation).
      type: dict
      returned: always
    boot_unit:
      description: The boot unit this module manages, or null.
      type: str
      returned: always
    warnings:
      description: Things to know that did not fail the task.
      type: list
      elements: str
      returned: always
changes:
  description: What was changed (in check mode, what would be).
  returned: always
  type: list
  elements: str
commands:
  description: The commands that ran (C(modinfo), C(modprobe), C(dmesg), C(systemctl)), in order.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import max_disruption_spec
from ansible_collections.rdmaops.roce.plugins.module_utils._peermem.engine import (
    DEFAULT_MODPROBE_FILE,
    DEFAULT_UNIT,
    Peermem,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            max_disruption=max_disruption_spec(),
            mode=dict(type="str", choices=["auto", "peermem", "dmabuf"], default="auto"),
            required=dict(type="bool", default=False),
            options=dict(type="str", default=""),
            persist=dict(type="bool", default=True),
            reload=dict(type="bool", default=False),
            unit=dict(type="str", default=DEFAULT_UNIT),
            modprobe_file=dict(type="path", default=DEFAULT_MODPROBE_FILE),
            rdma_stack=dict(type="dict"),
            adopt=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    run_module(module, Peermem)


if __name__ == "__main__":
    main()
