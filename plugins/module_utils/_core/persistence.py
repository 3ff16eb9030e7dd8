# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot units the collection owns: one oneshot ``.service`` file, enabled for multi-user.target.

Settings that the kernel forgets at every boot (a module loaded in the right order, PCI
config-space bits) are re-applied by a unit of our own.  It is enabled the way
``systemctl enable`` does it for ``WantedBy=multi-user.target``: a symlink in
``multi-user.target.wants``, written through the host root so a test tree can hold it, and
``systemctl daemon-reload`` runs only on the live host under systemd.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import read_text, write_atomic

SYSTEMD_DIR = "/etc/systemd/system"
WANTS_DIR = SYSTEMD_DIR + "/multi-user.target.wants"


def valid_unit_name(name):
    return name.endswith(".service") and "/" not in name and not name.startswith(".")


class BootUnit:
    """``/etc/systemd/system/<name>`` and its ``multi-user.target.wants`` link."""

    def __init__(self, host, runner, name):
        self.host = host
        self.runner = runner
        self.name = name
        self.path = "%s/%s" % (SYSTEMD_DIR, name)
        self.wants_path = "%s/%s" % (WANTS_DIR, name)
        self.daemon_reload_result = None

    def text(self):
        """The unit file's exact content, None when absent."""
        return read_text(self.host, self.path)

    def link_target(self):
        try:
            return os.readlink(self.host.path(self.wants_path))
        except OSError:
            return None

    def plan(self, plan, text):
        """Add the changes that make the unit hold ``text`` and be enabled (``None``: removed, disabled)."""
        plan.add("unit_file", self.text(), text, lambda: self._write(text),
                 "%s %s" % ("write" if text else "remove", self.path), header=self.path)
        link_after = self.path if text else None
        plan.add("boot_unit_enabled", self.link_target(), link_after, lambda: self._link(link_after),
                 "%s %s" % ("enable" if text else "disable", self.name))

    def _write(self, text):
        if text is None:
            if self.host.exists(self.path):
                os.unlink(self.host.path(self.path))
            return
        write_atomic(self.host, self.path, text, mode=0o644, makedirs=True)

    def _link(self, target):
        real = self.host.path(self.wants_path)
        if os.path.lexists(real):
            os.unlink(real)
        if target is not None:
            if not os.path.isdir(os.path.dirname(real)):
                os.makedirs(os.path.dirname(real), 0o755)
            os.symlink(target, real)

    def daemon_reload(self):
        """Tell systemd about the new file; return (and keep) what happened, in words."""
        # Only on the live host and only under systemd: a test tree must never reach the real one.
        if not self.host.is_live:
            outcome = "skipped: the host root is not /"
        elif not self.host.isdir("/run/systemd/system"):
            outcome = "skipped: systemd is not running"
        elif not self.runner.has("systemctl"):
            outcome = "skipped: systemctl not found"
        else:
            result = self.runner.run(["systemctl", "daemon-reload"], check=False)
            outcome = "done" if result.rc == 0 else "failed: %s" % (result.stderr or "").strip()
        self.daemon_reload_result = outcome
        return outcome
