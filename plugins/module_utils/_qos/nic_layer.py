# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NIC QoS layer of a host in one module run: every RDMA port's engines in one plan.

A host with 8 RDMA NICs must not cost 8 x 3 module round trips, so the role makes one call
with every port; this engine builds, for each, the same engines the fine-grained modules run
(``NicQos``, ``RoceEcn``, ``RoceTos``), plans them all into one Plan (so check mode, diff and
the truth about a part-way failure cover the whole layer), and plans the boot-time re-apply
from their ``reapply_commands`` (one source of truth: what is applied now is what boot and a
driver reload apply again).

A part the driver cannot do (no DCB ops on a virtio or rxe netdev, no OFED ECN tree) is, with
``unsupported: warn``, reported once per host and part, naming the netdevs and what to do, and
left out of the re-apply; with ``fail`` it fails before anything is changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import boot, ecn, nic_qos, tos

PARTS = ("qos", "ecn", "tos")


class _PartContext:
    """The host's context for one port's engine, with its warnings kept back, so the layer can say
    what a driver cannot do once per host, not once per netdev."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.warnings = []

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)


class NicLayer(Engine):
    """``rdmaops.roce.nic_layer``: ``ports`` is a list of ``{interface, device, port, qos, ecn, tos}``."""

    commands_key = None  # each part reports its own commands

    def __init__(self, ctx, params):
        super(NicLayer, self).__init__(ctx, params)
        self.unsupported_policy = params.get("unsupported") or "warn"
        self.engines = []  # (port entry, part, engine)
        self.skipped = {}  # part -> {interface: why}
        self.boot_paths = []

    def validate(self):
        ports = self.params.get("ports")
        if not isinstance(ports, list) or not ports:
            raise InputError("ports must be a non-empty list of RDMA ports ({interface, device, port, qos, ecn, tos})",
                             option="ports")
        if self.unsupported_policy not in ("warn", "fail"):
            raise InputError("unsupported must be warn or fail, got %r" % (self.unsupported_policy,), option="unsupported")
        for index, entry in enumerate(ports):
            if not isinstance(entry, dict) or not entry.get("interface") or not entry.get("device"):
                raise InputError("ports[%d] needs interface (the netdev) and device (the RDMA device)" % index,
                                 option="ports")
            if entry.get("qos"):
                self._add(entry, "qos", nic_qos.NicQos(self.ctx, dict(entry["qos"], interface=entry["interface"])))
            if entry.get("ecn"):
                self._add(entry, "ecn", ecn.RoceEcn(_PartContext(self.ctx), dict(entry["ecn"], interface=entry["interface"],
                                                                                 unsupported=self.unsupported_policy)))
            if entry.get("tos"):
                self._add(entry, "tos", tos.RoceTos(self.ctx, dict(entry["tos"], device=entry["device"],
                                                                   port=entry.get("port", 1))))
        for _entry, _part, engine in self.engines:
            engine.validate()

    def _add(self, entry, part, engine):
        self.engines.append((entry, part, engine))

    def read(self):
        kept = []
        for entry, part, engine in self.engines:
            try:
                engine.read()
            except nic_qos.DcbUnsupported as exc:
                if self.unsupported_policy == "fail":
                    raise
                self.skipped.setdefault(part, {})[entry["interface"]] = exc.msg
                continue
            kept.append((entry, part, engine))
        self.engines = kept
        for part, by_interface in sorted(self.skipped.items()):
            # once per host and part, whatever the number of netdevs
            self.ctx.warn("%s not applied on %s: %s" % (
                "trust, PFC and ETS" if part == "qos" else part, ", ".join(sorted(by_interface)),
                by_interface[sorted(by_interface)[0]]))

    def plan(self, plan):
        for _entry, _part, engine in self.engines:
            engine.plan(plan)
        self._say_once("ECN")
        if self.params.get("boot_reapply", True):
            self.boot_paths = boot.plan_boot_reapply(plan, self.host, self.runner, self.reapply_steps(),
                                                     adopt=bool(self.params.get("adopt")))

    def reapply_steps(self):
        """``{ibdev: [steps]}`` for every part that applies on this host."""
        devices = {}
        for entry, part, engine in self.engines:
            steps = devices.setdefault(entry["device"], [])
            if part == "qos":
                steps.extend(boot.run_step(argv) for argv in nic_qos.reapply_commands(engine.want, backend=engine.backend))
            elif part == "ecn" and engine.supported:
                steps.extend(ecn.reapply_commands(engine.desired))
            elif part == "tos":
                steps.extend(tos.reapply_commands(engine.desired))
        return devices

    def verify(self):
        problems = []
        for _entry, _part, engine in self.engines:
            problems.extend(engine.verify())
        self._say_once("ECN")
        return problems

    def _say_once(self, what):
        """One warning per host for what the ports' engines held back: the netdevs, and the first
        port's words (the others' differ only in the netdev and its PCI address); each port's own
        words stay in the result's ``unsupported``."""
        held = [(entry["interface"], engine.ctx.warnings) for entry, _part, engine in self.engines
                if isinstance(engine.ctx, _PartContext) and engine.ctx.warnings]
        if held:
            names = sorted(set(name for name, _warnings in held))
            self.ctx.warn("%s on %s: %s" % (what, ", ".join(names), held[0][1][0]))
            for name, warnings in held:
                self.skipped.setdefault("ecn", {})[name] = warnings[0]
                del warnings[:]

    def result(self):
        ports = []
        by_port = {}
        for entry, part, engine in self.engines:
            key = (entry["interface"], entry["device"], entry.get("port", 1))
            if key not in by_port:
                by_port[key] = dict(interface=key[0], device=key[1], port=key[2])
                ports.append(by_port[key])
            by_port[key][part] = engine.result()
        return dict(ports=ports, unsupported=self.skipped, boot_reapply=self.boot_paths)
