# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdmaops.roce.switch_roce: fills ``os`` from ``ansible_network_os``.

The module then runs where the connection puts it: on the controller for
``ansible.netcommon.httpapi`` (NVUE; the module reaches the switch through the persistent
connection's socket), on the switch for ``ssh`` (SONiC), on localhost for ``local`` (rendered,
parsed).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.rdmaops.roce.plugins.module_utils._switch.resource import DRIVERS, NETWORK_OS

MODULE = "rdmaops.roce.switch_roce"


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        task_vars = task_vars or {}
        args = dict(self._task.args)
        if not args.get("os"):
            network_os = task_vars.get("ansible_network_os")
            if network_os is not None:
                network_os = self._templar.template(network_os)
            if not network_os:
                result.update(failed=True, changed=False, msg=(
                    "switch_roce does not know the switch's NOS: set os (one of %s) on the task, or "
                    "ansible_network_os for the host (e.g. rdmaops.roce.nvue, rdmaops.roce.sonic)"
                    % ", ".join(sorted(DRIVERS))))
                return result
            if network_os not in NETWORK_OS:
                result.update(failed=True, changed=False, msg=(
                    "ansible_network_os=%s names no NOS switch_roce knows: use one of %s, or set os on the task"
                    % (network_os, ", ".join(sorted(NETWORK_OS)))))
                return result
            args["os"] = NETWORK_OS[network_os]
        result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        return result
