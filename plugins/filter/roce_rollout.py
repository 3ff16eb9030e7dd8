# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.policy import (
    exceeds,
    failure_finding,
    gate_partners,
    gate_partners_all,
    highest,
    plan_waves,
    pool_size,
    resolve_policy,
)


def roce_rollout(settings, pool=1):
    """Check the rollout's variables and return its policy (see roce_rollout.yml)."""
    try:
        return resolve_policy(dict(settings) if isinstance(settings, dict) else settings, pool_size(pool))
    except InputError as exc:
        raise AnsibleFilterError(exc.msg)
    except (TypeError, ValueError, OverflowError):
        raise AnsibleFilterError("the rollout settings must be a mapping of rdmaops_* variables and pool a number of hosts")


def roce_disruption_exceeds(disruption, cap=None):
    """True when a change of class ``disruption`` is more disruptive than ``cap`` allows; a missing
    class counts as the most disruptive."""
    try:
        return exceeds(disruption, cap)
    except InputError as exc:
        raise AnsibleFilterError("roce_disruption_exceeds: %s" % exc.msg)


def roce_disruption_highest(classes):
    """The most disruptive of a list of classes (``none`` for an empty list)."""
    try:
        return highest(classes)
    except InputError as exc:
        raise AnsibleFilterError("roce_disruption_highest: %s" % exc.msg)


def roce_rollout_waves(hosts, max_unavailable, others_out=0, serial=None):
    """Phase two's waves (see roce_rollout_waves.yml)."""
    try:
        if not isinstance(hosts, (list, tuple)) or not all(isinstance(e, (list, tuple)) and len(e) == 2 for e in hosts):
            raise InputError("give the hosts as a list of [host, status] pairs")
        return plan_waves([tuple(entry) for entry in hosts], max_unavailable, others_out,
                          serial if serial not in (None, "") else None)
    except InputError as exc:
        raise AnsibleFilterError("roce_rollout_waves: %s" % exc.msg)


def roce_rollout_partners(wave, order, candidates):
    """The hosts a wave's gate pairs with; given a list of waves, the partners of each (see
    roce_rollout_partners.yml)."""
    if not all(isinstance(value, (list, tuple)) for value in (wave, order, candidates)):
        raise AnsibleFilterError("roce_rollout_partners: give the wave (or the waves), the inventory order and the "
                                 "candidates as lists of hosts")
    if wave and all(isinstance(item, (list, tuple)) for item in wave):
        return gate_partners_all(list(order), [list(item) for item in wave], list(candidates))
    return gate_partners(list(order), list(wave), list(candidates))


def roce_rollout_failure(result):
    """Why a task failed, in one line (see roce_rollout_failure.yml)."""
    return failure_finding(result)


class FilterModule:
    def filters(self):
        return {"roce_rollout": roce_rollout, "roce_disruption_exceeds": roce_disruption_exceeds,
                "roce_disruption_highest": roce_disruption_highest, "roce_rollout_waves": roce_rollout_waves,
                "roce_rollout_partners": roce_rollout_partners, "roce_rollout_failure": roce_rollout_failure}
