# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ECN / DCQCN of one mlx5 port through the MLNX_OFED / DOCA-OFED sysfs tree.

The tree (``en_sysfs.c``, ``en_ecn.c``; created for PFs only) is::

    /sys/class/net/<IF>/ecn/roce_np/enable/0..7            notification point, per priority: "0\\n" / "1\\n"
    /sys/class/net/<IF>/ecn/roce_np/{min_time_between_cnps,cnp_dscp,cnp_802p_prio}
    /sys/class/net/<IF>/ecn/roce_rp/enable/0..7            reaction point, per priority
    /sys/class/net/<IF>/ecn/roce_rp/{clamp_tgt_rate,...,initial_alpha_value}

Every file reads ``"%d\\n"`` and takes a decimal number (``sscanf("%d")``); there is no
``params/`` sub-directory whatever some NVIDIA pages say.  Files are 0644 on a PF and 0444
otherwise.  An inbox (upstream) mlx5 driver has no such tree: its runtime knobs are in debugfs
(``/sys/kernel/debug/mlx5/<bdf>/cc_params``, no per-priority enable), and the persistent way on
every driver is the firmware's NV configuration (``ROCE_CC_PRIO_MASK_P1``, ``CNP_DSCP_P1`` ...
through mlxconfig or mstconfig), which takes effect at the next firmware boot.  What this driver
lacks is refused (``unsupported=fail``) or warned about (``unsupported=warn``), naming that
firmware alternative with the exact parameters.

Only runtime state is written; every value changed carries its undo (the old value written back).
:func:`reapply_commands` turns the same validated desired state into the writes a boot-time
re-apply runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import MELLANOX_VENDOR, NET_CLASS, PCI_DEVICES
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.pci import is_pci_address

PRIORITIES = tuple(range(8))
POINTS = ("np", "rp")
POINT_DIRS = dict(np="roce_np", rp="roce_rp")
POINT_NAMES = dict(np="notification point", rp="reaction point")

# (minimum, maximum) of each parameter.  The driver takes any int (sscanf "%d") and the firmware
# decides; the bounds here are the ones the format fixes (a DSCP is 6 bits, a priority 3, the
# clamp flags are booleans, alpha and g are 10-bit fractions of 1024, min_dec_fac a percentage).
INT_MAX = 2 ** 31 - 1
NP_PARAMS = dict(
    min_time_between_cnps=(0, INT_MAX),
    cnp_dscp=(0, 63),
    cnp_802p_prio=(0, 7),
)
RP_PARAMS = dict(
    clamp_tgt_rate=(0, 1),
    clamp_tgt_rate_after_time_inc=(0, 1),
    rpg_time_reset=(0, INT_MAX),
    rpg_byte_reset=(0, INT_MAX),
    rpg_threshold=(0, INT_MAX),
    rpg_max_rate=(0, INT_MAX),
    rpg_ai_rate=(0, INT_MAX),
    rpg_hai_rate=(0, INT_MAX),
    rpg_gd=(0, INT_MAX),
    rpg_min_dec_fac=(1, 100),
    rpg_min_rate=(0, INT_MAX),
    rate_to_set_on_first_cnp=(0, INT_MAX),
    dce_tcp_g=(0, 1023),
    dce_tcp_rtt=(0, INT_MAX),
    rate_reduce_monitor_period=(0, INT_MAX),
    initial_alpha_value=(0, 1023),
)
PARAMS = dict(np=NP_PARAMS, rp=RP_PARAMS)
# The firmware NV parameter of each runtime knob is its upper-case name with the port suffix.
PRIO_MASK_NV = "ROCE_CC_PRIO_MASK"
DEBUGFS_MLX5 = "/sys/kernel/debug/mlx5"
UNSUPPORTED = ("fail", "warn")
# "%d" as the driver prints it (HostRoot.read has taken the trailing newline off).
_VALUE = re.compile(r"-?[0-9]+")


def ecn_dir(interface):
    return "%s/%s/ecn" % (NET_CLASS, interface)


def enable_path(interface, point, prio):
    return "%s/%s/enable/%d" % (ecn_dir(interface), POINT_DIRS[point], prio)


def param_path(interface, point, name):
    return "%s/%s/%s" % (ecn_dir(interface), POINT_DIRS[point], name)


def parse_value(text):
    """A value as the driver prints it (``"%d\\n"``), or None for anything else."""
    if text is None or not full_match(_VALUE, text):
        return None
    return int(text)


# -- desired state ----------------------------------------------------------------------------
def _int(key, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("%s=%r must be an integer from %d to %d" % (key, value, low, high), option=key)
    if not low <= value <= high:
        raise InputError("%s=%d is out of range: it must be from %d to %d" % (key, value, low, high), option=key)
    return value


def _priorities(key, value):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise InputError("%s must be a list of priorities 0-7, e.g. [3]" % key, option=key)
    seen = []
    for item in value:
        _int(key, item, 0, 7)
        if item in seen:
            raise InputError("%s lists priority %d twice" % (key, item), option=key)
        seen.append(item)
    return sorted(seen)


def normalize(params):
    """The validated desired state of ``params`` (the module's options as a plain dict).

    ``{"interface", "unsupported", "enable": {point: {prio: bool}}, "params": {point: {name: int}}}``;
    raises InputError naming the option before anything is read.
    """
    interface = check_ifname("interface", params.get("interface"))
    unsupported = params.get("unsupported") or "fail"
    if unsupported not in UNSUPPORTED:
        raise InputError("unsupported=%r must be one of fail, warn" % (unsupported,), option="unsupported")
    exclusive = params.get("exclusive") or False
    if not isinstance(exclusive, bool):
        raise InputError("exclusive=%r must be true or false" % (exclusive,), option="exclusive")
    common = _priorities("priorities", params.get("priorities"))
    enable = {}
    for point in POINTS:
        key = "%s_priorities" % point
        listed = _priorities(key, params.get(key))
        listed = common if listed is None else listed
        wanted = {}
        if listed is not None:
            for prio in PRIORITIES:
                if prio in listed:
                    wanted[prio] = True
                elif exclusive:
                    wanted[prio] = False
        enable[point] = wanted
    if exclusive and common is None and not any(params.get("%s_priorities" % p) is not None for p in POINTS):
        raise InputError("exclusive=true disables every priority not listed, but no priorities are listed: "
                         "give priorities (or np_priorities / rp_priorities)", option="exclusive")
    values = dict(np={}, rp={})
    for name, (low, high) in NP_PARAMS.items():
        if params.get(name) is not None:
            values["np"][name] = _int(name, params[name], low, high)
    rp_params = params.get("rp_params") or {}
    if not isinstance(rp_params, dict):
        raise InputError("rp_params must be a dictionary of reaction point parameters", option="rp_params")
    for name, value in rp_params.items():
        if name not in RP_PARAMS:
            raise InputError("rp_params.%s is not a reaction point parameter; known: %s"
                             % (name, ", ".join(sorted(RP_PARAMS))), option="rp_params")
        if value is not None:
            low, high = RP_PARAMS[name]
            values["rp"][name] = _int("rp_params.%s" % name, value, low, high)
    if not any(enable.values()) and not any(values.values()):
        raise InputError("nothing to set: give priorities (or np_priorities / rp_priorities), cnp_dscp, "
                         "cnp_802p_prio, min_time_between_cnps or rp_params", option="priorities")
    return dict(interface=interface, unsupported=unsupported, enable=enable, params=values)


def wanted_writes(desired):
    """``[(key, path, value, description)]`` for every setting of ``desired``, in a fixed order."""
    interface = desired["interface"]
    writes = []
    for point in POINTS:
        for name in sorted(desired["params"][point]):
            value = desired["params"][point][name]
            writes.append(("%s %s" % (point, name), param_path(interface, point, name), value,
                           "set %s %s %s" % (interface, POINT_NAMES[point], name)))
        for prio in sorted(desired["enable"][point]):
            value = 1 if desired["enable"][point][prio] else 0
            writes.append(("%s enable %d" % (point, prio), enable_path(interface, point, prio), value,
                           "%s ECN on %s %s priority %d" % ("enable" if value else "disable", interface,
                                                            POINT_NAMES[point], prio)))
    return writes


def reapply_commands(desired):
    """What a boot-time re-apply runs to establish ``desired`` (from :func:`normalize`) from scratch.

    A list of ``{"op": "write", "path": host path, "value": text}`` steps: writing a value the
    attribute already holds changes nothing, so running the list twice is harmless.
    """
    return [dict(op="write", path=path, value="%d\n" % value) for _key, path, value, _desc in wanted_writes(desired)]


def firmware_alternative(desired, bdf, options=None):
    """The firmware NV parameters (mlxconfig/mstconfig) that give ``desired`` persistently."""
    port = 1
    if bdf and bdf.rsplit(".", 1)[-1] in ("0", "1"):
        port = int(bdf.rsplit(".", 1)[-1]) + 1
    suffix = "_P%d" % port
    nv = {}
    notes = []
    enable = desired["enable"]
    wanted_opts = options
    if any(enable.values()) and (options is None or "priorities" in options):
        on = set(p for point in POINTS for p, v in enable[point].items() if v)
        exclusive = any(v is False for point in POINTS for v in enable[point].values())
        mask = sum(1 << p for p in on)
        nv[PRIO_MASK_NV + suffix] = mask
        if enable["np"] != enable["rp"]:
            notes.append("the firmware has one priority mask for both points")
        if not exclusive:
            notes.append("%s%s is a bitmask of priorities (default 255, all); the value shown enables only the "
                         "listed ones, keep other bits set to leave those priorities on" % (PRIO_MASK_NV, suffix))
    for point in POINTS:
        for name, value in sorted(desired["params"][point].items()):
            if wanted_opts is None or name in wanted_opts or ("rp_params.%s" % name) in wanted_opts:
                nv[name.upper() + suffix] = value
    device = bdf or "<PCI address>"
    command = ["mlxconfig", "-y", "-d", device, "set"] + ["%s=%d" % item for item in sorted(nv.items())]
    return dict(params=nv, device=bdf, command=command, notes=notes,
                takes_effect="at the next firmware boot (cold reboot or mlxfwreset)")


# -- the engine -------------------------------------------------------------------------------
class RoceEcn(Engine):
    """``rdmaops.roce.roce_ecn``: ECN enable per priority and DCQCN parameters of one port."""

    commands_key = None  # nothing is run: sysfs is written directly

    def __init__(self, ctx, params):
        super(RoceEcn, self).__init__(ctx, params)
        self.desired = None
        self.bdf = None
        self.current = None
        self.raw = {}
        self.unsupported = []
        self.planned = {}
        self.alternative = None
        self.supported = None

    def validate(self):
        self.desired = normalize(self.params)

    # read
    def _read_state(self):
        interface = self.desired["interface"]
        state = dict(np=dict(enabled=[]), rp=dict(enabled=[]))
        raw = {}
        for point in POINTS:
            for prio in PRIORITIES:
                value = parse_value(self.host.read(enable_path(interface, point, prio)))
                raw["%s enable %d" % (point, prio)] = value
                if value:
                    state[point]["enabled"].append(prio)
            for name in sorted(PARAMS[point]):
                value = parse_value(self.host.read(param_path(interface, point, name)))
                raw["%s %s" % (point, name)] = value
                if value is not None:
                    state[point][name] = value
        return state, raw

    def read(self):
        interface = self.desired["interface"]
        if not self.host.exists("%s/%s" % (NET_CLASS, interface)):
            raise RdmaopsError("interface %s does not exist on this host (%s/%s is absent)"
                               % (interface, NET_CLASS, interface), interface=interface)
        # The ConnectX PCI function behind the netdev (a virtio netdev's device is virtioN under its PCI function):
        # only there do the firmware parameters exist.
        real = self.host.realpath("%s/%s/device" % (NET_CLASS, interface)) or ""
        self.bdf = next((name for name in real.split("/")[::-1][:2] if is_pci_address(name)
                         and self.host.read("%s/%s/vendor" % (PCI_DEVICES, name)) == MELLANOX_VENDOR), None)
        self.supported = self.host.isdir(ecn_dir(interface))
        self.current, self.raw = self._read_state()

    def _why(self, path):
        interface = self.desired["interface"]
        if not self.supported:
            return "%s has no ECN sysfs tree (%s)" % (interface, ecn_dir(interface))
        if not self.host.exists(path):
            return "%s is absent (this driver version does not have it)" % path
        mode = files.file_mode(self.host, path)
        if mode is not None and not mode & 0o222:
            return "%s is read-only (the driver makes it writable on a physical function only)" % path
        return None

    def _option_of(self, key):
        point, rest = key.split(" ", 1)
        if rest.startswith("enable"):
            return "priorities"
        return rest if point == "np" else "rp_params.%s" % rest

    def _message(self, reasons, options):
        alt = firmware_alternative(self.desired, self.bdf, options)
        self.alternative = alt
        debugfs = "%s/%s/cc_params" % (DEBUGFS_MLX5, self.bdf) if self.bdf else None
        text = "%s; the ECN sysfs tree exists only with the MLNX_OFED / DOCA-OFED mlx5 driver (an inbox mlx5_core does not " \
               "create it) and only on a physical function." % "; ".join(reasons)
        if alt["params"] and not self.bdf:
            text += " %s is not on a ConnectX PCI function, so there is no firmware alternative either." % self.desired["interface"]
        elif alt["params"]:
            text += (" Firmware alternative (persistent, takes effect at the next firmware boot; mstconfig from mstflint "
                     "takes the same arguments, or use rdmaops.roce.mlxconfig): %s" % " ".join(alt["command"]))
            if alt["notes"]:
                text += " (%s)" % "; ".join(alt["notes"])
        if debugfs and self.host.isdir(debugfs):
            text += ". Runtime parameters without per-priority enable are in %s (debugfs, inbox driver)" % debugfs
        return text

    # plan
    def plan(self, plan):
        writes = wanted_writes(self.desired)
        reasons, options = [], []
        usable = []
        for key, path, value, description in writes:
            why = self._why(path)
            if why is None:
                usable.append((key, path, value, description))
                continue
            if why not in reasons:
                reasons.append(why)
            option = self._option_of(key)
            if option not in options:
                options.append(option)
            if option not in self.unsupported:
                self.unsupported.append(option)
        if reasons:
            message = self._message(reasons, options)
            if self.desired["unsupported"] == "fail":
                raise RefusedError(
                    "nothing was changed: %s Set unsupported=warn to apply what this driver has and skip the rest."
                    % message, unsupported=self.unsupported, firmware_alternative=self.alternative)
            self.ctx.warn("not applied at runtime (%s): %s" % (", ".join(self.unsupported), message))
        for key, path, value, description in usable:
            before = self.raw.get(key)
            if before == value:
                continue
            self.planned[key] = (path, value)
            plan.add("ecn %s %s" % (self.desired["interface"], key), before, value,
                     self._setter(path, value), "%s from %s to %d" % (description, before, value),
                     undo=self._setter(path, before) if before is not None else None)

    def _setter(self, path, value):
        def action():
            try:
                files.write_attribute(self.host, path, "%d\n" % value)
            except (IOError, OSError) as exc:
                raise RdmaopsError("the driver refused %d for %s (%s)" % (value, path, errno.errorcode.get(exc.errno, exc)),
                                   path=path)
        return action

    # re-read
    def verify(self):
        problems = []
        for key, (path, value) in sorted(self.planned.items()):
            have = parse_value(self.host.read(path))
            if have != value:
                problems.append("%s reads %s after %d was written" % (path, have, value))
        return problems

    def result(self):
        before = self.current
        after = None
        if before is not None:
            if self.check_mode:
                after = _apply(before, self.planned)
            else:
                after = self._read_state()[0]
        result = dict(interface=self.desired["interface"] if self.desired else self.params.get("interface"),
                      supported=self.supported, before=before, after=after, unsupported=list(self.unsupported))
        if self.alternative is not None:
            result["firmware_alternative"] = self.alternative
        return result


def _apply(state, planned):
    """``state`` with the planned writes made (check mode's ``after``)."""
    after = dict((point, dict(values, enabled=list(values["enabled"]))) for point, values in state.items())
    for key, (_path, value) in planned.items():
        point, rest = key.split(" ", 1)
        if rest.startswith("enable "):
            prio = int(rest.split(" ", 1)[1])
            enabled = set(after[point]["enabled"])
            (enabled.add if value else enabled.discard)(prio)
            after[point]["enabled"] = sorted(enabled)
        else:
            after[point][rest] = value
    return after
