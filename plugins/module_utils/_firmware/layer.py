# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firmware layer of a host in one module run: the NV (next-boot) configuration of every
ConnectX/BlueField card, derived from the fabric intent, through the ``mlxconfig`` engine.

validate  the intent's CNP DSCP, CNP priority and congestion-control priorities, the user's keys
          against the allow-list (:data:`PORT_KEYS`, :data:`DEVICE_KEYS`), raw keys (``extra``),
          every value; the intent's own keys may not be set by hand. Nothing is run.
read      the cards: the PCI functions sysfs lists with the Mellanox/NVIDIA vendor id (one per
          card, the lowest function; virtual functions left out), or the ``devices`` named. No card:
          "no device", nothing runs. Each card is queried once (``mlxconfig -d DEV -e q``); a
          per-port key becomes ``KEY_P1``, ``KEY_P2`` ... for the ports the card lists.
plan      the engine's one ``set`` per card for the keys whose Next Boot value differs (class
          ``reboot``), then one step that records what was set and in which boot
          (:data:`MARKER`).
verify    the engine's re-query per card.

A key whose running (Current) value is not its Next Boot value is *pending a reboot*. It makes
the layer's class ``reboot`` even when nothing is set now (a rollout interrupted before its reboot,
a value someone else set), so a capped run (``max_disruption``) holds it back and the rollout
drains and reboots the host. After a reboot the values this layer set must be running: a key the
marker records, set in an earlier boot, that still differs fails the run (the firmware was not
reloaded: a warm reboot that keeps the NIC powered, for one).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import NONE, REBOOT, disruption_rank
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import MELLANOX_VENDOR, PCI_DEVICES
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.mlxconfig import same_value
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import mlxconfig

# What this layer set, per card, and in which boot (kernel boot_id): read back after a reboot.
MARKER = "/var/lib/rdmaops/firmware-next-boot.json"
BOOT_ID = "/proc/sys/kernel/random/boot_id"

# Keys derived from the intent, per port: name -> the intent key it comes from.
DERIVED = (
    ("CNP_DSCP", "cnp_dscp"),
    ("CNP_802P_PRIO", "cnp_priority"),
    ("ROCE_CC_PRIO_MASK", "ecn_priorities"),
)
DERIVED_NAMES = dict(DERIVED)

# The allow-list: keys a user may set in ``settings``. Per-port keys take a _P<n> suffix (or none:
# every port the card lists); device keys have none.
PORT_KEYS = (
    "LINK_TYPE", "KEEP_ETH_LINK_UP", "KEEP_IB_LINK_UP", "KEEP_LINK_UP_ON_BOOT", "LLDP_NB_DCBX",
    "LLDP_NB_RX_MODE", "LLDP_NB_TX_MODE", "DCBX_IEEE", "DCBX_CEE", "DCBX_WILLING", "NUM_OF_TC",
    "NUM_OF_PFC", "MIN_TIME_BETWEEN_CNPS", "ROCE_CC_CNP_MODERATION", "CLAMP_TGT_RATE",
    "CLAMP_TGT_RATE_AFTER_TIME_INC",
)
DEVICE_KEYS = (
    "ATS_ENABLED", "PCI_WR_ORDERING", "ADVANCED_PCI_SETTINGS", "MAX_ACC_OUT_READ", "SRIOV_EN",
    "NUM_OF_VFS", "ROCE_ADAPTIVE_ROUTING_EN",
)
PORT_SUFFIX = re.compile(r"([A-Z][A-Z0-9_]*?)_P([1-8])")
MAX_CARDS = 64

# PCI classes of a ConnectX/BlueField network function: Ethernet and InfiniBand controllers.
NIC_CLASSES = ("0x0200", "0x0207")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_intent(intent):
    """``{"CNP_DSCP": n, ...}`` (per-port names) from the resolved intent's keys; {} for none."""
    if intent is None:
        return {}
    if not isinstance(intent, dict):
        raise InputError("intent must be the resolved fabric intent (roce_fabric | rdmaops.roce.roce_intent) "
                         "or its cnp_dscp, cnp_priority and ecn_priorities", option="intent")
    # the resolved intent carries more keys: only these three are the firmware's
    derived = {}
    dscp = intent.get("cnp_dscp")
    if dscp is not None:
        if not _is_int(dscp) or not 0 <= dscp <= 63:
            raise InputError("intent.cnp_dscp=%r must be a DSCP, 0 to 63 (roce_fabric.cnp_dscp, 48 by convention)"
                             % (dscp,), option="intent")
        derived["CNP_DSCP"] = dscp
    prio = intent.get("cnp_priority")
    if prio is not None:
        if not _is_int(prio) or not 0 <= prio <= 7:
            raise InputError("intent.cnp_priority=%r must be a priority, 0 to 7 (roce_fabric.cnp_priority, 6 by "
                             "convention)" % (prio,), option="intent")
        derived["CNP_802P_PRIO"] = prio
    prios = intent.get("ecn_priorities")
    if prios is not None:
        if (not isinstance(prios, list) or not prios
                or not all(_is_int(p) and 0 <= p <= 7 for p in prios)):
            raise InputError("intent.ecn_priorities=%r must be a non-empty list of priorities 0 to 7 (the RoCE "
                             "priority, roce_fabric.ecn_priorities)" % (prios,), option="intent")
        mask = 0
        for prio_bit in prios:
            mask |= 1 << prio_bit
        derived["ROCE_CC_PRIO_MASK"] = mask
    return derived


def _derived_owner(key):
    """The intent key behind a derived key (``CNP_DSCP_P2`` -> cnp_dscp), or None."""
    match = PORT_SUFFIX.fullmatch(key)
    base = match.group(1) if match else key
    name = DERIVED_NAMES.get(base)
    return name


def check_keys(option, mapping, allow_list):
    """Check ``mapping`` (settings or extra): names, the allow-list, the values; return
    ``{KEY: (kind, value)}`` with per-port names left without a suffix where given so."""
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise InputError("%s must be a mapping of mlxconfig parameters to values, for example {ATS_ENABLED: true}"
                         % option, option=option)
    checked = {}
    for key, value in mapping.items():
        if not isinstance(key, str) or not full_match(mlxconfig.PARAM, key):
            raise InputError("%s key %r is not an mlxconfig parameter name: write it as 'mlxconfig q' prints it, in "
                             "capitals (ATS_ENABLED, LINK_TYPE_P1)" % (option, key), option=option)
        owner = _derived_owner(key)
        if owner:
            raise InputError("%s: %s comes from the fabric intent (roce_fabric.%s), on every port; set it there, "
                             "not by hand" % (option, key, owner), option=option)
        if allow_list:
            match = PORT_SUFFIX.fullmatch(key)
            known = (key in DEVICE_KEYS or key in PORT_KEYS or (match is not None and match.group(1) in PORT_KEYS))
            if not known:
                raise InputError(
                    "%s: %s is not one of the firmware keys this collection knows (%s, and per port with _P1, _P2 "
                    "or no suffix for every port: %s); check the spelling, or give it as a raw key in extra "
                    "(the firmware role's firmware_extra)" % (option, key, ", ".join(DEVICE_KEYS), ", ".join(PORT_KEYS)),
                    option=option, key=key)
        try:
            checked[key] = mlxconfig.normalise_value(key, value)
        except InputError as exc:
            raise InputError(exc.msg.replace("settings.", option + ".", 1), option=option)
    return checked


def validate_params(params):
    """Everything the parameters say, checked without touching the host."""
    derived = check_intent(params.get("intent"))
    settings = check_keys("settings", params.get("settings"), allow_list=True)
    extra = check_keys("extra", params.get("extra"), allow_list=False)
    both = sorted(set(settings) & set(extra))
    if both:
        raise InputError("%s given in both settings and extra: keep one" % ", ".join(both), option="extra")
    devices = params.get("devices") or []
    if not isinstance(devices, list):
        raise InputError("devices must be a list of PCI addresses (lspci -D -d 15b3:)", option="devices")
    for device in devices:
        mlxconfig.check_device("devices", device)
    tool = params.get("tool") or "auto"
    if tool not in ("auto",) + mlxconfig.TOOLS:
        raise InputError("tool=%r must be auto, mlxconfig or mstconfig" % (tool,), option="tool")
    return derived, settings, extra, devices, tool


def find_cards(host):
    """One PCI function per ConnectX/BlueField card (the lowest), virtual functions left out."""
    if not host.isdir(PCI_DEVICES):
        return []
    slots = {}
    for bdf in sorted(host.listdir(PCI_DEVICES)):
        if not full_match(mlxconfig.BDF, bdf):
            continue
        base = "%s/%s" % (PCI_DEVICES, bdf)
        vendor = (host.read(base + "/vendor") or "").strip().lower()
        pci_class = (host.read(base + "/class") or "").strip().lower()
        if vendor != MELLANOX_VENDOR or not pci_class.startswith(NIC_CLASSES) or host.exists(base + "/physfn"):
            continue
        slots.setdefault(bdf.rsplit(".", 1)[0], bdf)
    return sorted(slots.values())[:MAX_CARDS]


def _ports(params, base):
    """The port numbers the card lists for per-port key ``base`` (``KEY_P<n>``)."""
    ports = []
    for name in params:
        match = PORT_SUFFIX.fullmatch(name)
        if match and match.group(1) == base:
            ports.append(int(match.group(2)))
    return sorted(ports)


class FirmwareLayer(Engine):
    """``rdmaops.roce.firmware_layer``: intent, settings, extra, devices, tool, check_active,
    max_disruption."""

    commands_key = "commands"

    def __init__(self, ctx, params):
        super(FirmwareLayer, self).__init__(ctx, params)
        self.engines = []  # (device, MlxconfigEngine)
        self.unsupported = {}  # device -> derived keys its firmware does not offer
        self.marker = {}
        self.boot_id = None
        self.no_device = False
        self.held = False
        self.plan_ref = None

    # -- validate -----------------------------------------------------------------------------
    def validate(self):
        self.derived, self.settings, self.extra, self.devices, self.tool = validate_params(self.params)

    # -- read ---------------------------------------------------------------------------------
    def read(self):
        devices = self.devices or find_cards(self.host)
        if not devices:
            self.no_device = True
            return
        self.boot_id = (self.host.read(BOOT_ID) or "").strip() or None
        self.marker = self._read_marker()
        for device in devices:
            engine = mlxconfig.MlxconfigEngine(self.ctx, dict(device=device, tool=self.tool))
            engine.device, engine.tool_choice = device, self.tool
            # array elements (only in extra) must be known before the query asks for them
            engine.wanted = dict((key, want) for key, want in self.extra.items() if "[" in key)
            engine.read_device()
            engine.wanted = self._wanted(device, engine.query["params"])
            engine.decide()
            self.engines.append((device, engine))
        self._check_active()

    def _wanted(self, device, params):
        wanted = {}
        missing = []
        for base, value in sorted(self.derived.items()):
            ports = _ports(params, base)
            if not ports:
                missing.append("%s_P1" % base)
            for port in ports:
                wanted["%s_P%d" % (base, port)] = ("number", value)
        if missing:
            self.unsupported[device] = missing
            self.ctx.warn("%s: the firmware does not offer %s; the fabric intent's value%s not set there (an older "
                          "card or firmware: set it at run time with the nic layer's ECN settings)"
                          % (device, ", ".join(missing), " is" if len(missing) == 1 else "s are"))
        for key, want in self.settings.items():
            if key in PORT_KEYS:
                ports = _ports(params, key)
                if not ports:
                    raise InputError("settings: %s on %s does not offer %s_P1 (not in 'mlxconfig -d %s -e q'); "
                                     "nothing was set" % (key, device, key, device), option="settings", unknown=[key])
                for port in ports:
                    wanted["%s_P%d" % (key, port)] = want
            else:
                wanted[key] = want
        wanted.update(self.extra)
        return wanted

    def _read_marker(self):
        text = self.host.read(MARKER)
        if not text:
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            self.ctx.warn("%s is not JSON; it is written again at the next change" % MARKER)
            return {}
        return data if isinstance(data, dict) and isinstance(data.get("devices"), dict) else {}

    def _check_active(self):
        """After a reboot, what this layer set must be running."""
        if not self.params.get("check_active", True) or self.boot_id is None:
            return
        problems = []
        for device, engine in self.engines:
            record = self.marker.get("devices", {}).get(device)
            if not isinstance(record, dict) or record.get("boot_id") in (None, self.boot_id):
                continue
            values = record.get("values") if isinstance(record.get("values"), dict) else {}
            for key in engine.pending(engine.query):
                if key not in values:
                    continue
                entry = engine.query["params"][key]
                try:
                    recorded = mlxconfig.normalise_value(key, values[key])
                except InputError:
                    continue
                if same_value(recorded, entry.get("next_boot")):
                    problems.append("%s %s runs %s, its next-boot value is %s" % (
                        device, key, (entry.get("current") or {}).get("text"), entry["next_boot"]["text"]))
        if problems:
            raise RdmaopsError(
                "the host booted again since the firmware layer set these values, but the firmware does not run them: "
                "%s. The NIC's firmware was not reloaded (a warm reboot that keeps the card powered): power-cycle the "
                "host or run 'mlxfwreset -d DEVICE reset' while no job runs, then run the layer again" % "; ".join(problems),
                problems=problems)

    # -- plan ---------------------------------------------------------------------------------
    def plan(self, plan):
        self.plan_ref = plan
        for _device, engine in self.engines:
            engine.plan(plan)
        if plan.changed:
            plan.then("record the firmware values set in this boot (%s)" % MARKER, self._write_marker)

    def _write_marker(self):
        devices = dict(self.marker.get("devices", {})) if isinstance(self.marker.get("devices"), dict) else {}
        for device, engine in self.engines:
            if not engine.to_set:
                continue
            record = devices.get(device) if isinstance(devices.get(device), dict) else {}
            values = dict(record.get("values", {})) if record.get("boot_id") == self.boot_id else {}
            values.update(("%s" % key, "%s" % engine.wanted[key][1]) for key in engine.to_set)
            devices[device] = dict(boot_id=self.boot_id, values=values)
        files.write_atomic(self.host, MARKER, json.dumps(dict(devices=devices), indent=1, sort_keys=True) + "\n",
                           mode=0o644, makedirs=True)

    def held_back(self, plan):
        limit = self.params.get("max_disruption")
        if not limit:
            return False
        needed = plan.disruption if plan.changed else (REBOOT if self._reboot_pending() else NONE)
        self.held = disruption_rank(needed) > disruption_rank(limit)
        return self.held

    # -- verify -------------------------------------------------------------------------------
    def verify(self):
        problems = []
        for device, engine in self.engines:
            problems.extend("%s: %s" % (device, problem) for problem in engine.verify())
        return problems

    # -- result -------------------------------------------------------------------------------
    def _reboot_pending(self, planned=False):
        pending = []
        for device, engine in self.engines:
            final = engine.after_query or engine.query
            in_plan = planned and engine.after_query is None and bool(engine.to_set)
            pending.extend("%s %s" % (device, key) for key in engine.pending(final, planned=in_plan))
        return pending

    def result(self):
        if self.no_device:
            return dict(no_device=True, devices={}, reboot_required=False, reboot_pending=[],
                        msg="no device: no ConnectX/BlueField card on this host (no PCI function with vendor %s); "
                            "nothing to set" % MELLANOX_VENDOR)
        devices = {}
        for device, engine in self.engines:
            part = engine.result()
            part["reboot_pending"] = part.pop("pending")
            if device in self.unsupported:
                part["unsupported"] = self.unsupported[device]
            devices[device] = part
        pending = self._reboot_pending(planned=True)
        result = dict(no_device=False, devices=devices, reboot_required=bool(pending), reboot_pending=pending)
        if self.held and self.plan_ref is not None and not self.plan_ref.changed and pending:
            # nothing to set, but values set earlier wait for a reboot: the rollout drains and reboots
            change = "reboot: firmware next-boot values not running yet: %s" % ", ".join(pending)
            result.update(disruption=REBOOT, disruptive_changes=[change], pending=[change])
        return result
