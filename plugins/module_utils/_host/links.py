# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Network links as the kernel shows them in sysfs: MTU, identity and stacking.

A VLAN sits on its parent, a bond on its members, a bridge on its ports: the kernel
links each upper device to its lower ones with ``/sys/class/net/UPPER/lower_LOWER``
(and ``upper_UPPER`` the other way).  Bonds also list their members in
``bonding/slaves`` and VLANs their parent in ``/proc/net/vlan/config``; both are read too,
so older kernels and partial trees give the same answer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import NET_CLASS as NET

VLAN_CONFIG = "/proc/net/vlan/config"


class Links:
    """Read-only view of ``/sys/class/net`` through a :class:`HostRoot`."""

    def __init__(self, host):
        self.host = host
        self._vlan_parents = None

    def names(self):
        return [name for name in self.host.listdir(NET) if not name.startswith("bonding_")]

    def exists(self, name):
        return bool(name) and self.host.exists("%s/%s" % (NET, name))

    def mtu(self, name):
        return self.host.read_int("%s/%s/mtu" % (NET, name))

    def operstate(self, name):
        return self.host.read("%s/%s/operstate" % (NET, name))

    def is_bond(self, name):
        return self.host.isdir("%s/%s/bonding" % (NET, name))

    def bond_master(self, name):
        """The bond ``name`` is enslaved to, or None."""
        if not self.host.isdir("%s/%s/bonding_slave" % (NET, name)):
            return None
        return self.host.readlink_name("%s/%s/master" % (NET, name))

    def vlan_parents(self):
        """``{vlan: parent}`` from /proc/net/vlan/config (``name | VID | parent`` lines)."""
        if self._vlan_parents is None:
            parents = {}
            text = self.host.read(VLAN_CONFIG) or ""
            for line in text.splitlines()[2:]:
                parts = [part.strip() for part in line.split("|")]
                if len(parts) == 3 and parts[0] and parts[2]:
                    parents[parts[0]] = parts[2]
            self._vlan_parents = parents
        return self._vlan_parents

    def lowers(self, name):
        """Direct lower devices of ``name``, sorted."""
        found = set()
        for entry in self.host.listdir("%s/%s" % (NET, name)):
            if entry.startswith("lower_"):
                found.add(entry[len("lower_"):])
        if self.is_bond(name):
            slaves = self.host.read("%s/%s/bonding/slaves" % (NET, name)) or ""
            found.update(slaves.split())
        parent = self.vlan_parents().get(name)
        if parent:
            found.add(parent)
        found.discard(name)
        return sorted(found)

    def uppers(self, name):
        """Direct upper devices of ``name`` (VLANs on it, the bond or bridge it belongs to)."""
        found = set()
        for entry in self.host.listdir("%s/%s" % (NET, name)):
            if entry.startswith("upper_"):
                found.add(entry[len("upper_"):])
        master = self.bond_master(name)
        if master:
            found.add(master)
        for vlan, parent in self.vlan_parents().items():
            if parent == name:
                found.add(vlan)
        found.discard(name)
        return sorted(found)

    def lower_closure(self, name):
        """Every device below ``name``, deepest first (a post-order walk), without ``name``."""
        order = []
        seen = set([name])

        def walk(dev, depth):
            if depth > 16:
                return
            for lower in self.lowers(dev):
                if lower in seen:
                    continue
                seen.add(lower)
                walk(lower, depth + 1)
                order.append(lower)

        walk(name, 0)
        return order

    def upper_closure(self, name):
        order = []
        seen = set([name])
        stack = [name]
        while stack:
            dev = stack.pop()
            for upper in self.uppers(dev):
                if upper not in seen:
                    seen.add(upper)
                    order.append(upper)
                    stack.append(upper)
        return order

    def info(self, name):
        """What configuration tools match links by: name, MAC, permanent MAC, driver, type, ifindex."""
        base = "%s/%s" % (NET, name)
        mac = self.host.read(base + "/address")
        # A bond member wears the bond's MAC; its own is kept in bonding_slave/perm_hwaddr.
        # Otherwise the current address is the permanent one when addr_assign_type says
        # NET_ADDR_PERM (0).
        permanent = self.host.read(base + "/bonding_slave/perm_hwaddr")
        if permanent is None and self.host.read(base + "/addr_assign_type") == "0":
            permanent = mac
        uevent = self.host.read(base + "/uevent") or ""
        devtype = None
        for line in uevent.splitlines():
            if line.startswith("DEVTYPE="):
                devtype = line.split("=", 1)[1]
        if devtype is None and self.host.read(base + "/type") == "1":
            devtype = "ether"
        return dict(
            name=name,
            mac=mac,
            permanent_mac=permanent,
            driver=self.host.readlink_name(base + "/device/driver"),
            type=devtype,
            ifindex=self.host.read_int(base + "/ifindex"),
        )
