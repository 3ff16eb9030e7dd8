# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NIC layer of a host in one module run: every RDMA link's MTU and every RDMA port's QoS
engines in one plan.

A host with 8 RDMA NICs must not cost 8 x 4 module round trips, so the role makes one call
with every link and port; this engine builds, for each, the same engines the fine-grained
modules run (``LinkMtu`` per link, sharing one view of the network configuration so that two
links set in one file make one write; ``NicQos``, ``RoceEcn``, ``RoceTos`` per port), plans them
all into one Plan (so check mode, diff and the truth about a part-way failure cover the whole
layer: a QoS part that fails puts the MTU back too), and plans the boot-time re-apply from their
``reapply_commands`` (one source of truth: what is applied now is what boot and a driver reload
apply again). The MTU comes first: the RoCE MTU a port negotiates follows its netdev's.

With ``rails`` (multi-rail hosts), each RDMA netdev also gets its rail's address, its routing
table and rule and its ARP/reverse-path sysctls (:mod:`_netconf.rails`), through the same
configuration ``Context`` as the MTU: a file that holds both is written once, each activation
command runs once.

A part the driver cannot do (no DCB ops on a virtio or rxe netdev, no OFED ECN tree) is, with
``unsupported: warn``, reported once per host and part, naming the netdevs and what to do, and
left out of the re-apply; with ``fail`` it fails before anything is changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine, engine_read, read_only
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import max_disruption_spec
from ansible_collections.rdmaops.roce.plugins.module_utils._host.links import Links
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_netdev
from ansible_collections.rdmaops.roce.plugins.module_utils._host.ports import roce_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import boot, ecn, nic_qos, tos

# The MTU and rail engines (_netconf: every network stack's configuration formats) are imported where a
# link or a rail is asked for: a QoS-only read (the validate role, the monitor's collector) never
# loads them, nor does a host without rails load the rails' engine.

PARTS = ("qos", "ecn", "tos")
# link_mtu's options, passed through to each link's engine
LINK_MTU_KEYS = ("mtu", "persist", "backend", "raise_lower", "allow_management_change", "management_interfaces")


def argument_spec():
    """The argument spec of rdmaops.roce.nic_layer, which rdmaops.roce.validate_probe also checks its
    ``nic_read`` against (:func:`check_read`). The network stacks' names are imported here, not with
    the engines: a QoS-only read loads none of _netconf."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.stacks import BACKEND_CHOICES

    return dict(
        max_disruption=max_disruption_spec(),
        link_mtu=dict(
            type="dict",
            options=dict(
                interfaces=dict(type="list", elements="str", default=[]),
                mtu=dict(type="int"),
                persist=dict(type="bool", default=True),
                backend=dict(type="str", default="auto", choices=list(BACKEND_CHOICES)),
                raise_lower=dict(type="bool", default=True),
                allow_management_change=dict(type="bool", default=False),
                management_interfaces=dict(type="list", elements="str", default=[]),
            ),
        ),
        ports=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(
                interface=dict(type="str", required=True),
                device=dict(type="str", required=True),
                port=dict(type="int", default=1),
                qos=dict(type="dict"),
                ecn=dict(type="dict"),
                tos=dict(type="dict"),
            ),
        ),
        rails=dict(
            type="dict",
            options=dict(
                links=dict(
                    type="list",
                    elements="dict",
                    default=[],
                    options=dict(
                        rail=dict(type="str"),
                        interface=dict(type="str", required=True),
                        address=dict(type="str", required=True),
                        prefix=dict(type="int", required=True),
                        network=dict(type="str"),
                        gateway=dict(type="str"),
                        table=dict(type="int", required=True),
                        rule_priority=dict(type="int", default=1000),
                    ),
                ),
                exclusive=dict(type="bool", default=False),
                arp_ignore=dict(type="int", default=1),
                arp_announce=dict(type="int", default=2),
                rp_filter=dict(type="int", default=2),
                persist=dict(type="bool", default=True),
                backend=dict(type="str", default="auto", choices=list(BACKEND_CHOICES)),
            ),
        ),
        unsupported=dict(type="str", choices=["warn", "fail"], default="warn"),
        boot_reapply=dict(type="bool", default=True),
        adopt=dict(type="bool", default=False),
    )


def check_read(module, params):
    """rdmaops.roce.nic_layer run with ``params`` in check mode inside another module's run
    (rdmaops.roce.validate_probe: the validate role's QoS and rails read, in a call it makes anyway),
    whatever that module's own check mode: the same argument spec, the same engine, reading and
    planning, never applying. Its warnings go to ``module``. Returns what nic_layer would return, or,
    where nic_layer would fail (bad options, a port or rail it cannot read), ``failed: true`` and
    ``msg`` with what it read before: the caller reports it, it does not fail."""
    result = read_only(module, argument_spec(), engine_read(NicLayer), params, check_mode=True)
    result.pop("params", None)
    return result


def ports_from_intent(rdma, intent, interfaces=None):
    """``ports`` for :class:`NicLayer`: every RoCE port of the facts ``rdma`` (only netdevs in
    ``interfaces`` when given) with the QoS the resolved fabric ``intent`` asks of it. The
    roce_nic_ports filter (the nic and validate roles) and the monitor's collector both use it."""
    qos = dict(trust=intent["trust"], pfc=list(intent["pfc_priorities"]),
               dscp2prio=dict((int(dscp), prio) for dscp, prio in intent["dscp_to_priority"].items()))
    ecn = dict(priorities=list(intent["ecn_priorities"]), exclusive=True,
               cnp_dscp=intent["cnp_dscp"], cnp_802p_prio=intent["cnp_priority"])
    tos = dict(tos=intent["roce_tos"], roce_mode="v2" if intent["roce_mode"] == "RoCE v2" else "v1")
    return [dict(interface=netdev, device=device, port=int(port_name), qos=dict(qos), ecn=dict(ecn), tos=dict(tos))
            for device, port_name, _port, netdev in roce_ports(rdma, interfaces)]


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
    """``rdmaops.roce.nic_layer``: ``link_mtu`` is ``{mtu, interfaces, persist, backend, ...}`` (the
    options of link_mtu, ``interfaces`` for ``interface``), ``ports`` a list of
    ``{interface, device, port, qos, ecn, tos}``."""

    commands_key = None  # each part reports its own commands

    def __init__(self, ctx, params, environ=None):
        super(NicLayer, self).__init__(ctx, params)
        self.environ = environ  # the SSH connection's environment, for the links' management guard
        self.unsupported_policy = params.get("unsupported") or "warn"
        self.engines = []  # (port entry, part, engine)
        self.skipped = {}  # part -> {interface: why}
        self.boot_paths = []
        self.mtu_engines = []
        self.config_ctx = None
        self.rails = None

    def validate(self):
        ports = self.params.get("ports") or []
        link_mtu = self.params.get("link_mtu") or {}
        if not isinstance(ports, list):
            raise InputError("ports must be a list of RDMA ports ({interface, device, port, qos, ecn, tos})", option="ports")
        rails = self.params.get("rails") or {}
        if not ports and not link_mtu.get("interfaces") and not rails.get("links"):
            raise InputError("nothing to do: give ports (RDMA ports and their QoS), link_mtu.interfaces (links and their MTU) "
                             "or rails.links (the rail addresses of the RDMA netdevs)", option="ports")
        if link_mtu.get("interfaces") or rails.get("links"):
            from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import backends as netconf_backends
            self.config_ctx = netconf_backends.Context(self.host, self.runner, Links(self.host))
        self._validate_mtu(link_mtu)
        if rails.get("links"):
            from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.rails import RailLinks
            # the links' management guard covers the rails too: the same detector, the same interfaces
            self.rails = RailLinks(self.ctx, rails, self.config_ctx, environ=self.environ,
                                   management_interfaces=link_mtu.get("management_interfaces") or ())
            self.rails.validate()
        if self.unsupported_policy not in ("warn", "fail"):
            raise InputError("unsupported must be warn or fail, got %r" % (self.unsupported_policy,), option="unsupported")
        for index, entry in enumerate(ports):
            if not isinstance(entry, dict) or not entry.get("interface") or not entry.get("device"):
                raise InputError("ports[%d] needs interface (the netdev) and device (the RDMA device)" % index,
                                 option="ports")
            # the boot re-apply script and the parts' commands carry it
            check_netdev("ports[%d].interface" % index, entry["interface"])
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

    def _validate_mtu(self, link_mtu):
        names = link_mtu.get("interfaces") or []
        if not names:
            return
        from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.mtu import LinkMtu
        if link_mtu.get("mtu") is None:
            raise InputError("link_mtu.mtu is required with link_mtu.interfaces (9000 for jumbo RoCE)", option="link_mtu.mtu")
        if len(set(names)) != len(names):
            raise InputError("link_mtu.interfaces names a link twice: %s" % ", ".join(names), option="link_mtu.interfaces")
        shared = self.config_ctx
        for index, name in enumerate(names):
            check_netdev("link_mtu.interfaces[%d]" % index, name)
            params = dict((key, link_mtu[key]) for key in LINK_MTU_KEYS if link_mtu.get(key) is not None)
            params.update(interface=name, adopt=bool(self.params.get("adopt")))
            engine = LinkMtu(self.ctx, params, environ=self.environ, config_ctx=shared)
            engine.validate()
            self.mtu_engines.append(engine)

    def _add(self, entry, part, engine):
        self.engines.append((entry, part, engine))

    def read(self):
        for engine in self.mtu_engines:
            engine.read()
        if self.rails is not None:
            self.rails.read()
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
        for engine in self.mtu_engines:
            engine.plan(plan, files=False)
        if self.rails is not None:
            self.rails.plan(plan)
        if self.rails is None:
            if self.mtu_engines:
                self.mtu_engines[0].plan_shared(plan, self.mtu_engines, adopt=bool(self.params.get("adopt")))
        else:
            # the files the MTU and the rails staged, each written once, then each activation once
            self.config_ctx.plan_files(plan, adopt=bool(self.params.get("adopt")))
            seen = []
            for engine in self.mtu_engines:
                for cmd in engine.activations:
                    if cmd not in seen:
                        seen.append(cmd)
                        plan.then(" ".join(cmd["argv"]), engine._activation(cmd), validates=cmd["validates"])
            self.rails.plan_activations(plan, seen)
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
        for engine in self.mtu_engines:
            problems.extend(engine.verify())
        if self.rails is not None:
            problems.extend(self.rails.verify())
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
        return dict(ports=ports, unsupported=self.skipped, boot_reapply=self.boot_paths, link_mtu=self._mtu_result(),
                    rails=self.rails.result() if self.rails is not None else dict(links=[], before={}, after={}))

    def _mtu_result(self):
        """Each link as link_mtu reports it, less the commands, which the links share and are
        reported once; ``management_change`` says whether the connection should be re-tested."""
        if not self.mtu_engines:
            return dict(links=[], commands=[], management_change=False)
        links = []
        commands = []
        for engine in self.mtu_engines:
            one = engine.result()
            for command in one.pop("commands"):
                if command not in commands:
                    commands.append(command)
            links.append(one)
        return dict(mtu=self.mtu_engines[0].mtu, links=links, commands=commands,
                    management_change=any(link["management"]["change"] for link in links))
