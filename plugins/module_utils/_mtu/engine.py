# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set a link's MTU now and for every boot, without cutting the management connection.

read -> plan -> apply -> re-read:

* read: the link and every device below it (VLAN parent, bond members, bridge ports) from
  sysfs; the driver's MTU limits from ``ip -d link``; the management path (the interface
  holding the SSH server address of this connection, the route back to the SSH client,
  the default routes, and every device below those); where the link's MTU is persisted
  (:mod:`netconf_backends`);
* plan: lower devices first (a link never exceeds the device it sits on), then the link,
  then the persistent configuration of each device changed; refuse before anything is
  touched when a change would reach the management path and it was not allowed;
* apply: ``ip link set dev X mtu N`` in that order, file edits (atomic), then the command
  each configuration system needs (never one that bounces other links);
* re-read: the kernel's MTU of every device changed and the configuration's effective value;
  any difference fails, saying what differs.  After an allowed management change, the
  connection's address, the route to the SSH client and the default routes are checked again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import os

from ansible_collections.rdmaops.roce.plugins.module_utils._mtu import backends as backends
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import write_atomic
from ansible_collections.rdmaops.roce.plugins.module_utils._host.links import IFNAME, Links
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan

MTU_MIN = 68  # IPv4's minimum; the kernel refuses less on Ethernet
MTU_MAX = 65535


class MtuError(Exception):
    """Fail the module with ``str(self)``; ``details`` go into the result."""

    def __init__(self, msg, **details):
        super(MtuError, self).__init__(msg)
        self.details = details


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
    return _plain_ip(parts[0]), _plain_ip(parts[2])


def _plain_ip(text):
    """``::ffff:10.0.2.15`` -> ``10.0.2.15``; anything unparsable is returned as it is."""
    try:
        addr = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text
    mapped = getattr(addr, "ipv4_mapped", None)
    return str(mapped or addr)


class LinkMtu:
    """One run of the link_mtu module (the module only wires parameters and results)."""

    def __init__(self, host, runner, params, check_mode=False, diff_mode=False, environ=None):
        self.host = host
        self.runner = runner
        self.params = params
        self.check_mode = check_mode
        self.diff_mode = diff_mode
        self.environ = os.environ if environ is None else environ
        self.links = Links(host)
        self.ctx = backends.Context(host, runner, self.links)
        self.warnings = []
        self.commands = []
        self._originals = {}
        self._persisted = {}

    # -- read ---------------------------------------------------------------------------------
    def _ip_json(self, argv):
        result = self.runner.run_optional(argv)
        if result is None:
            return []
        try:
            data = json.loads(result.stdout or "[]")
        except ValueError:
            return []
        return data if isinstance(data, list) else []

    def limits(self):
        """``{ifname: (min_mtu, max_mtu)}`` as the drivers report them (``ip -d``)."""
        out = {}
        for link in self._ip_json(["ip", "-j", "-d", "link", "show"]):
            if isinstance(link, dict) and link.get("ifname"):
                out[link["ifname"]] = (link.get("min_mtu") or 0, link.get("max_mtu") or 0)
        return out

    def management(self):
        """The management path: interfaces carrying the Ansible connection or a default route."""
        reasons = {}

        def add(name, why):
            if name and self.links.exists(name):
                reasons.setdefault(name, []).append(why)

        addresses = {}
        for link in self._ip_json(["ip", "-j", "addr", "show"]):
            for info in link.get("addr_info") or []:
                if info.get("local"):
                    addresses[_plain_ip(info["local"])] = link.get("ifname")
        conn = ssh_connection(self.host, self.environ)
        state = dict(ssh=None, address_holder=None, client_route=None, default_routes=[])
        if conn:
            client, server = conn
            state["ssh"] = dict(client=client, server=server)
            holder = addresses.get(server)
            state["address_holder"] = holder
            add(holder, "holds %s, the address this SSH connection came in on" % server)
            route = self._ip_json(["ip", "-j", "route", "get", client])
            if route and isinstance(route[0], dict):
                state["client_route"] = route[0].get("dev")
                add(route[0].get("dev"), "carries the route back to the SSH client %s" % client)
        for family, argv in (("IPv4", ["ip", "-j", "route", "show", "default"]),
                             ("IPv6", ["ip", "-j", "-6", "route", "show", "default"])):
            for route in self._ip_json(argv):
                devs = [route.get("dev")] + [hop.get("dev") for hop in route.get("nexthops") or []]
                for dev in devs:
                    if dev:
                        state["default_routes"].append("%s via %s dev %s" % (route.get("dst"), route.get("gateway"), dev))
                        why = "carries an %s default route" % family
                        # one reason per family, however many default routes (metrics, tables) use it
                        if why not in reasons.get(dev, []):
                            add(dev, why)
        for name in self.params.get("management_interfaces") or []:
            add(name, "named in management_interfaces")
        protected = {}
        for name in reasons:
            protected.setdefault(name, name)
            for lower in self.links.lower_closure(name):
                protected.setdefault(lower, name)
        return dict(interfaces=reasons, protected=protected, state=state)

    # -- plan ---------------------------------------------------------------------------------
    def runtime_steps(self, name, mtu):
        """``[(device, current, wanted)]`` lower devices first; raise MtuError where a lower must not move."""
        steps = []
        for lower in self.links.lower_closure(name):
            current = self.links.mtu(lower)
            if current is not None and current < mtu:
                if not self.params.get("raise_lower", True):
                    raise MtuError(
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
                        self.warnings.append(
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

    def _check_limits(self, steps, mtu):
        if not steps:
            return
        limits = self.limits()
        for dev, _current, wanted in steps:
            low, high = limits.get(dev, (0, 0))
            if high and wanted > high:
                raise MtuError(
                    "%s accepts an MTU of at most %d (its driver's max_mtu), not %d" % (dev, high, wanted), device=dev, max_mtu=high
                )
            if low and wanted < low:
                raise MtuError("%s accepts an MTU of at least %d, not %d" % (dev, low, wanted), device=dev, min_mtu=low)

    # -- run ----------------------------------------------------------------------------------
    def run(self):
        name = self.params["interface"]
        mtu = self.params["mtu"]
        if not IFNAME.match(name or ""):
            raise MtuError("interface=%r is not a kernel interface name (1-15 characters, no '/', ':' or spaces)" % (name,))
        if not MTU_MIN <= mtu <= MTU_MAX:
            raise MtuError("mtu=%d is out of range: use %d..%d (9000 for jumbo RoCE)" % (mtu, MTU_MIN, MTU_MAX))
        if not self.links.exists(name):
            raise MtuError(
                "interface %s does not exist on this host; links: %s" % (name, ", ".join(self.links.names()) or "none")
            )
        persist = self.params.get("persist", True) and self.params.get("backend", "auto") != "runtime"
        backend = self.params.get("backend", "auto")

        steps = self.runtime_steps(name, mtu)
        self._check_limits(steps, mtu)
        # The management path is checked twice: for the live changes before anything else is
        # looked at, then for the persistent ones once it is known what configures each link.
        management = self.management()
        mgmt_result = dict(
            interfaces=management["interfaces"],
            protected=sorted(management["protected"]),
            change=False,
            retest=[],
        )
        on_path = self._guard(management, mgmt_result, [dev for dev, _c, _w in steps])
        configs = []
        if persist:
            for dev in self.persist_targets(name, steps):
                try:
                    configs.append(backends.detect(self.ctx, self.links.info(dev), backend))
                except backends.BackendError as exc:
                    raise MtuError(str(exc), device=dev, management=mgmt_result)
                self.ctx.notes = []
        on_path = self._guard(management, mgmt_result, on_path + [cfg.interface for cfg in configs if cfg.mtu != mtu])

        before_runtime = dict((dev, self.links.mtu(dev)) for dev in [name] + self.links.lower_closure(name))
        plan = Plan()
        for dev, current, wanted in steps:
            plan.add(
                "runtime:%s" % dev,
                current,
                wanted,
                self._setter(dev, wanted),
                "runtime: ip link set dev %s mtu %d (was %s)%s" % (dev, wanted, current, "" if dev == name else ", below " + name),
            )
        activations = []
        for cfg in configs:
            try:
                planned = cfg.backend.plan(cfg, mtu, plan)
            except backends.BackendError as exc:
                raise MtuError(str(exc), device=cfg.interface)
            for cmd in planned:
                if cmd not in activations:
                    activations.append(cmd)
        self.ctx.add_to_plan(plan)
        for path, entry in self.ctx.staged.items():
            self._originals[path] = entry["original"]

        if not self.check_mode and plan.changed:
            plan.apply(False)
            self.ctx.staged = {}  # from here on, re-read what is on the host
            self._activate(activations)
            self._verify(steps, configs, mtu)
            if on_path:
                mgmt_result["retest"] = self._retest(management["state"])
        elif self.check_mode and plan.changed:
            self.commands.extend(" ".join(cmd["argv"]) for cmd in activations)

        result = plan.result(self.check_mode, self.diff_mode)
        after_runtime = dict(before_runtime)
        for dev, _c, wanted in steps:
            after_runtime[dev] = wanted if self.check_mode else self.links.mtu(dev)
        result.update(
            interface=name,
            mtu=mtu,
            backend=configs[0].backend.name if configs else "runtime",
            config=configs[0].describe() if configs else None,
            before=dict(runtime=before_runtime, persistent=dict((c.interface, c.mtu) for c in configs)),
            after=dict(runtime=after_runtime, persistent=dict((c.interface, self._persisted.get(c.interface, mtu)) for c in configs)),
            configs=[c.describe() for c in configs],
            commands=self.commands,
            management=mgmt_result,
            warnings=self.warnings,
        )
        return result

    def _guard(self, management, mgmt_result, touched):
        """Refuse changes to the management path unless allowed; return the devices on it."""
        on_path = sorted(set(dev for dev in touched if dev in management["protected"]))
        mgmt_result["change"] = bool(on_path)
        if on_path and not self.params.get("allow_management_change", False):
            lines = []
            for dev in on_path:
                via = management["protected"][dev]
                why = "; ".join(management["interfaces"][via])
                lines.append("%s %s" % (dev, why) if via == dev else "%s is below %s, which %s" % (dev, via, why))
            raise MtuError(
                "refusing to change the MTU of %s: it is on the path that carries the Ansible connection "
                "(%s). A wrong MTU there can cut this host off. Set allow_management_change: true to change it anyway; "
                "the connectivity is then re-tested after the change" % (", ".join(on_path), "; ".join(lines)),
                management=mgmt_result,
            )
        return on_path

    # -- apply --------------------------------------------------------------------------------
    def _setter(self, dev, mtu):
        def action():
            argv = ["ip", "link", "set", "dev", dev, "mtu", str(mtu)]
            self.commands.append(" ".join(argv))
            self.runner.run(argv)

        return action

    def _activate(self, activations):
        for cmd in activations:
            argv = cmd["argv"]
            self.commands.append(" ".join(argv))
            try:
                self.runner.run(argv)
            except CommandError as exc:
                if cmd["validates"]:
                    self._restore()
                    raise MtuError(
                        "%s rejected the configuration, so the files were restored: %s"
                        % (" ".join(argv), (exc.result.stderr or exc.result.stdout).strip()),
                        cmd=exc.result.cmd,
                        rc=exc.result.rc,
                        stdout=exc.result.stdout,
                        stderr=exc.result.stderr,
                    )
                if cmd["required"]:
                    raise
                self.warnings.append(
                    "%s failed (rc %d: %s); the live MTU was set with ip already"
                    % (" ".join(argv), exc.result.rc, (exc.result.stderr or exc.result.stdout).strip())
                )

    def _restore(self):
        for path, text in self._originals.items():
            if text is None:
                try:
                    os.unlink(self.host.path(path))
                except OSError:
                    pass
            else:
                write_atomic(self.host, path, text)

    # -- re-read ------------------------------------------------------------------------------
    def _verify(self, steps, configs, mtu):
        problems = []
        for dev, _current, wanted in steps:
            now = self.links.mtu(dev)
            if now != wanted:
                problems.append("the kernel reports %s at MTU %s after setting %d" % (dev, now, wanted))
            if self.links.is_bond(dev):
                for member in self.links.lowers(dev):
                    member_mtu = self.links.mtu(member)
                    if member_mtu != wanted:
                        problems.append("bond %s is at %s but its member %s reports %s" % (dev, now, member, member_mtu))
        for cfg in configs:
            now = cfg.backend.effective(cfg)
            self._persisted[cfg.interface] = now
            if now != mtu:
                problems.append("%s (%s) now gives %s an MTU of %s, not %d" % (cfg.path, cfg.backend.name, cfg.interface, now, mtu))
        if problems:
            raise MtuError("the MTU did not take: " + "; ".join(problems))

    def _retest(self, state):
        """Check the management path again; return what was checked, raise MtuError when it broke."""
        after = self.management()["state"]
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
        if problems:
            raise MtuError("connectivity re-test failed after the management change: " + "; ".join(problems))
        return checked
