# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a layer may use the read the preflight made for it (see roce_layer_plan.yml and
plugins/module_utils/_preflight/layers.py, where the comparison lives)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._preflight.layers import reusable


def roce_layer_plan(plans, layer, params, unchanged=False):
    return reusable(plans, layer, params, unchanged=bool(unchanged))


class FilterModule:
    def filters(self):
        return {"roce_layer_plan": roce_layer_plan}
