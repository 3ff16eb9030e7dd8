# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback (tests/integration/test_rollout_phases.py): when a play whose name starts with
RDMAOPS_FAULT_AT_PLAY begins, run the shell command RDMAOPS_FAULT_COMMAND on the controller (stop
slurmctld, say), so a fault lands exactly between two phases of the rollout."""

from __future__ import annotations

import os
import subprocess

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: rollout_fault
type: aggregate
short_description: run a command when a given play starts (rollout tests only)
description:
  - Runs E(RDMAOPS_FAULT_COMMAND) once, when the first play whose name starts with E(RDMAOPS_FAULT_AT_PLAY) starts.
"""


class CallbackModule(CallbackBase):
    CALLBACK_NAME = "rollout_fault"
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NEEDS_ENABLED = True
    done = False  # the fault is injected once

    def v2_playbook_on_play_start(self, play):
        prefix, command = os.environ.get("RDMAOPS_FAULT_AT_PLAY"), os.environ.get("RDMAOPS_FAULT_COMMAND")
        if self.done or not prefix or not command or not play.get_name().startswith(prefix):
            return
        self.done = True
        subprocess.run(["sh", "-c", command], check=False, timeout=120)
