# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resolved fabric intent a module is given, checked before anything is read or touched.

fabric_check's checks compare against it, and monitor_collector writes it into the snapshot the
collector compares against; the module checks it without loading the checks themselves.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import USER_KEYS, IntentError, resolve_intent

INTENT_KEYS = ("host_mtu", "switch_mtu", "trust", "roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority",
               "pfc_priorities", "ecn_priorities", "roce_tos", "ecn")


def check_intent(intent):
    """The resolved intent (the rdmaops.roce.roce_intent filter's output), checked for the keys used
    and resolved again from its user keys: the checks compare against values of known types only."""
    if not isinstance(intent, Mapping):
        # the input reader's words for a value, loaded for this message only
        from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import describe
        raise InputError("intent must be the resolved fabric intent (roce_fabric | rdmaops.roce.roce_intent), not %s"
                         % describe(intent), option="intent")
    missing = [key for key in INTENT_KEYS if key not in intent]
    if missing:
        raise InputError("intent lacks %s: pass the resolved intent (roce_fabric | rdmaops.roce.roce_intent), not roce_fabric itself"
                         % ", ".join(missing), option="intent")
    try:
        return resolve_intent(dict((key, intent[key]) for key in USER_KEYS if key in intent))
    except IntentError as exc:
        raise InputError("intent is not a resolved fabric intent (pass roce_fabric | rdmaops.roce.roce_intent unmodified): %s"
                         % "; ".join(problem.replace("roce_fabric", "intent") for problem in exc.problems), option="intent")
