# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import highest_disruption
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.policy import exceeds, resolve_policy


def roce_rollout(settings, pool=1):
    """Check the rollout's variables and return its policy (see roce_rollout.yml)."""
    try:
        return resolve_policy(dict(settings) if isinstance(settings, dict) else settings, pool)
    except InputError as exc:
        raise AnsibleFilterError(exc.msg)
    except (TypeError, ValueError):
        raise AnsibleFilterError("the rollout settings must be a mapping of rdmaops_* variables and pool a number of hosts")


def roce_disruption_exceeds(disruption, cap=None):
    """True when a change of class ``disruption`` is more disruptive than ``cap`` allows."""
    try:
        return exceeds(disruption, cap)
    except ValueError:
        raise AnsibleFilterError("unknown disruption class %r or cap %r: the classes are none, online, link_reset, "
                                 "driver_restart, reboot" % (disruption, cap))


def roce_disruption_highest(classes):
    """The most disruptive of a list of classes (``none`` for an empty list)."""
    try:
        return highest_disruption([str(name) for name in classes or []])
    except ValueError:
        raise AnsibleFilterError("unknown disruption class among %s: the classes are none, online, link_reset, "
                                 "driver_restart, reboot" % ", ".join(str(name) for name in classes))


class FilterModule:
    def filters(self):
        return {"roce_rollout": roce_rollout, "roce_disruption_exceeds": roce_disruption_exceeds,
                "roce_disruption_highest": roce_disruption_highest}
