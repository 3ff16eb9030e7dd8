# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NIC knobs through ethtool: global pause, ring sizes, adaptive interrupt coalescing.

Read with ``ethtool -a``/``-g``/``-c`` (the text layout of ethtool 5.x/6.x), compare, set with
``-A``/``-G``/``-C`` only what differs, read back. A knob the driver does not implement (the query
fails, or prints ``n/a`` for the field) is reported as unsupported with the reason, never skipped
silently. What was asked is made persistent with one udev rule per interface, which re-applies it
whenever the netdev appears (boot, driver reload, hot plug).

The rules live in one file, ``/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules``, keyed by
interface: one line per interface (``NAME=="<ifname>"``), sorted by name.  A call rewrites only
the lines of the interfaces it was given and keeps every other interface's line, so two calls
for two interfaces keep both.  The file carries our marker; one without it is taken over only
with ``adopt``.  Interface names follow the kernel's rule (``_host/names``), and, because they
end up in a udev match, hold no ``"``, ``\\`` or glob character.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import (
    InputError,
    RefusedError,
    ToolNotFound,
    VerifyError,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import UDEV_RULES_DIR
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import LINK_RESET, ONLINE
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import RULE, valid_ifname
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import NET_CLASS

UDEV_RULES = UDEV_RULES_DIR + "/90-rdmaops-roce-ethtool.rules"
HEADER = (
    "# Managed by rdmaops.roce.nic_ethtool. Changes here are overwritten on the next run.\n"
    "# Re-applies the NIC settings whenever the netdev appears (boot, driver reload, hot plug).\n"
)
# One of our rule lines, and the interface it is for.
_RULE_LINE = re.compile(r'ACTION=="add", SUBSYSTEM=="net", NAME=="([^"\\]+)", RUN\+=.*')
# A udev match value is a glob: these would match other interfaces, or end the value.
_UDEV_UNSAFE = re.compile(r'["\\*?\[\]|]')
_FIELD = re.compile(r"^([A-Za-z][A-Za-z -]*?):\s*(\S.*?)\s*$")
_ADAPTIVE = re.compile(r"^Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)")


def check_params(interfaces, rings, persist=True):
    """Refuse bad input (InputError naming the option) before anything is read or changed."""
    if not interfaces:
        raise InputError("interfaces is empty: name the RDMA netdevs to tune", option="interfaces")
    for name in interfaces:
        if not valid_ifname(name):
            raise InputError("invalid interface name %r: a kernel interface name is %s" % (name, RULE), option="interfaces")
        if name.startswith("-"):
            raise InputError("invalid interface name %r: it starts with '-', which ethtool would read as an option" % (name,),
                             option="interfaces")
        if persist and _UDEV_UNSAFE.search(name):
            raise InputError(
                "invalid interface name %r: a udev rule cannot match a name holding '\"', '\\' or a glob character "
                "(* ? [ ] |) exactly; rename the interface or set persist=false" % (name,),
                option="interfaces",
            )
    for key, value in (rings or {}).items():
        if key not in ("rx", "tx"):
            raise InputError("rings.%s: only rx and tx ring sizes are managed" % key, option="rings")
        if value is not None and value != "max" and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InputError("rings.%s=%r: use a positive number of descriptors or 'max'" % (key, value), option="rings")


def parse_rules(text):
    """``{interface: rule line}`` of the rule lines in a rules file of ours (other lines are not ours to keep)."""
    rules = {}
    for line in (text or "").split("\n"):
        match = _RULE_LINE.fullmatch(line)
        if match:
            rules[match.group(1)] = line
    return rules


def _onoff(text):
    if text == "on":
        return True
    if text == "off":
        return False
    return None  # "n/a": the driver does not report it


def _number(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def parse_pause(text):
    """``ethtool -a``: ``{"autoneg", "rx", "tx"}`` as booleans (None for n/a)."""
    fields = {}
    for line in (text or "").splitlines():
        match = _FIELD.match(line.strip())
        if match:
            fields[match.group(1)] = match.group(2)
    if "RX" not in fields or "TX" not in fields:
        return None
    return dict(autoneg=_onoff(fields.get("Autonegotiate")), rx=_onoff(fields["RX"]), tx=_onoff(fields["TX"]))


def parse_rings(text):
    """``ethtool -g``: ``{"max": {"rx", "tx"}, "current": {"rx", "tx"}}`` (None for n/a)."""
    sections = {}
    current = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("Pre-set maximums"):
            current = sections.setdefault("max", {})
            continue
        if stripped.startswith("Current hardware settings"):
            current = sections.setdefault("current", {})
            continue
        match = _FIELD.match(stripped)
        if current is not None and match and match.group(1) in ("RX", "TX"):
            current[match.group(1).lower()] = _number(match.group(2))
    if "max" not in sections or "current" not in sections:
        return None
    return sections


def parse_coalesce(text):
    """``ethtool -c``: ``{"adaptive_rx", "adaptive_tx"}`` as booleans (None for n/a)."""
    for line in (text or "").splitlines():
        match = _ADAPTIVE.match(line.strip())
        if match:
            return dict(adaptive_rx=_onoff(match.group(1)), adaptive_tx=_onoff(match.group(2)))
    return None


def _why(result, flag):
    message = (result.stderr or result.stdout or "").strip().splitlines()
    if message:
        return "ethtool %s failed (rc=%d): %s" % (flag, result.rc, message[-1])
    return "ethtool %s exited with rc=%d and no output: the driver does not report these settings" % (flag, result.rc)


class NicKnobs:
    """Plan, apply and persist the knobs of a list of interfaces."""

    def __init__(self, host, runner, interfaces, global_pause=None, rings=None, adaptive_rx=None, adaptive_tx=None,
                 persist=True, rules_path=UDEV_RULES, adopt=False):
        rings = dict(rings or {})
        check_params(interfaces, rings, persist)
        for name in interfaces:
            if not host.exists("%s/%s" % (NET_CLASS, name)):
                raise InputError("interface %s does not exist on this host (see /sys/class/net)" % name, option="interfaces")
        self.host = host
        self.runner = runner
        self.interfaces = list(interfaces)
        self.want = dict(global_pause=global_pause, rings=rings, adaptive_rx=adaptive_rx, adaptive_tx=adaptive_tx)
        self.persist = persist
        self.rules_path = rules_path
        self.adopt = adopt
        self.state = {}
        self.unsupported = {}
        self.applied_args = {}
        self.failed = set()

    # -- read ---------------------------------------------------------------------------------
    def read(self, name):
        state = {}
        for flag, key, parser in (("-a", "pause", parse_pause), ("-g", "rings", parse_rings), ("-c", "coalesce", parse_coalesce)):
            if not self._wanted(key):
                continue
            result = self.runner.run(["ethtool", flag, name], check=False)
            parsed = parser(result.stdout) if result.rc == 0 else None
            state[key] = parsed if parsed is not None else dict(error=_why(result, flag) if result.rc else "unrecognised ethtool %s output" % flag)
        return state

    def _wanted(self, key):
        if key == "pause":
            return self.want["global_pause"] is not None
        if key == "rings":
            return any(value is not None for value in self.want["rings"].values())
        return self.want["adaptive_rx"] is not None or self.want["adaptive_tx"] is not None

    # -- plan ---------------------------------------------------------------------------------
    def read_all(self):
        for name in self.interfaces:
            self.state[name] = self.read(name)

    def plan(self, plan):
        wanted = []
        for name in self.interfaces:
            state = self.state[name] if name in self.state else self.state.setdefault(name, self.read(name))
            commands = []
            for args, before, after, knob in self._changes(name, state):
                commands.append((args, knob))
                if before != after:
                    plan.add(
                        "%s %s" % (name, knob),
                        before,
                        after,
                        self._setter(plan, name, args, knob),
                        "%s: set %s from %s to %s" % (name, knob, before, after),
                        undo=self._undo(_args_for(name, knob, before)),
                        disruption=knob_disruption(knob),
                    )
            if commands:
                wanted.append((name, commands))
        if self.persist:
            self._plan_rules(plan, wanted)

    def _unsupported(self, name, knob, reason):
        self.unsupported.setdefault(name, {})[knob] = reason

    def _changes(self, name, state):
        """``(ethtool args for the wanted state, before, after, knob)`` for every supported knob."""
        want = self.want
        if want["global_pause"] is not None:
            pause = state["pause"]
            value = "on" if want["global_pause"] else "off"
            if "error" in pause:
                self._unsupported(name, "global pause", pause["error"])
            else:
                before = dict((k, pause[k]) for k in ("autoneg", "rx", "tx") if pause[k] is not None)
                after = dict((k, want["global_pause"]) for k in before)
                args = ["-A", name]
                for key in ("autoneg", "rx", "tx"):
                    if key in before:
                        args += [key, value]
                yield args, before, after, "global pause"
        rings = state.get("rings")
        for key in ("rx", "tx"):
            asked = want["rings"].get(key)
            if asked is None:
                continue
            if "error" in rings:
                self._unsupported(name, "%s ring" % key, rings["error"])
                continue
            maximum, current = rings["max"].get(key), rings["current"].get(key)
            if current is None or maximum is None:
                self._unsupported(name, "%s ring" % key, "the driver reports the %s ring size as n/a" % key.upper())
                continue
            size = maximum if asked == "max" else asked
            if size > maximum:
                self._unsupported(name, "%s ring" % key, "%d descriptors asked, the driver's maximum is %d" % (size, maximum))
                continue
            yield ["-G", name, key, str(size)], current, size, "%s ring" % key
        coalesce = state.get("coalesce")
        for key in ("adaptive_rx", "adaptive_tx"):
            asked = want[key]
            if asked is None:
                continue
            knob = key.replace("_", "-")
            if "error" in coalesce:
                self._unsupported(name, knob, coalesce["error"])
                continue
            if coalesce[key] is None:
                self._unsupported(name, knob, "the driver reports %s as n/a" % knob)
                continue
            yield ["-C", name, knob, "on" if asked else "off"], coalesce[key], asked, knob

    def _rule(self, name, commands):
        """One udev rule that runs ethtool for ``name``; -G and -C arguments merged into one call each."""
        merged = []
        for args, knob in commands:
            if (name, knob) in self.failed:
                continue
            if merged and merged[-1][0] == args[0] and args[0] in ("-G", "-C"):
                merged[-1] += args[2:]
            else:
                merged.append(list(args))
        if not merged:
            return None
        ethtool = self.runner.find("ethtool") or "/usr/sbin/ethtool"
        runs = ", ".join('RUN+="%s %s"' % (ethtool, " ".join([args[0], "$name"] + args[2:])) for args in merged)
        return 'ACTION=="add", SUBSYSTEM=="net", NAME=="%s", %s' % (name, runs)

    def render_rules(self, wanted, current=None):
        """The rules file for ``wanted`` (knobs the driver refused are left out) with the rules of the
        other interfaces in ``current`` kept, or None when no rule is left."""
        rules = parse_rules(current)
        for name, commands in wanted:
            rules.pop(name, None)
            rule = self._rule(name, commands)
            if rule:
                rules[name] = rule
        for name in self.interfaces:  # an interface of this call with nothing supported left has no rule
            if name not in dict(wanted):
                rules.pop(name, None)
        if not rules:
            return None
        return HEADER + "".join(rules[name] + "\n" for name in sorted(rules))

    def _plan_rules(self, plan, wanted):
        current = files.read_text(self.host, self.rules_path)
        after = self.render_rules(wanted, current)
        if after is not None:
            description = "write %s" % self.rules_path
        else:
            description = "remove %s (no supported knob left)" % self.rules_path
        # Rendered again when applied: a knob the driver refused meanwhile is left out of the rule
        # (and when only refused knobs would have changed it, the plan counts no change).
        plan.file(self.host, self.rules_path, after, mode=0o644, description=description, key="udev rules",
                  adopt=self.adopt, render=lambda: self.render_rules(wanted, current))

    # -- apply and re-read --------------------------------------------------------------------
    def _setter(self, plan, name, args, knob):
        def action():
            try:
                self.runner.run(["ethtool"] + args)
            except CommandError as exc:
                message = (exc.result.stderr or exc.result.stdout or "").strip()
                # The driver refused the knob: the change ran but changed nothing.
                plan.refuse("%s %s" % (name, knob))
                self.failed.add((name, knob))
                self._unsupported(name, knob, "ethtool %s refused: %s" % (" ".join(args), message or "rc=%d" % exc.result.rc))
                return
            self.applied_args.setdefault(name, []).append(args)
        return action

    def _undo(self, args):
        # Only changes that stayed applied are undone, so a refused knob never reaches here.
        def undo():
            if args:
                self.runner.run(["ethtool"] + args)
        return undo

    def verify(self):
        """Re-read every interface that was changed; ``{interface: [what differs]}``."""
        problems = {}
        for name in self.applied_args:
            state = self.read(name)
            for _args, _before, after, knob in self._changes(name, state):
                if (name, knob) in self.failed:
                    continue
                now = _now(state, knob)
                if now != after:
                    problems.setdefault(name, []).append("%s is %s after setting %s" % (knob, now, after))
        return problems


def knob_disruption(knob):
    """A ring resize re-creates the port's queues and a pause change renegotiates the link: both
    break the RDMA connections over it.  Interrupt coalescing changes in place."""
    return LINK_RESET if knob == "global pause" or knob.endswith(" ring") else ONLINE


def _args_for(name, knob, value):
    """The ethtool arguments that set ``knob`` of ``name`` to ``value`` (what it was before: the undo)."""
    if knob == "global pause":
        args = ["-A", name]
        for key in ("autoneg", "rx", "tx"):
            if key in (value or {}):
                args += [key, "on" if value[key] else "off"]
        return args if len(args) > 2 else None
    if value is None:
        return None
    if knob.endswith(" ring"):
        return ["-G", name, knob.split()[0], str(value)]
    return ["-C", name, knob, "on" if value else "off"]


def _now(state, knob):
    if knob == "global pause":
        pause = state["pause"]
        return dict((k, pause[k]) for k in ("autoneg", "rx", "tx") if pause[k] is not None)
    if knob.endswith(" ring"):
        return state["rings"]["current"].get(knob.split()[0])
    return state["coalesce"][knob.replace("-", "_")]


class NicEthtoolEngine(Engine):
    """``rdmaops.roce.nic_ethtool``: ethtool knobs of a list of interfaces, kept by udev rules."""

    def __init__(self, ctx, params):
        super(NicEthtoolEngine, self).__init__(ctx, params)
        self.knobs = None
        self.rings = {}

    def validate(self):
        params = self.params
        rings = dict(params.get("rings") or {})
        for key, value in rings.items():
            if isinstance(value, str) and value != "max":
                try:
                    rings[key] = int(value)
                except ValueError:
                    raise InputError("rings.%s=%r: use a positive number of descriptors or 'max'" % (key, value), option="rings")
        check_params(params.get("interfaces"), rings, params.get("persist", True))
        self.rings = rings

    def read(self):
        if not self.runner.has("ethtool"):
            raise ToolNotFound("ethtool")
        params = self.params
        self.knobs = NicKnobs(
            self.host,
            self.runner,
            params["interfaces"],
            global_pause=params.get("global_pause"),
            rings=self.rings,
            adaptive_rx=params.get("adaptive_rx"),
            adaptive_tx=params.get("adaptive_tx"),
            persist=params.get("persist", True),
            adopt=bool(params.get("adopt")),
        )
        self.knobs.read_all()

    @property
    def fail_unsupported(self):
        return self.params.get("unsupported") == "fail"

    def plan(self, plan):
        first = len(plan)
        self.knobs.plan(plan)
        # Its own changes only: in tuning_layer the plan also holds the other parts'.
        if self.knobs.unsupported and self.fail_unsupported and (self.check_mode or not plan.descriptions(first)):
            # Nothing would be applied first: fail now (with a plan, after applying the supported knobs).
            raise RefusedError("unsupported NIC settings: %s" % self.knobs.unsupported, unsupported=self.knobs.unsupported)
        self._warn()

    def verify(self):
        problems = self.knobs.verify()
        if problems:
            return ["%s: %s" % (name, "; ".join(found)) for name, found in sorted(problems.items())]
        if self.knobs.unsupported and self.fail_unsupported:
            # The runner adds what stayed applied to the failure.
            raise VerifyError("unsupported NIC settings: %s" % self.knobs.unsupported, unsupported=self.knobs.unsupported)
        self._warn()
        return []

    def _warn(self):
        if self.fail_unsupported:
            return
        for name, knobs_of in sorted(self.knobs.unsupported.items()):
            for knob, reason in sorted(knobs_of.items()):
                self.ctx.warn("%s: %s not applied: %s" % (name, knob, reason))

    def result(self):
        knobs = self.knobs
        if knobs is None:
            return dict(state={}, unsupported={}, rules_path=UDEV_RULES)
        return dict(state=knobs.state, unsupported=knobs.unsupported, rules_path=knobs.rules_path)
