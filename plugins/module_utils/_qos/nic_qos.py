# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NIC QoS of one netdev: trust, DSCP->priority, PFC, ETS, receive buffers, cable length.

Two backends hit the same kernel DCB netlink ops (reference section 2.4), so they never disagree:

* ``dcb`` (iproute2 >= 5.11): read with ``dcb -j``, written with ``dcb ... set``/``dcb app add``;
* ``mlnx_qos`` (mlnx-tools, shipped with MLNX_OFED / DOCA-OFED): read from its one status print.

``auto`` takes ``dcb`` when it is installed and the netdev answers it, else ``mlnx_qos``.  A netdev
whose driver has no DCB ops (virtio_net, veth, ...) makes ``dcb`` answer "Operation not supported":
that becomes :class:`DcbUnsupported`, naming the driver and what to do.

The state is one dict for both backends::

    trust       "pcp" | "dscp"   (mlx5: DSCP trust is "the DSCP app table is not empty")
    pfc         sorted priorities with PFC on
    dscp2prio   {dscp: prio}     the DSCP app table
    cable_len   meters           (the PFC "delay" on mlx5)
    prio_tc     8 TCs, index = priority
    ets         {"tsa": [8], "bw": [8]}
    buffer_size 8 byte sizes     prio2buffer  8 buffer ids

Changing PFC toggles the physical link and changing trust re-opens channels, so a part that
already matches is never written, and each differing part is one command (:data:`ORDER`).
:func:`reapply_commands` gives the commands that establish a desired state from scratch (the
boot-time re-apply), from the same normalised desired state as the engine.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import (
    InputError,
    RdmaopsError,
    RefusedError,
    ToolNotFound,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import LINK_RESET
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import not_option_like
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import NET_CLASS, int_or_none
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import dcb as dcb_parsers
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.mlnx_qos import ets_of, parse_mlnx_qos

BACKENDS = ("auto", "mlnx_qos", "dcb")
# The order parts are written in: the TC layout first, then classification, then PFC and buffers.
ORDER = ("prio_tc", "ets", "trust", "dscp2prio", "pfc", "cable_len", "buffer_size", "prio2buffer")
# What each part does to the RDMA connections over the port when it changes: PFC toggles the
# physical link, trust re-opens the channels, the TC layout, ETS and the receive buffers are
# re-programmed with the queues.  The DSCP map and the cable length only steer or size what
# comes next, but a job's traffic moving to another priority mid-flight is not "online" for a
# lossless fabric either: they are classed with the link reset too, on the safe side.
PART_DISRUPTION = dict((part, LINK_RESET) for part in ORDER)
ETS_TSA = ("strict", "ets", "vendor")
MAX_CABLE_LEN = 999  # mlx5 keeps 0 < len < MLX5E_MAX_CABLE_LENGTH (1000)
# mlnx_qos --trust dscp (and the mlx5 firmware default): DSCP d -> priority d >> 3.
DEFAULT_DSCP2PRIO = dict((dscp, dscp >> 3) for dscp in range(64))
# Drivers whose ieee_setapp replaces an existing mapping of the same DSCP by itself.
REPLACING_DRIVERS = ("mlx5_core",)


class DcbUnsupported(RdmaopsError):
    """The netdev's driver has no DCB support (a distinct type so an aggregate can report it once)."""


# -- desired state ---------------------------------------------------------------------------------
def _int(key, value, lo, hi):
    number = int_or_none(value)
    if number is None or number < lo or number > hi:
        raise InputError("%s: %r is not a whole number from %d to %d" % (key, value, lo, hi), option=key.split("[")[0])
    return number


def _list8(key, value, lo, hi):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 8:
        raise InputError("%s must list 8 values, one per priority or TC 0-7 (got %r)" % (key, value), option=key)
    return [_int("%s[%d]" % (key, index), item, lo, hi) for index, item in enumerate(value)]


def _dscp2prio(value):
    """A dict ``{dscp: prio}``; a list of ``[dscp, prio]`` pairs or ``"dscp:prio"`` strings is accepted too."""
    if value is None:
        return None
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if isinstance(item, str) and ":" in item:
                item = item.split(":", 1)
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise InputError("dscp2prio: %r is not a [dscp, prio] pair" % (item,), option="dscp2prio")
            items.append((item[0], item[1]))
    else:
        raise InputError("dscp2prio must be a mapping of DSCP (0-63) to priority (0-7), e.g. {26: 3, 48: 6}",
                         option="dscp2prio")
    mapping = {}
    for dscp, prio in items:
        dscp = _int("dscp2prio", dscp, 0, 63)
        prio = _int("dscp2prio[%d]" % dscp, prio, 0, 7)
        if mapping.get(dscp, prio) != prio:
            raise InputError("dscp2prio gives DSCP %d two priorities" % dscp, option="dscp2prio")
        mapping[dscp] = prio
    if not mapping:
        raise InputError("dscp2prio is empty: leave it unset, or set trust: pcp to remove every DSCP entry",
                         option="dscp2prio")
    return mapping


def _ets(value):
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(("tsa", "bw")) or "tsa" not in value or "bw" not in value:
        raise InputError("ets must be a dict with tsa (8 of strict, ets, vendor) and bw (8 percents), one per TC",
                         option="ets")
    tsa = value["tsa"]
    if not isinstance(tsa, (list, tuple)) or len(tsa) != 8 or any(item not in ETS_TSA for item in tsa):
        raise InputError("ets.tsa must list 8 of %s, one per TC (got %r)" % (", ".join(ETS_TSA), tsa), option="ets")
    bw = _list8("ets.bw", value["bw"], 0, 100)
    for tc in range(8):
        if tsa[tc] != "ets" and bw[tc] != 0:
            raise InputError("ets.bw[%d] must be 0: TC %d is %s, and only ets TCs get a bandwidth share" % (tc, tc, tsa[tc]),
                             option="ets")
    if "ets" in tsa and sum(bw) != 100:
        raise InputError("ets.bw of the ets TCs must add up to 100 (they add up to %d)" % sum(bw), option="ets")
    return dict(tsa=list(tsa), bw=bw)


def normalize(desired):
    """Validate the desired state of one netdev (a plain dict of the module's options).

    Return a new dict with every part in its canonical form (None: not managed); raise
    InputError naming the option and the fix.  Nothing is read.
    """
    interface = desired.get("interface")
    check_ifname("interface", interface)
    not_option_like("interface", interface)
    backend = desired.get("backend") or "auto"
    if backend not in BACKENDS:
        raise InputError("backend=%r: use one of %s" % (backend, ", ".join(BACKENDS)), option="backend")
    trust = desired.get("trust")
    if trust not in (None, "pcp", "dscp"):
        raise InputError("trust=%r: use pcp or dscp" % (trust,), option="trust")
    pfc = desired.get("pfc")
    if pfc is not None:
        if not isinstance(pfc, (list, tuple)):
            raise InputError("pfc must be a list of priorities (0-7) with PFC on, e.g. [3]; [] turns PFC off", option="pfc")
        pfc = sorted(set(_int("pfc", prio, 0, 7) for prio in pfc))
    dscp2prio = _dscp2prio(desired.get("dscp2prio"))
    if dscp2prio and trust == "pcp":
        raise InputError("dscp2prio cannot be used with trust: pcp (any DSCP entry switches the port to DSCP trust); "
                         "set trust: dscp or drop dscp2prio", option="dscp2prio")
    cable_len = desired.get("cable_len")
    if cable_len is not None:
        cable_len = _int("cable_len", cable_len, 1, MAX_CABLE_LEN)
    return dict(
        interface=interface,
        backend=backend,
        trust=trust,
        pfc=pfc,
        dscp2prio=dscp2prio,
        prio_tc=_list8("prio_tc", desired.get("prio_tc"), 0, 7),
        ets=_ets(desired.get("ets")),
        buffer_size=_list8("buffer_size", desired.get("buffer_size"), 0, 2 ** 31 - 1),
        prio2buffer=_list8("prio2buffer", desired.get("prio2buffer"), 0, 7),
        cable_len=cable_len,
    )


# -- commands --------------------------------------------------------------------------------------
def _csv(values):
    return ",".join(str(value) for value in values)


def _pairs(values):
    return ["%d:%s" % (index, value) for index, value in enumerate(values)]


def _dscp_pairs(mapping):
    return ["%d:%d" % (dscp, mapping[dscp]) for dscp in sorted(mapping)]


def part_command(backend, interface, part, value, before=None, driver=None):
    """The one argv that sets ``part`` to ``value`` (``before``: the app table it replaces)."""
    if backend == "mlnx_qos":
        base = ["mlnx_qos", "-i", interface]
        if part == "trust":
            return base + ["--trust", value]
        if part == "dscp2prio":
            args = []
            for dscp in sorted(value):
                args += ["--dscp2prio", "set,%d,%d" % (dscp, value[dscp])]
            return base + args
        if part == "pfc":
            return base + ["--pfc", _csv(1 if prio in value else 0 for prio in range(8))]
        if part == "cable_len":
            return base + ["--cable_len", str(value)]
        if part == "prio_tc":
            return base + ["-p", _csv(value)]
        if part == "ets":
            return base + ["-s", _csv(value["tsa"]), "-t", _csv(value["bw"])]
        if part == "buffer_size":
            return base + ["--buffer_size", _csv(value)]
        if part == "prio2buffer":
            return base + ["--prio2buffer", _csv(value)]
    else:
        dev = ["dev", interface]
        if part == "trust":
            if value == "pcp":
                return ["dcb", "app", "flush"] + dev + ["dscp-prio"]
            return ["dcb", "app", "add"] + dev + ["dscp-prio"] + _dscp_pairs(DEFAULT_DSCP2PRIO)
        if part == "dscp2prio":
            # A DSCP that already maps elsewhere: mlx5 swaps the mapping on add by itself (replace
            # would then fail to delete the old entry); other drivers keep both unless replaced.
            before = before or {}
            verb = "add"
            if driver not in REPLACING_DRIVERS and any(dscp in before for dscp in value):
                verb = "replace"
            return ["dcb", "app", verb] + dev + ["dscp-prio"] + _dscp_pairs(value)
        if part == "pfc":
            return ["dcb", "pfc", "set"] + dev + ["prio-pfc"] + _pairs("on" if prio in value else "off" for prio in range(8))
        if part == "cable_len":
            return ["dcb", "pfc", "set"] + dev + ["delay", str(value)]
        if part == "prio_tc":
            return ["dcb", "ets", "set"] + dev + ["prio-tc"] + _pairs(value)
        if part == "ets":
            return ["dcb", "ets", "set"] + dev + ["tc-tsa"] + _pairs(value["tsa"]) + ["tc-bw"] + _pairs(value["bw"])
        if part == "buffer_size":
            return ["dcb", "buffer", "set"] + dev + ["buffer-size"] + _pairs(value)
        if part == "prio2buffer":
            return ["dcb", "buffer", "set"] + dev + ["prio-buffer"] + _pairs(value)
    raise ValueError("unknown part %r" % (part,))


def _dscp_undo(backend, interface, before, entries):
    """The argv that puts the DSCP entries ``entries`` (written over ``before``) back as they were."""
    restore = dict((dscp, before[dscp]) for dscp in entries if dscp in before)
    remove = dict((dscp, entries[dscp]) for dscp in entries if dscp not in before)
    argvs = []
    if backend == "mlnx_qos":
        args = []
        for dscp in sorted(remove):
            args += ["--dscp2prio", "del,%d,%d" % (dscp, remove[dscp])]
        for dscp in sorted(restore):
            args += ["--dscp2prio", "set,%d,%d" % (dscp, restore[dscp])]
        if args:
            argvs.append(["mlnx_qos", "-i", interface] + args)
    else:
        if remove:
            argvs.append(["dcb", "app", "del", "dev", interface, "dscp-prio"] + _dscp_pairs(remove))
        if restore:
            argvs.append(["dcb", "app", "replace", "dev", interface, "dscp-prio"] + _dscp_pairs(restore))
    return argvs


def reapply_commands(desired, backend="dcb"):
    """The argvs that establish ``desired`` from scratch (boot, driver reload), in :data:`ORDER`.

    Pure: nothing is read.  ``desired`` is the module's options (validated here); ``backend`` is
    ``dcb`` or ``mlnx_qos`` (``auto`` in ``desired`` is resolved by the caller, who knows the
    host).  Running the list twice leaves the same state: every command sets a whole part to a
    value (``dcb app replace`` for DSCP entries, so a repeat does not add duplicates).
    """
    want = normalize(desired)
    if backend not in ("dcb", "mlnx_qos"):
        raise InputError("reapply_commands needs backend dcb or mlnx_qos, not %r" % (backend,), option="backend")
    interface = want["interface"]
    argvs = []
    for part in ORDER:
        value = want[part]
        if value is None:
            continue
        if part == "trust" and value == "dscp" and backend == "dcb":
            # As a run from PCP trust does: the default map, with the asked entries over it.
            table = dict(DEFAULT_DSCP2PRIO)
            table.update(want["dscp2prio"] or {})
            argvs.append(["dcb", "app", "replace", "dev", interface, "dscp-prio"] + _dscp_pairs(table))
        elif part == "dscp2prio" and backend == "dcb":
            if want["trust"] != "dscp":  # (with trust: dscp the table above holds them)
                argvs.append(["dcb", "app", "replace", "dev", interface, "dscp-prio"] + _dscp_pairs(value))
        else:
            argvs.append(part_command(backend, interface, part, value, driver="mlx5_core"))
    return argvs


# -- reading ---------------------------------------------------------------------------------------
def _output(result):
    return ((result.stderr or "").strip() or (result.stdout or "").strip() or "rc=%d" % result.rc)


class NicQos(Engine):
    """``rdmaops.roce.nic_qos`` for one netdev; ``params`` is its desired state as a plain dict.

    Planned into any Plan (``execute(engine, plan)``), so an aggregate can plan several
    netdevs' engines into one plan.  Change keys are ``"<interface> <part>"``.
    """

    commands_key = None  # ``commands`` is the setting commands, reported by result()

    def __init__(self, ctx, params):
        super(NicQos, self).__init__(ctx, params)
        self.want = None
        self.backend = None
        self.driver = None
        self.before = None
        self.after = None
        self.predicted = None
        self.planned = []
        self.ran = []
        self._first_pfc = None
        self._unreadable = {}

    # validate -------------------------------------------------------------------------------
    def validate(self):
        self.want = normalize(self.params)

    @property
    def interface(self):
        return self.want["interface"]

    def managed(self):
        """The parts this run reads and reports (trust, pfc, dscp2prio, cable_len always)."""
        parts = ["trust", "pfc", "dscp2prio", "cable_len"]
        return parts + [part for part in ("prio_tc", "ets", "buffer_size", "prio2buffer") if self.want[part] is not None]

    # read -----------------------------------------------------------------------------------
    def read(self):
        interface = self.interface
        if not self.host.exists("%s/%s" % (NET_CLASS, interface)):
            raise InputError("interface %s does not exist on this host (see %s)" % (interface, NET_CLASS), option="interface")
        self.driver = self.host.readlink_name("%s/%s/device/driver" % (NET_CLASS, interface))
        self.backend = self._choose()
        self.before = self._read_state()
        self._check_readable(self.before)

    def _no_dcb(self, tool, output):
        if self.driver:
            what = "its driver %s has no DCB support" % self.driver
        else:
            what = "it is a virtual netdev with no device driver below it, so it has no DCB support"
        return DcbUnsupported(
            "%s: trust, PFC and ETS cannot be set on this netdev: %s (%s answered: %s). Run nic_qos on the netdevs "
            "of the RDMA NICs (rdma_facts lists them; ConnectX netdevs use mlx5_core), or leave this interface out"
            % (self.interface, what, tool, output),
            interface=self.interface, driver=self.driver, backend=tool,
        )

    def _choose(self):
        asked = self.want["backend"]
        interface = self.interface
        if asked in ("auto", "dcb") and self.runner.has("dcb"):
            result = self.runner.run(["dcb", "-j", "pfc", "show", "dev", interface], check=False)
            parsed = dcb_parsers.parse_pfc(result.stdout) if result.rc == 0 else None
            if parsed is not None:
                self._first_pfc = parsed
                return "dcb"
            if dcb_parsers.unsupported(result.stderr):
                raise self._no_dcb("dcb", _output(result))
            if asked == "dcb" or not self.runner.has("mlnx_qos"):
                raise RdmaopsError("%s: dcb -j pfc show failed: %s" % (interface, _output(result)),
                                   cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
            return "mlnx_qos"
        if asked == "dcb":
            raise ToolNotFound("dcb")
        if self.runner.has("mlnx_qos"):
            return "mlnx_qos"
        if asked == "mlnx_qos":
            raise ToolNotFound("mlnx_qos")
        raise RdmaopsError("neither dcb (iproute2 5.11 or later) nor mlnx_qos (mlnx-tools, shipped with MLNX_OFED and "
                           "DOCA-OFED) was found on PATH: install iproute2 >= 5.11 or mlnx-tools", tool="dcb")

    def _read_state(self):
        if self.backend == "dcb":
            return self._read_dcb()
        return self._read_mlnx_qos()

    def _read_dcb(self):
        interface = self.interface
        state = {}
        pfc, self._first_pfc = self._first_pfc, None
        if pfc is None:
            result = self.runner.run(["dcb", "-j", "pfc", "show", "dev", interface], check=False)
            pfc = self._parsed(result, dcb_parsers.parse_pfc, "dcb -j pfc show")
        state["pfc"] = pfc["pfc"]
        state["cable_len"] = pfc["delay"]
        result = self.runner.run(["dcb", "-j", "app", "show", "dev", interface, "dscp-prio"], check=False)
        entries = self._parsed(result, dcb_parsers.parse_app_dscp, "dcb -j app show")
        state["dscp2prio"] = dict(entries)
        state["trust"] = "dscp" if entries else "pcp"
        if self.want["prio_tc"] is not None or self.want["ets"] is not None:
            result = self.runner.run(["dcb", "-j", "ets", "show", "dev", interface], check=False)
            ets = self._parsed(result, dcb_parsers.parse_ets, "dcb -j ets show", optional=True)
            state["prio_tc"] = ets["prio_tc"] if ets else None
            state["ets"] = dict(tsa=ets["tsa"], bw=ets["bw"]) if ets else None
        if self.want["buffer_size"] is not None or self.want["prio2buffer"] is not None:
            result = self.runner.run(["dcb", "-j", "buffer", "show", "dev", interface], check=False)
            buf = self._parsed(result, dcb_parsers.parse_buffer, "dcb -j buffer show", optional=True)
            state["buffer_size"] = buf["buffer_size"] if buf else None
            state["prio2buffer"] = buf["prio2buffer"] if buf else None
        return self._only_managed(state)

    def _parsed(self, result, parser, what, optional=False):
        parsed = parser(result.stdout) if result.rc == 0 else None
        if parsed is not None:
            return parsed
        if optional and result.rc != 0:
            self._unreadable[what] = _output(result)
            return None
        if dcb_parsers.unsupported(result.stderr):
            raise self._no_dcb("dcb", _output(result))
        raise RdmaopsError("%s: %s dev %s failed or printed something unreadable: %s" % (self.interface, what, self.interface,
                                                                                         _output(result)),
                           cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)

    def _read_mlnx_qos(self):
        argv = ["mlnx_qos", "-i", self.interface] + (["-a"] if self.want["ets"] is not None else [])
        result = self.runner.run(argv, check=False)
        if result.rc != 0:
            output = _output(result)
            if "Operation not supported" in output or "Errno 95" in output:
                raise self._no_dcb("mlnx_qos", output)
            raise RdmaopsError("%s: %s failed: %s" % (self.interface, " ".join(argv), output),
                               cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
        parsed = parse_mlnx_qos(result.stdout)
        if parsed["trust"] not in ("pcp", "dscp") or parsed["pfc"] is None:
            raise RdmaopsError("%s: mlnx_qos printed no trust state or PFC table (trust state %r): %s"
                               % (self.interface, parsed["trust"], output_tail(result.stdout)),
                               cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
        state = dict(trust=parsed["trust"], pfc=parsed["pfc"], dscp2prio=parsed["dscp2prio"], cable_len=parsed["cable_len"],
                     prio_tc=parsed["prio_tc"] if parsed["prio_tc"] and None not in parsed["prio_tc"] else None,
                     ets=ets_of(parsed) if parsed["tcs"] else None,
                     buffer_size=parsed["buffer_size"], prio2buffer=parsed["prio2buffer"])
        return self._only_managed(state)

    def _only_managed(self, state):
        return dict((part, state.get(part)) for part in self.managed())

    def _check_readable(self, state):
        """A part that was asked but that the device does not report cannot be managed: refuse it."""
        missing = []
        for part in ("prio_tc", "ets", "buffer_size", "prio2buffer", "cable_len"):
            if self.want[part] is not None and state.get(part) is None:
                missing.append(part)
        if missing:
            why = "; ".join("%s: %s" % item for item in sorted(self._unreadable.items()))
            raise RefusedError(
                "%s: the device does not report %s through %s%s, so %s cannot be set here; leave %s unset for this "
                "interface (receive buffers need a port with buffer support, e.g. a ConnectX-5 or later)"
                % (self.interface, ", ".join(missing), self.backend, " (%s)" % why if why else "",
                   "it" if len(missing) == 1 else "they", "it" if len(missing) == 1 else "them"),
                interface=self.interface, parts=missing,
            )

    # plan -----------------------------------------------------------------------------------
    def plan(self, plan):
        state = dict(self.before)
        self.planned = []
        for part in ORDER:
            asked = self.want[part]
            if asked is None:
                continue
            current = state.get(part)
            if part == "dscp2prio":
                entries = dict((dscp, prio) for dscp, prio in asked.items() if current.get(dscp) != prio)
                if not entries:
                    continue
                argv = part_command(self.backend, self.interface, part, entries, before=current, driver=self.driver)
                undos = _dscp_undo(self.backend, self.interface, current, entries)
                after = dict(current)
                after.update(entries)
                self._add(plan, part, dict(current), after, argv, undos,
                          "%s: set DSCP->priority %s" % (self.interface, ", ".join(_dscp_pairs(entries))))
                state["dscp2prio"] = after
                state["trust"] = "dscp"
                continue
            if current == asked:
                continue
            argv = part_command(self.backend, self.interface, part, asked, before=state.get("dscp2prio"), driver=self.driver)
            undos = self._undo(part, current, asked, state)
            self._add(plan, part, current, asked, argv, undos,
                      "%s: set %s from %s to %s" % (self.interface, part, _show(current), _show(asked)))
            state[part] = asked
            if part == "trust":
                old = state["dscp2prio"]
                state["dscp2prio"] = {} if asked == "pcp" else (dict(DEFAULT_DSCP2PRIO) if not old else old)
        self.predicted = state

    def _undo(self, part, before, after, state):
        if before is None:
            return []
        if part == "trust":
            if before == "pcp":
                return [part_command(self.backend, self.interface, "trust", "pcp")]
            # back to DSCP trust with the entries the table had
            entries = state.get("dscp2prio") or {}
            if self.backend == "mlnx_qos" and entries == DEFAULT_DSCP2PRIO:
                return [part_command(self.backend, self.interface, "trust", "dscp")]
            if self.backend == "mlnx_qos":
                return [part_command(self.backend, self.interface, "dscp2prio", entries)] if entries else []
            return [["dcb", "app", "add", "dev", self.interface, "dscp-prio"] + _dscp_pairs(entries)] if entries else []
        return [part_command(self.backend, self.interface, part, before, driver=self.driver)]

    def _add(self, plan, part, before, after, argv, undos, description):
        self.planned.append(" ".join(argv))

        def action():
            self._run(argv)

        def undo():
            for undo_argv in undos:
                self._run(undo_argv)

        plan.add("%s %s" % (self.interface, part), before, after, action, description, undo=undo if undos else None,
                 disruption=PART_DISRUPTION[part])

    def _run(self, argv):
        self.ran.append(" ".join(argv))
        self.runner.run(argv)

    # verify ---------------------------------------------------------------------------------
    def verify(self):
        self.after = self._read_state()
        problems = []
        for part in ORDER:
            asked = self.want[part]
            if asked is None:
                continue
            now = self.after.get(part)
            if part == "dscp2prio":
                wrong = dict((dscp, prio) for dscp, prio in asked.items() if (now or {}).get(dscp) != prio)
                if wrong:
                    problems.append("%s: DSCP entries %s are not set" % (self.interface, ", ".join(_dscp_pairs(wrong))))
            elif now != asked:
                problems.append("%s: %s is %s after setting %s" % (self.interface, part, _show(now), _show(asked)))
        return problems

    # result ---------------------------------------------------------------------------------
    def result(self):
        after = self.after
        if after is None:
            after = self.predicted if self.predicted is not None else self.before
        return dict(
            interface=self.want["interface"] if self.want else self.params.get("interface"),
            backend=self.backend,
            driver=self.driver,
            before=self.before or {},
            after=after or {},
            commands=list(self.planned) if self.check_mode else list(self.ran),
        )


def output_tail(text, lines=5):
    return " | ".join((text or "").strip().splitlines()[-lines:])


def _show(value):
    if isinstance(value, list) and len(value) == 8:
        return ",".join(str(item) for item in value)
    if isinstance(value, dict) and set(value) == set(("tsa", "bw")):
        return "tsa %s bw %s" % (",".join(str(v) for v in value["tsa"]), ",".join(str(v) for v in value["bw"]))
    return "%s" % (value,)
