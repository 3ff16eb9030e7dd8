# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tuning engines share: the result of a plan some of whose runtime writes the kernel refused.

A runtime write (a sysctl value, an ethtool knob) that the kernel or the driver refuses while
the module runs with ``runtime_errors: warn`` / ``unsupported: warn`` changed nothing: the engine
records it as unapplied and this result leaves it out of ``changed``, ``changes`` and the diff.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan


def result_without(plan, refused, check_mode, diff_mode):
    """``plan.result(...)`` without the changes whose key is in ``refused``."""
    kept = Plan()
    for change in plan:
        if change.key not in refused:
            kept.add(change.key, change.before, change.after, change.action, change.description,
                     header=change.header, undo=change.undo)
    return kept.result(check_mode, diff_mode)


def forget(plan, refused):
    """Take the changes whose key is in ``refused`` out of ``plan.applied``: their action ran, but
    the kernel or the driver refused it, so nothing stayed applied and a later failure must not
    report ``changed`` because of them."""
    plan.applied = [change for change in plan.applied if change.key not in refused]
