# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """Attribute and environment documentation shared by every rdmaops.roce module."""

    # Every module reads the host through RDMAOPS_HOST_ROOT.
    DOCUMENTATION = r"""
options: {}
notes:
  - Every path under C(/sys), C(/proc) and C(/etc) that the module reads or writes is resolved
    under the directory named by the environment variable E(RDMAOPS_HOST_ROOT) (default C(/)).
    This is a testing seam that points the module at a recorded host tree; do not set it in
    production. External tools are looked up on E(PATH) and run with the C locale.
"""

    FACTS = r"""
attributes:
  check_mode:
    support: full
    description: Only reads the host, so check mode runs it unchanged.
  diff_mode:
    support: N/A
    description: Changes nothing, so there is nothing to diff.
  facts:
    support: full
    description: Sets C(ansible_facts.rdma).
"""

    ACTION = r"""
notes:
  - When applying stops part-way, the module fails and says where it stopped. The failed result
    carries C(applied) (changes still in effect), C(rolled_back) (changes undone, that is files put
    back and runtime values set back where that is safe), C(not_applied) (changes never reached) and,
    if an undo failed too, C(rollback_failed). C(changed) is true exactly when something stayed applied.
attributes:
  check_mode:
    support: full
    description: Reads the current state, plans, and reports what it would change without changing it.
  diff_mode:
    support: full
    description: Shows the planned or applied changes as before/after.
"""
