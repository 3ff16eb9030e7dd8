# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric's address plan: ``roce_fabric.rails``, computed on the controller.

A multi-rail GPU server has one RoCE NIC per rail, each cabled to its own leaf.  Each NIC is its
own routing domain: an address on its rail, a routing table of its own (the rail's subnet and a
default route via the rail's gateway) and a rule ``from <address> table <table>``, so a packet
sent from a rail's address leaves through that rail's NIC (see docs/multirail.md).

:func:`check_rails` validates the rails themselves (no host needed); :func:`plan_rails` computes
every host's address on every rail and refuses, one message per problem naming the rail and the
host, before any host is contacted: rails that overlap, an address outside its rail, two hosts with
one address, a pool too small for the hosts, a gateway inside the host range, malformed input.

A rail is either

* a ``subnet`` (IPv4 or IPv6) shared by the hosts' NICs on that rail, with a ``gateway``
  (``first``, ``last`` or an address) and hosts allocated from ``host_offset`` on; or
* a ``p2p_pool`` of /31 (IPv4) or /127 (IPv6) links, one per host NIC: the host takes one side,
  the leaf (the gateway) the other (``gateway: first``, the default, gives the leaf the first).

Controller-side only: it imports netaddr (a controller requirement of the collection); the
modules on the hosts receive the computed plan and never import this file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import kind, shown
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import NETDEV as IFNAME  # noqa: F401 (roce_rail_plan's)
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import NETDEV_RULE, RAIL_NAME
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, _is_int, _is_list, _is_text

try:
    import netaddr

    HAS_NETADDR = True
except ImportError:  # pragma: no cover - depends on the controller
    netaddr = None
    HAS_NETADDR = False

RAIL_KEYS = frozenset(
    ["name", "subnet", "p2p_pool", "gateway", "netdev", "netdevs", "pci", "rdma_device", "table", "rule_priority", "host_offset"]
)
SELECTOR_KEYS = ("netdev", "netdevs", "pci", "rdma_device")
HOST_INDEX_VAR = "roce_rail_index"
HOST_ADDRESSES_VAR = "roce_rail_addresses"
GATEWAY_WORDS = ("first", "last")

# A table per rail: 100 + the rail's position unless the rail gives one.  0 (unspec) and 253..255
# (default, main, local) are the kernel's own.
TABLE_BASE = 100
RESERVED_TABLES = (0, 253, 254, 255)
TABLE_MAX = (1 << 31) - 1
# The rules ``from <address> lookup <table>`` sit at priority 1000 by default: after the local
# table's rule (0) and before main's (32766), clear of the priorities distributions and
# NetworkManager use for their own rules (32000 and up).
RULE_PRIORITY = 1000
RULE_PRIORITY_MAX = 32765

# A netdev name (IFNAME) follows the rule for names written into network configuration and put on
# command lines (_host.names.NETDEV: the kernel's rule, and no shell or file syntax such as ';'),
# so a plan that nic_layer would refuse on the host is refused here, before any host is contacted.
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
RDMA_DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# The characters an address or network may be written with, matched whole before netaddr reads it
# (netaddr forgives a trailing newline in a prefix length; a user's "24\n" is not 24).
ADDRESS_TEXT = re.compile(r"[0-9A-Fa-f:.]{2,45}")
NETWORK_TEXT = re.compile(r"[0-9A-Fa-f:.]{2,45}/[0-9]{1,3}")
# What a message shows of a user's text at most (hostile input can be megabytes).
SHOW_MAX = 60
# Address blocks no rail may hold any part of, with why (the first that a rail touches is named).
# A /0 is refused before these, with its own reason (it competes with the default route).
# The IPv6 blocks that embed IPv4 addresses keep the families apart: the kernel and its sockets
# read ::ffff:a.b.c.d as the IPv4 address a.b.c.d, so ::ffff:10.0.0.0/120 beside 10.0.0.0/24 would
# give two hosts one IPv4 address; with these refused, no IPv6 rail can overlap an IPv4 one.
RESERVED_BLOCKS = (
    ("0.0.0.0/8", "the unspecified address 0.0.0.0 and its 'this network' block 0.0.0.0/8"),
    ("127.0.0.0/8", "the loopback block 127.0.0.0/8"),
    ("169.254.0.0/16", "the link-local block 169.254.0.0/16"),
    ("224.0.0.0/4", "the multicast block 224.0.0.0/4"),
    ("255.255.255.255/32", "the limited broadcast address 255.255.255.255"),
    ("::/128", "the unspecified address ::"),
    ("::1/128", "the loopback address ::1"),
    ("::ffff:0:0/96", "the IPv4-mapped block ::ffff:0:0/96 (its addresses are IPv4 addresses to the kernel, so "
                      "they can collide with an IPv4 rail's)"),
    ("::/96", "the IPv4-compatible block ::/96 (deprecated; its addresses embed IPv4 addresses)"),
    ("::ffff:0:0:0/96", "the IPv4-translated block ::ffff:0:0:0/96 (its addresses embed IPv4 addresses)"),
    ("64:ff9b::/96", "NAT64's well-known block 64:ff9b::/96 (its addresses stand for IPv4 hosts)"),
    ("fe80::/10", "the link-local block fe80::/10"),
    ("ff00::/8", "the multicast block ff00::/8"),
)


def _not(value, wanted):
    given = kind(value)
    return "" if given == wanted else " (got %s)" % given


def _network(text):
    """``(IPNetwork, None)`` for a CIDR written whole and canonical, else ``(None, why)``."""
    if not _is_text(text):
        return None, "must be text such as 10.0.0.0/24 or fd00:1::/64%s" % _not(text, "text")
    if "/" not in text:
        return None, "needs a prefix length, e.g. 10.0.0.0/24"
    if not NETWORK_TEXT.fullmatch(text):
        return None, "is not an IPv4 or IPv6 network in CIDR notation (e.g. 10.0.0.0/24 or fd00:1::/64)"
    try:
        net = netaddr.IPNetwork(text)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None, "is not an IPv4 or IPv6 network in CIDR notation (e.g. 10.0.0.0/24 or fd00:1::/64)"
    if net.ip != net.network:
        return None, "has host bits set: write the network, %s" % net.cidr
    if net.prefixlen == 0:
        return None, (
            "is every %s address: a /0 rail adds a connected route to everywhere, which competes with the default "
            "route; give the rail its own network (e.g. %s)" % ("IPv4" if net.version == 4 else "IPv6",
                                                                "10.0.0.0/24" if net.version == 4 else "fd00:1::/64"))
    why = _reserved(net)
    if why:
        return None, "holds %s, where no rail's addresses may be; give the rail a unicast network of its own (e.g. %s)" % (
            why, "10.0.0.0/24" if net.version == 4 else "fd00:1::/64")
    return net, None


def _reserved(net):
    """Why ``net`` (an IPNetwork) touches a block no rail may hold (RESERVED_BLOCKS), or None."""
    first, last = int(net.first), int(net.last)
    for block, why in _RESERVED:
        if block.version == net.version and first <= int(block.last) and int(block.first) <= last:
            return why
    return None


def _address(text):
    if not _is_text(text):
        return None, "must be text such as 10.0.0.5%s" % _not(text, "text")
    if not ADDRESS_TEXT.fullmatch(text):
        return None, "is not an IPv4 or IPv6 address (e.g. 10.0.0.5 or fd00:1::5)"
    try:
        return netaddr.IPAddress(text), None
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None, "is not an IPv4 or IPv6 address (e.g. 10.0.0.5 or fd00:1::5)"


_RESERVED = tuple((netaddr.IPNetwork(block), why) for block, why in RESERVED_BLOCKS) if HAS_NETADDR else ()


class Rail:
    """One validated rail: where its hosts' addresses come from and where its gateway is."""

    def __init__(self, position, name, network, p2p, gateway_rule, gateway, selector, table, rule_priority, host_offset):
        self.position = position
        self.name = name
        self.network = network
        self.p2p = p2p
        self.gateway_rule = gateway_rule
        self.gateway = gateway  # an IPAddress for a subnet rail, None for a pool (one per link)
        self.selector = selector
        self.table = table
        self.rule_priority = rule_priority
        self.host_offset = host_offset
        self.version = network.version
        self.network_text = str(network.cidr)
        self.link_prefix = (31 if self.version == 4 else 127) if p2p else network.prefixlen
        first = int(network.first)
        last = int(network.last)
        if p2p:
            self.links = (last - first + 1) // 2
        else:
            # IPv4 keeps the network and broadcast addresses; IPv6 the subnet-router anycast (::0).
            self.usable_first = first + 1
            self.usable_last = last - 1 if self.version == 4 else last
            self.hosts_first = self.usable_first + host_offset

    @property
    def kind(self):
        return "p2p_pool" if self.p2p else "subnet"

    def where(self):
        return "rail %s (roce_fabric.rails[%d])" % (self.name, self.position)

    def capacity(self):
        return self.links if self.p2p else max(0, self.usable_last - self.hosts_first + 1)

    def by_index(self, index):
        """``(address, gateway)`` as integers for host index ``index``, or None when the rail is too small."""
        if index >= self.capacity():
            return None
        if self.p2p:
            base = int(self.network.first) + 2 * index
            return (base + 1, base) if self.gateway_rule == "first" else (base, base + 1)
        return self.hosts_first + index, int(self.gateway)


def _check_rail(problems, position, raw, names):
    where = "roce_fabric.rails[%d]" % position
    if not isinstance(raw, Mapping):
        problems.append("%s must be a mapping (name, subnet or p2p_pool, gateway, netdev...), not %s" % (where, kind(raw)))
        return None
    bad_keys = sorted(shown(key, SHOW_MAX) for key in raw if not _is_text(key) or key not in RAIL_KEYS)
    if bad_keys:
        problems.append("%s has unknown key(s) %s; known keys: %s" % (where, ", ".join(bad_keys), ", ".join(sorted(RAIL_KEYS))))
    name = raw.get("name")
    if not (_is_text(name) and RAIL_NAME.fullmatch(name)):
        problems.append(
            "%s.name=%s: give each rail a name of letters, digits, '_' and '-' (up to 32, e.g. rail0)%s"
            % (where, shown(name, SHOW_MAX), "" if name is not None else " (it is missing)")
        )
        name = None
    elif name in names:
        problems.append("%s.name=%s: another rail has this name; rail names are unique" % (where, shown(name, SHOW_MAX)))
        name = None
    else:
        names.add(name)
        where = "rail %s: %s" % (name, where)
    ok = name is not None

    given = [key for key in ("subnet", "p2p_pool") if raw.get(key) is not None]
    network = None
    if len(given) != 1:
        problems.append(
            "%s: give exactly one of subnet (a network the rail's NICs share, e.g. 10.0.0.0/24) and p2p_pool "
            "(a pool of /31 or /127 links to the leaves, e.g. 10.1.0.0/22)%s"
            % (where, "" if not given else ", not both")
        )
        ok = False
    else:
        key = given[0]
        network, why = _network(raw[key])
        if why:
            problems.append("%s.%s=%s %s" % (where, key, shown(raw[key], SHOW_MAX), why))
            ok = False
        elif key == "subnet" and network.prefixlen > (30 if network.version == 4 else 126):
            problems.append(
                "%s.subnet=%s leaves no room for hosts and a gateway; for point-to-point links write p2p_pool: %s"
                % (where, network, network)
            )
            ok = False
        elif key == "p2p_pool" and network.prefixlen > (31 if network.version == 4 else 127):
            problems.append("%s.p2p_pool=%s is smaller than one /%d link" % (where, network, 31 if network.version == 4 else 127))
            ok = False
    p2p = bool(given) and given[0] == "p2p_pool"

    gateway_raw = raw.get("gateway", "first")
    gateway_rule, gateway = None, None
    if _is_text(gateway_raw) and gateway_raw in GATEWAY_WORDS:
        gateway_rule = gateway_raw
    elif p2p:
        problems.append(
            "%s.gateway=%s: a p2p_pool rail's gateway is the leaf's side of each link: write first (the leaf takes "
            "the first address of each /%d, the default) or last" % (where, shown(gateway_raw, SHOW_MAX), 31 if not network or network.version == 4 else 127)
        )
        ok = False
    else:
        gateway, why = _address(gateway_raw)
        if why:
            problems.append("%s.gateway=%s %s, or first or last" % (where, shown(gateway_raw, SHOW_MAX), why))
            ok = False
        elif network is not None and gateway not in network:
            problems.append("%s.gateway=%s is outside the rail's subnet %s" % (where, gateway, network))
            ok = False
        elif network is not None and (gateway == network.network or (network.version == 4 and gateway == network.broadcast)):
            problems.append("%s.gateway=%s is the subnet's %s address, not one a router can have"
                            % (where, gateway, "network" if gateway == network.network else "broadcast"))
            ok = False
        else:
            gateway_rule = "given"

    selector = {}
    chosen = [key for key in SELECTOR_KEYS if raw.get(key) is not None]
    if len(chosen) != 1:
        problems.append(
            "%s: say which netdev of each host is on the rail with exactly one of netdev (e.g. ens1f0np0), "
            "netdevs (an ordered list; each host uses the first it has), pci (e.g. 0000:17:00.0) and "
            "rdma_device (e.g. mlx5_0)%s" % (where, ", not several" if chosen else "")
        )
        ok = False
    else:
        key = chosen[0]
        value = raw[key]
        if key == "netdevs":
            if not _is_list(value) or not value or not all(_is_text(item) and IFNAME.fullmatch(item) for item in value):
                problems.append(
                    "%s.netdevs=%s must be a non-empty list of interface names (each %s)"
                    % (where, shown(value, SHOW_MAX) if not _is_list(value) else "[...]", NETDEV_RULE)
                )
                ok = False
            elif len(set(value)) != len(value):
                problems.append("%s.netdevs names an interface twice" % where)
                ok = False
        else:
            pattern, example = dict(
                netdev=(IFNAME, "an interface name: " + NETDEV_RULE),
                pci=(PCI_ADDRESS, "a PCI address such as 0000:17:00.0 (domain:bus:device.function, lower case)"),
                rdma_device=(RDMA_DEVICE, "an RDMA device name such as mlx5_0"),
            )[key]
            if not (_is_text(value) and pattern.fullmatch(value)):
                problems.append("%s.%s=%s must be %s" % (where, key, shown(value, SHOW_MAX), example))
                ok = False
        selector = {key: list(value) if key == "netdevs" and _is_list(value) else value}

    table = raw.get("table", TABLE_BASE + position)
    if not (_is_int(table) and 1 <= table <= TABLE_MAX and table not in RESERVED_TABLES):
        problems.append(
            "%s.table=%s must be a routing table number 1..%d other than 253, 254 and 255 (the kernel's default, "
            "main and local tables); without it the rail uses %d%s"
            % (where, shown(table, SHOW_MAX), TABLE_MAX, TABLE_BASE + position, _not(table, "a number"))
        )
        ok = False
    priority = raw.get("rule_priority", RULE_PRIORITY)
    if not (_is_int(priority) and 1 <= priority <= RULE_PRIORITY_MAX):
        problems.append(
            "%s.rule_priority=%s must be a number 1..%d (the rule's place before main's at 32766; %d by default)%s"
            % (where, shown(priority, SHOW_MAX), RULE_PRIORITY_MAX, RULE_PRIORITY, _not(priority, "a number"))
        )
        ok = False
    offset = raw.get("host_offset")
    if offset is not None and p2p:
        problems.append("%s.host_offset: a p2p_pool rail gives host index N the N-th link; remove host_offset" % where)
        ok = False
    elif offset is not None and not (_is_int(offset) and offset >= 0):
        problems.append("%s.host_offset=%s must be a number 0 or more%s" % (where, shown(offset, SHOW_MAX), _not(offset, "a number")))
        ok = False
    if offset is None:
        # hosts start after the gateway when it is the first address
        offset = 1 if gateway_rule == "first" and not p2p else 0

    if not ok or network is None:
        return None
    if gateway_rule in GATEWAY_WORDS and not p2p:
        usable_last = int(network.last) - (1 if network.version == 4 else 0)
        gateway = netaddr.IPAddress(int(network.first) + 1 if gateway_rule == "first" else usable_last, network.version)
    return Rail(position, name, network, p2p, gateway_rule, gateway, selector, table, priority, offset)


def _check_overlaps(problems, rails):
    """Rails may share one subnet (each NIC then needs its own rule: the ARP flux case), never part of one."""
    for index, one in enumerate(rails):
        for other in rails[index + 1:]:
            if one.version != other.version:
                continue
            if int(one.network.first) > int(other.network.last) or int(other.network.first) > int(one.network.last):
                continue
            if one.network == other.network and not one.p2p and not other.p2p:
                continue
            problems.append(
                "%s and %s overlap (%s %s and %s %s): give each rail a network of its own%s"
                % (
                    one.where(), other.where(), one.kind, one.network, other.kind, other.network,
                    "" if one.p2p or other.p2p else ", or the very same subnet for rails that share one",
                )
            )


def check_rails(raw):
    """The validated :class:`Rail` list of ``roce_fabric.rails`` (``[]`` when absent); IntentError otherwise."""
    if raw is None:
        return []
    if not HAS_NETADDR:
        raise IntentError([
            "roce_fabric.rails needs the Python package netaddr on the Ansible controller: pip install netaddr "
            "(in the environment that runs ansible-playbook)"
        ])
    if not _is_list(raw):
        raise IntentError(["roce_fabric.rails must be a list of rails (name, subnet or p2p_pool, gateway, netdev...), not %s" % kind(raw)])
    problems = []
    names = set()
    rails = [_check_rail(problems, position, item, names) for position, item in enumerate(raw)]
    valid = [rail for rail in rails if rail is not None]
    _check_overlaps(problems, valid)
    tables = {}
    for rail in valid:
        if rail.table in tables:
            problems.append("%s.table=%d is also %s's table: each rail needs a table of its own" % (rail.where(), rail.table, tables[rail.table].where()))
        tables.setdefault(rail.table, rail)
    if problems:
        raise IntentError(problems)
    return valid


def _host_vars(hostname, hostvars):
    """``(index, addresses)`` of one host; a problem list when they are malformed."""
    problems = []
    index = hostvars.get(HOST_INDEX_VAR) if isinstance(hostvars, Mapping) else None
    addresses = hostvars.get(HOST_ADDRESSES_VAR) if isinstance(hostvars, Mapping) else None
    if index is not None and not (_is_int(index) and index >= 0):
        problems.append("host %s: %s=%s must be a number 0 or more (the host's place in each rail's pool)%s"
                        % (hostname, HOST_INDEX_VAR, shown(index, SHOW_MAX), _not(index, "a number")))
        index = None
    if addresses is not None and not isinstance(addresses, Mapping):
        problems.append("host %s: %s must be a mapping of rail name to address (e.g. {rail0: 10.0.0.5}), not %s"
                        % (hostname, HOST_ADDRESSES_VAR, kind(addresses)))
        addresses = None
    return index, addresses or {}, problems


def _plan_entry(rail, address, gateway):
    version = rail.version
    address_text = str(netaddr.IPAddress(address, version))
    # a p2p link is the /31 (/127) holding the address: its even address is the link's
    network = "%s/%d" % (netaddr.IPAddress(address & ~1, version), rail.link_prefix) if rail.p2p else rail.network_text
    entry = dict(
        rail=rail.name,
        family="ipv%d" % version,
        kind=rail.kind,
        address=address_text,
        prefix=rail.link_prefix,
        cidr="%s/%d" % (address_text, rail.link_prefix),
        network=network,
        gateway=str(netaddr.IPAddress(gateway, version)),
        table=rail.table,
        rule_priority=rail.rule_priority,
    )
    entry.update(rail.selector)
    return entry


def plan_rails(raw_rails, hosts, only=None):
    """Every host's address on every rail: ``{host: [entry per rail, in the rails' order]}``.

    ``hosts`` maps each host name to its variables (``hostvars`` will do): ``roce_rail_index``
    (the host's place in every rail's pool) and/or ``roce_rail_addresses`` (``{rail: address}``,
    which wins for the rails it names).  ``only`` limits the plan to those hosts (each must have
    an address on every rail); without it, every host with either variable is planned.
    Raises IntentError with every problem found.
    """
    rails = check_rails(raw_rails)
    if not rails:
        return {}
    if not isinstance(hosts, Mapping):
        raise IntentError(["the hosts given to the rail plan must be a mapping of host name to its variables (hostvars), not %s" % kind(hosts)])
    if only is not None and not _is_list(only):
        raise IntentError(["the host list given to the rail plan must be a list of host names, not %s" % kind(only)])
    problems = []
    names = list(only) if only is not None else [name for name in hosts if _has_rail_vars(hosts[name])]
    by_name = dict((rail.name, rail) for rail in rails)
    taken = {}  # (version, address int) -> (host, rail)
    plan = {}
    for hostname in names:
        if not _is_text(hostname):
            problems.append("the host list holds %s, not a host name" % kind(hostname))
            continue
        if hostname not in hosts:
            problems.append("host %s is not in the inventory" % shown(hostname, SHOW_MAX))
            continue
        index, addresses, host_problems = _host_vars(hostname, hosts[hostname])
        problems.extend(host_problems)
        if host_problems:
            continue
        unknown = sorted(shown(key, SHOW_MAX) for key in addresses if not _is_text(key) or key not in by_name)
        if unknown:
            problems.append("host %s: %s names no rail: %s; rails: %s"
                            % (hostname, HOST_ADDRESSES_VAR, ", ".join(unknown), ", ".join(rail.name for rail in rails)))
        entries = []
        for rail in rails:
            pair = _host_address(problems, hostname, rail, index, addresses.get(rail.name))
            if pair is None:
                continue
            key = (rail.version, pair[0])
            if key in taken:
                other_host, other_rail = taken[key]
                problems.append(
                    "host %s, rail %s: address %s is also host %s's on rail %s: give each NIC an address of its own"
                    % (hostname, rail.name, netaddr.IPAddress(pair[0], rail.version), other_host, other_rail)
                )
                continue
            taken[key] = (hostname, rail.name)
            entries.append(_plan_entry(rail, pair[0], pair[1]))
        plan[hostname] = entries
    if problems:
        raise IntentError(problems)
    return plan


def check_plan_entry(entry, where):
    """Problems of one entry of a host's plan as :func:`plan_rails` writes it (``where`` names it):
    what roce_rail_links hands nic_layer is read again, so a plan written by hand or changed on the
    way meets the rules of a computed one (a rail's name, an address of its network outside the
    reserved blocks, a gateway on it, a table and a rule priority in range)."""
    if not isinstance(entry, Mapping):
        return ["%s must be a mapping (one rail of a host's plan, from roce_rail_plan), not %s" % (where, kind(entry))]
    problems = []
    name = entry.get("rail")
    if not (_is_text(name) and RAIL_NAME.fullmatch(name)):
        problems.append("%s.rail=%s must be a rail's name: letters, digits, '_' and '-' (up to 32, e.g. rail0)" % (where, shown(name, SHOW_MAX)))
    network, why = _network(entry.get("network"))
    if why:
        problems.append("%s.network=%s %s" % (where, shown(entry.get("network"), SHOW_MAX), why))
    prefix = entry.get("prefix")
    if network is not None and prefix != network.prefixlen:
        problems.append("%s.prefix=%s must be the prefix length of its network %s, %d%s"
                        % (where, shown(prefix, SHOW_MAX), network, network.prefixlen, _not(prefix, "a number")))
    for key in ("address", "gateway"):
        address, why = _address(entry.get(key))
        if why:
            problems.append("%s.%s=%s %s" % (where, key, shown(entry.get(key), SHOW_MAX), why))
        elif network is not None and (address.version != network.version or address not in network):
            problems.append("%s.%s=%s is outside its network %s" % (where, key, address, network))
    if entry.get("address") == entry.get("gateway") and entry.get("address") is not None:
        problems.append("%s: the address %s is also its gateway; give the host another address" % (where, shown(entry.get("address"), SHOW_MAX)))
    chosen = [key for key in SELECTOR_KEYS if entry.get(key) is not None]
    patterns = dict(netdev=IFNAME, pci=PCI_ADDRESS, rdma_device=RDMA_DEVICE)
    if len(chosen) != 1:
        problems.append("%s needs exactly one of %s (the rail's netdev selector, as roce_rail_plan copies it)" % (where, ", ".join(SELECTOR_KEYS)))
    elif chosen[0] == "netdevs":
        value = entry["netdevs"]
        if not (_is_list(value) and value and all(_is_text(item) and IFNAME.fullmatch(item) for item in value)):
            problems.append("%s.netdevs must be a non-empty list of interface names (each %s)" % (where, NETDEV_RULE))
    elif not (_is_text(entry[chosen[0]]) and patterns[chosen[0]].fullmatch(entry[chosen[0]])):
        problems.append("%s.%s=%s is not %s" % (where, chosen[0], shown(entry[chosen[0]], SHOW_MAX), dict(
            netdev="an interface name", pci="a PCI address such as 0000:17:00.0", rdma_device="an RDMA device name such as mlx5_0")[chosen[0]]))
    table, priority = entry.get("table"), entry.get("rule_priority")
    if not (_is_int(table) and 1 <= table <= TABLE_MAX and table not in RESERVED_TABLES):
        problems.append("%s.table=%s must be a routing table number 1..%d other than 253, 254 and 255%s"
                        % (where, shown(table, SHOW_MAX), TABLE_MAX, _not(table, "a number")))
    if not (_is_int(priority) and 1 <= priority <= RULE_PRIORITY_MAX):
        problems.append("%s.rule_priority=%s must be a number 1..%d%s" % (where, shown(priority, SHOW_MAX), RULE_PRIORITY_MAX, _not(priority, "a number")))
    return problems


def _has_rail_vars(variables):
    return isinstance(variables, Mapping) and (
        variables.get(HOST_INDEX_VAR) is not None or variables.get(HOST_ADDRESSES_VAR) is not None
    )


def _host_address(problems, hostname, rail, index, given):
    """``(address, gateway)`` as integers for ``hostname`` on ``rail``; None with a problem added."""
    where = "host %s, rail %s" % (hostname, rail.name)
    if given is None:
        if index is None:
            problems.append("%s: no address: set %s (the host's place in the rail's pool) or %s.%s"
                            % (where, HOST_INDEX_VAR, HOST_ADDRESSES_VAR, rail.name))
            return None
        pair = rail.by_index(index)
        if pair is None:
            problems.append(
                "%s: %s %s is too small for %s=%d: it has room for %d host(s) (%s); use a larger %s or a smaller index"
                % (where, rail.kind, rail.network, HOST_INDEX_VAR, index, rail.capacity(),
                   "one /%d link each" % rail.link_prefix if rail.p2p else "from host_offset %d on" % rail.host_offset, rail.kind)
            )
            return None
        if not rail.p2p and pair[0] == pair[1]:
            problems.append(
                "%s: the gateway %s (gateway: %s) is inside the host range, and %s=%d gives the host that address; "
                "move the gateway out of the hosts' range or set host_offset"
                % (where, netaddr.IPAddress(pair[1], rail.version), rail.gateway_rule, HOST_INDEX_VAR, index)
            )
            return None
        return pair
    text = given
    prefix = None
    if _is_text(given) and "/" in given:
        text, _slash, prefix = given.partition("/")
    address, why = _address(text)
    if why:
        problems.append("%s: %s.%s=%s %s" % (where, HOST_ADDRESSES_VAR, rail.name, shown(given, SHOW_MAX), why))
        return None
    if prefix is not None and prefix != str(rail.link_prefix):
        problems.append("%s: %s.%s=%s: the rail's prefix is /%d; write the address alone or with /%d"
                        % (where, HOST_ADDRESSES_VAR, rail.name, shown(given, SHOW_MAX), rail.link_prefix, rail.link_prefix))
        return None
    if address.version != rail.version or address not in rail.network:
        problems.append("%s: address %s is outside the rail's %s %s" % (where, address, rail.kind, rail.network))
        return None
    value = int(address)
    if rail.p2p:
        base = value & ~1
        gateway = base if rail.gateway_rule == "first" else base + 1
        if value == gateway:
            problems.append(
                "%s: address %s is the leaf's side of its /%d (gateway: %s); the host's side is %s"
                % (where, address, rail.link_prefix, rail.gateway_rule, netaddr.IPAddress(base + 1 if value == base else base, rail.version))
            )
            return None
        return value, gateway
    if value == int(rail.gateway):
        problems.append("%s: address %s is the rail's gateway; give the host another address" % (where, address))
        return None
    if value < rail.usable_first or value > rail.usable_last:
        problems.append("%s: address %s is the subnet's %s address, not a host's"
                        % (where, address, "network" if value < rail.usable_first else "broadcast"))
        return None
    return value, int(rail.gateway)
