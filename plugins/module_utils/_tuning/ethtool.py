# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NIC knobs through ethtool: global pause, ring sizes, adaptive interrupt coalescing.

Read with ``ethtool -a``/``-g``/``-c`` (the text layout of ethtool 5.x/6.x), compare, set with
``-A``/``-G``/``-C`` only what differs, read back. A knob the driver does not implement (the query
fails, or prints ``n/a`` for the field) is reported as unsupported with the reason, never skipped
silently. What was asked is made persistent with one udev rule per interface, which re-applies it
whenever the netdev appears (boot, driver reload, hot plug).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import write_atomic

UDEV_RULES = "/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z -]*?):\s*(\S.*?)\s*$")
_ADAPTIVE = re.compile(r"^Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)")


class EthtoolError(Exception):
    """Invalid input, raised before anything is read or changed."""


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
                 persist=True, rules_path=UDEV_RULES):
        if not interfaces:
            raise EthtoolError("interfaces is empty: name the RDMA netdevs to tune")
        for name in interfaces:
            if not isinstance(name, str) or not _IFNAME.match(name):
                raise EthtoolError("invalid interface name %r" % (name,))
            if not host.exists("/sys/class/net/%s" % name):
                raise EthtoolError("interface %s does not exist on this host (see /sys/class/net)" % name)
        rings = dict(rings or {})
        for key, value in rings.items():
            if key not in ("rx", "tx"):
                raise EthtoolError("rings.%s: only rx and tx ring sizes are managed" % key)
            if value is not None and value != "max" and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise EthtoolError("rings.%s=%r: use a positive number of descriptors or 'max'" % (key, value))
        self.host = host
        self.runner = runner
        self.interfaces = list(interfaces)
        self.want = dict(global_pause=global_pause, rings=rings, adaptive_rx=adaptive_rx, adaptive_tx=adaptive_tx)
        self.persist = persist
        self.rules_path = rules_path
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
    def plan(self, plan):
        wanted = []
        for name in self.interfaces:
            state = self.state[name] = self.read(name)
            commands = []
            for args, before, after, knob in self._changes(name, state):
                commands.append((args, knob))
                if before != after:
                    plan.add(
                        "%s %s" % (name, knob),
                        before,
                        after,
                        self._setter(name, args, knob),
                        "%s: set %s from %s to %s" % (name, knob, before, after),
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

    def render_rules(self, wanted):
        """The rules file for ``wanted`` (knobs the driver refused are left out), or None when empty."""
        rules = [rule for rule in (self._rule(name, commands) for name, commands in wanted) if rule]
        if not rules:
            return None
        return (
            "# Managed by rdmaops.roce.nic_ethtool. Changes here are overwritten on the next run.\n"
            "# Re-applies the NIC settings whenever the netdev appears (boot, driver reload, hot plug).\n"
            + "".join(rule + "\n" for rule in rules)
        )

    def _plan_rules(self, plan, wanted):
        before, _err = self.host.read_or_errno(self.rules_path)
        before = None if before is None else before + "\n"
        after = self.render_rules(wanted)
        if after is not None:
            plan.add("udev rules", before, after, lambda: self._write_rules(wanted), "write %s" % self.rules_path, header=self.rules_path)
        elif before is not None:
            plan.add("udev rules", before, "", self._remove_rules, "remove %s (no supported knob left)" % self.rules_path, header=self.rules_path)

    def _write_rules(self, wanted):
        # Rendered again here: a knob the driver refused while applying is left out of the rule.
        text = self.render_rules(wanted)
        if text is None:
            if self.host.exists(self.rules_path):
                self._remove_rules()
            return
        write_atomic(self.host, self.rules_path, text, 0o644, makedirs=True)

    def _remove_rules(self):
        os.unlink(self.host.path(self.rules_path))

    # -- apply and re-read --------------------------------------------------------------------
    def _setter(self, name, args, knob):
        def action():
            try:
                self.runner.run(["ethtool"] + args)
            except CommandError as exc:
                message = (exc.result.stderr or exc.result.stdout or "").strip()
                self.failed.add((name, knob))
                self._unsupported(name, knob, "ethtool %s refused: %s" % (" ".join(args), message or "rc=%d" % exc.result.rc))
                return
            self.applied_args.setdefault(name, []).append(args)
        return action

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


def _now(state, knob):
    if knob == "global pause":
        pause = state["pause"]
        return dict((k, pause[k]) for k in ("autoneg", "rx", "tx") if pause[k] is not None)
    if knob.endswith(" ring"):
        return state["rings"]["current"].get(knob.split()[0])
    return state["coalesce"][knob.replace("-", "_")]
