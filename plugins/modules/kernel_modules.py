#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kernel_modules
short_description: Load kernel modules in order and persist them and their options
version_added: 1.0.0
description:
  - Loads a list of kernel modules with C(modprobe), one at a time in the order given, and
    persists the list in one C(/etc/modules-load.d) file and their options in one
    C(/etc/modprobe.d) file, both written atomically and owned whole by this task.
  - A file at O(modules_load_file) or O(modprobe_file) that rdmaops.roce did not write (no
    C(Managed by rdmaops.roce) line) is neither overwritten nor removed unless O(adopt=true);
    the task fails naming it before anything changes.
  - A module counts as loaded when C(/sys/module/<name>) exists. Modules compiled into the
    kernel count as loaded too (a C(/sys/module/<name>) directory without C(initstate), or a
    line in C(/lib/modules/<kernel>/modules.builtin)) and are reported in RV(builtin).
    C(-) and C(_) are the same character in module names, as for the kernel.
  - After loading, C(/sys/module) is read again; a module that did not appear fails the task
    with modprobe's stderr (for example C(Invalid argument)) and the kernel log lines written
    while it tried, when C(dmesg) may be read.
  - A loaded module whose running parameters (C(/sys/module/<name>/parameters)) differ from
    O(options) is reported and left alone; it is reloaded only with O(reload=true).
  - Names and option keys are checked before any C(modprobe) runs. Only kernel module names are
    accepted (letters, digits, C(_) and C(-), not starting with C(-)), so no value is read as an option.
  - When a load fails part-way, the files this run wrote are put back, and the modules it already
    loaded stay loaded (unloading them under a running workload is not safe); the task fails with
    C(changed=true) when any stayed loaded, naming them in C(applied) and what was not done in
    C(not_applied).
author:
  - rdmaops developers (@rdmaops)
requirements:
  - C(modprobe) from kmod on the managed host.
options:
  names:
    description:
      - Kernel modules to load, in this order (C(rdma_cm) before C(ib_uverbs) and so on).
      - Names as for C(modprobe), without C(.ko) or a path.
    type: list
    elements: str
    default: [rdma_cm, ib_uverbs, ib_umad]
  options:
    description:
      - Module parameters by module name, each a string of C(name=value) pairs separated by
        spaces as in C(modprobe.d(5)), for example V(prof_sel=2) for C(mlx5_core).
      - Written as C(options) lines to O(modprobe_file), which holds exactly these entries,
        so that C(modprobe) applies them now and at every later load.
      - Options of modules built into the kernel cannot come from C(modprobe.d); they are
        reported as a warning.
    type: dict
    default: {}
  persist:
    description:
      - Write O(names) to O(modules_load_file) so that C(systemd-modules-load) loads them at boot.
      - With V(false) that file is left as it is.
    type: bool
    default: true
  state:
    description:
      - V(present) loads the modules and persists them.
      - V(absent) removes them from O(modules_load_file) and their entries from O(modprobe_file)
        (removing a file that is left empty); it unloads them only with O(unload=true).
    type: str
    choices: [present, absent]
    default: present
  modules_load_file:
    description:
      - The C(.conf) file directly in C(/etc/modules-load.d) that lists O(names) (no sub-directory,
        no C(..)).
      - The file belongs to this task; use a different file for each list of modules.
    type: path
    default: /etc/modules-load.d/rdmaops-roce.conf
  modprobe_file:
    description:
      - The C(.conf) file directly in C(/etc/modprobe.d) that holds O(options) (no sub-directory,
        no C(..)).
      - The file belongs to this task; it is removed when O(options) is empty.
    type: path
    default: /etc/modprobe.d/rdmaops-roce.conf
  reload:
    description:
      - Reload (C(modprobe -r), then C(modprobe)) a loaded module of O(names) whose running
        parameters differ from O(options).
      - This interrupts everything that uses the module (RDMA connections, GPU jobs); it fails
        when the module is in use.
    type: bool
    default: false
  unload:
    description:
      - With O(state=absent), also unload the modules, in reverse order.
    type: bool
    default: false
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.disruption
  - rdmaops.roce.owned_files
seealso:
  - name: modules-load.d(5)
    description: How systemd loads the modules listed in /etc/modules-load.d at boot.
    link: https://www.freedesktop.org/software/systemd/man/latest/modules-load.d.html
  - name: modprobe.d(5)
    description: The options lines of /etc/modprobe.d.
    link: https://man7.org/linux/man-pages/man5/modprobe.d.5.html
  - module: rdmaops.roce.peermem
"""

EXAMPLES = r"""
- name: Load and persist the RDMA core modules (rdma_cm, ib_uverbs, ib_umad)
  rdmaops.roce.kernel_modules:

- name: Load Soft-RoCE with an option, in its own files
  rdmaops.roce.kernel_modules:
    names: [rdma_rxe]
    modules_load_file: /etc/modules-load.d/rdmaops-rxe.conf
    modprobe_file: /etc/modprobe.d/rdmaops-rxe.conf

- name: Stop loading the RDMA core modules at boot (they stay loaded now)
  rdmaops.roce.kernel_modules:
    state: absent
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
kernel:
  description: The running kernel release.
  returned: always
  type: str
  sample: 5.15.0-119-generic
modules:
  description: Each module of O(names) as found before the run, V(loaded), V(builtin) or V(absent).
  returned: always
  type: dict
  sample: {rdma_cm: absent, ib_uverbs: loaded, ib_umad: builtin}
loaded_now:
  description: Modules loaded by this run (in check mode, that it would load), in order.
  returned: always
  type: list
  elements: str
  sample: [rdma_cm]
already_loaded:
  description: Modules that were loaded (as loadable modules) before the run.
  returned: always
  type: list
  elements: str
builtin:
  description: Modules compiled into the kernel.
  returned: always
  type: list
  elements: str
reloaded:
  description: Modules reloaded to apply their options (O(reload=true)).
  returned: always
  type: list
  elements: str
unloaded:
  description: Modules unloaded (O(state=absent) with O(unload=true)).
  returned: always
  type: list
  elements: str
option_mismatches:
  description: Loaded modules whose running parameters differ from O(options), with C(module),
    C(parameter), C(wanted) and C(running).
  returned: always
  type: list
  elements: dict
modules_load_file:
  description: The modules-load.d file this task manages, or null with O(persist=false).
  returned: always
  type: str
modprobe_file:
  description: The modprobe.d file this task manages.
  returned: always
  type: str
changes:
  description: What was changed (in check mode, what would be), in order.
  returned: always
  type: list
  elements: str
  sample: [load rdma_cm, write /etc/modules-load.d/rdmaops-roce.conf]
kernel_log:
  description: On a failed load, the kernel log lines written while modprobe ran (or the last
    lines that mention the module).
  returned: failure
  type: list
  elements: str
commands:
  description: The commands that ran (C(modprobe), C(dmesg)), in order.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import max_disruption_spec
from ansible_collections.rdmaops.roce.plugins.module_utils._kmod.engine import (
    DEFAULT_MODPROBE_FILE,
    DEFAULT_MODULES_LOAD_FILE,
    DEFAULT_NAMES,
    KernelModules,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            max_disruption=max_disruption_spec(),
            names=dict(type="list", elements="str", default=list(DEFAULT_NAMES)),
            options=dict(type="dict", default={}),
            persist=dict(type="bool", default=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            modules_load_file=dict(type="path", default=DEFAULT_MODULES_LOAD_FILE),
            modprobe_file=dict(type="path", default=DEFAULT_MODPROBE_FILE),
            reload=dict(type="bool", default=False),
            unload=dict(type="bool", default=False),
            adopt=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    run_module(module, KernelModules)


if __name__ == "__main__":
    main()
