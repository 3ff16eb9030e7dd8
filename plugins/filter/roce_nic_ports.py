# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import ports_from_intent


def nic_ports(rdma, intent, interfaces=None):
    """The ``ports`` of rdmaops.roce.nic_layer: every RoCE port's QoS derived from the resolved intent."""
    if not isinstance(rdma, dict) or "devices" not in rdma:
        raise AnsibleFilterError("roce_nic_ports expects ansible_facts.rdma (run rdmaops.roce.rdma_facts first)")
    try:
        intent = resolve_intent(intent)
    except IntentError as exc:
        raise AnsibleFilterError(str(exc))
    return ports_from_intent(rdma, intent, interfaces)


class FilterModule:
    def filters(self):
        return {"roce_nic_ports": nic_ports}
