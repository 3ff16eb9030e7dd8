#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: memlock
short_description: The locked-memory limit RDMA needs, for logins (pam_limits) and services (systemd)
version_added: 1.0.0
description:
  - RDMA registers (pins) its buffers, so verbs applications fail with C(Cannot allocate memory) under
    the default locked-memory limit. This module writes the limit for logins (a C(limits.d) file read by
    pam_limits) and for services (C(DefaultLimitMEMLOCK) in a systemd C(system.conf.d) drop-in), and
    makes systemd use it now.
  - Compares the value systemd gives services (C(systemctl show)) with the limit and re-executes systemd
    (C(systemctl daemon-reexec)) only when they differ; afterwards the value must read back, or the task
    fails naming the later drop-in that may set it again. Where systemd does not run the host, only the
    files are written.
  - One module run for what took six module runs in the role before (two templates, a directory, a read).
author:
  - rdmaops developers (@rdmaops)
requirements:
  - systemd on the managed host for the services' limit (C(systemctl)).
options:
  limit:
    description: V(unlimited), or a size in KiB.
    type: str
    default: unlimited
  domains:
    description: The pam_limits domains (users, C(@group), C(*)) that get O(limit) as soft and hard limit; C(*) does not cover root.
    type: list
    elements: str
    default: ['*', root]
  limits_file:
    description: The pam_limits file.
    type: path
    default: /etc/security/limits.d/90-rdmaops-roce-memlock.conf
  systemd_dropin:
    description: The systemd manager drop-in.
    type: path
    default: /etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.owned_files
"""

EXAMPLES = r"""
- name: Unlimited locked memory for every login and every service
  rdmaops.roce.memlock:

- name: 64 GiB for the rdma group only
  rdmaops.roce.memlock:
    limit: "67108864"
    domains: ["@rdma"]
"""

RETURN = r"""
limit:
  description: The limit written.
  returned: always
  type: str
  sample: unlimited
files:
  description: The two files.
  returned: always
  type: list
  elements: str
systemd:
  description: C(DefaultLimitMEMLOCK) as systemd reports it before and after (null where systemd does not run the host).
  returned: always
  type: dict
  sample: {"before": "8388608", "after": "infinity"}
changes:
  description: What was changed, or would be in check mode.
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
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.memlock import MemlockEngine


def main():
    module = AnsibleModule(
        argument_spec=dict(specs.MEMLOCK, **specs.ADOPT),
        supports_check_mode=True,
    )
    run_module(module, MemlockEngine)


if __name__ == "__main__":
    main()
