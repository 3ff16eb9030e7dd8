# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import roce_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, resolve_intent


def nic_ports(rdma, intent, interfaces=None):
    """The ``ports`` of rdmaops.roce.nic_layer: every RoCE port's QoS derived from the resolved intent."""
    if not isinstance(rdma, dict) or "devices" not in rdma:
        raise AnsibleFilterError("roce_nic_ports expects ansible_facts.rdma (run rdmaops.roce.rdma_facts first)")
    try:
        intent = resolve_intent(intent)
    except IntentError as exc:
        raise AnsibleFilterError(str(exc))
    qos = dict(trust=intent["trust"], pfc=list(intent["pfc_priorities"]),
               dscp2prio=dict((int(dscp), prio) for dscp, prio in intent["dscp_to_priority"].items()))
    ecn = dict(priorities=list(intent["ecn_priorities"]), exclusive=True,
               cnp_dscp=intent["cnp_dscp"], cnp_802p_prio=intent["cnp_priority"])
    tos = dict(tos=intent["roce_tos"], roce_mode="v2" if intent["roce_mode"] == "RoCE v2" else "v1")
    return [dict(interface=netdev, device=device, port=int(port_name), qos=dict(qos), ecn=dict(ecn), tos=dict(tos))
            for device, port_name, _port, netdev in roce_ports(rdma, interfaces)]


class FilterModule:
    def filters(self):
        return {"roce_nic_ports": nic_ports}
