# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Firmware (NV) configuration of a ConnectX through ``mlxconfig`` (MFT) or ``mstconfig`` (mstflint).

read   ``TOOL -d DEV -e q`` (all parameters: a key the device does not list is refused before
       anything is set), plus ``TOOL -d DEV -e q NAME[i] ...`` for asked elements of array
       parameters (the full query shows only ``Array[a..b]`` for those);
plan   one change: ``TOOL -d DEV -y set KEY=VAL ...`` with only the keys whose Next Boot value
       differs, in one call; its undo sets the old Next Boot values again (safe: nothing is
       active before a reboot);
verify re-query: every asked key must show the asked value in Next Boot.

Values live in the NIC's flash and take effect at the next boot or firmware reset; this engine
never resets the firmware (no ``mlxfwreset``) and reports ``reboot_required`` instead.  For the
same reason there is nothing to re-apply at boot: :func:`reapply_steps` returns no steps.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, ToolNotFound
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import REBOOT
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import MELLANOX_VENDOR, PCI_DEVICES
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.mlxconfig import parse_query, same_value, values_equal

TOOLS = ("mlxconfig", "mstconfig")
# PCI address with or without its domain: 0000:3b:00.0 or 3b:00.0
BDF = re.compile(r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
# MFT device nodes (mst start) and the kernel's fwctl nodes
MST_DEVICE = re.compile(r"/dev/mst/[A-Za-z0-9_][A-Za-z0-9_.:-]{0,100}")
FWCTL_DEVICE = re.compile(r"/dev/fwctl/fwctl[0-9]{1,4}")
# An mlxconfig parameter name (as ``q`` prints it), optionally one array element
PARAM = re.compile(r"[A-Z][A-Z0-9_]{0,127}(?:\[[0-9]{1,4}\])?")
ENUM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
NAMED_VALUE = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,63})\(([0-9]{1,10})\)")
UINT = re.compile(r"[0-9]{1,10}|0x[0-9a-fA-F]{1,8}")
MAX_U32 = 0xFFFFFFFF


def check_device(key, value):
    """A PCI BDF, an ``/dev/mst/...`` node or ``/dev/fwctl/fwctlN``, matched whole."""
    if not isinstance(value, str) or not (full_match(BDF, value) or full_match(MST_DEVICE, value)
                                          or full_match(FWCTL_DEVICE, value)):
        raise InputError(
            "%s=%r is not a device mlxconfig can open: give the PCI address of the NIC's function "
            "(0000:3b:00.0 or 3b:00.0, see lspci -D -d 15b3:), or an MST device such as "
            "/dev/mst/mt4129_pciconf0, or /dev/fwctl/fwctlN" % (key, value), option=key)
    return value


def full_bdf(device):
    """``0000:3b:00.0`` for a BDF given with or without its domain; None for a device node."""
    if not full_match(BDF, device):
        return None
    return (device if device.count(":") == 2 else "0000:" + device).lower()


def normalise_value(key, value):
    """A wanted value as ``(kind, value)``: ``("number", n)`` or ``("name", ENUM)``.

    Booleans are 1/0, integers and decimal/hex text numbers, ``NAME(n)`` (copied from ``q``
    output) its number, anything else must be an enum name such as ``ETH`` or ``True``.
    """
    option = "settings.%s" % key
    if isinstance(value, bool):
        return ("number", int(value))
    if isinstance(value, int):
        if value < 0 or value > MAX_U32:
            raise InputError("%s=%r is out of range: mlxconfig values are 0 to %d" % (option, value, MAX_U32),
                             option="settings")
        return ("number", value)
    if isinstance(value, str):
        if full_match(UINT, value):
            return normalise_value(key, int(value, 0))
        named = NAMED_VALUE.fullmatch(value)
        if named:
            return ("number", int(named.group(2)))
        if full_match(ENUM_NAME, value):
            return ("name", value)
    raise InputError(
        "%s=%r is not an mlxconfig value: use a number (8), a boolean (true), or the name the "
        "tool shows (ETH for ETH(2), True for True(1))" % (option, value), option="settings")


def set_argument(key, want):
    """``KEY=VAL`` as mlxconfig takes it."""
    return "%s=%s" % (key, want[1])


def set_argv(tool, device, assignments):
    """The one ``set`` call for ``assignments`` (a list of ``KEY=VAL``)."""
    return [tool, "-d", device, "-y", "set"] + list(assignments)


def query_argv(tool, device, names=()):
    return [tool, "-d", device, "-e", "q"] + list(names)


def reapply_steps(desired):
    """Boot re-apply steps for ``desired`` (the module's parameters): none.

    NV configuration is stored in the NIC's flash and survives reboots and driver reloads;
    running ``mlxconfig set`` at every boot would only rewrite flash.  The steps are an empty
    list so the boot script generator can treat every engine alike.
    """
    validate_params(desired)
    return []


# the name the lead's brief used
reapply_commands = reapply_steps


def validate_params(params):
    """Check the parameters (no host access); return ``(device, tool, {KEY: (kind, value)})``."""
    device = check_device("device", params.get("device"))
    tool = params.get("tool") or "auto"
    if tool not in ("auto",) + TOOLS:
        raise InputError("tool=%r must be auto, mlxconfig or mstconfig" % (tool,), option="tool")
    if tool == "mstconfig" and not full_match(BDF, device):
        raise InputError("device=%r: mstconfig (mstflint) opens a NIC by its PCI address only; give the "
                         "address (lspci -D -d 15b3:) or use tool=mlxconfig for MST device nodes" % device,
                         option="device")
    settings = params.get("settings")
    if not isinstance(settings, dict) or not settings:
        raise InputError("settings must be a non-empty dict of mlxconfig parameters and values, for example "
                         "{ROCE_CC_PRIO_MASK_P1: 255, CNP_DSCP_P1: 48}", option="settings")
    wanted = {}
    for key, value in settings.items():
        if not full_match(PARAM, key):
            raise InputError(
                "settings key %r is not an mlxconfig parameter name: write it as '%s q' prints it, in "
                "capitals (LINK_TYPE_P1, NUM_OF_VFS, PCI_DOWNSTREAM_PORT_OWNER[0])" % (key, tool if tool != "auto" else "mlxconfig"),
                option="settings")
        wanted[key] = normalise_value(key, value)
    return device, tool, wanted


def _shown(value):
    return None if value is None else value["text"]


class MlxconfigEngine(Engine):
    """One device's NV configuration: ``params`` = device, settings, tool."""

    def __init__(self, ctx, params):
        super(MlxconfigEngine, self).__init__(ctx, params)
        self.device = params.get("device")
        self.tool = None
        self.wanted = {}
        self.query = None
        self.after_query = None
        self.to_set = []
        self.applied = False

    # -- validate -----------------------------------------------------------------------------
    def validate(self):
        self.device, self.tool_choice, self.wanted = validate_params(self.params)

    # -- read ---------------------------------------------------------------------------------
    def pick_tool(self):
        if self.tool_choice != "auto":
            if not self.runner.has(self.tool_choice):
                raise ToolNotFound(self.tool_choice)
            return self.tool_choice
        for tool in TOOLS:
            if tool == "mstconfig" and not full_match(BDF, self.device):
                continue
            if self.runner.has(tool):
                return tool
        if not full_match(BDF, self.device):
            raise RdmaopsError("mlxconfig (NVIDIA MFT) was not found on PATH, and device %s is an MST device node, "
                               "which only MFT opens; install MFT, or install mstflint and give the PCI address"
                               % self.device, tool="mlxconfig")
        raise RdmaopsError("neither mlxconfig (NVIDIA MFT) nor mstconfig (the mstflint package) was found on PATH; "
                           "install one of them", tool="mlxconfig")

    def check_pci(self):
        """A BDF that the host's sysfs knows must be a Mellanox/NVIDIA function."""
        bdf = full_bdf(self.device)
        if bdf is None or not self.host.isdir(PCI_DEVICES):
            return
        base = "%s/%s" % (PCI_DEVICES, bdf)
        if not self.host.exists(base):
            raise InputError("device=%s: no PCI function %s on this host (see lspci -D -d 15b3:)" % (self.device, bdf),
                             option="device")
        vendor = (self.host.read(base + "/vendor") or "").strip().lower()
        if vendor and vendor != MELLANOX_VENDOR:
            raise InputError("device=%s: PCI function %s has vendor %s, not Mellanox/NVIDIA (%s); mlxconfig "
                             "configures ConnectX/BlueField firmware only" % (self.device, bdf, vendor, MELLANOX_VENDOR),
                             option="device")

    def run_query(self, names=()):
        result = self.runner.run(query_argv(self.tool, self.device, names), check=False)
        parsed = parse_query(result.stdout)
        if result.rc != 0 or not parsed["columns"]:
            message = "\n".join(line for line in (result.stdout or "").splitlines() if line.startswith("-E-"))
            raise RdmaopsError("%s could not query %s (rc=%d): %s" % (
                self.tool, self.device, result.rc,
                message or (result.stderr or "").strip() or "no configuration table in its output"),
                cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
        return parsed

    def read_all(self):
        parsed = self.run_query()
        elements = [key for key in self.wanted if "[" in key and key not in parsed["params"]]
        arrays = [key for key in elements if key.split("[")[0] in parsed["params"]]
        if arrays:
            extra = self.run_query(arrays)
            for name in extra["order"]:
                parsed["params"][name] = extra["params"][name]
                parsed["order"].append(name)
        return parsed

    def read(self):
        self.read_device()
        self.decide()

    def read_device(self):
        """Check the device, pick the tool and query it (the firmware layer asks for its keys only
        once it has seen what the device offers: the ports of a dual-port card)."""
        self.check_pci()
        self.tool = self.pick_tool()
        self.query = self.read_all()

    def decide(self):
        """Refuse what the device does not offer; pick the keys whose Next Boot value differs."""
        params = self.query["params"]
        unknown = sorted(key for key in self.wanted if key not in params)
        if unknown:
            raise InputError(
                "settings: %s %s does not offer %s (not in '%s -d %s -e q'); check the name and the port "
                "suffix (_P1/_P2) against that output; nothing was set" % (
                    self.query.get("device_type") or "the device", self.device, ", ".join(unknown), self.tool, self.device),
                option="settings", unknown=unknown)
        arrays = sorted(key for key in self.wanted if params[key].get("next_boot") and params[key]["next_boot"].get("array"))
        if arrays:
            raise InputError("settings: %s %s an array parameter; set its elements (%s[0], %s[1] ...)" % (
                ", ".join(arrays), "is" if len(arrays) == 1 else "are", arrays[0], arrays[0]), option="settings")
        self.to_set = [key for key in self.wanted if not same_value(self.wanted[key], params[key].get("next_boot"))]

    # -- plan ---------------------------------------------------------------------------------
    def plan(self, plan):
        if not self.to_set:
            return
        params = self.query["params"]
        before = dict((key, _shown(params[key].get("next_boot"))) for key in self.to_set)
        after = dict((key, "%s" % self.wanted[key][1]) for key in self.to_set)
        argv = set_argv(self.tool, self.device, [set_argument(key, self.wanted[key]) for key in self.to_set])
        old = []
        for key in self.to_set:
            value = params[key].get("next_boot")
            if value is not None and value.get("number") is not None:
                old.append("%s=%d" % (key, value["number"]))

        def action():
            self.runner.run(argv)
            self.applied = True

        def undo():
            if old:
                self.runner.run(set_argv(self.tool, self.device, old))

        description = "%s set on %s for the next boot: %s" % (self.tool, self.device, ", ".join(
            "%s %s -> %s" % (key, before[key], after[key]) for key in self.to_set))
        # Next-boot values: they take effect when the firmware restarts (a reboot or mlxfwreset).
        plan.add("mlxconfig %s" % self.device, before, after, action, description,
                 undo=undo if len(old) == len(self.to_set) else None, disruption=REBOOT)

    # -- verify -------------------------------------------------------------------------------
    def verify(self):
        self.after_query = self.read_all()
        problems = []
        for key, want in self.wanted.items():
            have = self.after_query["params"].get(key, {}).get("next_boot")
            if not same_value(want, have):
                problems.append("%s shows %s for the next boot, not %s" % (key, _shown(have), want[1]))
        return problems

    # -- result -------------------------------------------------------------------------------
    def _view(self, query, planned=False):
        if query is None:
            return {}
        view = {}
        for key in self.wanted:
            entry = query["params"].get(key)
            if entry is None:
                continue
            item = dict(current=_shown(entry.get("current")), next_boot=_shown(entry.get("next_boot")))
            if "default" in entry:
                item["default"] = _shown(entry.get("default"))
            if planned and key in self.to_set:
                item["next_boot"] = "%s" % self.wanted[key][1]
            view[key] = item
        return view

    def pending(self, query, planned=False):
        """Asked keys whose Next Boot value is not the running (Current) one."""
        if query is None:
            return []
        keys = []
        for key, want in self.wanted.items():
            entry = query["params"].get(key)
            if entry is None:
                continue
            current = entry.get("current")
            if planned and key in self.to_set:
                if not same_value(want, current):
                    keys.append(key)
                continue
            nxt = entry.get("next_boot")
            if "current" not in entry or current is None:
                # firmware that cannot read Current: only what this run set is known to be pending
                if key in self.to_set:
                    keys.append(key)
                continue
            if not values_equal(current, nxt):
                keys.append(key)
        return sorted(keys)

    def result(self):
        final = self.after_query or self.query
        planned = self.after_query is None and bool(self.to_set)
        pending = self.pending(final, planned=planned)
        return dict(
            device=self.device,
            tool=self.tool,
            before=self._view(self.query),
            after=self._view(final, planned=planned),
            reboot_required=bool(pending),
            pending=pending,
        )
