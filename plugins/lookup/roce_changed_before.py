# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a layer before the given one changed the host in this run (the logic and the layers'
order: plugins/module_utils/_preflight/since.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: roce_changed_before
version_added: 1.2.0
author: rdmaops developers (@rdmaops)
short_description: Whether a layer of this run changed the host before the given layer
description:
  - Returns V(true) when a host layer of site.yml that runs before the named one changed the host in
    this run, V(false) otherwise. The preflight's read of the host stays true until then, so a step
    that may leave its module out on that read asks this first.
  - The layers, in the order site.yml runs them, and what says each changed the host are
    V(ofed) (C(ofed__stack_changed), or C(ofed__final.activation) V(restart) or V(reboot)),
    V(modules) (C(rdmaops_modules_result)), V(peermem) (C(peermem_result)), V(nic)
    (C(nic_layer_result)) and V(tuning) (C(tuning_layer_result)); V(firmware), V(nccl) and
    V(facts) change nothing a later read depends on.
  - Reads the host's variables as the task sees them; a variable that is not set counts as
    nothing changed (the layer did not run).
options:
  _terms:
    description: The layer asking, one of V(ofed), V(modules), V(peermem), V(firmware), V(nic),
      V(tuning), V(nccl), V(facts).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Read the RDMA facts again only when a layer before this play changed the host
  rdmaops.roce.rdma_facts:
  when: lookup('rdmaops.roce.roce_changed_before', 'facts')
"""

RETURN = r"""
_raw:
  description: One boolean per layer named, V(true) when a layer before it changed the host in this run.
  type: list
  elements: bool
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.rdmaops.roce.plugins.module_utils._preflight.since import changed_before


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        variables = variables if variables is not None else {}

        def get(name):
            if name not in variables:
                return None
            value = variables[name]
            # facts and registered results are values already; a role variable may still be a template
            return self._templar.template(value) if isinstance(value, str) and "{" in value else value

        out = []
        for term in terms:
            try:
                out.append(bool(changed_before(get, term)))
            except ValueError as exc:
                # AnsibleLookupError: ansible-core shows its message as it is (any other exception is
                # wrapped with its Python type name)
                raise AnsibleLookupError("rdmaops.roce.roce_changed_before: %s" % exc)
        return out
