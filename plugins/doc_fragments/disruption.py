# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """How disruptive a layer's changes are, and the cap a rollout puts on them."""

    DOCUMENTATION = r"""
options:
  max_disruption:
    description:
      - The most disruptive change this run may make to a workload on the host. When the plan needs
        more, nothing at all is changed (not even the changes that would be less disruptive), and the
        result says C(held_back), the plan's C(disruption) and the C(pending) changes, so a rollout can
        drain the host through its scheduler and run again without the cap.
      - V(none) changes nothing and reports every planned change as pending (a rollout that drains every
        host it changes, O(max_disruption) aside).
      - V(online) changes what new work sees (a sysctl, a file, loading a module, the ToS of new
        connections); V(link_reset) breaks the RDMA connections over a port (PFC, trust, ETS, buffers,
        the MTU of a link, ring sizes, global pause); V(driver_restart) unloads or restarts the driver;
        V(reboot) needs the host to boot again (firmware next-boot values, kernel arguments).
      - Unset, every planned change is made (the behaviour of a run without a rollout).
    type: str
    choices: [none, online, link_reset, driver_restart, reboot]
notes:
  - Every result carries C(disruption), the most disruptive class of what the run changes (or, in check
    mode, would change; V(none) when nothing), and C(disruptive_changes), each change above V(online)
    prefixed with its class.
"""
