# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot-time re-apply of the NIC QoS: none of it survives a reboot or a driver reload.

Trust, PFC, ETS, ECN, the RDMA-CM ToS and the traffic-class override live in firmware runtime
state or in driver memory (nic-ground-truth.md, section 4.5), and NVIDIA ships nothing that
puts them back.  The collection installs three files, all generated from the same desired
state the module applies, so there is one source of truth:

* ``/usr/local/sbin/rdmaops-nic-reapply``: a POSIX shell script with one block per RDMA device,
  the steps each engine's ``reapply_steps()`` returns (commands, attribute writes, directories);
* ``rdmaops-nic-qos@.service``: a oneshot template unit that runs the script for one device,
  ordered after the module loaders and openibd, and not after the network: the device and its
  netdev exist when udev sees the device, and waiting for network-online (up to two minutes
  with systemd-networkd) left RDMA-CM connections of the first minutes with the default ToS;
* a udev rule that tags every RDMA device for systemd and wants ``rdmaops-nic-qos@<dev>.service``
  when it appears: at boot (udev's coldplug) and again whenever the driver is reloaded, so a
  DKMS upgrade or ``rmmod``/``modprobe`` gets the settings back without a reboot.

A step is what the engines' ``reapply_commands()`` return: ``{"op": "run", "argv": [...]}``
(with ``"unless_mounted": path`` for mounting configfs), ``{"op": "write", "path": ..., "value":
text}`` or ``{"op": "mkdir", "path": ...}``.  The script resolves paths under ``RDMAOPS_HOST_ROOT`` when it
is set (the collection's test seam), runs every step even after a failure, and exits 1 when any
failed, so ``systemctl status`` shows it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.six.moves import shlex_quote

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import (
    SYSTEMD_DIR,
    UDEV_RULES_DIR,
    daemon_reload,
    reload_udev,
)

SCRIPT_PATH = "/usr/local/sbin/rdmaops-nic-reapply"
UNIT_NAME = "rdmaops-nic-qos@.service"
UNIT_PATH = "%s/%s" % (SYSTEMD_DIR, UNIT_NAME)
RULES_PATH = "%s/90-rdmaops-nic-qos.rules" % UDEV_RULES_DIR

MARKER = "# Managed by rdmaops.roce (nic): this whole file is rewritten on every run."

SCRIPT_HEAD = """#!/bin/sh
%s
# Re-applies the RoCE QoS of one RDMA device (or of all: no argument), at boot and after a
# driver reload (rdmaops-nic-qos@.service, started by %s).
# Generated from the same desired state the nic role applies; edit the inventory, not this file.
set -u
root="${RDMAOPS_HOST_ROOT:-}"
root="${root%%/}"
failed=0
step() {
  "$@" || { echo "rdmaops-nic-reapply: failed: $*" >&2; failed=1; }
}
write() {
  if ! printf '%%s\\n' "$2" > "$root$1"; then
    echo "rdmaops-nic-reapply: cannot write $2 to $1" >&2
    failed=1
  fi
}
makedir() {
  [ -d "$root$1" ] || mkdir "$root$1" || { echo "rdmaops-nic-reapply: cannot create $1" >&2; failed=1; }
}
unless_mounted() {
  # a recorded tree (RDMAOPS_HOST_ROOT) has nothing to mount
  [ -n "$root" ] || mountpoint -q "$1" || { shift; step "$@"; }
}
"""

UNIT_TEXT = """%s
[Unit]
Description=Re-apply rdmaops.roce RoCE QoS to RDMA device %%i
Documentation=https://galaxy.ansible.com/ui/repo/published/rdmaops/roce/
After=systemd-modules-load.service openibd.service rdma-load-modules@rdma.service

[Service]
Type=oneshot
ExecStart=%s %%i
"""

RULES_TEXT = """%s
# Every RDMA device that appears (boot, driver reload) re-applies its RoCE QoS.
ACTION=="add", SUBSYSTEM=="infiniband", TAG+="systemd", ENV{SYSTEMD_WANTS}+="rdmaops-nic-qos@%%k.service"
"""


def _device_name(name):
    # The case label and the unit instance: IB device names are plain (mlx5_0, rxe0, roceP2p1s0f0).
    if not isinstance(name, str) or not name or any(c in name for c in "/ \t\n*?[]()|;&$`'\"\\") or len(name) > 63:
        raise InputError("%r is not an RDMA device name (1-63 characters, no '/', whitespace or shell characters)"
                         % (name,), option="ports")
    return name


def run_step(argv):
    """A command as a re-apply step (``nic_qos.reapply_commands`` returns bare argv lists)."""
    return dict(op="run", argv=list(argv))


def render_step(step):
    """One script line for a step."""
    op = step.get("op")
    if op == "run":
        argv = " ".join(shlex_quote(str(arg)) for arg in step["argv"])
        if step.get("unless_mounted"):
            return "  unless_mounted %s %s" % (shlex_quote(step["unless_mounted"]), argv)
        return "  step %s" % argv
    if op == "write":
        # the script's write adds the newline sysfs and configfs expect
        return "  write %s %s" % (shlex_quote(step["path"]), shlex_quote(str(step["value"]).rstrip("\n")))
    if op == "mkdir":
        return "  makedir %s" % shlex_quote(step["path"])
    raise ValueError("unknown re-apply step %r" % (step,))


def render_script(devices):
    """The re-apply script for ``{ibdev: [steps]}`` (None when there is nothing to re-apply)."""
    devices = dict((name, steps) for name, steps in devices.items() if steps)
    if not devices:
        return None
    lines = [SCRIPT_HEAD % (MARKER, RULES_PATH), 'case "${1:-all}" in']
    names = sorted(_device_name(name) for name in devices)
    for name in names:
        lines.append("%s)" % name)
        lines.extend(render_step(step) for step in devices[name])
        lines.append("  ;;")
    lines.append("all)")
    lines.extend('  "$0" %s || failed=1' % name for name in names)
    lines.append("  ;;")
    lines.append("*)")
    lines.append('  echo "rdmaops-nic-reapply: no settings for $1"')
    lines.append("  ;;")
    lines.append("esac")
    lines.append('exit "$failed"')
    return "\n".join(lines) + "\n"


def plan_boot_reapply(plan, host, runner, devices, adopt=False):
    """Plan the script, the template unit and the udev rule for ``{ibdev: [steps]}``; with no
    steps at all, plan their removal.  Return the paths."""
    script = render_script(devices)
    unit = UNIT_TEXT % (MARKER, SCRIPT_PATH) if script else None
    rules = RULES_TEXT % MARKER if script else None
    plan.file(host, SCRIPT_PATH, script, mode=0o755, key="reapply_script", adopt=adopt, option="boot re-apply")
    plan.file(host, UNIT_PATH, unit, mode=0o644, key="reapply_unit", adopt=adopt, option="boot re-apply")
    plan.file(host, RULES_PATH, rules, mode=0o644, key="reapply_udev_rule", adopt=adopt, option="boot re-apply")
    if any(change.key in ("reapply_unit", "reapply_udev_rule") for change in plan):
        plan.then("systemctl daemon-reload", lambda: daemon_reload(host, runner))
        plan.then("udevadm control --reload", lambda: reload_udev(host, runner))
    return [SCRIPT_PATH, UNIT_PATH, RULES_PATH]
