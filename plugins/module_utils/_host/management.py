# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one management-path detector: which netdevs carry the Ansible connection.

A change there (an MTU, a driver restart) can cut the host off, so every engine that could
touch a link asks here first.  The rules are the union of what each engine needs:

* the interface holding the address the SSH connection came in on, and the one carrying the
  route back to the SSH client (``SSH_CONNECTION``, looked up in ancestors when ``become``
  cleared it);
* interfaces carrying an IPv4 or an IPv6 default route (every next hop);
* interfaces the user names (``management_interfaces``), or that hold an address the user names
  (``management_address``);
* and for each of those, every device below it: VLAN parents, bond and team members, bridge
  ports, recursively (:meth:`Links.lower_closure`), because changing one of them changes the path.

The management addresses are the address the SSH connection came in on and the
``management_address``: a routing rule from one of them, or its removal, moves the connection.

:func:`guard` is the one refusal: link_mtu (an MTU) and the NIC layer's rails (an address, a
route, a rule) ask it before anything is touched.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.links import Links


def ssh_connection(host, environ, pid=None):
    """``(client_ip, server_ip)`` of the SSH session this process runs in, or None.

    SSH_CONNECTION is read from this process's environment, else from its ancestors'
    (``/proc/<pid>/environ``): ``become`` (sudo) clears it from the module's environment,
    but the login shell above still has it.
    """
    value = environ.get("SSH_CONNECTION")
    pid = pid if pid is not None else os.getppid()
    hops = 0
    while not value and pid and pid > 1 and hops < 32:
        hops += 1
        raw = host.read("/proc/%d/environ" % pid)
        if raw:
            for item in raw.split("\0"):
                if item.startswith("SSH_CONNECTION="):
                    value = item.split("=", 1)[1]
                    break
        stat = host.read("/proc/%d/stat" % pid) or ""
        try:
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (IndexError, ValueError):
            break
    if not value:
        return None
    parts = value.split()
    if len(parts) != 4:
        return None
    return plain_ip(parts[0]), plain_ip(parts[2])


def plain_ip(text):
    """``::ffff:10.0.2.15`` -> ``10.0.2.15``, ``fe80::1%eth0`` -> ``fe80::1``; anything unparsable as it is."""
    try:
        addr = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text
    mapped = getattr(addr, "ipv4_mapped", None)
    return str(mapped or addr)


class ManagementPath:
    """Detect the management path of a host once; :meth:`detect` may be called again to re-test."""

    def __init__(self, host, runner, links=None, environ=None):
        self.host = host
        self.runner = runner
        self.links = links or Links(host)
        self.environ = os.environ if environ is None else environ

    def addresses(self):
        """``{address: netdev}`` for every local address."""
        holders = {}
        for link in self.runner.run_json_list(["ip", "-j", "addr", "show"]):
            for info in link.get("addr_info") or []:
                if info.get("local"):
                    holders[plain_ip(info["local"])] = link.get("ifname")
        return holders

    def detect(self, interfaces=(), address=None):
        """``dict(interfaces={name: [why]}, protected={device: via}, addresses={address: why}, state={...})``.

        ``interfaces`` and ``address`` are what the user named as management; ``addresses`` the
        management addresses; ``state`` is what a re-test compares (address holder, route back to
        the client, default routes).
        """
        reasons = {}
        mgmt_addresses = {}

        def add(name, why):
            if name and self.links.exists(name) and why not in reasons.get(name, []):
                reasons.setdefault(name, []).append(why)

        holders = self.addresses()
        conn = ssh_connection(self.host, self.environ)
        state = dict(ssh=None, address_holder=None, client_route=None, default_routes=[])
        if conn:
            client, server = conn
            state["ssh"] = dict(client=client, server=server)
            holder = holders.get(server)
            state["address_holder"] = holder
            mgmt_addresses[server] = "the address this SSH connection came in on"
            add(holder, "holds %s, the address this SSH connection came in on" % server)
            route = self.runner.run_json_list(["ip", "-j", "route", "get", client])
            if route and isinstance(route[0], dict):
                state["client_route"] = route[0].get("dev")
                add(route[0].get("dev"), "carries the route back to the SSH client %s" % client)
        for family, argv in (("IPv4", ["ip", "-j", "route", "show", "default"]),
                             ("IPv6", ["ip", "-j", "-6", "route", "show", "default"])):
            for route in self.runner.run_json_list(argv):
                devs = [route.get("dev")] + [hop.get("dev") for hop in route.get("nexthops") or []]
                for dev in devs:
                    if dev:
                        state["default_routes"].append("%s via %s dev %s" % (route.get("dst"), route.get("gateway"), dev))
                        # one reason per family, however many default routes (metrics, tables) use it
                        add(dev, "carries an %s default route" % family)
        for name in interfaces or ():
            add(name, "named in management_interfaces")
        if address:
            add(holders.get(plain_ip(address)), "holds %s, the management_address" % address)
            mgmt_addresses.setdefault(plain_ip(address), "the management_address")
        protected = {}
        for name in reasons:
            protected.setdefault(name, name)
            for lower in self.links.lower_closure(name):
                protected.setdefault(lower, name)
        return dict(interfaces=reasons, protected=protected, addresses=mgmt_addresses, state=state)

    def retest(self, state):
        """Check the path again against an earlier ``state``: ``(checked, problems)``."""
        after = self.detect()["state"]
        checked, problems = [], []
        if state["ssh"]:
            server = state["ssh"]["server"]
            holder = after["address_holder"]
            checked.append("%s still holds %s" % (holder, server))
            if holder != state["address_holder"]:
                problems.append("the connection's address %s moved from %s to %s" % (server, state["address_holder"], holder))
            elif holder and self.links.operstate(holder) not in ("up", "unknown"):
                problems.append("%s, which holds %s, is %s" % (holder, server, self.links.operstate(holder)))
            checked.append("route to the SSH client via %s" % after["client_route"])
            if after["client_route"] != state["client_route"]:
                problems.append("the route to the SSH client went from %s to %s" % (state["client_route"], after["client_route"]))
        checked.append("default routes: %s" % (", ".join(after["default_routes"]) or "none"))
        missing = [route for route in state["default_routes"] if route not in after["default_routes"]]
        if missing:
            problems.append("default routes lost: %s" % ", ".join(missing))
        return checked, problems


def guard(path, action, devices=(), addresses=(), advice="", allowed=False, details=None):
    """The one management-path guard: refuse ``action`` where it reaches the management path.

    ``path`` is :meth:`ManagementPath.detect`'s answer; ``devices`` the netdevs the change
    touches (an MTU, an address removed, a route of the netdev removed), ``addresses`` the
    addresses whose rule or route it adds or removes.  Unless ``allowed``, a RefusedError
    saying ``refusing to <action> <what>: it is on the path that carries the Ansible connection
    (<why>). <advice>`` with ``details``; else return ``(devices, addresses)`` on the path.
    """
    protected = path.get("protected") or {}
    known = path.get("addresses") or {}
    on_devices = sorted(set(dev for dev in devices if dev in protected))
    on_addresses = sorted(set(plain_ip(addr) for addr in addresses if plain_ip(addr) in known))
    if (on_devices or on_addresses) and not allowed:
        lines = []
        for dev in on_devices:
            via = protected[dev]
            why = "; ".join(path["interfaces"].get(via) or ["is on the management path"])
            lines.append("%s %s" % (dev, why) if via == dev else "%s is below %s, which %s" % (dev, via, why))
        lines += ["%s is %s" % (addr, known[addr]) for addr in on_addresses]
        raise RefusedError(
            "refusing to %s %s: it is on the path that carries the Ansible connection (%s).%s"
            % (action, ", ".join(on_devices + on_addresses), "; ".join(lines), " " + advice if advice else ""),
            **(details or {})
        )
    return on_devices, on_addresses
