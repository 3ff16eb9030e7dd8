#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sysctl_profile
short_description: Persist a set of kernel parameters in one sysctl.d file and apply them now
version_added: 1.0.0
description:
  - Writes every key of O(settings) to one file under C(/etc/sysctl.d/) (atomically, sorted by key)
    and sets the running value, through C(/proc/sys), of each key whose value differs. One call
    does the whole profile, so a host needs one round trip however many keys there are.
  - Values are compared the way the kernel prints them; C("4096 87380 4194304") matches the
    tab-separated text of C(/proc/sys/net/ipv4/tcp_rmem), so a second run reports no change.
  - A key that cannot be set at runtime is never skipped silently. It is either absent from this
    kernel or read-only here; C(net.core.*) keys are global to the kernel, so inside a container
    (its own network namespace) they are read-only or absent. O(runtime_errors) decides whether
    that fails the task (the default, before anything is changed) or gives a warning and a
    RV(unapplied) entry while the file is still written for the next boot.
  - Files that are applied after this one at boot (by name, across C(/etc/sysctl.d),
    C(/run/sysctl.d), C(/usr/local/lib/sysctl.d), C(/usr/lib/sysctl.d), C(/lib/sysctl.d), and
    C(/etc/sysctl.conf) last) and that give one of the keys another value are reported as
    RV(overridden) with a warning, because their value wins at the next boot.
author:
  - rdmaops developers (@rdmaops)
options:
  settings:
    description:
      - Kernel parameters and their values, for example C(net.core.rmem_max=4194304).
      - Keys use sysctl.d(5) syntax; a key with any other character (a space, a trailing newline) and a
        value with a line break are refused before anything is written. Values are integers, strings, or lists (written space-separated,
        as C(net.ipv4.tcp_rmem) expects); booleans become C(1) or C(0).
      - Required with O(state=present).
    type: dict
  path:
    description:
      - The sysctl.d file this module owns. It is rewritten as a whole; put local settings in
        another file.
      - Must be a file directly in C(/etc/sysctl.d) whose name ends in C(.conf), the only files
        systemd-sysctl reads there; a path with C(..), in a sub-directory or elsewhere is refused
        before anything is written.
      - A file at that path that rdmaops.roce did not write (no C(Managed by rdmaops.roce) line) is
        refused unless O(adopt=true).
    type: path
    default: /etc/sysctl.d/90-rdmaops-roce.conf
  state:
    description:
      - V(present) writes the file and applies the values.
      - V(absent) removes the file. Running values are left as they are (the kernel has no record of
        the values before); they return to the defaults at the next boot.
    type: str
    choices: [present, absent]
    default: present
  apply_runtime:
    description:
      - Also set the running value of each key that differs. With V(false) only the file is written
        and the values take effect at the next boot.
    type: bool
    default: true
  runtime_errors:
    description:
      - What to do when a key's running value differs and cannot be set here (absent from this
        kernel, read-only in this namespace, or refused by the kernel).
      - V(fail) fails the task. Keys found unsettable while reading fail it before anything is
        changed; a write the kernel refuses fails it and puts back the file and the values already
        set (C(rolled_back) lists them).
      - V(warn) writes the file, applies what can be applied, warns once per key and lists the rest
        in RV(unapplied). Use it for containers, where C(net.core.*) keys belong to the host.
    type: str
    choices: [fail, warn]
    default: fail
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.owned_files
notes:
  - Writes the running value directly to C(/proc/sys), as C(sysctl -w) does; it does not run
    C(sysctl --system), so keys of other files are not re-applied.
seealso:
  - name: sysctl.d(5)
    description: File format and the order in which systemd-sysctl applies files.
    link: https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html
"""

EXAMPLES = r"""
- name: Socket buffers for RDMA hosts (values from NVIDIA's sysctl_perf_tuning)
  rdmaops.roce.sysctl_profile:
    settings:
      net.core.rmem_max: 4194304
      net.core.wmem_max: 4194304
      net.ipv4.tcp_rmem: [4096, 87380, 4194304]
      net.ipv4.tcp_wmem: "4096 65536 4194304"

- name: In a container, persist everything and apply what the namespace allows
  rdmaops.roce.sysctl_profile:
    settings:
      net.core.netdev_max_backlog: 250000
      net.ipv4.tcp_sack: 1
    runtime_errors: warn
  register: sysctl

- name: Remove the profile file
  rdmaops.roce.sysctl_profile:
    state: absent
"""

RETURN = r"""
path:
  description: The sysctl.d file.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-rdmaops-roce.conf
settings:
  description: The keys (in their dotted form) and values as written to the file.
  returned: always
  type: dict
  sample: {"net.core.rmem_max": "4194304", "net.ipv4.tcp_rmem": "4096 87380 4194304"}
changes:
  description: What was changed, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: ["write /etc/sysctl.d/90-rdmaops-roce.conf", "set net.ipv4.tcp_rmem from '4096 131072 6291456' to '4096 87380 4194304' at runtime"]
runtime:
  description: For each key whose running value was (or in check mode would be) set, C(before) and C(after).
  returned: always
  type: dict
  sample: {"net.ipv4.tcp_rmem": {"before": "4096 131072 6291456", "after": "4096 87380 4194304"}}
unapplied:
  description: Keys whose running value differs and could not be set, with C(want), C(have) (null when
    absent) and C(reason).
  returned: always
  type: dict
  sample: {"net.core.rmem_max": {"want": "4194304", "have": "212992", "reason": "read-only here: ..."}}
overridden:
  description: Entries of files applied after RV(path) at boot that set one of the keys to another value.
  returned: always
  type: list
  elements: dict
  sample: [{"key": "net.core.rmem_max", "file": "/etc/sysctl.d/99-local.conf", "value": "8388608", "ours": "4194304"}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import specs
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.sysctl import SysctlProfileEngine


def main():
    module = AnsibleModule(
        argument_spec=dict(specs.SYSCTL, **specs.ADOPT),
        required_if=[("state", "present", ["settings"])],
        supports_check_mode=True,
    )
    run_module(module, SysctlProfileEngine)


if __name__ == "__main__":
    main()
