# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdmaops.roce.fabric_check: the fabric's checks on the controller (the documentation is in
plugins/modules/fabric_check.py; the logic in module_utils/_validate)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import report, verdict
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.intent import check_intent

# intent, hosts, switches and min_bw_fraction are taken as given and read by checks (inputs.py):
# each wrong type or shape is named with its key, in YAML's words, never Python's.
ARGUMENT_SPEC = dict(
    intent=dict(type="raw", required=True),
    hosts=dict(type="raw", required=True),
    switches=dict(type="raw"),
    min_bw_fraction=dict(type="raw", default=0.8),
    report_dir=dict(type="path"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            intent = check_intent(args["intent"])
            outcome = verdict.fabric_check(intent, args["hosts"], switches=args["switches"],
                                           min_bw_fraction=args["min_bw_fraction"])
            if args["report_dir"]:
                # the report is this check's output on the controller, not a change to a managed host
                outcome["report_path"] = report.write_report(args["report_dir"], dict(outcome, intent=intent))
        except RdmaopsError as exc:
            result.update(failed=True, msg=exc.msg)
            result.update(exc.details)
            return result
        result.update(outcome)
        result["changed"] = False
        return result
