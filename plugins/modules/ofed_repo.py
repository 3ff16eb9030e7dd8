#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: ofed_repo
short_description: Configure a DOCA-Host package repository with a verified key, a version pin and guardrails
version_added: 1.0.0
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
requirements:
  - An apt (Debian, Ubuntu) or dnf (RHEL family) managed host.
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
      - A login in the URL (C(https://user:token@host/...)) is taken out of it and handled like
        O(url_username)/O(url_password); the URL is never shown with it.
    type: str
  url_username:
    description:
      - User name for a repository that needs a login (and for the key download).
      - apt hosts get it in C(/etc/apt/auth.conf.d/rdmaops-<name>.conf) (mode 0600) and a source file
        without credentials; dnf hosts get C(username=)/C(password=) in the C(.repo) file, which is then
        mode 0600.
    type: str
  url_password:
    description:
      - Password or token for O(url_username). Never shown in results, messages or diffs.
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
  - rdmaops.roce.owned_files
notes:
  - The key file is the key exactly as published (it carries no C(Managed by rdmaops.roce) line); it counts as
    the module's own when the module's source file names it, otherwise O(adopt) is needed to replace it.
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
  description: The files this module owns for O(name) (on apt hosts the credentials file in C(/etc/apt/auth.conf.d) too).
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
steps:
  description: What ran after the files changed (C(apt-get update)).
  type: list
  elements: str
  returned: when files changed and a step followed
commands:
  description: The commands that ran.
  type: list
  elements: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.repo import RepoEngine


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="present", choices=["present", "absent"]),
            name=dict(type="str", default="doca"),
            family=dict(type="str", default="auto", choices=["auto", "apt", "dnf"]),
            url=dict(type="str", no_log=False),
            url_username=dict(type="str", no_log=False),
            url_password=dict(type="str", no_log=True),
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
            adopt=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ("url", "key_url", "key_fingerprints"))],
        required_by=dict(url_password=("url_username",)),
        supports_check_mode=True,
    )
    run_module(module, RepoEngine)


if __name__ == "__main__":
    main()
