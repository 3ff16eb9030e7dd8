# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``switch_roce``, the network resource module's engine: seven states over one driver per NOS.

A NOS driver is a module of this package with:

``NAME``                      how messages name the NOS ("Arista EOS")
``VERSIONS``                  the NOS versions it writes for, oldest first; rendered/parsed
                              default to the newest
``max_mtu(version)``          the largest port MTU the NOS accepts
``render(profile, interfaces, version)``   the configuration: a list of running-config lines
                              (eos, nxos, onyx), a JSON body (nvue), CONFIG_DB tables (sonic)
``parse(text, version)``      ``{"fabric": {...}, "interfaces": [...]}`` from running-config text
                              (JSON text for nvue and sonic): what the configuration says; text of
                              the wrong shape raises ``shape.ReadError`` naming the place
``PORT_NAMES``                the NOS's port naming rule (``names.PortNames``)

and, for the NOSes this module configures (nvue, sonic):

``connect(ctx)``              a device with ``version()``, ``read()`` (the raw configuration the
                              NOS holds: NVUE's applied revision, CONFIG_DB tables), ``apply(commands)``
                              (raising an RdmaopsError with what was and was not applied) and
                              optionally ``dry_run(commands)`` (check mode)
``parse_raw(raw)``            ``parse`` of what ``read()`` returned
``command_ports(commands, raw)``  the interface names the commands write or remove in ``raw``
                              (a command on a whole table names every row the table holds)
``SOURCE``                    where ``read()`` reads, for messages
``plan(state, profile, interfaces, raw, version)``  ``(commands, predicted_raw)``: the commands
                              (NVUE patch bodies, RFC 6902 operations) that take ``raw`` to the
                              state, empty when nothing differs

The engine does the rest the same way for every NOS: validation before anything is read (the port
naming rule on ``config.interfaces`` in every state), MTU clamping, before/commands/after, check mode
predicting ``after`` without touching the switch, diff mode, and re-reading after applying.  Names
read back (``parsed`` text, the switch's configuration) pass the same naming rule: one that breaks
it is left out of the result with a warning, and a plan whose commands would name it is refused.
Configuration of the wrong shape fails with one message naming ``running_config`` (or the switch's
answer) and the place in it, never Python's own error text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import eos, nvue, nxos, onyx, sonic
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.names import (
    check_config_interfaces,
    filter_read_back,
    refuse_in_commands,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import ReadError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import (
    MTU_POLICIES,
    resolve_config,
    resolve_mtu,
)

DRIVERS = dict(nvue=nvue, sonic=sonic, eos=eos, nxos=nxos, onyx=onyx)
ACTING_STATES = ("merged", "replaced", "overridden", "deleted")
STATES = ACTING_STATES + ("gathered", "rendered", "parsed")
# ansible_network_os values (short and FQCN forms) and the driver each means.
NETWORK_OS = {
    "nvue": "nvue", "rdmaops.roce.nvue": "nvue", "nvidia.nvue.httpapi": "nvue", "cumulus": "nvue",
    "sonic": "sonic", "rdmaops.roce.sonic": "sonic",
    "eos": "eos", "arista.eos.eos": "eos",
    "nxos": "nxos", "cisco.nxos.nxos": "nxos",
    "onyx": "onyx", "mellanox.onyx.onyx": "onyx",
}
# What the last-resort guard says when a parser meets a shape its checks did not foresee (the unit
# tests prove the checks come first; this keeps Python's own words from ever reaching a user).
UNFORESEEN = "holds values of a shape this module does not read"


class SwitchRoce(Engine):
    """One switch's RoCE QoS profile in one of the seven resource-module states."""

    commands_key = None  # the NOS commands are this module's "commands", not the runner's

    def validate(self):
        params = self.params
        self.state = params["state"]
        if params["os"] not in DRIVERS:
            raise InputError("os=%s is not a NOS this module knows: use one of %s"
                             % (params["os"], ", ".join(sorted(DRIVERS))), option="os")
        self.driver = DRIVERS[params["os"]]
        # The naming rule, first and for every state: no name that breaks it is rendered or sent.
        check_config_interfaces(self.driver.PORT_NAMES, params.get("config"))
        if params["mtu_policy"] not in MTU_POLICIES:
            raise InputError("mtu_policy must be clamp or fail", option="mtu_policy")
        self.version = params.get("nos_version")
        if self.version is not None and self.version not in self.driver.VERSIONS:
            raise InputError("nos_version=%s: %s versions this module writes for are %s"
                             % (self.version, self.driver.NAME, ", ".join(self.driver.VERSIONS)), option="nos_version")
        acts = self.state in ACTING_STATES or self.state == "gathered"
        if acts and not hasattr(self.driver, "connect"):
            raise InputError(
                "state=%s needs a %s switch this module talks to; for %s use state=rendered and push the lines "
                "with the vendor's config module (see the module's documentation)"
                % (self.state, self.driver.NAME, self.driver.NAME), option="state")
        if self.state == "parsed":
            if not isinstance(params.get("running_config"), str):
                raise InputError("state=parsed needs running_config: the configuration text to parse",
                                 option="running_config")
            return
        if self.state == "gathered" or (self.state == "deleted" and params.get("config") is None):
            self.intent = self.profile = None
            self.interfaces = []
            return
        self.intent, self.profile, self.interfaces = resolve_config(params.get("config"))

    def read(self):
        self.device = self.raw = self.before = None
        if self.state in ("rendered", "parsed"):
            self.version = self.version or self.driver.VERSIONS[-1]
            return
        self.device = self.driver.connect(self.ctx)
        if self.version is None:
            self.version = self.device.version()
        self.raw = self._read_switch()
        self.before = self._read_back(self.raw)

    @property
    def source(self):
        return getattr(self.driver, "SOURCE", "the switch's configuration")

    def _read_switch(self):
        try:
            return self.device.read()
        except ReadError as exc:
            raise RdmaopsError("%s cannot be read: %s; nothing was changed" % (self.source, exc.msg), where=exc.where)

    def _guarded(self, parse, source, option=None):
        """``parse()`` with every failure to read put as one message naming ``source`` and the place."""
        try:
            return parse()
        except ReadError as exc:
            if option:
                raise InputError("%s: %s" % (source, exc.msg), option=option, where=exc.where)
            raise RdmaopsError("%s cannot be read: %s" % (source, exc.msg), where=exc.where)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError, RecursionError):
            message = "%s %s: give %s configuration as the switch prints it" % (source, UNFORESEEN, self.driver.NAME)
            if option:
                raise InputError(message, option=option)
            raise RdmaopsError(message)

    def _read_back(self, raw):
        """The profile ``raw`` (the switch's configuration) holds, its names through the naming rule."""
        found = self._guarded(lambda: self.driver.parse_raw(raw), self.source)
        return filter_read_back(self.driver.PORT_NAMES, found, self.source, self.ctx.warn)

    def _profile_for_nos(self):
        if self.profile is None:
            return None
        return resolve_mtu(self.profile, self.intent, self.driver.NAME, self.driver.max_mtu(self.version),
                           self.params["mtu_policy"], self.ctx.warn)

    def plan(self, plan):
        self.commands = []
        self.after = self.before
        self.rendered = self.parsed = None
        if self.state == "rendered":
            self.rendered = self.driver.render(self._profile_for_nos(), self.interfaces, self.version)
            return
        if self.state == "parsed":
            parsed = self._guarded(lambda: self.driver.parse(self.params["running_config"], self.version),
                                   "running_config", option="running_config")
            self.parsed = filter_read_back(self.driver.PORT_NAMES, parsed, "running_config", self.ctx.warn)
            return
        if self.state == "gathered":
            return
        self.nos_profile = self._profile_for_nos()
        self.commands, predicted = self._plan_driver()
        if not self.commands:
            return
        # A name the switch holds that breaks the naming rule is never written into a command.
        named = self._guarded(lambda: self.driver.command_ports(self.commands, self.raw), self.source)
        refuse_in_commands(self.driver.PORT_NAMES, named, self.state)
        self.after = self._read_back(predicted)
        if self.check_mode and hasattr(self.device, "dry_run"):
            self.device.dry_run(self.commands)
        commands = self.commands
        description = "%s: apply %d change(s) for state %s" % (self.driver.NAME, len(commands), self.state)
        # The profile is the switch's summary (SONiC: its first configured port); commands that change
        # what it does not show (another port, buffers) are still a change: the diff shows them.
        if not plan.add("switch", self.before, self.after, lambda: self.device.apply(commands), description):
            plan.add("switch_commands", [], commands, lambda: self.device.apply(commands), description)

    def _plan_driver(self):
        """The driver's ``(commands, predicted)`` for the switch's configuration, guarded like every
        read of it: a shape the parser's checks let through yet the plan trips over is one message
        naming the switch's answer, never Python's own words."""
        return self._guarded(lambda: self.driver.plan(self.state, self.nos_profile, self.interfaces, self.raw,
                                                      self.version), self.source)

    def verify(self):
        self.raw = self._read_switch()
        self.after = self._read_back(self.raw)
        left, dummy = self._plan_driver()
        if left:
            return ["the switch still differs after applying: %s" % (left,)]
        return []

    def result(self):
        result = dict(nos_version=self.version)
        if self.state == "rendered":
            result["rendered"] = self.rendered
        elif self.state == "parsed":
            result["parsed"] = self.parsed
        elif self.state == "gathered":
            result["gathered"] = self.before
        else:
            result.update(before=self.before, commands=self.commands, after=self.after)
        return result
