#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: mlnx_ofed_install
short_description: Install MLNX_OFED from its tarball, checksum first, with the installer's exit codes explained
version_added: 1.0.0
description:
  - Installs the legacy C(MLNX_OFED_LINUX-<version>-<os>-<arch>.tgz) with its C(mlnxofedinstall).
  - Does nothing when C(ofed_info -s) already reports O(version) (unless O(force)); the tarball is not
    even read then.
  - Otherwise the tarball's SHA-256 is compared with O(sha256) B(before anything else); a mismatch
    fails with nothing extracted and nothing installed.
  - The tarball is extracted (members that would land outside the work directory are refused) into a
    fresh directory under O(work_dir), C(mlnxofedinstall) runs with O(flags), and its exit status is
    mapped to the meaning the MLNX_OFED manual gives it (0 success, 1 failed, 2 no firmware for the
    device, 22 invalid parameter, 28 not enough space, 171 not applicable to this system, 172
    prerequisites not met, 173 mst driver failed to start). The extracted tree is removed afterwards.
  - C(--add-kernel-support) is added when O(add_kernel_support=always), or with V(auto) when the
    tarball's C(.supported_kernels) does not list the running kernel.
  - Afterwards C(ofed_info -s) must report O(version), or the module fails.
  - The install cannot be undone. When the installer refuses before it touches a package (exit status 22, 171
    or 172) the module fails with C(changed=false); any other failure fails with C(changed=true), because the
    installer may have replaced part of the stack, and the result carries its output and RV(installed_after).
author:
  - rdmaops developers (@rdmaops)
requirements:
  - The prerequisites of NVIDIA's C(mlnxofedinstall) on the managed host (perl, and the kernel headers
    of every kernel when O(add_kernel_support) builds for it).
options:
  tarball:
    description: Path of the tarball on the host.
    type: path
    required: true
  sha256:
    description: Expected SHA-256 of the tarball (64 hex digits, optionally prefixed C(sha256:)).
    type: str
    required: true
  version:
    description: The MLNX_OFED version the tarball installs, as C(ofed_info -s) prints it (V(24.10-1.1.4.0)).
    type: str
    required: true
  flags:
    description:
      - Installer flags. Check them against C(./mlnxofedinstall --help) of the version you install.
    type: list
    elements: str
    default: [--without-fw-update, --force]
  add_kernel_support:
    description: When to add C(--add-kernel-support) (rebuild the kernel packages for the running kernel).
    type: str
    choices: [auto, always, never]
    default: auto
  work_dir:
    description: Directory the tarball is extracted under (a fresh subdirectory per run, removed afterwards).
    type: path
    default: /var/tmp/rdmaops-mlnx-ofed
  keep_extracted:
    description: Keep the extracted tree (for debugging a failed install).
    type: bool
    default: false
  force:
    description: Run the installer even when O(version) is already installed.
    type: bool
    default: false
  output_lines:
    description: How many lines of the installer's output to return.
    type: int
    default: 40
extends_documentation_fragment:
  - rdmaops.roce.attributes
attributes:
  check_mode:
    support: full
    description: Reads the installed version and verifies the checksum, then reports whether it would install.
  diff_mode:
    support: partial
    description: Shows the installed version before and after.
notes:
  - The installer can run for a long time (it may build kernel packages); run the task with C(async).
seealso:
  - module: rdmaops.roce.ofed_status
"""

EXAMPLES = r"""
- name: Install MLNX_OFED 24.10 LTS
  rdmaops.roce.mlnx_ofed_install:
    tarball: /var/cache/rdmaops/MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.tgz
    sha256: "{{ mlnx_ofed_sha256 }}"
    version: 24.10-1.1.4.0
  async: 3600
  poll: 15
"""

RETURN = r"""
installed_before:
  description: C(ofed_info -s) version before, or null.
  type: str
  returned: always
installed_after:
  description: C(ofed_info -s) version after, or null.
  type: str
  returned: always
sha256:
  description: The tarball's SHA-256 as computed (when it was read).
  type: str
  returned: when the tarball was read
cmd:
  description: The installer command line (run or, in check mode, planned).
  type: list
  elements: str
  returned: when an install is needed
add_kernel_support:
  description: Whether C(--add-kernel-support) was added, and RV(add_kernel_support_reason) why.
  type: bool
  returned: when an install is needed
add_kernel_support_reason:
  description: Why (or why not) C(--add-kernel-support).
  type: str
  returned: when an install is needed
rc:
  description: The installer's exit status.
  type: int
  returned: when the installer ran
rc_meaning:
  description: What the exit status means.
  type: str
  returned: when the installer ran
logs_dir:
  description: The installer's log directory, as it printed it.
  type: str
  returned: when the installer ran
output_tail:
  description: The last lines of the installer's output.
  type: str
  returned: when the installer ran
changes:
  description: The install, as planned (check mode) or done.
  type: list
  elements: str
  returned: always
  sample: ["install MLNX_OFED 24.10-1.1.4.0 from /var/cache/rdmaops/MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.tgz"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.installer import InstallEngine


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tarball=dict(type="path", required=True),
            sha256=dict(type="str", required=True),
            version=dict(type="str", required=True),
            flags=dict(type="list", elements="str", default=["--without-fw-update", "--force"]),
            add_kernel_support=dict(type="str", default="auto", choices=["auto", "always", "never"]),
            work_dir=dict(type="path", default="/var/tmp/rdmaops-mlnx-ofed"),
            keep_extracted=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            output_lines=dict(type="int", default=40),
        ),
        supports_check_mode=True,
    )
    run_module(module, InstallEngine)


if __name__ == "__main__":
    main()
