# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Persistence the kernel does not give: boot units, udev rules, modprobe.d and modules-load.d.

Settings that the kernel forgets at every boot (a module loaded in the right order, PCI
config-space bits, NIC knobs, QoS) are re-applied by files of our own.  Each is planned through
:meth:`Plan.file`, so it is written only when it differs, only when it is ours (marker) or
adopted, and put back when a later change fails.

A boot unit is enabled the way ``systemctl enable`` does it for ``WantedBy=multi-user.target``:
a symlink in ``multi-user.target.wants``, written through the host root so a test tree can hold
it; ``systemctl daemon-reload`` runs only on the live host under systemd.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import FILE_NAME, file_name, full_match

SYSTEMD_DIR = "/etc/systemd/system"
WANTS_DIR = SYSTEMD_DIR + "/multi-user.target.wants"
UDEV_RULES_DIR = "/etc/udev/rules.d"
MODPROBE_DIR = "/etc/modprobe.d"
MODULES_LOAD_DIR = "/etc/modules-load.d"


def valid_unit_name(name):
    """True for a plain ``*.service`` file name (the whole name: no newline, '/', leading '.' or '-')."""
    return full_match(FILE_NAME, name) and name.endswith(".service") and name != ".service"


def unit_name(key, value):
    """Validate a unit name option (a plain ``*.service`` file name)."""
    return file_name(key, value, suffix=".service")


class BootUnit:
    """``/etc/systemd/system/<name>`` and its ``multi-user.target.wants`` link."""

    def __init__(self, host, runner, name, adopt=False):
        self.host = host
        self.runner = runner
        self.name = name
        self.adopt = adopt
        self.path = "%s/%s" % (SYSTEMD_DIR, name)
        self.wants_path = "%s/%s" % (WANTS_DIR, name)
        self.daemon_reload_result = None

    def text(self):
        """The unit file's exact content, None when absent."""
        return files.read_text(self.host, self.path)

    def link_target(self):
        try:
            return os.readlink(self.host.path(self.wants_path))
        except OSError:
            return None

    def plan(self, plan, text):
        """Add the changes that make the unit hold ``text`` and be enabled (``None``: removed, disabled)."""
        plan.file(self.host, self.path, text, mode=0o644, key="unit_file", adopt=self.adopt, option="unit",
                  description="%s %s" % ("write" if text else "remove", self.path))
        before = self.link_target()
        link_after = self.path if text else None
        plan.add("boot_unit_enabled", before, link_after, lambda: set_link(self.host, self.wants_path, link_after),
                 "%s %s" % ("enable" if text else "disable", self.name),
                 undo=lambda: set_link(self.host, self.wants_path, before))

    def daemon_reload(self):
        """Tell systemd about the new file; return (and keep) what happened, in words."""
        self.daemon_reload_result = daemon_reload(self.host, self.runner)
        return self.daemon_reload_result


def set_link(host, path, target):
    """Point the symlink ``path`` (under the host root) at ``target``, or remove it (None): how
    systemd units are enabled (a link in a ``.wants`` directory), without systemctl."""
    real = host.path(path)
    if os.path.lexists(real):
        os.unlink(real)
    if target is not None:
        if not os.path.isdir(os.path.dirname(real)):
            os.makedirs(os.path.dirname(real), 0o755)
        os.symlink(target, real)


def daemon_reload(host, runner):
    """``systemctl daemon-reload``; return what happened, in words."""
    # Only on the live host and only under systemd: a test tree must never reach the real one.
    if not host.is_live:
        return "skipped: the host root is not /"
    if not host.isdir("/run/systemd/system"):
        return "skipped: systemd is not running"
    if not runner.has("systemctl"):
        return "skipped: systemctl not found"
    result = runner.run(["systemctl", "daemon-reload"], check=False)
    return "done" if result.rc == 0 else "failed: %s" % (result.stderr or "").strip()


def udev_rules_path(name):
    """``/etc/udev/rules.d/<name>`` for a validated rules file name."""
    return "%s/%s" % (UDEV_RULES_DIR, file_name("rules_file", name, suffix=".rules"))


def reload_udev(host, runner):
    """``udevadm control --reload`` on the live host, so the next event reads the new rules."""
    if host.is_live and runner.has("udevadm"):
        runner.run(["udevadm", "control", "--reload"], check=False)
