# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate role's plan on the controller: a host's active RoCE ports, the host pairs it tests, and
what each host measures (see roce_validate_ports.yml, roce_validate_pairs.yml and roce_validate_plan.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.plan import active_ports, choose_pairs, measure_plan, tools_of


def _names(value, what):
    if isinstance(value, (string_types, Mapping)) or not hasattr(value, "__iter__"):
        raise AnsibleFilterError("roce_validate_pairs: %s must be a list of host names" % what)
    return [str(name) for name in value]


def roce_validate_pairs(hostvars, batch, mode="all", sample_size=16, partners=None):
    """``{paths, rdma}``: the pairs the path pings and perftest cover (see roce_validate_pairs.yml)."""
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("roce_validate_pairs expects hostvars, a mapping of host name to its variables")
    batch = _names(batch, "the batch (ansible_play_batch)")
    partners = _names(partners or [], "validate_partner_hosts")
    known = dict((name, hostvars[name] if name in hostvars else {}) for name in batch + partners)
    return choose_pairs(known, batch, mode=mode, sample_size=sample_size, partners=partners)


def roce_validate_ports(rdma):
    """A host's active RoCE ports from its ``ansible_facts.rdma`` (see roce_validate_ports.yml)."""
    if not isinstance(rdma, Mapping):
        raise AnsibleFilterError("roce_validate_ports expects a host's ansible_facts.rdma (a mapping from rdmaops.roce.rdma_facts)")
    return active_ports(dict(rdma))


def roce_validate_plan(counter_lines, ports=None, gpus=None, check_mode=False, rdma=True, nccl=True,
                       nccl_command="all_reduce_perf"):
    """``{rdma_run, rdma_why, nccl_ready, nccl_why}`` for one host (see roce_validate_plan.yml)."""
    if isinstance(counter_lines, (string_types, Mapping)) or not hasattr(counter_lines or [], "__iter__"):
        raise AnsibleFilterError("roce_validate_plan expects the counter read's output lines (stdout_lines)")
    return measure_plan(tools_of([str(line) for line in counter_lines or []]), ports, gpus, check_mode=check_mode,
                        rdma=rdma, nccl=nccl, nccl_command=nccl_command)


class FilterModule:
    def filters(self):
        return {"roce_validate_pairs": roce_validate_pairs, "roce_validate_plan": roce_validate_plan,
                "roce_validate_ports": roce_validate_ports}
