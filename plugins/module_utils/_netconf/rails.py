# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each RDMA netdev its own routing domain: address, table, rule and ARP/reverse-path sysctls.

The engine behind the ``rails`` option of ``nic_layer`` (the controller computed the plan:
``roce_rail_plan`` / ``roce_rail_links``).  Per link (one netdev on one rail):

* the address (``ip address add``); a foreign address of the same family on the netdev is left
  alone unless ``exclusive`` (global scope only: link-local IPv6 addresses are the kernel's);
* a routing table of its own (``table``; named ``rdmaops_<netdev>`` in
  /etc/iproute2/rt_tables.d/rdmaops.conf) holding the subnet route (source: the address) and the
  default route via the rail's gateway;
* the rule ``from <address> lookup <table>`` at ``rule_priority`` (1000 unless the plan says
  otherwise), so whatever is sent from that address leaves through that netdev; a rule of ours
  for an address the netdev no longer has is removed;
* ``arp_ignore`` (1: answer ARP only for an address of the netdev the request came in on),
  ``arp_announce`` (2: source ARP requests from the netdev's own address) and ``rp_filter``
  (2: loose, a packet from a peer's other rail is not dropped) under net.ipv4.conf.<netdev>,
  now and in /etc/sysctl.d/90-rdmaops-rails.conf (systemd-sysctl applies a netdev's keys when
  udev sees it appear, so a NIC whose driver loads late gets them too);
* all of it persisted in what configures the link: this engine decides what the link needs (its
  :class:`RailLink` entries) and hands them to the backend of the stack that configures it
  (:meth:`.backends.Backend.plan_rails`, with this engine's management guard for what it would
  remove), in the same shared ``Context`` the MTU uses, so one file edited for MTU and addresses
  is written once.  How each stack writes them (a netplan or systemd-networkd drop-in, an
  ifupdown stanza, ifcfg's IPADDRn/PREFIXn with route-/rule- files, the NetworkManager profile)
  is the backend's and :mod:`.formats`'.

read -> plan -> apply -> re-read as everywhere: ``ip -N -j`` (numeric tables, so a name in
rt_tables does not hide a number) for addresses, routes and rules, procfs for the sysctls, and
the backend's :meth:`.backends.Backend.read_rails` for what persists.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import LINK_RESET
from ansible_collections.rdmaops.roce.plugins.module_utils._host.management import ManagementPath, guard
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_netdev, check_rail_name
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import backends
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.iproute import (
    RAIL_TABLES,
    parse_addresses,
    parse_routes,
    parse_rules,
)

RT_TABLES = RAIL_TABLES
SYSCTL_FILE = "/etc/sysctl.d/90-rdmaops-rails.conf"
TABLE_PREFIX = "rdmaops_"
# iproute2 reads an rt_tables line as a number and one word; a name that is a number would read as a table id
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
TABLE_NAME_RULE = "1-64 characters of A-Z, a-z, 0-9, '_', '.' and '-', the first a letter or '_'"
SYSCTLS = (("arp_ignore", 1, 0, 8), ("arp_announce", 2, 0, 2), ("rp_filter", 2, 0, 2))
RESERVED_TABLES = (0, 253, 254, 255)
TABLE_MAX = (1 << 31) - 1
RULE_PRIORITY_MAX = 32765


def table_name(interface):
    return TABLE_PREFIX + interface


class RailLink:
    """One netdev on one rail, as planned on the controller, validated again here."""

    def __init__(self, index, raw):
        where = "rails.links[%d]" % index
        if not isinstance(raw, dict):
            raise InputError("%s must be a mapping (interface, address, prefix, gateway, table...)" % where, option="rails.links")
        # both are written into configuration (ifupdown's shell lines, ifcfg, rt_tables.d's comment)
        self.interface = check_netdev(where + ".interface", raw.get("interface"))
        self.rail = self.interface if raw.get("rail") is None else check_rail_name(where + ".rail", raw.get("rail"))
        try:
            self.iface = ipaddress.ip_interface(u"%s/%s" % (raw.get("address"), raw.get("prefix")))
        except ValueError:
            raise InputError("%s: address %r with prefix %r is not an address and prefix length" % (where, raw.get("address"), raw.get("prefix")),
                             option="rails.links")
        self.family = self.iface.version
        self.address = str(self.iface.ip)
        self.prefix = self.iface.network.prefixlen
        self.network = str(self.iface.network)
        if raw.get("network") is not None and raw["network"] != self.network:
            raise InputError("%s: network %r does not hold %s/%d (it is %s)" % (where, raw["network"], self.address, self.prefix, self.network),
                             option="rails.links")
        self.gateway = None
        if raw.get("gateway") is not None:
            try:
                gateway = ipaddress.ip_address(u"%s" % raw["gateway"])
            except ValueError:
                raise InputError("%s: gateway %r is not an address" % (where, raw["gateway"]), option="rails.links")
            if gateway not in self.iface.network or gateway == self.iface.ip:
                raise InputError("%s: gateway %s is not another address of %s" % (where, gateway, self.network), option="rails.links")
            self.gateway = str(gateway)
        table = raw.get("table")
        if not isinstance(table, int) or isinstance(table, bool) or not 1 <= table <= TABLE_MAX or table in RESERVED_TABLES:
            raise InputError("%s: table %r must be a number 1..%d other than 253, 254, 255" % (where, table, TABLE_MAX), option="rails.links")
        self.table = table
        priority = raw.get("rule_priority", 1000)
        if not isinstance(priority, int) or isinstance(priority, bool) or not 1 <= priority <= RULE_PRIORITY_MAX:
            raise InputError("%s: rule_priority %r must be a number 1..%d" % (where, priority, RULE_PRIORITY_MAX), option="rails.links")
        self.rule_priority = priority

    @property
    def cidr(self):
        return "%s/%d" % (self.address, self.prefix)

    @property
    def host_prefix(self):
        return 32 if self.family == 4 else 128

    def fam(self):
        return "-%d" % self.family

    # the commands, as iproute2 takes them; ifupdown's stanza runs the same ones
    def address_argv(self, verb, cidr=None):
        return ["ip", self.fam(), "address", verb, cidr or self.cidr, "dev", self.interface]

    @property
    def route_source(self):
        """The subnet route's preferred source: IPv4 only.  An IPv6 address is tentative until
        duplicate address detection passes, and the kernel refuses it as a source until then;
        IPv6's own source selection prefers the outgoing netdev's address anyway (RFC 6724 rule 5)."""
        return self.address if self.family == 4 else None

    def subnet_route_argv(self, verb="replace"):
        source = ["src", self.route_source] if self.route_source else []
        return ["ip", self.fam(), "route", verb, self.network, "dev", self.interface] + source + ["table", str(self.table)]

    def default_route_argv(self, verb="replace"):
        return ["ip", self.fam(), "route", verb, "default", "via", self.gateway, "dev", self.interface, "table", str(self.table)]

    def rule_argv(self, verb="add", source=None):
        return ["ip", self.fam(), "rule", verb, "from", source or self.address, "table", str(self.table),
                "priority", str(self.rule_priority)]

    def describe(self, names=None):
        return dict(rail=self.rail, interface=self.interface, address=self.cidr, network=self.network, gateway=self.gateway,
                    table=self.table, table_name=(names or {}).get(self.table, table_name(self.interface)),
                    rule_priority=self.rule_priority)


# --------------------------------------------------------------------------------------------
# live state
# --------------------------------------------------------------------------------------------
def _host_src(src, family):
    """``10.0.0.2`` or ``10.0.0.2/32`` -> ``10.0.0.2``; anything wider -> None."""
    if not src or src == "all":
        return None
    address, _slash, length = src.partition("/")
    if length and int(length) != (32 if family == 4 else 128):
        return None
    return address


# --------------------------------------------------------------------------------------------
# our rt_tables.d file
# --------------------------------------------------------------------------------------------
def rt_tables_text(links, names):
    """Our rt_tables.d file: ``<number>\t<name>`` per table (``names``: number -> name), each table's
    rail in the comment above it (rdma_facts reports a netdev's rail from there).  A table name is
    ``rdmaops_<netdev>``, a rail's name is checked: neither can start another line."""
    rails = dict((link.table, link.rail if link.rail == check_netdev("interface", link.interface) else check_rail_name("rail", link.rail))
                 for link in links)
    for number in rails:
        if not isinstance(number, int) or not TABLE_NAME.fullmatch(names[number]):
            raise InputError("table %r named %r: a table is a number and its name %s" % (number, names[number], TABLE_NAME_RULE),
                             option="rails.links")
    return "# Managed by rdmaops.roce (nic_layer rails): one routing table per RDMA netdev.\n" + "".join(
        "# rail %s\n%d\t%s\n" % (rails[number], number, names[number]) for number in sorted(set(link.table for link in links)))


# --------------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------------
class RailLinks:
    """The ``rails`` part of the NIC layer, planned into the layer's one Plan.

    ``params``: ``links`` (from roce_rail_links), ``exclusive``, ``arp_ignore``, ``arp_announce``,
    ``rp_filter``, ``persist``, ``backend``.

    The management path (:mod:`_host.management`, the detector and the guard link_mtu uses) is
    never cut: removing an address from a netdev on it (``exclusive``, live or in its profile or
    ifcfg file), removing a route of a netdev on it from a rail's table, or adding or removing a
    rule from a management address is refused before anything is touched.  ``environ`` is the
    SSH connection's environment, ``management_interfaces`` what the user names as management.
    """

    def __init__(self, ctx, params, config_ctx, environ=None, management_interfaces=()):
        self.ctx = ctx
        self.environ = os.environ if environ is None else environ
        self.management_interfaces = tuple(management_interfaces or ())
        self.management = dict(interfaces={}, protected={}, addresses={}, state={})
        self.host = ctx.host
        self.runner = ctx.runner
        self.params = params or {}
        self.config_ctx = config_ctx
        self.links = []
        self.by_interface = {}
        self.table_names = {}
        self.addresses = {}
        self.routes = []
        self.rules = []
        self.sysctls = {}
        self.configs = {}
        self.activations = []
        self.before = {}
        self.planned = None

    # -- validate -----------------------------------------------------------------------------
    def validate(self):
        raw = self.params.get("links") or []
        if not isinstance(raw, list):
            raise InputError("rails.links must be a list (from the rdmaops.roce.roce_rail_links filter)", option="rails.links")
        self.links = [RailLink(index, item) for index, item in enumerate(raw)]
        seen = {}
        self.table_names = {}
        for link in self.links:
            self.by_interface.setdefault(link.interface, []).append(link)
            # rdmaops_<netdev>; a netdev on a second rail's table gets the table's number too
            first = len(self.by_interface[link.interface]) == 1
            self.table_names[link.table] = table_name(link.interface) + ("" if first else "_%d" % link.table)
            for key in (("address", link.address), ("table", link.table)):
                if key in seen and not (key[0] == "table" and seen[key] == link.interface):
                    raise InputError("rails.links: %s %s is given to %s and %s" % (key[0], key[1], seen[key], link.interface),
                                     option="rails.links")
                seen[key] = link.interface
        for name, _default, low, high in SYSCTLS:
            value = self.params.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high):
                raise InputError("rails.%s=%r must be %d..%d" % (name, value, low, high), option="rails." + name)

    @property
    def persist(self):
        return bool(self.params.get("persist", True)) and self.params.get("backend", "auto") != "runtime"

    def sysctl_values(self):
        return [(name, self.params.get(name) if self.params.get(name) is not None else default) for name, default, _l, _h in SYSCTLS]

    # -- read ---------------------------------------------------------------------------------
    def read(self):
        if not self.links:
            return
        for name in self.by_interface:
            if not self.config_ctx.links.exists(name):
                raise InputError("rails: interface %s does not exist on this host; links: %s"
                                 % (name, ", ".join(self.config_ctx.links.names()) or "none"), option="rails.links")
        self._read_live()
        path = ManagementPath(self.host, self.runner, self.config_ctx.links, environ=self.environ)
        extra = self.management_interfaces
        # the key link_mtu uses: one detection per run when the layer sets MTUs too
        self.management = self.config_ctx.cached(("management", extra), lambda: path.detect(interfaces=extra))
        self.before = self.state()
        if self.persist:
            for name in self.by_interface:
                try:
                    self.configs[name] = backends.detect(self.config_ctx, self.config_ctx.links.info(name), self.params.get("backend", "auto"))
                except RdmaopsError as exc:
                    exc.details.setdefault("device", name)
                    raise
                self.config_ctx.notes = []

    def _read_live(self):
        self.addresses = parse_addresses(self.runner.run(["ip", "-j", "address", "show"]).stdout)
        families = sorted(set(link.family for link in self.links))
        self.routes = []
        self.rules = []
        for family in families:
            flag = "-%d" % family
            for route in parse_routes(self.runner.run(["ip", "-N", "-j", flag, "route", "show", "table", "all"]).stdout):
                route["family"] = family
                self.routes.append(route)
            for rule in parse_rules(self.runner.run(["ip", "-N", "-j", flag, "rule", "show"]).stdout):
                rule["family"] = family
                self.rules.append(rule)
        self.sysctls = {}
        for name in self.by_interface:
            for key, _value in self.sysctl_values():
                text = self.host.read("/proc/sys/net/ipv4/conf/%s/%s" % (name, key))
                self.sysctls[(name, key)] = int(text.strip()) if text and text.strip().lstrip("-").isdigit() else None

    def state(self):
        """What the host has now, per netdev: addresses, the routes of its tables, its rules, sysctls."""
        out = {}
        tables = set(link.table for link in self.links)
        for name, links in self.by_interface.items():
            mine = set(link.table for link in links)
            out[name] = dict(
                addresses=[cidr for _f, cidr, scope in self.addresses.get(name, []) if scope != "link"],
                routes=["%s%s table %d" % (r["dst"], " via %s" % r["gateway"] if r["gateway"] else "", r["table"])
                        for r in self.routes if r["table"] in mine and r["dev"] == name],
                rules=["%s from %s lookup %s" % (r["priority"], r["src"], r["table"]) for r in self.rules if r["table"] in tables
                       and r["table"] in mine],
                sysctls=dict((key, self.sysctls.get((name, key))) for key, _v in self.sysctl_values()),
            )
        return out

    # -- the management path -----------------------------------------------------------------
    def _guard(self, action, devices=(), addresses=(), option="rails.links", advice=None):
        """link_mtu's guard (:func:`_host.management.guard`), never allowed for rails: a rail's
        change that reaches the management path is refused."""
        guard(self.management, action, devices=devices, addresses=addresses,
              advice=advice or "Changing it can cut this host off. Give the rail a netdev that is not on the management path",
              details=dict(option=option, management=dict(
                  interfaces=self.management["interfaces"],
                  protected=sorted(self.management["protected"]),
                  addresses=self.management.get("addresses") or {})))

    def _guard_exclusive(self, name, removed, where):
        if removed:
            self._guard("remove %s (rails.exclusive, %s) from" % (", ".join(removed), where), devices=[name], option="rails.exclusive",
                        advice="Removing an address there can cut this host off. Set rails.exclusive: false for this host "
                               "(the rail's address is added beside the others), or give the rail a netdev that is not on the "
                               "management path")

    # -- plan ---------------------------------------------------------------------------------
    def plan(self, plan):
        if not self.links:
            return
        self.planned = plan
        exclusive = bool(self.params.get("exclusive", False))
        for name, links in self.by_interface.items():
            have = self.addresses.get(name, [])
            have_cidrs = set(cidr for _f, cidr, _s in have)
            for link in links:
                if link.cidr not in have_cidrs:
                    plan.add("rails:%s:address:%s" % (name, link.cidr), None, link.cidr, self._run(link.address_argv("add")),
                             "rails: ip address add %s dev %s (rail %s)" % (link.cidr, name, link.rail),
                             undo=self._run(link.address_argv("del")))
            if exclusive:
                wanted = set(link.cidr for link in links)
                foreign = [(family, cidr) for family, cidr, scope in have
                           if scope != "link" and cidr not in wanted and family in set(link.family for link in links)]
                self._guard_exclusive(name, [cidr for _family, cidr in foreign], "live")
                for family, cidr in foreign:
                    argv = ["ip", "-%d" % family, "address", "del", cidr, "dev", name]
                    plan.add("rails:%s:address:%s" % (name, cidr), cidr, None, self._run(argv),
                             "rails: ip address del %s dev %s (not the rail's; nic_addresses_exclusive)" % (cidr, name),
                             undo=self._run(["ip", "-%d" % family, "address", "add", cidr, "dev", name]),
                             # the address's RoCE GID goes with it: connections that use it break
                             disruption=LINK_RESET)
            for link in links:
                self._plan_routes(plan, link)
                self._plan_rules(plan, link)
            for key, value in self.sysctl_values():
                path = "/proc/sys/net/ipv4/conf/%s/%s" % (name, key)
                current = self.sysctls.get((name, key))
                plan.add("rails:%s:sysctl:%s" % (name, key), current, value, self._write(path, value),
                         "rails: net.ipv4.conf.%s.%s = %d (was %s)" % (name, key, value, current),
                         undo=self._write(path, current) if current is not None else None)
        self._plan_files(plan)
        if self.persist:
            for name, links in self.by_interface.items():
                self._persist(plan, self.configs[name], links)

    def _plan_routes(self, plan, link):
        mine = [r for r in self.routes if r["family"] == link.family and r["table"] == link.table]
        # a subnet route of this table that no rail of it has any more (the rail moved to another
        # subnet: seen in the two-rail lab, where the old route stayed beside the new one)
        networks = set(other.network for other in self.links if other.table == link.table and other.family == link.family)
        for route in mine:
            if route["dst"] == "default" or route["dst"] in networks or route["gateway"]:
                continue
            # a table number the site's own policy routing uses for the management path
            self._guard("remove the route %s dev %s from table %d (%s is not a rail's subnet) on" % (
                route["dst"], route["dev"], link.table, route["dst"]), devices=[route["dev"]])
            argv = ["ip", link.fam(), "route", "del", route["dst"], "dev", route["dev"], "table", str(link.table)]
            add = ["ip", link.fam(), "route", "add", route["dst"], "dev", route["dev"]] + (
                ["src", route["prefsrc"]] if route["prefsrc"] else []) + ["table", str(link.table)]
            plan.add("rails:%s:route:%s:stale" % (link.interface, route["dst"]), "%s dev %s" % (route["dst"], route["dev"]), None,
                     self._run(argv), "rails: %s (no rail of table %d has %s any more)" % (" ".join(argv), link.table, route["dst"]),
                     undo=self._run(add))
        subnet = [r for r in mine if r["dst"] == link.network]
        if not any(r["dev"] == link.interface and r["prefsrc"] == link.route_source and not r["gateway"] for r in subnet):
            plan.add("rails:%s:route:%s" % (link.interface, link.network), None, " ".join(link.subnet_route_argv()[3:]),
                     self._run(link.subnet_route_argv()),
                     "rails: %s" % " ".join(link.subnet_route_argv()),
                     undo=self._run(link.subnet_route_argv("del")) if not subnet else None)
        if link.gateway:
            default = [r for r in mine if r["dst"] == "default"]
            if not any(r["dev"] == link.interface and r["gateway"] == link.gateway for r in default):
                plan.add("rails:%s:route:default" % link.interface, None, " ".join(link.default_route_argv()[3:]),
                         self._run(link.default_route_argv()),
                         "rails: %s" % " ".join(link.default_route_argv()),
                         undo=self._run(link.default_route_argv("del")) if not default else None)

    def _plan_rules(self, plan, link):
        rules = [r for r in self.rules if r["family"] == link.family]
        found = False
        for rule in rules:
            source = _host_src(rule["src"], link.family)
            ours = rule["table"] == link.table
            if source == link.address and ours and rule["priority"] == link.rule_priority:
                found = True
            elif ours and source is not None:
                # a rule of this table for an address the netdev is not given any more, or at another priority
                argv = ["ip", link.fam(), "rule", "del", "from", source, "table", str(link.table), "priority", str(rule["priority"])]
                why = "the rule of an old address" if source != link.address else "at priority %s, not %d" % (
                    rule["priority"], link.rule_priority)
                self._guard("remove the rule of table %d (%s) from" % (link.table, why), addresses=[source])
                plan.add("rails:%s:rule:%s:%s" % (link.interface, source, rule["priority"]), "from %s lookup %d" % (source, link.table), None,
                         self._run(argv), "rails: %s (%s)" % (" ".join(argv), why),
                         undo=self._run(argv[:3] + ["add"] + argv[4:]))
        if not found:
            # a rule from the management address would send the connection's replies into the rail's table
            self._guard("add the rule to table %d (rail %s) for the traffic from" % (link.table, link.rail), addresses=[link.address],
                        advice="That rule would send this connection's replies through the rail's table and can cut this "
                               "host off. Give the rail an address that is not the management one")
            plan.add("rails:%s:rule:%s" % (link.interface, link.address), None,
                     "%d: from %s lookup %d" % (link.rule_priority, link.address, link.table),
                     self._run(link.rule_argv("add")), "rails: %s" % " ".join(link.rule_argv("add")),
                     undo=self._run(link.rule_argv("del")))

    def _plan_files(self, plan):
        """rt_tables names and the sysctls at boot: files of ours, written whole."""
        # the host's rails, all of them, in every run: a table no rail uses any more loses its name
        by_number = dict((link.table, self.table_names[link.table]) for link in self.links)
        rt_text = rt_tables_text(self.links, self.table_names)
        plan.file(self.host, RT_TABLES, rt_text, description="rails: %s names the tables %s" % (
            RT_TABLES, ", ".join("%d %s" % item for item in sorted(by_number.items()))))
        if self.persist:
            lines = ["# Managed by rdmaops.roce (nic_layer rails): ARP and reverse-path filtering on the RDMA netdevs.",
                     "# systemd-sysctl applies a netdev's keys when udev sees it appear."]
            for name in sorted(self.by_interface):
                for key, value in self.sysctl_values():
                    # the slash form: a netdev name may hold a dot (a VLAN)
                    lines.append("net/ipv4/conf/%s/%s = %d" % (name, key, value))
            plan.file(self.host, SYSCTL_FILE, "\n".join(lines) + "\n",
                      description="rails: %s sets arp_ignore, arp_announce and rp_filter at boot" % SYSCTL_FILE)

    def _run(self, argv):
        return lambda: self.config_ctx.run(argv)

    def _write(self, path, value):
        def action():
            try:
                files.write_attribute(self.host, path, "%d\n" % value)
            except (IOError, OSError) as exc:
                raise RdmaopsError("could not write %s: %s" % (path, exc), path=path)
        return action

    # -- persistence: what configures the link writes it ------------------------------------------
    def _persist(self, plan, cfg, links):
        """The links of one netdev, persisted by the stack that configures it (:mod:`.backends`)."""
        planned = cfg.backend.plan_rails(cfg, links, plan, exclusive=bool(self.params.get("exclusive", False)),
                                         guard_removal=self._guard_exclusive)
        for cmd in planned or []:
            if cmd not in self.activations:
                self.activations.append(cmd)

    # -- activation, verify, result -----------------------------------------------------------
    def plan_activations(self, plan, seen):
        for cmd in self.activations:
            if cmd not in seen:
                seen.append(cmd)
                plan.then(" ".join(cmd["argv"]), self._activation(cmd), validates=cmd["validates"])

    def _activation(self, cmd):
        def action():
            try:
                self.config_ctx.run(cmd["argv"])
            except RdmaopsError as exc:
                if cmd["validates"]:
                    raise RdmaopsError("%s rejected the configuration, so the files were restored and the live changes "
                                       "undone: %s" % (" ".join(cmd["argv"]), exc.msg), **exc.details)
                raise
        return action

    def persisted(self, name):
        """What the configuration of ``name`` says of its rails now: the addresses it holds."""
        cfg = self.configs.get(name)
        if cfg is None:
            return None
        return cfg.backend.read_rails(cfg)

    def verify(self):
        if not self.links:
            return []
        self.config_ctx.staged = {}
        self._read_live()
        problems = []
        for name, links in self.by_interface.items():
            have = set(cidr for _f, cidr, _s in self.addresses.get(name, []))
            for link in links:
                if link.cidr not in have:
                    problems.append("%s does not hold %s" % (name, link.cidr))
                if not any(r["table"] == link.table and r["dev"] == name and r["dst"] == link.network for r in self.routes):
                    problems.append("table %d has no route to %s via %s" % (link.table, link.network, name))
                if link.gateway and not any(r["table"] == link.table and r["dst"] == "default" and r["gateway"] == link.gateway for r in self.routes):
                    problems.append("table %d has no default route via %s" % (link.table, link.gateway))
                if not any(_host_src(r["src"], link.family) == link.address and r["table"] == link.table for r in self.rules):
                    problems.append("no rule from %s lookup %d" % (link.address, link.table))
            for key, value in self.sysctl_values():
                if self.sysctls.get((name, key)) != value:
                    problems.append("net.ipv4.conf.%s.%s is %s, not %d" % (name, key, self.sysctls.get((name, key)), value))
            if self.persist:
                persisted = self.persisted(name) or []
                for link in links:
                    cfg = self.configs[name]
                    if link.family in cfg.backend.RAIL_FAMILIES:
                        if link.cidr not in persisted:
                            problems.append("%s (%s) does not give %s the address %s (it has %s)" % (
                                cfg.backend.rails_path(cfg), cfg.backend.name, name, link.cidr, ", ".join(persisted) or "none"))
        return problems

    def result(self):
        links = [link.describe(self.table_names) for link in self.links]
        for entry in links:
            cfg = self.configs.get(entry["interface"])
            entry["backend"] = cfg.backend.name if cfg else "runtime"
            entry["config"] = cfg.backend.rails_path(cfg) if cfg else None
        after = None
        if self.planned is not None and not self.ctx.check_mode and self.planned.changed:
            after = self.state()
        return dict(links=links, before=self.before, after=after if after is not None else self.before if not (
            self.planned is not None and self.planned.changed) else None)
