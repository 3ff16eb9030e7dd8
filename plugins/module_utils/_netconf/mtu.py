# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set a link's MTU now and for every boot, without cutting the management connection.

The engine of ``link_mtu`` (run by :func:`_core.engine.run_module`):

* validate: the interface is a kernel interface name, the MTU is in range;
* read: the link and every device below it (VLAN parent, bond members, bridge ports) from
  sysfs; the driver's MTU limits from ``ip -d link``; the management path
  (:mod:`_host.management`); where each link's MTU is persisted (:mod:`_netconf.backends`).
  A change that would reach the management path and was not allowed is refused here, the
  live changes before any configuration question, before anything is touched;
* plan: lower devices first (a link never exceeds the device it sits on), each with its old MTU
  as undo, then the configuration of each device changed (files through :meth:`Plan.file`, which
  restores them on failure; a NetworkManager profile through ``nmcli`` with the old value as undo),
  then the command each configuration system needs to take them (``netplan generate`` validates the
  files: when it fails, everything is rolled back; never one that bounces other links);
* verify: the kernel's MTU of every device changed and the configuration's effective value; after
  an allowed management change, the connection's address, the route to the SSH client and the
  default routes are checked again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import (
    CommandError,
    InputError,
    RdmaopsError,
    RefusedError,
    VerifyError,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import LINK_RESET
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import not_option_like
from ansible_collections.rdmaops.roce.plugins.module_utils._host.links import Links
from ansible_collections.rdmaops.roce.plugins.module_utils._host.management import ManagementPath, guard
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname, check_netdev, valid_netdev
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import backends

MTU_MIN = 68  # IPv4's minimum; the kernel refuses less on Ethernet
MTU_MAX = 65535


class LinkMtu(Engine):
    """One run of the link_mtu module."""

    def __init__(self, ctx, params, environ=None, config_ctx=None):
        """``config_ctx``: a :class:`backends.Context` shared by the links of one host planned
        together (the NIC layer), so two links configured in one file build on each other's edit
        and each file is written once; such a caller plans the files and activations itself
        (``plan(plan, files=False)``, then :meth:`plan_shared`)."""
        super(LinkMtu, self).__init__(ctx, params)
        self.environ = os.environ if environ is None else environ
        self.config_ctx = config_ctx or backends.Context(self.host, self.runner, Links(self.host))
        self.links = self.config_ctx.links
        # Commands that change something or activate it, as people read them (the read-only
        # queries are left out); the configuration backends add theirs to the same list.
        self.commands = self.config_ctx.commands
        self.name = params.get("interface")
        self.mtu = params.get("mtu")
        self.steps = []
        self.configs = []
        self.activations = []
        self.before_runtime = {}
        self.management = None
        self.mgmt_result = dict(interfaces={}, protected=[], change=False, retest=[])
        self.on_path = []
        self.planned = None
        self._persisted = {}

    # -- validate -----------------------------------------------------------------------------
    def validate(self):
        # the name goes into network configuration (ifupdown's shell lines, ifcfg) and onto command lines
        check_netdev("interface", self.name)
        not_option_like("interface", self.name)
        for name in self.params.get("management_interfaces") or []:
            check_ifname("management_interfaces", name)
        if not isinstance(self.mtu, int) or not MTU_MIN <= self.mtu <= MTU_MAX:
            raise InputError(
                "mtu=%s is out of range: use %d..%d (9000 for jumbo RoCE)" % (self.mtu, MTU_MIN, MTU_MAX), option="mtu"
            )

    # -- read ---------------------------------------------------------------------------------
    def read(self):
        name, mtu = self.name, self.mtu
        if not self.links.exists(name):
            raise InputError(
                "interface %s does not exist on this host; links: %s" % (name, ", ".join(self.links.names()) or "none"),
                option="interface",
            )
        self.before_runtime = dict((dev, self.links.mtu(dev)) for dev in [name] + self.links.lower_closure(name))
        self.steps = self.runtime_steps(name, mtu)
        self._check_limits(self.steps)
        # The management path is checked twice: for the live changes before anything else is
        # looked at, then for the persistent ones once it is known what configures each link.
        path = ManagementPath(self.host, self.runner, self.links, environ=self.environ)
        extra = tuple(self.params.get("management_interfaces") or ())
        # once per host when links share the context: the path does not depend on the link
        self.management = self.config_ctx.cached(("management", extra), lambda: path.detect(interfaces=extra))
        self.mgmt_result.update(interfaces=self.management["interfaces"], protected=sorted(self.management["protected"]))
        self._path = path
        self.on_path = self._guard([dev for dev, _c, _w in self.steps])
        if self.persist:
            for dev in self.persist_targets(name, self.steps):
                if not valid_netdev(dev):
                    # a device below the link, named by the host, not by the user
                    raise RefusedError("%s sits on %s, whose name cannot be written into network configuration safely; "
                                       "rename it (ip link set dev NAME name NEW) to %s, or use backend: runtime"
                                       % (name, repr(dev), "a name of A-Z, a-z, 0-9, '_', '.' and '-'"), device=dev)
                try:
                    self.configs.append(backends.detect(self.config_ctx, self.links.info(dev), self.params.get("backend", "auto")))
                except RdmaopsError as exc:
                    exc.details.setdefault("device", dev)
                    exc.details.setdefault("management", self.mgmt_result)
                    raise
                self.config_ctx.notes = []
        self.on_path = self._guard(self.on_path + [cfg.interface for cfg in self.configs if cfg.mtu != mtu])

    @property
    def persist(self):
        return bool(self.params.get("persist", True)) and self.params.get("backend", "auto") != "runtime"

    def limits(self):
        """``{ifname: (min_mtu, max_mtu)}`` as the drivers report them (``ip -d``)."""
        out = {}
        for link in self.runner.run_json_list(["ip", "-j", "-d", "link", "show"]):
            if isinstance(link, dict) and link.get("ifname"):
                out[link["ifname"]] = (link.get("min_mtu") or 0, link.get("max_mtu") or 0)
        return out

    def runtime_steps(self, name, mtu):
        """``[(device, current, wanted)]`` lower devices first; refuse where a lower must not move."""
        steps = []
        for lower in self.links.lower_closure(name):
            current = self.links.mtu(lower)
            if current is not None and current < mtu:
                if not self.params.get("raise_lower", True):
                    raise RefusedError(
                        "%s sits on %s, whose MTU is %d: a link cannot exceed the device below it. Raise %s to at least "
                        "%d first, or let this module do it (raise_lower: true)" % (name, lower, current, lower, mtu),
                        lower=lower,
                    )
                steps.append((lower, current, mtu))
        current = self.links.mtu(name)
        if current != mtu:
            steps.append((name, current, mtu))
            if current is not None and mtu < current:
                for upper in self.links.upper_closure(name):
                    upper_mtu = self.links.mtu(upper)
                    if upper_mtu is not None and upper_mtu > mtu:
                        self.ctx.warn(
                            "lowering %s to %d also lowers %s (now %d): the kernel keeps a device at or below the one "
                            "it sits on; its persistent configuration is not changed" % (name, mtu, upper, upper_mtu)
                        )
        return steps

    def persist_targets(self, name, steps):
        """The devices whose MTU is persisted: the link and the lower devices raised for it.

        A bond's members are left out when the bond itself is persisted: the kernel gives
        every member the bond's MTU when it is enslaved.
        """
        raised = [dev for dev, _c, _w in steps if dev != name]
        chosen = [name] + raised
        out = []
        for dev in chosen:
            master = self.links.bond_master(dev)
            if master and master in chosen:
                continue
            out.append(dev)
        return out

    def _check_limits(self, steps):
        if not steps:
            return
        limits = self.limits()
        for dev, _current, wanted in steps:
            low, high = limits.get(dev, (0, 0))
            if high and wanted > high:
                raise InputError(
                    "%s accepts an MTU of at most %d (its driver's max_mtu), not %d" % (dev, high, wanted),
                    option="mtu", device=dev, max_mtu=high,
                )
            if low and wanted < low:
                raise InputError(
                    "%s accepts an MTU of at least %d, not %d" % (dev, low, wanted), option="mtu", device=dev, min_mtu=low
                )

    def _guard(self, touched):
        """Refuse changes to the management path unless allowed; return the devices on it."""
        on_path = sorted(set(dev for dev in touched if dev in self.management["protected"]))
        self.mgmt_result["change"] = bool(on_path)
        guard(self.management, "change the MTU of", devices=on_path,
              advice="A wrong MTU there can cut this host off. Set allow_management_change: true to change it anyway; "
                     "the connectivity is then re-tested after the change",
              allowed=self.params.get("allow_management_change", False), details=dict(management=self.mgmt_result))
        return on_path

    # -- plan ---------------------------------------------------------------------------------
    def plan(self, plan, files=True):
        name, mtu = self.name, self.mtu
        for dev, current, wanted in self.steps:
            plan.add(
                "runtime:%s" % dev,
                current,
                wanted,
                self._setter(dev, wanted),
                "runtime: ip link set dev %s mtu %d (was %s)%s" % (dev, wanted, current, "" if dev == name else ", below " + name),
                undo=self._setter(dev, current) if current is not None else None,
                # A new MTU re-creates the port's queues: every RDMA connection over it breaks.
                disruption=LINK_RESET,
            )
        for cfg in self.configs:
            try:
                planned = cfg.backend.plan_mtu(cfg, mtu, plan)
            except RdmaopsError as exc:
                exc.details.setdefault("device", cfg.interface)
                raise
            for cmd in planned:
                if cmd not in self.activations:
                    self.activations.append(cmd)
        self.planned = plan
        if files:
            self.plan_shared(plan, [self], adopt=self.params.get("adopt", False))

    @staticmethod
    def plan_shared(plan, engines, adopt=False):
        """The files staged by ``engines`` (sharing one context) and their activation commands,
        each once, after every runtime change."""
        if not engines:
            return
        engines[0].config_ctx.plan_files(plan, adopt=adopt)
        seen = []
        for engine in engines:
            for cmd in engine.activations:
                if cmd not in seen:
                    seen.append(cmd)
                    plan.then(" ".join(cmd["argv"]), engine._activation(cmd), validates=cmd["validates"],
                              disruption=cmd["disruption"])

    def _setter(self, dev, mtu):
        def action():
            self.config_ctx.run(["ip", "link", "set", "dev", dev, "mtu", str(mtu)])

        return action

    def _activation(self, cmd):
        argv = cmd["argv"]

        def action():
            try:
                self.config_ctx.run(argv)
            except CommandError as exc:
                if cmd["validates"]:
                    raise RdmaopsError(
                        "%s rejected the configuration, so the files were restored and the live MTU set back where it "
                        "was changed: %s" % (" ".join(argv), exc.output()),
                        **exc.details
                    )
                if cmd["required"]:
                    raise
                self.ctx.warn(
                    "%s failed (rc %d: %s); the live MTU was set with ip already" % (" ".join(argv), exc.result.rc, exc.output())
                )

        return action

    # -- verify -------------------------------------------------------------------------------
    def verify(self):
        self.config_ctx.staged = {}  # from here on, read what is on the host
        problems = []
        for dev, _current, wanted in self.steps:
            now = self.links.mtu(dev)
            if now != wanted:
                problems.append("the kernel reports %s at MTU %s after setting %d" % (dev, now, wanted))
            if self.links.is_bond(dev):
                for member in self.links.lowers(dev):
                    member_mtu = self.links.mtu(member)
                    if member_mtu != wanted:
                        problems.append("bond %s is at %s but its member %s reports %s" % (dev, now, member, member_mtu))
        for cfg in self.configs:
            now = cfg.backend.read_mtu(cfg)
            self._persisted[cfg.interface] = now
            if now != self.mtu:
                problems.append("%s (%s) now gives %s an MTU of %s, not %d" % (cfg.path, cfg.backend.name, cfg.interface, now, self.mtu))
        if problems:
            return problems
        if self.on_path:
            checked, broken = self._path.retest(self.management["state"])
            self.mgmt_result["retest"] = checked
            if broken:
                raise VerifyError(
                    "connectivity re-test failed after the management change: " + "; ".join(broken),
                    problems=broken,
                    management=self.mgmt_result,
                )
        return []

    # -- result -------------------------------------------------------------------------------
    def _predicting(self):
        return self.check_mode and self.planned is not None

    def _persistent_after(self, cfg):
        if cfg.interface in self._persisted:
            return self._persisted[cfg.interface]  # re-read after applying
        if self.planned is None:
            return cfg.mtu  # refused or failed before anything was planned: nothing changed
        if self.check_mode or not self.planned.changed or cfg.mtu == self.mtu:
            return self.mtu  # what it will be, or already is
        # applying stopped part-way: say what the configuration says now
        self.config_ctx.staged = {}
        try:
            return cfg.backend.read_mtu(cfg)
        except RdmaopsError:
            return None

    def result(self):
        after_runtime = dict(self.before_runtime)
        if self._predicting():
            for dev, _c, wanted in self.steps:
                after_runtime[dev] = wanted
        elif self.planned is not None:
            for dev in after_runtime:
                after_runtime[dev] = self.links.mtu(dev)
        if self.check_mode:
            commands = [" ".join(cmd["argv"]) for cmd in self.activations] if self._predicting() and self.planned.changed else []
        else:
            commands = list(self.commands)
        configs = self.configs
        return dict(
            interface=self.name,
            mtu=self.mtu,
            backend=configs[0].backend.name if configs else "runtime",
            config=configs[0].describe() if configs else None,
            before=dict(runtime=self.before_runtime, persistent=dict((c.interface, c.mtu) for c in configs)),
            after=dict(runtime=after_runtime, persistent=dict((c.interface, self._persistent_after(c)) for c in configs)),
            configs=[c.describe() for c in configs],
            commands=commands,
            management=self.mgmt_result,
        )
