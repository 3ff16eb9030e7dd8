# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA-CM default ToS and RoCE mode per device and port (configfs), and the OFED-only global
traffic class override (mlx5_ib sysfs).

configfs (``drivers/infiniband/core/cma_configfs.c``, upstream and OFED alike)::

    /sys/kernel/config/rdma_cm/<ibdev>/ports/<N>/default_roce_mode   "RoCE v2\\n" | "IB/RoCE v1\\n"
    /sys/kernel/config/rdma_cm/<ibdev>/ports/<N>/default_roce_tos    "%u\\n" (0..255)

``<ibdev>`` appears only after ``mkdir /sys/kernel/config/rdma_cm/<ibdev>`` (the kernel adds the
ports); configfs must be mounted and rdma_cm loaded.  The values live in the kernel's
``cma_device``: removing the group does not reset them, a driver reload or reboot does.

OFED's mlx5_ib adds ``/sys/class/infiniband/<ibdev>/tc/<port>/traffic_class``: it reads empty
when unset and ``Global tclass=106\\n`` once set (rule lines ``...,tclass=N`` may follow); writing
``106`` sets the global value and ``-1`` clears it.  It overrides the traffic class of every
RoCEv2 QP, plain verbs included, so it is written only when asked.

A ToS (or traffic class) whose ECN bits are CE (0b11) is refused, as the fabric intent refuses
it: a sender marks ECT or Not-ECT, CE is the switch's "congestion experienced".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import IB_CLASS, MODULES
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.codepoints import CE, ECN_MASK, ECT0

CONFIGFS = "/sys/kernel/config"
RDMA_CM = CONFIGFS + "/rdma_cm"
MOUNT_ARGV = ["mount", "-t", "configfs", "none", CONFIGFS]
# The kernel's names (core/cache.c gid_type_str) for the option's values.
ROCE_MODES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}
MODE_OPTIONS = dict((text, option) for option, text in ROCE_MODES.items())
# An RDMA device name as the kernel allows it: 1 to IB_DEVICE_NAME_MAX - 1 (63) bytes, no '/'
# (it is a sysfs and configfs directory name), no whitespace, not '.' or '..'.
IBDEV_NAME = re.compile(r"(?!\.\.?\Z)[^/\s\x00]{1,63}")
IBDEV_RULE = "1-63 characters, no '/' or whitespace, not '.' or '..' and not starting with '-'"
_UINT = re.compile(r"[0-9]+")
_GLOBAL = re.compile(r"Global tclass=([0-9]+)")


def group_path(device):
    return "%s/%s" % (RDMA_CM, device)


def port_path(device, port):
    return "%s/%s/ports/%d" % (RDMA_CM, device, port)


def tos_path(device, port):
    return port_path(device, port) + "/default_roce_tos"


def mode_path(device, port):
    return port_path(device, port) + "/default_roce_mode"


def traffic_class_path(device, port):
    return "%s/%s/tc/%d/traffic_class" % (IB_CLASS, device, port)


# -- parsers (the kernel's formats) -----------------------------------------------------------
def parse_tos(text):
    """``default_roce_tos`` as read (``"%u\\n"``, newline already taken off), or None."""
    return int(text) if text is not None and full_match(_UINT, text) else None


def parse_mode(text):
    """``default_roce_mode`` as read: ``"v1"``/``"v2"``, or None for anything else."""
    return MODE_OPTIONS.get(text) if text is not None else None


def parse_traffic_class(text):
    """``tc/N/traffic_class`` as read: ``dict(global_tclass=int or None, rules=[lines])``, None when
    the text is not in the driver's format.  Empty means unset."""
    if text is None:
        return None
    result = dict(global_tclass=None, rules=[])
    for line in text.split("\n"):
        if not line:
            continue
        match = _GLOBAL.fullmatch(line)
        if match:
            result["global_tclass"] = int(match.group(1))
        elif "tclass=" in line:
            result["rules"].append(line)
        else:
            return None
    return result


# -- desired state ----------------------------------------------------------------------------
def check_ibdev(key, value):
    """An RDMA device name the kernel could have given, or InputError."""
    if not full_match(IBDEV_NAME, value) or value.startswith("-"):
        raise InputError("%s=%r is not an RDMA device name (%s), e.g. mlx5_0 or rxe0" % (key, value, IBDEV_RULE), option=key)
    return value


def _byte(key, value, allow_clear=False):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("%s=%r must be an integer from 0 to 255" % (key, value), option=key)
    if allow_clear and value == -1:
        return value
    if not 0 <= value <= 255:
        raise InputError("%s=%d is out of range: a ToS is 0 to 255 (DSCP << 2 | ECN bits)%s"
                         % (key, value, "; -1 clears the override" if allow_clear else ""), option=key)
    if value & ECN_MASK == CE:
        fix = (value & ~ECN_MASK) | ECT0
        raise InputError(
            "%s=%d sets the ECN bits (the two low bits) to CE, 0b11 (congestion experienced), which a switch sets and "
            "a sender never does; use ECT(0) 0b10, ECT(1) 0b01 or Not-ECT 0b00: %d (DSCP %d with ECT(0))"
            % (key, value, fix, fix >> 2), option=key)
    return value


def normalize(params):
    """The validated desired state of ``params`` (the module's options as a plain dict)."""
    device = check_ibdev("device", params.get("device"))
    port = params.get("port", 1)
    port = 1 if port is None else port
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 255:
        raise InputError("port=%r must be a port number from 1 to 255 (RoCE ports are numbered from 1)" % (port,), option="port")
    desired = dict(device=device, port=port, tos=None, roce_mode=None, traffic_class=None)
    if params.get("tos") is not None:
        desired["tos"] = _byte("tos", params["tos"])
    mode = params.get("roce_mode")
    if mode is not None:
        if mode not in ROCE_MODES:
            raise InputError("roce_mode=%r must be v1 or v2" % (mode,), option="roce_mode")
        desired["roce_mode"] = mode
    if params.get("traffic_class") is not None:
        desired["traffic_class"] = _byte("traffic_class", params["traffic_class"], allow_clear=True)
    if desired["tos"] is None and desired["roce_mode"] is None and desired["traffic_class"] is None:
        raise InputError("nothing to set: give tos, roce_mode or traffic_class", option="tos")
    return desired


def reapply_commands(desired):
    """What a boot-time re-apply runs to establish ``desired`` (from :func:`normalize`) from scratch.

    Steps, in order: ``{"op": "run", "argv": [...], "unless_mounted": path}`` (mount configfs),
    ``{"op": "mkdir", "path": ...}`` (exists-ok), ``{"op": "write", "path": ..., "value": text}``.
    Each is idempotent, so the list can run twice.
    """
    device, port = desired["device"], desired["port"]
    steps = []
    if desired["tos"] is not None or desired["roce_mode"] is not None:
        steps.append(dict(op="run", argv=list(MOUNT_ARGV), unless_mounted=CONFIGFS))
        steps.append(dict(op="mkdir", path=group_path(device)))
        if desired["roce_mode"] is not None:
            steps.append(dict(op="write", path=mode_path(device, port), value=ROCE_MODES[desired["roce_mode"]] + "\n"))
        if desired["tos"] is not None:
            steps.append(dict(op="write", path=tos_path(device, port), value="%d\n" % desired["tos"]))
    if desired["traffic_class"] is not None:
        steps.append(dict(op="write", path=traffic_class_path(device, port), value="%d\n" % desired["traffic_class"]))
    return steps


# -- the engine -------------------------------------------------------------------------------
class RoceTos(Engine):
    """``rdmaops.roce.roce_tos``: RDMA-CM defaults of one device port, and the OFED traffic class."""

    def __init__(self, ctx, params):
        super(RoceTos, self).__init__(ctx, params)
        self.desired = None
        self.mounted = None
        self.group_exists = None
        self.before = None
        self.planned = {}
        self.group_created = False
        self._saved = {}

    def validate(self):
        self.desired = normalize(self.params)

    # read
    def _configfs_mounted(self):
        if self.host.isdir(RDMA_CM):
            return True
        mounts = self.host.read("/proc/mounts")
        for line in (mounts or "").split("\n"):
            fields = line.split()
            if len(fields) >= 3 and fields[1] == CONFIGFS and fields[2] == "configfs":
                return True
        return False

    def _read_values(self):
        device, port = self.desired["device"], self.desired["port"]
        values = {}
        if self.desired["tos"] is not None or self.desired["roce_mode"] is not None:
            exists = self.host.isdir(port_path(device, port))
            values["tos"] = parse_tos(self.host.read(tos_path(device, port))) if exists else None
            values["roce_mode"] = parse_mode(self.host.read(mode_path(device, port))) if exists else None
        if self.desired["traffic_class"] is not None:
            parsed = parse_traffic_class(self.host.read(traffic_class_path(self.desired["device"], port)))
            values["traffic_class"] = parsed["global_tclass"] if parsed else None
            if parsed and parsed["rules"]:
                values["traffic_class_rules"] = parsed["rules"]
        return values

    def read(self):
        device, port = self.desired["device"], self.desired["port"]
        if not self.host.isdir("%s/%s" % (IB_CLASS, device)):
            present = self.host.listdir(IB_CLASS)
            raise RdmaopsError("RDMA device %s does not exist on this host (%s: %s)"
                               % (device, IB_CLASS, ", ".join(present) or "no RDMA devices"), device=device)
        if not self.host.isdir("%s/%s/ports/%d" % (IB_CLASS, device, port)):
            ports = self.host.listdir("%s/%s/ports" % (IB_CLASS, device))
            raise InputError("port=%d: %s has no such port (ports: %s)" % (port, device, ", ".join(ports) or "none"),
                             option="port")
        self.mounted = self._configfs_mounted()
        self.group_exists = self.host.isdir(group_path(device))
        self.before = self._read_values()

    # plan
    def plan(self, plan):
        desired = self.desired
        device, port = desired["device"], desired["port"]
        if desired["traffic_class"] is not None:
            path = traffic_class_path(device, port)
            if not self.host.exists(path):
                raise RefusedError(
                    "nothing was changed: %s is absent: the global traffic class override exists only with the "
                    "MLNX_OFED / DOCA-OFED mlx5_ib driver. Without it, set tos (the RDMA-CM default) and the "
                    "application's own traffic class (NCCL_IB_TC, perftest --tclass)" % path, path=path)
        if desired["tos"] is not None or desired["roce_mode"] is not None:
            self._plan_configfs(plan)
        if desired["traffic_class"] is not None:
            path = traffic_class_path(device, port)
            before = self.before.get("traffic_class")
            want = None if desired["traffic_class"] == -1 else desired["traffic_class"]
            if before != want:
                self.planned["traffic_class"] = want
                plan.add("traffic_class %s/%d" % (device, port), before, want,
                         self._write(path, "%d\n" % desired["traffic_class"]),
                         "%s the global traffic class of %s port %d (%s)" % (
                             "clear" if want is None else "set", device, port,
                             "was %s" % ("unset" if before is None else before)),
                         undo=self._write(path, "%d\n" % (-1 if before is None else before)))

    def _plan_configfs(self, plan):
        desired = self.desired
        device, port = desired["device"], desired["port"]
        if not self.mounted:
            if not self.host.is_live:
                raise RefusedError(
                    "nothing was changed: configfs is not mounted at %s in the host root %s; it is mounted only on "
                    "the live host (RDMAOPS_HOST_ROOT unset or /)" % (CONFIGFS, self.host.root))
            if not self.host.isdir(CONFIGFS):
                raise RefusedError("nothing was changed: %s does not exist: this kernel has no configfs" % CONFIGFS)
            plan.add("configfs", "not mounted", "mounted", self._mount, "mount configfs on %s" % CONFIGFS)
        elif not self.host.isdir(RDMA_CM):
            raise RefusedError(
                "nothing was changed: %s is absent although configfs is mounted: rdma_cm is not loaded%s (load it "
                "with modprobe rdma_cm or rdmaops.roce.kernel_modules)"
                % (RDMA_CM, "" if not self.host.isdir(MODULES + "/rdma_cm") else " or was built without configfs support"))
        if not self.group_exists:
            plan.add("rdma_cm group %s" % device, "absent", "present", self._mkdir,
                     "create %s" % group_path(device), undo=self._rmdir)
        for name, path, text in (
            ("roce_mode", mode_path(device, port), ROCE_MODES.get(desired["roce_mode"])),
            ("tos", tos_path(device, port), None if desired["tos"] is None else "%d" % desired["tos"]),
        ):
            if text is None:
                continue
            want = desired[name]
            before = self.before.get(name)
            if before == want:
                continue
            self.planned[name] = want
            key = "%s %s/%d" % (name, device, port)
            plan.add(key, before, want, self._write_checked(plan, key, name, path, text),
                     "set default_%s of %s port %d to %s (%s)" % (
                         "roce_mode" if name == "roce_mode" else "roce_tos", device, port, text,
                         "was %s" % before if before is not None else "current value unknown until the configfs group exists"),
                     undo=self._restore(name, path))

    # apply
    def _mount(self):
        self.runner.run(list(MOUNT_ARGV))
        if not self.host.isdir(RDMA_CM):
            raise RefusedError("configfs is mounted on %s but %s is absent: rdma_cm is not loaded (load it with modprobe "
                               "rdma_cm or rdmaops.roce.kernel_modules)" % (CONFIGFS, RDMA_CM))

    def _mkdir(self):
        path = group_path(self.desired["device"])
        try:
            self.group_created = files.make_dir(self.host, path)
        except (IOError, OSError) as exc:
            raise RdmaopsError("creating %s failed (%s): rdma_cm does not know device %s"
                               % (path, errno.errorcode.get(exc.errno, exc), self.desired["device"]), path=path)

    def _rmdir(self):
        if self.group_created:
            files.remove_dir(self.host, group_path(self.desired["device"]))
            self.group_created = False

    def _write(self, path, text):
        def action():
            try:
                files.write_attribute(self.host, path, text)
            except (IOError, OSError) as exc:
                raise RdmaopsError("the kernel refused %r for %s (%s)" % (text.rstrip("\n"), path,
                                                                          errno.errorcode.get(exc.errno, exc)), path=path)
        return action

    def _write_checked(self, plan, key, name, path, text):
        """Write ``text``, unless the value (unknown before the group existed) is already right."""
        saved = self._saved

        def action():
            have = self._value(name, path)
            saved[name] = have
            if have == self.desired[name]:
                plan.refuse(key)
                return
            self._write(path, text + "\n")()
        return action

    def _restore(self, name, path):
        def undo():
            old = self._saved.get(name)
            if old is None or old == self.desired[name]:
                return
            text = ROCE_MODES[old] if name == "roce_mode" else "%d" % old
            self._write(path, text + "\n")()
        return undo

    def _value(self, name, path):
        text = self.host.read(path)
        return parse_mode(text) if name == "roce_mode" else parse_tos(text)

    # re-read
    def verify(self):
        problems = []
        if not self.planned:
            return problems
        after = self._read_values()
        for name, want in sorted(self.planned.items(), key=lambda item: item[0]):
            if after.get(name) != want:
                problems.append("%s of %s port %d reads %s after %s was written"
                                % (name, self.desired["device"], self.desired["port"], after.get(name), want))
        return problems

    def result(self):
        desired = self.desired or {}
        before = self.before
        after = None
        if before is not None:
            if self.check_mode:
                after = dict(before)
                after.update(self.planned)
            else:
                after = self._read_values()
        return dict(device=desired.get("device", self.params.get("device")), port=desired.get("port", self.params.get("port")),
                    before=before, after=after, configfs_mounted=self.mounted, group_created=self.group_created)
