# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""/etc/nccl.conf from the fabric intent and the host's own RDMA devices.

How NCCL reads the file (``setEnvFile``/``initEnv`` in NCCL's ``src/misc/param.cc``, every
release from 2.x to 2.29), which decides how this engine writes and edits it:

* one ``NAME=VALUE`` per line; the name is every byte before the first ``=``, taken verbatim
  (``NCCL_IB_TC = 106`` sets a variable called ``"NCCL_IB_TC "``, which NCCL never asks for), the
  value every byte after it (at most 1023); a line without ``=`` is skipped;
* a line is a comment only when its first byte is ``#`` (an indented ``#`` is not);
* each pair goes to ``setenv(name, value, 0)``: a variable already set wins.  So the process
  environment beats every file, ``$NCCL_CONF_FILE`` (NCCL >= 2.23) or else ``~/.nccl.conf`` beats
  ``/etc/nccl.conf``, and inside one file the *first* line for a name wins.

Our lines therefore carry no spaces around ``=``, live in a marked block (``# BEGIN/END
rdmaops.roce nccl``, comments to NCCL) and every other line of the file is kept byte for byte.
A foreign line that sets one of our names to another value is refused before anything is written
(whichever line came first would silently win); one that sets the same value is only warned about.

Values (all computed here, on the host, in one call):

* ``NCCL_IB_HCA``: ``=dev:port,...`` (``=``: exact names; without it ``mlx5_1`` would also select
  ``mlx5_10``..``mlx5_17``), the RoCE ports (Ethernet link layer, with a netdev) on the links the
  nic layer configures: every RDMA netdev, or those named in ``interfaces`` (``roce_ports`` of
  rdma_facts, the same selection ``roce_nic_ports`` makes);
* ``NCCL_IB_GID_INDEX``: rdma_facts' ``roce_v2_ipv4_gid_index`` of those ports (the RoCE v2 GID
  of the netdev's IPv4 address); NCCL takes one index for all devices, so ports that disagree are
  refused, naming each port and its index;
* ``NCCL_IB_TC``: the ToS byte of the intent (``roce_tos``: DSCP << 2 | ECN bits);
* ``NCCL_SOCKET_IFNAME``: ``=<name>`` of ``socket_ifname``, or of the interface of the host's
  IPv4 default route (``/proc/net/route``): NCCL's bootstrap and socket fallback go over the
  management network, the one every host reaches every other host on;
* ``NCCL_IB_TIMEOUT`` / ``NCCL_IB_RETRY_CNT``: as given (the role's defaults are NCCL's own
  current defaults, 20 and 7 (``NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 20)``, ``IbRetryCnt`` 7 in
  ``src/transport/net_ib``), written so that older releases, whose timeout default was lower (18
  in 2.19), behave the same).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import absolute_path, full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
from ansible_collections.rdmaops.roce.plugins.module_utils._host.ports import roce_ports

DEFAULT_PATH = "/etc/nccl.conf"
BLOCK = "nccl"
ROUTE_TABLE = "/proc/net/route"
# NCCL copies at most 1023 bytes of a name or a value (char envVar[1024], envValue[1024]).
NCCL_MAX = 1023
NAME_RE = re.compile(r"NCCL_[A-Z0-9_]+")
# Characters that would end the line or that NCCL's line reader cannot carry.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
OWNED_KEYS = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_SOCKET_IFNAME", "NCCL_IB_TIMEOUT",
              "NCCL_IB_RETRY_CNT")
HEADER = (
    "# Managed by rdmaops.roce.nccl_conf from the fabric intent and this host's RDMA devices; the",
    "# lines of this block are rewritten on every run, lines outside it are kept as they are.",
    "# NCCL applies the environment first, then $NCCL_CONF_FILE or ~/.nccl.conf, then this file:",
    "# a variable set earlier wins.",
)
# Ranges of the verbs QP attributes these become (ibv_modify_qp(3)): timeout is a 5-bit
# exponent where 0 means "wait forever", retry_cnt a 3-bit counter.
TIMEOUT_RANGE = (1, 31)
RETRY_RANGE = (0, 7)


def parse_lines(text):
    """``[(line number, name, value)]`` of every assignment NCCL would read from ``text``."""
    found = []
    for number, line in enumerate((text or "").split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        found.append((number, name, value))
    return found


def foreign_text(text):
    """``text`` without our block: the lines that are not ours.  The empty line in front of the
    block goes with it when the block is the file's last part, as ``merge_block`` put it there."""
    text = text or ""
    begin = files.MARKER_BEGIN % BLOCK
    end = files.MARKER_END % BLOCK
    remaining = files.merge_block(text, [], BLOCK)
    if remaining.endswith("\n\n") and text.rstrip("\n").endswith(end) and ("\n\n" + begin) in text:
        remaining = remaining[:-1]
    return remaining


def default_route_interface(host):
    """The interface of the IPv4 default route with the lowest metric, from the kernel's
    /proc/net/route; None when there is none."""
    return route_interface(host.read(ROUTE_TABLE))


def route_interface(table):
    """The IPv4 default route's interface with the lowest metric in ``table``, the text of
    /proc/net/route (columns Iface, Destination, Gateway, Flags, RefCnt, Use, Metric, Mask, ...)."""
    best = None
    for row in (table or "").split("\n")[1:]:
        fields = row.split()
        if len(fields) < 8:
            continue
        try:
            flags, metric = int(fields[3], 16), int(fields[6])
        except ValueError:
            continue
        # RTF_UP (0x1): a route the kernel uses; destination and mask 0: the default route
        if fields[1] == "00000000" and fields[7] == "00000000" and flags & 0x1:
            if best is None or metric < best[0]:
                best = (metric, fields[0])
    return best[1] if best else None


def _int_in(key, value, low, high, what):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError("%s=%r must be an integer from %d to %d (%s)" % (key, value, low, high, what), option=key)
    return value


def check_value(key, name, value):
    """The text of ``value`` for NCCL name ``name``, or InputError naming ``key``."""
    if isinstance(value, bool):
        value = "1" if value else "0"
    elif isinstance(value, int):
        value = str(value)
    elif not isinstance(value, str):
        raise InputError("%s: %s must be a string or an integer" % (key, name), option=key)
    if not value or _CONTROL.search(value) or len(value.encode("utf-8", "surrogateescape")) > NCCL_MAX:
        raise InputError(
            "%s: the value of %s must be 1 to %d bytes on one line (no line break or other control "
            "character), got %r" % (key, name, NCCL_MAX, value), option=key)
    return value


def check_extra(extra):
    """``{name: value text}`` of the user's extra NCCL variables, or InputError."""
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise InputError("extra must be a mapping of NCCL variable names to values", option="extra")
    result = {}
    for name, value in extra.items():
        if not full_match(NAME_RE, name) or len(name) > NCCL_MAX:
            raise InputError("extra: %r is not an NCCL variable name (NCCL_ followed by capital letters, digits "
                             "and '_')" % (name,), option="extra")
        if name in OWNED_KEYS:
            raise InputError("extra: %s is computed by this module; set its own option instead (%s)"
                             % (name, _OPTION_OF[name]), option="extra")
        result[name] = check_value("extra", name, value)
    return result


_OPTION_OF = dict(
    NCCL_IB_HCA="interfaces", NCCL_IB_GID_INDEX="gid_index", NCCL_IB_TC="tc", NCCL_SOCKET_IFNAME="socket_ifname",
    NCCL_IB_TIMEOUT="ib_timeout", NCCL_IB_RETRY_CNT="ib_retry_cnt",
)


def fabric_ports(rdma, interfaces):
    """``(ports, skipped)``: the RoCE ports NCCL should use, each ``{device, port, netdev,
    gid_index}``, and the ones left out (no RoCE v2 GID for an IPv4 address) with the reason.

    With ``interfaces`` named, a named link without an RDMA port or without a usable GID is an
    error; without it (every RDMA netdev) such ports are left out and reported."""
    ports, skipped = [], []
    for device, port_name, port, netdev in roce_ports(rdma, interfaces or None):
        entry = dict(device=device, port=int(port_name), netdev=netdev, gid_index=port.get("roce_v2_ipv4_gid_index"),
                     state=port.get("state"))
        if entry["gid_index"] is None:
            entry["reason"] = ("no RoCE v2 GID for an IPv4 address on %s (state %s): give %s its fabric address"
                               % (netdev, entry["state"] or "unknown", netdev))
            skipped.append(entry)
        else:
            ports.append(entry)
    if interfaces:
        found = set(entry["netdev"] for entry in ports + skipped)
        missing = [name for name in interfaces if name not in found]
        if missing:
            raise RefusedError(
                "interfaces: %s has no RoCE port here (RDMA netdevs on this host: %s); name the netdevs "
                "behind the fabric's RDMA devices" % (", ".join(missing), ", ".join(sorted(rdma.get("netdevs") or {})) or "none"),
                option="interfaces")
        if skipped:
            raise RefusedError("interfaces: NCCL cannot use %s" % "; ".join(
                "%s port %d (%s): %s" % (e["device"], e["port"], e["netdev"], e["reason"]) for e in skipped),
                ports=skipped)
    if not ports:
        raise RefusedError(
            "no RoCE port with a RoCE v2 IPv4 GID on this host%s, so NCCL would have no RDMA device to use: "
            "run the nic layer (rdmaops.roce.nic) and give the fabric links their addresses first"
            % (" (left out: %s)" % "; ".join("%s port %d: %s" % (e["device"], e["port"], e["reason"]) for e in skipped)
               if skipped else ""),
            skipped=skipped)
    return ports, skipped


def gid_index_of(ports):
    """The one RoCE v2 GID index all ``ports`` share, or RefusedError naming each port's."""
    indexes = sorted(set(entry["gid_index"] for entry in ports))
    if len(indexes) > 1:
        raise RefusedError(
            "the RDMA devices disagree on their RoCE v2 GID index and NCCL_IB_GID_INDEX is one value for "
            "all of them: %s. Give every fabric link its address in the same order (the index follows the "
            "order the addresses were added), limit the devices with interfaces, or set gid_index"
            % ", ".join("%s port %d (%s) index %d" % (e["device"], e["port"], e["netdev"], e["gid_index"]) for e in ports),
            ports=ports)
    return indexes[0]


def render_block(settings, extra):
    """Our block's lines: the header, our names in a fixed order, then the extra names sorted."""
    lines = list(HEADER)
    lines.extend("%s=%s" % (name, settings[name]) for name in OWNED_KEYS if name in settings)
    lines.extend("%s=%s" % (name, extra[name]) for name in sorted(extra))
    return lines


class NcclConf(Engine):
    """``rdmaops.roce.nccl_conf``: our block of /etc/nccl.conf, computed from this host's RDMA
    devices and the values the role derives from the fabric intent."""

    def __init__(self, ctx, params):
        super(NcclConf, self).__init__(ctx, params)
        self.path = None
        self.state = None
        self.current = None
        self.desired = None
        self.settings = {}
        self.extra = {}
        self.ports = []
        self.skipped = []
        self.socket_ifname_source = None
        self.conflicts = []

    # validate ------------------------------------------------------------------------------
    def validate(self):
        params = self.params
        self.path = absolute_path("path", params.get("path") or DEFAULT_PATH)
        self.state = params.get("state") or "present"
        if self.state == "absent":
            return
        interfaces = params.get("interfaces") or []
        self.interfaces = [check_ifname("interfaces", name) for name in interfaces]
        if params.get("tc") is None:
            raise InputError("tc is required with state=present: the ToS byte of the fabric intent "
                             "(roce_fabric | rdmaops.roce.roce_intent, key roce_tos)", option="tc")
        self.tc = _int_in("tc", params["tc"], 0, 255, "the IPv4 ToS byte: DSCP << 2 | ECN bits")
        if self.tc & 0x3 == 0x3:
            raise InputError("tc=%d has both ECN bits set (CE, congestion experienced), which no sender may "
                             "mark; use the intent's roce_tos (ECT(0): DSCP << 2 | 2)" % self.tc, option="tc")
        self.gid_index = params.get("gid_index")
        if self.gid_index is not None:
            _int_in("gid_index", self.gid_index, 0, 255, "an entry of the port's GID table")
        self.socket_ifname = params.get("socket_ifname")
        if self.socket_ifname:
            check_ifname("socket_ifname", self.socket_ifname)
        self.timeout = _int_in("ib_timeout", params.get("ib_timeout", 20), TIMEOUT_RANGE[0], TIMEOUT_RANGE[1],
                               "the exponent of the verbs ACK timeout, 4.096 us x 2^value; 0 would wait forever")
        self.retry = _int_in("ib_retry_cnt", params.get("ib_retry_cnt", 7), RETRY_RANGE[0], RETRY_RANGE[1],
                             "the verbs retry counter is 3 bits wide")
        self.extra = check_extra(params.get("extra"))

    # read ----------------------------------------------------------------------------------
    def read(self):
        self.current = files.read_text(self.host, self.path)
        if self.state == "absent":
            return
        rdma = RdmaFacts(self.host, self.runner, gpu_topology=False).gather()
        try:
            self.wanted(rdma, None if self.socket_ifname else default_route_interface(self.host))
        finally:
            for entry in self.skipped:
                self.ctx.warn("%s port %d left out of NCCL_IB_HCA: %s" % (entry["device"], entry["port"], entry["reason"]))
        self._check_foreign_lines()

    def wanted(self, rdma, route_ifname):
        """Our settings from the RDMA facts ``rdma`` and the default route's interface (the module reads
        both on the host; the nccl role's no-op check, roce_noop_nccl, passes the preflight's)."""
        self.ports, self.skipped = fabric_ports(rdma, self.interfaces)
        gid_index = self.gid_index if self.gid_index is not None else gid_index_of(self.ports)
        if self.socket_ifname:
            ifname, self.socket_ifname_source = self.socket_ifname, "socket_ifname"
        else:
            ifname, self.socket_ifname_source = route_ifname, "default route"
            if ifname is None:
                raise RefusedError(
                    "this host has no IPv4 default route, so the management interface for NCCL's bootstrap "
                    "(NCCL_SOCKET_IFNAME) is not known: set socket_ifname to the interface the hosts reach "
                    "each other on", option="socket_ifname")
        self.settings = dict(
            NCCL_IB_HCA="=" + ",".join("%s:%d" % (e["device"], e["port"]) for e in self.ports),
            NCCL_IB_GID_INDEX=str(gid_index),
            NCCL_IB_TC=str(self.tc),
            NCCL_SOCKET_IFNAME="=" + ifname,
            NCCL_IB_TIMEOUT=str(self.timeout),
            NCCL_IB_RETRY_CNT=str(self.retry),
        )
        return self.settings

    def _check_foreign_lines(self):
        """Refuse foreign lines that set one of our names to another value (NCCL takes the first
        line for a name, so one of the two would be ignored without a word); warn about the rest."""
        ours = dict(self.settings, **self.extra)
        for number, name, value in parse_lines(foreign_text(self.current)):
            if name in ours and value != ours[name]:
                self.conflicts.append(dict(line=number, name=name, value=files.for_display(value), ours=ours[name]))
            elif name in ours:
                self.ctx.warn("%s: %s=%s outside the rdmaops.roce block repeats this module's value; remove it, or "
                              "it will conflict when the value changes" % (self.path, name, files.for_display(value)))
            elif name.strip() in ours or name.strip().replace("export ", "", 1).strip() in ours:
                meant = name.strip().split()[-1]
                line = files.for_display(name + "=" + value)
                self.ctx.warn("%s: the line %r is not read by NCCL as %s (NCCL takes the text before '=' "
                              "verbatim: no spaces, no 'export')" % (self.path, line, meant))
        if self.conflicts:
            raise RefusedError(
                "%s sets NCCL variables this module owns to other values, outside its block: %s. NCCL takes the first "
                "line for a name, so one of them would be ignored silently. Remove those lines, or set the value "
                "through this module's options" % (self.path, "; ".join(
                    "line %d %s=%s (this module: %s)" % (c["line"], c["name"], c["value"], c["ours"]) for c in self.conflicts)),
                conflicts=self.conflicts)

    # plan ----------------------------------------------------------------------------------
    def plan(self, plan):
        if self.state == "absent":
            if self.current is None or files.read_block(self.current, BLOCK) is None:
                return
            remaining = foreign_text(self.current)
            self.desired = remaining if remaining.strip() else None
            plan.file(self.host, self.path, self.desired, key="file", adopt=True,
                      description="remove the rdmaops.roce block from %s" % self.path
                      if self.desired is not None else "remove %s" % self.path)
            return
        self.desired = files.merge_block(self.current or "", render_block(self.settings, self.extra), BLOCK)
        plan.file(self.host, self.path, self.desired, mode=0o644, key="file", adopt=bool(self.params.get("adopt")),
                  option="path")

    # verify --------------------------------------------------------------------------------
    def verify(self):
        if files.read_text(self.host, self.path) != self.desired:
            return ["%s does not hold the planned content after writing it" % self.path]
        return []

    def result(self):
        return dict(
            path=self.path,
            settings=dict(self.settings, **self.extra),
            ports=[dict((k, e[k]) for k in ("device", "port", "netdev", "gid_index")) for e in self.ports],
            skipped=[dict((k, e[k]) for k in ("device", "port", "netdev", "reason")) for e in self.skipped],
            socket_ifname_source=self.socket_ifname_source,
        )
