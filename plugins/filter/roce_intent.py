# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._rails import check_rails


def roce_intent(roce_fabric):
    """Resolve and validate the fabric intent (see roce_intent.yml)."""
    try:
        intent = resolve_intent(roce_fabric)
    except IntentError as exc:
        raise AnsibleFilterError(str(exc))
    if intent.get("rails") is not None:
        # the rails themselves (no host needed); each host's addresses: roce_rail_plan
        try:
            check_rails(intent["rails"])
        except IntentError as exc:
            raise AnsibleFilterError(str(exc))
    return intent


class FilterModule:
    def filters(self):
        return {"roce_intent": roce_intent}
