#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: ofed_repo
short_description: Configure a DOCA-Host package repository with a verified key, a version pin and guardrails
version_added: 0.1.0
description:
  - Manages, in one call, the files that make a DOCA-Host (or local mirror) repository usable and
    safe on apt and dnf hosts, and nothing else.
  - The signing key is downloaded (or read from a path), and every primary key in it must match one of
    O(key_fingerprints) before it is written; a mismatch fails before any file is touched. The
    fingerprint is computed from the key packets (OpenPGP v4/v5/v6), so C(gpg) is not needed on the host.
  - apt hosts get C(/etc/apt/keyrings/rdmaops-<name>.asc), a deb822 source
    C(/etc/apt/sources.list.d/rdmaops-<name>.sources) with C(Signed-By) and the preferences
    C(/etc/apt/preferences.d/rdmaops-<name>.pref) that pin O(pin_packages) to O(pin_version)
    (priority 1001) and rank every package of the repository's origin at O(origin_priority), so an
    C(apt upgrade) cannot replace the packages DOCA shadows (rdma-core, libibverbs1, ibverbs-providers ...)
    with the distribution's builds.
  - dnf hosts get C(/etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-<name>) and C(/etc/yum.repos.d/rdmaops-<name>.repo)
    with C(gpgcheck=1) and C(priority=)O(dnf_priority), which makes dnf prefer the repository's packages
    over BaseOS/AppStream ones even when those are newer.
  - After a change on apt hosts the package lists are refreshed (O(update_cache)).
author:
  - rdmaops developers (@rdmaops)
options:
  state:
    description: V(absent) removes the files this module owns for O(name).
    type: str
    choices: [present, absent]
    default: present
  name:
    description: Short name used in the file names (C(rdmaops-<name>.*)).
    type: str
    default: doca
  family:
    description: Package manager. V(auto) picks V(apt) when C(apt-get) exists, else V(dnf).
    type: str
    choices: [auto, apt, dnf]
    default: auto
  url:
    description:
      - Repository URL, e.g. C(https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/x86_64/)
        or a local mirror. Required with O(state=present).
    type: str
  suite:
    description: apt suite; C(./) for NVIDIA's flat repositories.
    type: str
    default: ./
  key_url:
    description:
      - Where the repository's signing key comes from, C(http://), C(https://), C(file://) or an absolute
        path on the host. Required with O(state=present).
    type: str
  key_fingerprints:
    description:
      - Fingerprints the key file's keys must have (full 40/64 hex digits, or the 16-digit long key ID;
        spaces allowed). Required with O(state=present).
    type: list
    elements: str
    default: []
  pin_packages:
    description: apt packages pinned to O(pin_version) (the DOCA profile).
    type: list
    elements: str
    default: []
  pin_version:
    description: apt version pattern for O(pin_packages), e.g. C(3.2.1*).
    type: str
    default: ""
  origin_priority:
    description: apt priority of every package from the repository's host (above the distribution's 500).
    type: int
    default: 600
  distro_packages:
    description: apt packages never taken from this repository (priority -1), e.g. C(dkms).
    type: list
    elements: str
    default: []
  dnf_priority:
    description: dnf repository priority (lower wins; distributions use 99).
    type: int
    default: 10
  exclude:
    description: dnf C(excludepkgs) of this repository.
    type: list
    elements: str
    default: []
  update_cache:
    description: Run C(apt-get update) after the apt files changed.
    type: bool
    default: true
  validate_certs:
    description: Verify TLS certificates when downloading the key.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the key download.
    type: int
    default: 30
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
notes:
  - The key is downloaded and checked in check mode too (reading it changes nothing), so check mode
    predicts truthfully and a wrong fingerprint fails there as well.
seealso:
  - module: rdmaops.roce.ofed_status
"""

EXAMPLES = r"""
- name: NVIDIA's DOCA-Host 3.2.1 repository for Ubuntu 24.04, doca-ofed pinned
  rdmaops.roce.ofed_repo:
    url: https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/x86_64/
    key_url: https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub
    key_fingerprints: [A024F6F0E6D6A281]
    pin_packages: [doca-ofed]
    pin_version: "3.2.1*"

- name: Remove it again
  rdmaops.roce.ofed_repo:
    state: absent
"""

RETURN = r"""
changes:
  description: What was (or, in check mode, would be) written or removed.
  type: list
  elements: str
  returned: always
  sample: ["write /etc/apt/keyrings/rdmaops-doca.asc", "write /etc/apt/sources.list.d/rdmaops-doca.sources"]
files:
  description: The files this module owns for O(name).
  type: list
  elements: str
  returned: always
trusted_keys:
  description: The keys found in the key file, C(fingerprint), C(version), C(subkeys).
  type: list
  elements: dict
  returned: when O(state=present)
family:
  description: V(apt) or V(dnf).
  type: str
  returned: always
cache_updated:
  description: Whether C(apt-get update) ran.
  type: bool
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError, CommandRunner, fail_from_error
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import write_atomic
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.common import (
    desired_repo_files,
    plan_repo,
    read_exact,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.openpgp import OpenPGPError, as_armored_text, check_keys
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan


def read_key(module, host, key_url):
    """The key file's bytes from a URL or a host path."""
    if key_url.startswith("/") or key_url.startswith("file://"):
        path = key_url[len("file://"):] if key_url.startswith("file://") else key_url
        try:
            with open(host.path(path), "rb") as handle:
                return handle.read()
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot read the repository key %s: %s" % (path, exc))
    response, info = fetch_url(module, key_url, timeout=module.params["timeout"])
    if response is None or info.get("status") != 200:
        module.fail_json(msg="cannot download the repository key from %s: %s" % (key_url, info.get("msg")),
                         status=info.get("status"))
    return response.read()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="present", choices=["present", "absent"]),
            name=dict(type="str", default="doca"),
            family=dict(type="str", default="auto", choices=["auto", "apt", "dnf"]),
            url=dict(type="str"),
            suite=dict(type="str", default="./"),
            key_url=dict(type="str", no_log=False),
            key_fingerprints=dict(type="list", elements="str", default=[], no_log=False),
            pin_packages=dict(type="list", elements="str", default=[]),
            pin_version=dict(type="str", default=""),
            origin_priority=dict(type="int", default=600),
            distro_packages=dict(type="list", elements="str", default=[]),
            dnf_priority=dict(type="int", default=10),
            exclude=dict(type="list", elements="str", default=[]),
            update_cache=dict(type="bool", default=True),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
        ),
        required_if=[("state", "present", ("url", "key_url", "key_fingerprints"))],
        supports_check_mode=True,
    )
    params = module.params
    host = HostRoot()
    runner = CommandRunner(module)
    family = params["family"]
    if family == "auto":
        family = "apt" if runner.has("apt-get") else "dnf"
    if params["name"] != os.path.basename(params["name"]) or not params["name"].strip():
        module.fail_json(msg="name must be a plain file-name part, got %r" % params["name"])

    result = dict(changed=False, family=family, cache_updated=False)
    desired = {}
    if params["state"] == "present":
        data = read_key(module, host, params["key_url"])
        try:
            keys = check_keys(data, params["key_fingerprints"])
        except OpenPGPError as exc:
            module.fail_json(
                msg="the key from %s is not trusted, nothing was changed: %s" % (params["key_url"], exc),
                key_url=params["key_url"],
            )
        result["trusted_keys"] = keys
        desired = desired_repo_files(family, params["name"], params, as_armored_text(data))

    def write(path, text, mode):
        write_atomic(host, path, text, mode=mode, makedirs=True)

    def remove(path):
        os.unlink(host.path(path))

    plan = Plan()
    result["files"] = plan_repo(host, plan, family, params["name"], params["state"], desired, write, remove)
    plan.apply(module.check_mode)
    result.update(plan.result(module.check_mode, module._diff))
    if module.check_mode or not plan.changed:
        module.exit_json(**result)

    # Re-read: every owned file is now what was planned.
    for path in result["files"]:
        want = desired.get(path) if params["state"] == "present" else None
        if read_exact(host, path) != want:
            module.fail_json(msg="%s does not hold what was written (a concurrent change?)" % path, **result)
    if family == "apt" and params["update_cache"]:
        try:
            runner.run(["apt-get", "update"])
        except CommandError as exc:
            fail_from_error(module, exc, changed=True, changes=result["changes"])
        result["cache_updated"] = True
    module.exit_json(**result)


if __name__ == "__main__":
    main()
