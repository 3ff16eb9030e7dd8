#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: ofed_repo_check
short_description: Check, changing nothing, that a DOCA-Host repository has the wanted version and the expected key
version_added: 1.2.0
description:
  - Downloads, from the managed host, the repository key and the package index of a DOCA-Host repository (apt's
    C(Packages.gz)/C(Packages), flat or under C(dists/); dnf's C(repodata/repomd.xml) and its C(primary) metadata),
    and reports the versions of O(package) the index lists and whether O(version) is one of them.
  - The key's fingerprints must all be in O(key_fingerprints), as M(rdmaops.roce.ofed_repo) requires.
  - It never fails because of what it finds; RV(problems) lists it, so that a role can fail each host with it.
    The ofed role runs it once, on one host, before any host of a rollout is drained.
author:
  - rdmaops developers (@rdmaops)
options:
  url:
    description: The repository's base URL (as M(rdmaops.roce.ofed_repo) takes it).
    type: str
    required: true
  suite:
    description: The apt suite; V(./) for a flat repository (NVIDIA's layout).
    type: str
    default: ./
  components:
    description: The apt components of a suite under C(dists/).
    type: list
    elements: str
    default: [main]
  arch:
    description: The Debian architecture of the index under C(dists/).
    type: str
    default: amd64
  family:
    description: V(apt) or V(dnf) (the metadata layout).
    type: str
    choices: [apt, dnf]
    default: apt
  key_url:
    description: The repository key's URL.
    type: str
    required: true
  key_fingerprints:
    description: The fingerprints the key must have (full fingerprints, or 64-bit key IDs).
    type: list
    elements: str
    required: true
  package:
    description: The package whose versions are read (the DOCA profile).
    type: str
    default: doca-ofed
  version:
    description: The wanted version, matched as M(rdmaops.roce.ofed_status) does (V(3.2.1), an exact version, or a glob).
    type: str
    required: true
  url_username:
    description: Login for a repository that needs one.
    type: str
  url_password:
    description: Its password.
    type: str
  validate_certs:
    description: Verify the server's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds per download.
    type: int
    default: 30
extends_documentation_fragment:
  - rdmaops.roce.attributes
attributes:
  check_mode:
    support: full
    description: Only reads, so check mode runs it unchanged.
  diff_mode:
    support: N/A
    description: Changes nothing.
seealso:
  - module: rdmaops.roce.ofed_repo
"""

EXAMPLES = r"""
- name: Is DOCA 3.3.0 in the mirror, signed by the expected key?
  rdmaops.roce.ofed_repo_check:
    url: https://mirror.example.com/doca/3.3.0/ubuntu24.04/x86_64/
    key_url: https://mirror.example.com/doca/GPG-KEY-Mellanox.pub
    key_fingerprints: [A024F6F0E6D6A281]
    version: "3.3.0"
  register: doca_repo
  run_once: true

- name: Refuse the rollout before any drain
  ansible.builtin.assert:
    that: doca_repo.problems | length == 0
    fail_msg: "{{ doca_repo.problems | join('; ') }}"
"""

RETURN = r"""
found:
  description: Whether the index lists a version of O(package) that matches O(version).
  returned: always
  type: bool
versions:
  description: Every version of O(package) the index lists.
  returned: always
  type: list
  elements: str
  sample: ["3.2.1-044000", "3.3.0-000400"]
matching:
  description: The versions that match O(version).
  returned: always
  type: list
  elements: str
trusted_keys:
  description: The repository key's primary keys, when all were expected.
  returned: when the key is trusted
  type: list
  elements: dict
pins:
  description:
    - apt only - the newest matching version of O(package) and every dependency it pins to one version, transitively,
      as C(name=version). Installed together they give that release even from a repository that holds newer ones
      (C(apt-get install package=version) alone takes the newest dependencies and fails), and downgrade to it.
  returned: always
  type: list
  elements: str
  sample: ["doca-ofed=3.2.1-044000", "ofed-scripts=25.10.OFED.25.10.1.7.1-1"]
index:
  description: The index that was read.
  returned: when one was read
  type: str
problems:
  description: What is wrong (an untrusted key, no index, the version missing), each with what to do; empty when all is well.
  returned: always
  type: list
  elements: str
fetched:
  description: Every URL fetched, with its HTTP status.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_facts
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.index import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            suite=dict(type="str", default="./"),
            components=dict(type="list", elements="str", default=["main"]),
            arch=dict(type="str", default="amd64"),
            family=dict(type="str", choices=["apt", "dnf"], default="apt"),
            key_url=dict(type="str", required=True, no_log=False),
            key_fingerprints=dict(type="list", elements="str", required=True, no_log=False),
            package=dict(type="str", default="doca-ofed"),
            version=dict(type="str", required=True),
            url_username=dict(type="str"),
            url_password=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
        required_by=dict(url_password=("url_username",)),
    )
    run_facts(module, gather)


if __name__ == "__main__":
    main()
