# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a link's configuration is persisted: one backend per network stack (netplan,
NetworkManager, systemd-networkd, ifupdown, ifcfg), each owning everything persisted for a link.

Each backend is one class with one protocol (:class:`Backend`):

* detect, :meth:`Backend.find` (and :meth:`Backend.create`): does this stack configure the link on
  this host, and with which file, profile or definition (a :class:`Config`)?  The answer is based
  on what the host really uses (netplan definitions that match, a NetworkManager profile that is
  active on or bound to the device, the .network file systemd-networkd applied, an ifupdown
  stanza, an ifcfg file), never on which packages happen to be installed;
* the MTU, :meth:`Backend.plan_mtu` and :meth:`Backend.read_mtu`: what must change so that only the
  MTU differs (files are edited in place keeping every other byte, or get a drop-in the stack
  merges), and what the configuration says (re-read after the change);
* the addresses, routes and rules of a link (its rails), :meth:`Backend.plan_rails` and
  :meth:`Backend.read_rails`: the same, for what ``_netconf.rails`` decided the link needs.

The engines (``_netconf.mtu``, ``_netconf.rails``) decide what a link needs; a backend decides how
its stack writes it, through the pure renderers and editors of :mod:`.formats`.  Every change is
staged in one shared :class:`Context`, so a file that holds a link's MTU and its addresses is
written once and each activation command runs once.

:func:`detect` asks them in the order in which they take precedence: netplan renders
NetworkManager and systemd-networkd configuration, so it comes first; NetworkManager
(when running and managing the device) before systemd-networkd; then ifupdown, then
ifcfg files; a NetworkManager keyfile last, for hosts where NetworkManager is not running.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import LINK_RESET, ONLINE
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import formats as fmt
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.stacks import BACKENDS
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import MARKER_BEGIN, MARKER_END, merge_block, read_block, read_text
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_netdev
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import int_or_none

try:
    import yaml

    HAS_YAML = True
except ImportError:  # pragma: no cover - depends on the target
    yaml = None
    HAS_YAML = False


def _first_by_name(ctx, directories, pattern):
    """The files matching ``pattern`` in ``directories``, in name order; of two with one name, the one
    in the earlier directory (netplan's and systemd-networkd's rule: /etc before /run before /lib)."""
    chosen = {}
    for directory in directories:
        for path in ctx.glob(directory + "/" + pattern):
            chosen.setdefault(os.path.basename(path), path)
    return [chosen[name] for name in sorted(chosen)]


DROPIN_PREFIX = "90-rdmaops"


class Config:
    """One place that configures a link's MTU persistently."""

    def __init__(self, backend, interface, path, mtu, **details):
        self.backend = backend
        self.interface = interface
        self.path = path
        self.mtu = mtu
        self.details = details

    def describe(self):
        out = dict(backend=self.backend.name, interface=self.interface, path=self.path, mtu=self.mtu)
        for key, value in self.details.items():
            if not key.startswith("_"):
                out[key] = value
        return out


class Context:
    """What every backend needs: host root, command runner, links, and where to note findings."""

    def __init__(self, host, runner, links):
        self.host = host
        self.runner = runner
        self.links = links
        self.notes = []
        self._cache = {}
        self.staged = {}  # path -> dict(text, mode, whole, descriptions), in planning order
        self.commands = []  # the commands that changed or activated something, as people read them

    def read(self, path):
        """A configuration file as planned so far: staged edits first, else the file on the host."""
        if path in self.staged:
            return self.staged[path]["text"]
        return read_text(self.host, path)

    def stage(self, path, text, mode, description, whole=False):
        """Plan ``path`` to hold ``text``; several edits of one file build on each other.

        ``whole``: the file is a drop-in of ours (written whole), refused when it exists without
        our marker unless adopted; otherwise it is a user's file of which one line is edited.
        """
        entry = self.staged.get(path)
        if entry is None:
            entry = self.staged[path] = dict(text=None, mode=mode, whole=whole, descriptions=[])
        entry["text"] = text
        entry["whole"] = entry["whole"] or whole
        entry["descriptions"].append(description)

    def plan_files(self, plan, adopt=False):
        """One :meth:`Plan.file` change per file staged (atomic, symlinks kept, restored on failure)."""
        for path, entry in self.staged.items():
            plan.file(self.host, path, entry["text"], mode=entry["mode"], description="; ".join(entry["descriptions"]),
                      key=path, adopt=adopt or not entry["whole"])

    def run(self, argv, check=True):
        """Run a command that changes or activates something; it is reported in ``commands``."""
        self.commands.append(" ".join(argv))
        return self.runner.run(argv, check=check)

    def cached(self, key, producer):
        if key not in self._cache:
            self._cache[key] = producer()
        return self._cache[key]

    def glob(self, pattern):
        """Host paths matching a shell pattern under the host root, sorted."""
        real = sorted(glob.glob(self.host.path(pattern)))
        return [self.host.to_host(path) for path in real]


def command(argv, required=True, validates=False, disruption=ONLINE):
    """A command that activates persisted configuration.

    ``required``: a failure fails the module (else it is a warning, the live MTU being set
    already).  ``validates``: the command checks the files just written (``netplan generate``),
    so a failure restores them.  ``disruption``: its class (a reload of the configuration is
    ``online``; a command that sets a live link's MTU resets the link).
    """
    return dict(argv=list(argv), required=required, validates=validates, disruption=disruption)


def _file_change(ctx, path, before, after, mode, description, whole=False):
    if before != after:
        ctx.stage(path, after, mode, description, whole=whole)


class Backend:
    """One network stack: the protocol every stack implements (detect, read, plan)."""

    name = None
    #: the address families whose rail addresses the stack persists (and :meth:`read_rails` reports)
    RAIL_FAMILIES = (4, 6)

    def __init__(self, ctx):
        self.ctx = ctx

    # -- detect -------------------------------------------------------------------------------
    def find(self, link):
        """The :class:`Config` through which this stack configures ``link``, or None (with a note)."""
        raise NotImplementedError

    def create(self, link):
        """A new configuration for a link nothing configures yet; None where that is unsafe."""
        return None

    # -- the MTU ------------------------------------------------------------------------------
    def plan_mtu(self, cfg, mtu, plan):
        """Add the changes that give ``cfg`` this MTU; return the commands that activate them."""
        raise NotImplementedError

    def read_mtu(self, cfg):
        """The MTU the configuration gives the link (staged edits first)."""
        raise NotImplementedError

    # -- addresses, routes and rules (the rails) -----------------------------------------------
    def plan_rails(self, cfg, links, plan, exclusive=False, guard_removal=None):
        """Add the changes that give ``cfg`` the addresses, routes and rules of ``links`` (one netdev's
        rail links, :class:`_netconf.rails.RailLink`); return the commands that activate them.

        ``exclusive``: the configuration's other addresses of those families go.  ``guard_removal``
        (``interface, removed, where``) is called with what would be removed before it is planned:
        it raises where that would cut the management path."""
        raise NotImplementedError

    def read_rails(self, cfg):
        """The addresses the configuration gives the link (``address/prefix``, sorted)."""
        raise NotImplementedError

    def rails_path(self, cfg):
        """The file that holds the link's rails (reported in the result), once planned."""
        return cfg.details.get("_rails_path", cfg.path)

    def note(self, text):
        self.ctx.notes.append("%s: %s" % (self.name, text))

    def _run(self, argv):
        return lambda: self.ctx.run(argv)


# --------------------------------------------------------------------------------------------
# netplan
# --------------------------------------------------------------------------------------------
class Netplan(Backend):
    """netplan YAML: a drop-in ``/etc/netplan/90-rdmaops-<id>.yaml`` that sets only ``mtu``.

    netplan merges its files in lexical order of their names, later files overriding
    earlier ones key by key, so the drop-in changes the MTU of the definition and nothing
    else, whichever file defines it (including files cloud-init rewrites on boot).  It is
    then rendered with ``netplan generate``; ``netplan apply`` is never run, because it
    reconfigures every link.  systemd-networkd is told with ``networkctl reload``, which
    reconfigures only links whose rendered file changed; NetworkManager with
    ``nmcli connection reload``.
    """

    name = "netplan"
    DIRS = ("/run/netplan", "/etc/netplan", "/lib/netplan")  # same name: earlier directory wins

    def files(self):
        return _first_by_name(self.ctx, self.DIRS, "*.yaml")

    def documents(self, replace=None):
        if not HAS_YAML:
            raise RdmaopsError(
                "netplan configuration is present (%s) but PyYAML, which netplan itself depends on, cannot be "
                "imported by this Python; run the module with the interpreter netplan uses (ansible_python_interpreter)"
                % ", ".join(self.files())
            )
        docs = []
        replace = dict(replace or {})
        paths = self.files()
        for path in self.ctx.staged:
            if path.startswith("/etc/netplan/") and path.endswith(".yaml") and path not in paths:
                paths.append(path)
        for path in replace:
            if path not in paths:
                paths.append(path)
        paths.sort(key=os.path.basename)
        for path in paths:
            text = replace[path] if path in replace else self.ctx.read(path)
            if text is None:
                continue
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise RdmaopsError("%s is not valid YAML: %s" % (path, exc), path=path)
            docs.append((path, data))
        return docs

    def _matching(self, merged, link):
        return [
            (section, netdef_id, definition)
            for (section, netdef_id), definition in sorted(merged.items())
            if fmt.netplan_matches(section, netdef_id, definition, link)
        ]

    def find(self, link):
        if not self.files():
            self.note("no YAML in %s" % ", ".join(self.DIRS))
            return None
        docs = self.documents()
        merged = fmt.netplan_merge(docs)
        matches = self._matching(merged, link)
        if not matches:
            self.note("no definition matches %s" % link["name"])
            return None
        if len(matches) > 1:
            raise RefusedError(
                "more than one netplan definition matches %s (%s); netplan would apply only one of them: "
                "keep one definition per link"
                % (link["name"], ", ".join("%s.%s" % (s, i) for s, i, _d in matches))
            )
        section, netdef_id, definition = matches[0]
        others = [
            name
            for name in self.ctx.links.names()
            if name != link["name"] and fmt.netplan_matches(section, netdef_id, definition, self.ctx.links.info(name))
        ]
        if others:
            raise RefusedError(
                "netplan definition %s.%s (%s) matches %s as well as %s: its MTU would change all of them. Give %s "
                "a definition of its own (match on its macaddress) and run again"
                % (section, netdef_id, definition["__files__"][0], ", ".join(others), link["name"], link["name"])
            )
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", netdef_id)
        return Config(
            self,
            link["name"],
            "/etc/netplan/%s-%s.yaml" % (DROPIN_PREFIX, safe),
            definition.get("mtu"),
            definition="%s.%s" % (section, netdef_id),
            origin=definition["__files__"][0],
            renderer=fmt.netplan_renderer(docs, definition),
            _section=section,
            _id=netdef_id,
        )

    def _effective_with(self, cfg, replace):
        merged = fmt.netplan_merge(self.documents(replace))
        definition = merged.get((cfg.details["_section"], cfg.details["_id"]), {})
        return definition.get("mtu"), definition.get("__mtu_file__")

    def plan_mtu(self, cfg, mtu, plan):
        if cfg.mtu == mtu:
            return []
        text = fmt.netplan_dropin(cfg.details["_section"], cfg.details["_id"], mtu, cfg.interface, cfg.details["origin"])
        value, winner = self._effective_with(cfg, {cfg.path: text})
        if value != mtu:
            raise RefusedError(
                "%s sorts after %s and sets mtu %s for %s; netplan would keep that value. Remove the mtu there "
                "(or set it to %d)" % (winner, cfg.path, value, cfg.details["definition"], mtu)
            )
        before = self.ctx.read(cfg.path)
        _file_change(self.ctx, cfg.path, before, text, 0o600, "netplan: %s sets mtu %d for %s" % (cfg.path, mtu, cfg.details["definition"]),
                     whole=True)
        return self._activations(cfg)

    def _activations(self, cfg):
        """``netplan generate`` (validates the files), then a reload of the renderer where it runs."""
        commands = [command(self._generate(), validates=True)]
        renderer = cfg.details["renderer"]
        if renderer == "networkd" and Networkd(self.ctx).running():
            commands.append(command(["networkctl", "reload"]))
        elif renderer == "NetworkManager" and NetworkManager(self.ctx).running():
            commands.append(command(["nmcli", "connection", "reload"]))
        return commands

    def _generate(self):
        argv = ["netplan", "generate"]
        if not self.ctx.host.is_live:
            argv += ["--root-dir", self.ctx.host.root]
        return argv

    def read_mtu(self, cfg):
        return self._effective_with(cfg, {})[0]

    def plan_rails(self, cfg, links, plan, exclusive=False, guard_removal=None):
        """A second drop-in beside the MTU's, ``90-rdmaops-<id>-rails.yaml``: netplan appends its
        addresses, routes and routing policy to the definition's own."""
        path = cfg.path[:-len(".yaml")] + "-rails.yaml"
        cfg.details["_rails_path"] = path
        text = fmt.netplan_rails_dropin(cfg.details["_section"], cfg.details["_id"], links, cfg.details["origin"])
        if self.ctx.read(path) == text:
            return []
        self.ctx.stage(path, text, 0o600, "netplan: %s adds the rail address, routes and rule of %s" % (path, cfg.interface),
                       whole=True)
        return self._activations(cfg)

    def read_rails(self, cfg):
        # netplan appends a definition's lists over its files: ours must hold the rail's addresses
        data = yaml.safe_load(self.ctx.read(cfg.details["_rails_path"]) or "") or {}
        definition = ((data.get("network") or {}).get(cfg.details["_section"]) or {}).get(cfg.details["_id"]) or {}
        return sorted(str(item) for item in definition.get("addresses") or [])


# --------------------------------------------------------------------------------------------
# NetworkManager
# --------------------------------------------------------------------------------------------
def split_terse(line):
    """Split one ``nmcli -t`` line on unescaped ``:`` (values escape ``:`` and ``\\`` with ``\\``)."""
    fields, current, escaped = [], [], False
    for char in line:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ":":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    fields.append("".join(current))
    return fields


class NetworkManager(Backend):
    """A NetworkManager profile's ``802-3-ethernet.mtu`` (ethernet, VLAN and bond profiles alike).

    While NetworkManager runs, the profile is changed with ``nmcli connection modify``
    (NetworkManager writes it to wherever it keeps it: a keyfile, an ifcfg file) and the
    running device gets the value with ``nmcli device modify``, which changes the applied
    configuration of that device only and does not reactivate it.  When NetworkManager is
    not running, the keyfile in /etc/NetworkManager/system-connections is edited in place
    (``[ethernet] mtu=``), keeping its mode (0600) and every other line.
    """

    name = "networkmanager"
    KEYFILE_DIR = "/etc/NetworkManager/system-connections"
    NETPLAN_PREFIX = "/run/NetworkManager/system-connections/netplan-"
    TYPES = ("802-3-ethernet", "ethernet", "vlan", "bond", "bridge")
    SECTIONS = ["ethernet", "802-3-ethernet"]

    def running(self):
        def probe():
            if not self.ctx.runner.has("nmcli"):
                return False
            result = self.ctx.runner.run(["nmcli", "-t", "-f", "RUNNING", "general"], check=False)
            return result.ok and result.stdout.strip() == "running"

        return self.ctx.cached("nm_running", probe)

    def _profiles(self):
        result = self.ctx.runner.run(["nmcli", "-t", "-f", "NAME,UUID,TYPE,DEVICE,FILENAME", "connection", "show"])
        profiles = []
        for line in result.stdout.splitlines():
            fields = split_terse(line)
            if len(fields) == 5:
                profiles.append(dict(zip(("name", "uuid", "type", "device", "filename"), fields)))
        return profiles

    def _device_states(self):
        result = self.ctx.runner.run(["nmcli", "-t", "-f", "DEVICE,STATE", "device"])
        states = {}
        for line in result.stdout.splitlines():
            fields = split_terse(line)
            if len(fields) == 2:
                states[fields[0]] = fields[1]
        return states

    def _get(self, uuid, prop):
        result = self.ctx.runner.run(["nmcli", "-g", prop, "connection", "show", uuid])
        return result.stdout.strip()

    def _choose(self, name, profiles):
        """The profile that brings ``name`` up at boot.

        The active profile when it is stored on disk; else a stored profile bound to the
        device (NetworkManager prefers it at the next boot over the in-memory
        "Wired connection N" it made when the device appeared before that profile existed);
        else the active in-memory profile (``nmcli connection modify`` stores it on disk).
        """
        active = [p for p in profiles if p["device"] == name]
        if active and not active[0]["filename"].startswith("/run/"):
            return active[0]
        for profile in profiles:
            if profile["device"] or profile["type"] not in self.TYPES or profile["filename"].startswith("/run/"):
                continue
            if self._get(profile["uuid"], "connection.interface-name") == name:
                return profile
        return active[0] if active else None

    def find(self, link):
        name = link["name"]
        if self.running():
            state = self._device_states().get(name)
            if state is None or state.startswith("unmanaged") or "externally" in state:
                self.note("NetworkManager runs but does not manage %s (device state %s)" % (name, state or "unknown"))
                return None
            profile = self._choose(name, self._profiles())
            if profile is None:
                self.note("no profile is active on or bound to %s" % name)
                return None
            if profile["filename"].startswith(self.NETPLAN_PREFIX):
                self.note("profile %s is generated by netplan" % profile["name"])
                return None
            return Config(
                self,
                name,
                profile["filename"] or None,
                int_or_none(self._get(profile["uuid"], "802-3-ethernet.mtu")),
                profile=profile["name"],
                uuid=profile["uuid"],
                active=profile["device"] == name,
                mode="nmcli",
            )
        return None

    def find_keyfile(self, link):
        """The keyfile of a link while NetworkManager is not running (image builds, rescue)."""
        for path in self.ctx.glob(self.KEYFILE_DIR + "/*"):
            text = self.ctx.read(path)
            if text is None:
                continue
            entries = fmt.parse_ini(text)
            bound = fmt.ini_get(entries, ["connection"], "interface-name") == link["name"]
            mac = fmt.ini_get(entries, self.SECTIONS, "mac-address")
            if not bound and mac and link.get("mac") and mac.lower() == link["mac"].lower():
                bound = True
            if bound:
                return Config(
                    self,
                    link["name"],
                    path,
                    int_or_none(fmt.ini_get(entries, self.SECTIONS, "mtu")),
                    profile=fmt.ini_get(entries, ["connection"], "id"),
                    uuid=fmt.ini_get(entries, ["connection"], "uuid"),
                    active=False,
                    mode="keyfile",
                )
        self.note("no keyfile in %s binds %s" % (self.KEYFILE_DIR, link["name"]))
        return None

    def plan_mtu(self, cfg, mtu, plan):
        if cfg.mtu == mtu:
            return []
        if cfg.details["mode"] == "keyfile":
            before = self.ctx.read(cfg.path) or ""
            after = fmt.ini_set(before, self.SECTIONS, "mtu", str(mtu))
            _file_change(self.ctx, cfg.path, before, after, 0o600, "networkmanager: %s sets mtu=%d" % (cfg.path, mtu))
            return []
        uuid = cfg.details["uuid"]

        def modify(value):
            return lambda: self.ctx.run(["nmcli", "connection", "modify", uuid, "802-3-ethernet.mtu", str(value)])

        plan.add(
            "networkmanager:%s:802-3-ethernet.mtu" % cfg.details["profile"],
            cfg.mtu if cfg.mtu is not None else "auto",
            mtu,
            modify(mtu),
            "networkmanager: profile %s (%s) 802-3-ethernet.mtu %s -> %d"
            % (cfg.details["profile"], uuid, cfg.mtu if cfg.mtu is not None else "auto", mtu),
            # the old value again (0 is nmcli's "auto"): the profile is as it was
            undo=modify(cfg.mtu if cfg.mtu is not None else 0),
        )
        if cfg.details["active"]:
            # Best effort: the live MTU is already set with ip; this keeps NetworkManager's
            # applied configuration in step so a later re-commit does not restore the old value.
            return [command(["nmcli", "device", "modify", cfg.interface, "802-3-ethernet.mtu", str(mtu)], required=False,
                            disruption=LINK_RESET)]
        return []

    def read_mtu(self, cfg):
        if cfg.details["mode"] == "keyfile":
            return int_or_none(fmt.ini_get(fmt.parse_ini(self.ctx.read(cfg.path) or ""), self.SECTIONS, "mtu"))
        return int_or_none(self._get(cfg.details["uuid"], "802-3-ethernet.mtu"))

    RAIL_PROPS = ("addresses", "routes", "routing-rules")

    def plan_rails(self, cfg, links, plan, exclusive=False, guard_removal=None):
        """The profile's ``ipvN.addresses``, ``ipvN.routes`` and ``ipvN.routing-rules`` through
        ``nmcli connection modify`` (each with the old value as undo), ``ipvN.method`` made
        ``manual`` where it takes no address."""
        if cfg.details.get("mode") == "keyfile":
            raise RefusedError("networkmanager: NetworkManager is not running, so the rail addresses of %s cannot be added "
                               "to its profile %s here; start NetworkManager, or persist: false" % (cfg.interface, cfg.path))
        uuid = cfg.details["uuid"]
        commands = []
        for family in sorted(set(link.family for link in links)):
            setting = "ipv%d" % family
            wanted = fmt.nm_rails_properties(links, family)
            method = self._get(uuid, "%s.method" % setting)
            # NetworkManager refuses addresses on a profile whose method takes none: make it manual first
            if method in ("disabled", "ignore", "link-local", ""):
                plan.add("networkmanager:%s:%s.method" % (cfg.details["profile"], setting), method, "manual",
                         self._run(["nmcli", "connection", "modify", uuid, "%s.method" % setting, "manual"]),
                         "networkmanager: profile %s %s.method %s -> manual (it carries the rail address)"
                         % (cfg.details["profile"], setting, method or "unset"),
                         undo=self._run(["nmcli", "connection", "modify", uuid, "%s.method" % setting, method or "disabled"]))
            for prop in self.RAIL_PROPS:
                key = "%s.%s" % (setting, prop)
                current = [item.strip() for item in fmt.nm_split(self._get(uuid, key)) if item.strip()]
                missing = [item for item in wanted[prop] if fmt.nm_norm(item) not in set(fmt.nm_norm(c) for c in current)]
                # exclusive: the profile's other addresses of this family go too, or the next activation
                # (a reboot, nmcli up) brings back what the live change removed
                foreign = [item for item in current if fmt.nm_norm(item) not in set(fmt.nm_norm(w) for w in wanted[prop])] \
                    if prop == "addresses" and exclusive else []
                guard_removal(cfg.interface, foreign, "NetworkManager profile %s" % cfg.details["profile"])
                if not missing and not foreign:
                    continue
                value = ", ".join([item for item in current if item not in foreign] + missing)
                what = (["%s += %s" % (key, ", ".join(missing))] if missing else []) + (
                    ["%s -= %s (nic_addresses_exclusive)" % (key, ", ".join(foreign))] if foreign else [])
                plan.add("networkmanager:%s:%s" % (cfg.details["profile"], key), ", ".join(current), value,
                         self._run(["nmcli", "connection", "modify", uuid, key, value]),
                         "networkmanager: profile %s %s" % (cfg.details["profile"], "; ".join(what)),
                         undo=self._run(["nmcli", "connection", "modify", uuid, key, ", ".join(current)]))
        return commands

    def read_rails(self, cfg):
        uuid = cfg.details.get("uuid")
        return sorted(item.strip() for family in (4, 6) for item in fmt.nm_split(self._get(uuid, "ipv%d.addresses" % family)) if item.strip())


# --------------------------------------------------------------------------------------------
# systemd-networkd
# --------------------------------------------------------------------------------------------
class Networkd(Backend):
    """systemd-networkd: a drop-in ``<file>.network.d/90-rdmaops-mtu.conf`` with ``[Link] MTUBytes=``.

    The .network file is the one networkd says it applied to the link
    (``/run/systemd/netif/links/<ifindex>``), else the first file whose ``[Match]`` selects
    it.  A drop-in leaves that file untouched and wins over it.  ``.link`` files are not
    used: udev applies only the first matching .link file, so a new one would shadow the
    distribution's naming policy.  ``networkctl reload`` then reconfigures only the links
    whose configuration changed.
    """

    name = "networkd"
    DIRS = ("/etc/systemd/network", "/run/systemd/network", "/usr/local/lib/systemd/network", "/usr/lib/systemd/network", "/lib/systemd/network")
    NETPLAN_PREFIX = "/run/systemd/network/10-netplan-"
    DROPIN = DROPIN_PREFIX + "-mtu.conf"
    RAILS_DROPIN = DROPIN_PREFIX + "-rails.conf"

    def running(self):
        return self.ctx.host.isdir("/run/systemd/netif/links")

    def enabled(self):
        return any(
            self.ctx.host.exists(path)
            for path in (
                "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service",
                "/etc/systemd/system/dbus-org.freedesktop.network1.service",
            )
        )

    def networks(self):
        return _first_by_name(self.ctx, self.DIRS, "*.network")

    def _first_match(self, link, networks, strict=True):
        for path in networks:
            result = fmt.networkd_match(fmt.parse_ini(self.ctx.read(path) or ""), link)
            if result is None and not strict:
                continue
            if result is None:
                raise RefusedError(
                    "%s matches links on keys this module cannot evaluate from sysfs; tell it which backend to use "
                    "(backend: networkd) only after checking that this file configures %s" % (path, link["name"])
                )
            if result:
                return path
        return None

    def find(self, link):
        if not (self.running() or self.enabled()):
            self.note("systemd-networkd is neither running nor enabled")
            return None
        networks = self.networks()
        path = None
        state = self.ctx.host.read("/run/systemd/netif/links/%s" % link.get("ifindex")) or ""
        for line in state.splitlines():
            if line.startswith("NETWORK_FILE="):
                path = line.split("=", 1)[1].strip() or None
        if path is None:
            path = self._first_match(link, networks)
        if path is None:
            self.note("no .network file matches %s" % link["name"])
            return None
        if path.startswith(self.NETPLAN_PREFIX):
            self.note("%s is rendered by netplan" % path)
            return None
        others = []
        for name in self.ctx.links.names():
            if name != link["name"] and self._first_match(self.ctx.links.info(name), networks, strict=False) == path:
                others.append(name)
        if others:
            raise RefusedError(
                "%s configures %s as well as %s: an MTU there would change all of them. Give %s a .network file "
                "of its own and run again" % (path, ", ".join(others), link["name"], link["name"])
            )
        dropin = "/etc/systemd/network/%s.d/%s" % (os.path.basename(path), self.DROPIN)
        return Config(self, link["name"], dropin, self._effective_with(path, {})[0], network_file=path)

    def _dropins(self, network_file, replace):
        chosen = {}
        base = os.path.basename(network_file)
        for directory in self.DIRS:
            for path in self.ctx.glob("%s/%s.d/*.conf" % (directory, base)):
                chosen.setdefault(os.path.basename(path), path)
        for path in replace:
            chosen.setdefault(os.path.basename(path), path)
        return [chosen[name] for name in sorted(chosen)]

    def _effective_with(self, network_file, replace):
        value, winner = None, None
        for path in [network_file] + self._dropins(network_file, replace):
            text = replace[path] if path in replace else self.ctx.read(path)
            found = fmt.ini_get(fmt.parse_ini(text or ""), ["Link"], "MTUBytes")
            if found is not None:
                value, winner = fmt.parse_bytes(found), path
        return value, winner

    def plan_mtu(self, cfg, mtu, plan):
        if cfg.mtu == mtu:
            return []
        text = "# Managed by rdmaops.roce (link_mtu): the MTU of %s.\n[Link]\nMTUBytes=%d\n" % (check_netdev("interface", cfg.interface), mtu)
        value, winner = self._effective_with(cfg.details["network_file"], {cfg.path: text})
        if value != mtu:
            raise RefusedError(
                "%s sorts after %s and sets MTUBytes=%s; networkd would keep that value. Remove it there" % (winner, cfg.path, value)
            )
        before = self.ctx.read(cfg.path)
        _file_change(self.ctx, cfg.path, before, text, 0o644, "networkd: %s sets MTUBytes=%d" % (cfg.path, mtu), whole=True)
        return [command(["networkctl", "reload"])] if self.running() else []

    def read_mtu(self, cfg):
        return self._effective_with(cfg.details["network_file"], {})[0]

    def plan_rails(self, cfg, links, plan, exclusive=False, guard_removal=None):
        """A drop-in beside the MTU's, ``90-rdmaops-rails.conf``: ``[Address]``, ``[Route]`` and
        ``[RoutingPolicyRule]`` sections, which networkd adds to the .network file's own."""
        path = os.path.join(os.path.dirname(cfg.path), self.RAILS_DROPIN)
        cfg.details["_rails_path"] = path
        text = fmt.networkd_rails_dropin(links)
        before = self.ctx.read(path)
        if before != text:
            self.ctx.stage(path, text, 0o644, "networkd: %s adds the rail address, table and rule of %s" % (path, cfg.interface),
                           whole=True)
            return [command(["networkctl", "reload"])] if self.running() else []
        return []

    def read_rails(self, cfg):
        entries = fmt.parse_ini(self.ctx.read(cfg.details["_rails_path"]) or "")
        return sorted(value for section, key, value in entries if section == "Address" and key == "Address")


# --------------------------------------------------------------------------------------------
# ifupdown
# --------------------------------------------------------------------------------------------
class Ifupdown(Backend):
    """Debian's ifupdown: the ``mtu`` option of the interface's ``iface`` stanza.

    /etc/network/interfaces is read with its ``source`` and ``source-directory`` lines, where
    ifupdown reads them (a sourced file's stanzas come at the ``source`` line), so that
    ``inherits`` is resolved as ifupdown resolves it: the MTU a stanza inherits from a template
    is its MTU, and the result says where it comes from (``mtu_source``).  The stanza keeps
    every other line; a method that ignores ``mtu`` (inet dhcp) gets
    ``pre-up ip link set dev IF mtu N`` instead.  A stanza that inherits another MTU stops
    inheriting and gets the template's options copied in (ifupdown 0.8 would join an ``mtu``
    line of its own with the inherited one into one broken value; the template is left alone,
    other stanzas inherit it).  ifupdown reads it at the next ``ifup`` (boot, hotplug); nothing
    is re-run now, because ``ifdown``/``ifup`` would bounce the link.  A link that nothing
    configures gets a block of its own in /etc/network/interfaces (``allow-hotplug`` +
    ``iface IF inet manual`` + ``mtu``), which sets no address.
    """

    name = "ifupdown"
    MAIN = "/etc/network/interfaces"

    def available(self):
        return self.ctx.host.exists(self.MAIN)

    def _included(self, path, kind, arg):
        """The files a ``source``/``source-directory`` line of ``path`` reads, in ifupdown's order."""
        pattern = arg if arg.startswith("/") else os.path.join(os.path.dirname(path), arg)
        if kind == "source":
            return self.ctx.glob(pattern)
        out = []
        for folder in self.ctx.glob(pattern):
            for name in self.ctx.host.listdir(folder):
                if fmt.SOURCE_DIRECTORY_NAME.fullmatch(name):
                    out.append(os.path.join(folder, name))
        return out

    def _read_all(self):
        """``(files, stanzas)``: the files ifupdown reads, and every stanza in the order it reads them.

        Each file is read once (as ifupdown does); the stanzas carry their ``path`` and have
        their ``inherits`` resolved over that order.
        """
        files = []
        stanzas = []

        def visit(path, depth):
            if path in files or depth > 8:
                return
            text = self.ctx.read(path)
            if text is None:
                return
            files.append(path)
            for item in fmt.parse_ifupdown(text)["items"]:
                if item[0] == "iface":
                    item[1].path = path
                    stanzas.append(item[1])
                else:
                    for found in self._included(path, item[1], item[2]):
                        visit(found, depth + 1)

        visit(self.MAIN, 0)
        fmt.ifupdown_resolve(stanzas)
        return files, stanzas

    def files(self):
        return self._read_all()[0]

    def _with_stanzas(self, name):
        found = []
        for path in self.files():
            text = self.ctx.read(path) or ""
            if any(stanza.name == name for stanza in fmt.parse_ifupdown(text)["stanzas"]):
                found.append((path, text))
        return found

    def _mine(self, name):
        """The interface's stanzas in ifupdown's order; a RefusedError where ifupdown rejects one.

        A stanza ifupdown rejects in the main file makes it read nothing (``couldn't read
        interfaces file``); in a sourced file, it stops reading that file there.
        """
        stanzas = self._read_all()[1]
        for stanza in stanzas:
            if stanza.path == self.MAIN and stanza.error is not None:
                raise RefusedError(
                    "ifupdown cannot read %s: %s: %s. Fix it first" % (self.MAIN, stanza.where(), stanza.error)
                )
        mine = [stanza for stanza in stanzas if stanza.name == name]
        for stanza in mine:
            if stanza.error is not None:
                raise RefusedError(
                    "ifupdown rejects the stanza of %s at %s: %s (ifupdown stops reading that file there). "
                    "Fix the stanza first" % (name, stanza.where(), stanza.error)
                )
        return stanzas, mine

    def find(self, link):
        if not self.available():
            self.note("%s does not exist" % self.MAIN)
            return None
        found = self._with_stanzas(link["name"])
        if not found:
            self.note("no iface stanza for %s in %s" % (link["name"], ", ".join(self.files())))
            return None
        stanzas, _mine = self._mine(link["name"])
        effective = fmt.ifupdown_effective(stanzas, link["name"])
        details = dict(files=[path for path, _t in found])
        if effective["source"] is not None:
            details["mtu_source"] = effective["source"]
        if effective["broken"]:
            details["mtu_broken"] = effective["broken"]
        return Config(self, link["name"], found[0][0], effective["mtu"], **details)

    def create(self, link):
        if not self.available():
            return None
        return Config(self, link["name"], self.MAIN, None, files=[], created=True)

    def plan_mtu(self, cfg, mtu, plan):
        if cfg.mtu == mtu:
            return []
        name = cfg.interface
        if cfg.details.get("created"):
            before = self.ctx.read(self.MAIN) or ""
            after = merge_block(before, fmt.ifupdown_block(name, mtu), "mtu %s" % name)
            _file_change(self.ctx, self.MAIN, before, after, 0o644, "ifupdown: %s gets a manual stanza for %s with mtu %d" % (self.MAIN, name, mtu))
            return []
        stanzas, mine = self._mine(name)
        setting = []
        for stanza in mine:
            found = fmt.ifupdown_stanza_mtu(stanza, name)
            if (found["mtu"] is not None or found["broken"]) and stanza.path not in setting:
                setting.append(stanza.path)
        for path in setting or [mine[0].path]:
            text = self.ctx.read(path) or ""
            try:
                after, detached = fmt.ifupdown_edit_mtu(text, name, mtu, [s for s in stanzas if s.path == path])
            except ValueError as exc:
                raise RefusedError(str(exc))
            description = "ifupdown: %s sets mtu %d for %s" % (path, mtu, name)
            for stanza in detached:
                description += (
                    "; the stanza at %s stops inheriting %s and gets its options (ifupdown joins an mtu of the stanza's own "
                    "with an inherited one; %s is left as it is)" % (stanza.where(), stanza.inherits, stanza.inherits)
                )
            _file_change(self.ctx, path, text, after, 0o644, description)
        return []

    def read_mtu(self, cfg):
        stanzas = self._read_all()[1]
        if cfg.details.get("created"):
            # our block is what configures the link: a stanza of the name elsewhere in the main file is not ours
            lines = (self.ctx.read(self.MAIN) or "").split("\n")
            begin, end = MARKER_BEGIN % ("mtu %s" % cfg.interface), MARKER_END % ("mtu %s" % cfg.interface)
            if begin in lines and end in lines[lines.index(begin):]:
                inside = (lines.index(begin), lines.index(end, lines.index(begin)))
                stanzas = [
                    stanza for stanza in stanzas
                    if stanza.path != self.MAIN or stanza.name != cfg.interface or inside[0] < stanza.line < inside[1]
                ]
        return fmt.ifupdown_effective(stanzas, cfg.interface)["mtu"]

    def plan_rails(self, cfg, links, plan, exclusive=False, guard_removal=None):
        """A marked block of ours in the file of the link's stanza: ``manual`` stanzas whose ``up``
        lines run the live commands (shell-quoted), with ``allow-hotplug`` where nothing else
        brings the link up at boot."""
        path = cfg.path
        cfg.details["_rails_path"] = path
        before = self.ctx.read(path) or ""
        lines = fmt.ifupdown_rails_lines(links)
        if not self._brings_up(cfg.interface, path):
            # nothing marks the link for ifup at boot (a link the MTU's block does not cover either)
            lines = ["allow-hotplug %s" % cfg.interface] + lines
        after = merge_block(before, lines, "rails %s" % cfg.interface)
        if before != after:
            self.ctx.stage(path, after, 0o644, "ifupdown: %s gets the rail stanza of %s (address, table, rule)" % (path, cfg.interface))
        return []

    def _brings_up(self, interface, path):
        """Whether an ``auto`` or ``allow-*`` line outside our rails block names the interface."""
        for name in self.files():
            text = self.ctx.read(name) or ""
            if name == path:
                text = merge_block(text, [], "rails %s" % interface)
            if interface in fmt.parse_ifupdown(text)["auto"]:
                return True
        return False

    def read_rails(self, cfg):
        block = read_block(self.ctx.read(cfg.details["_rails_path"]) or "", "rails %s" % cfg.interface) or []
        found = [line.split()[1] for line in block if line.strip().startswith("address ")]
        found += [line.split()[5] for line in block if " address replace " in line]
        return sorted(found)


# --------------------------------------------------------------------------------------------
# ifcfg
# --------------------------------------------------------------------------------------------
class Ifcfg(Backend):
    """Red Hat network-scripts: the ``MTU=`` line of ``/etc/sysconfig/network-scripts/ifcfg-<if>``.

    Where NetworkManager runs it reads these files through its ifcfg-rh plugin and is used
    instead (nmcli writes the same file).  Without it, the network service reads the file at
    the next ``ifup`` (boot); nothing is re-run now.
    """

    name = "ifcfg"
    DIR = "/etc/sysconfig/network-scripts"

    def find(self, link):
        name = link["name"]
        direct = "%s/ifcfg-%s" % (self.DIR, name)
        candidates = [direct] + [path for path in self.ctx.glob(self.DIR + "/ifcfg-*") if path != direct]
        for path in candidates:
            text = self.ctx.read(path)
            if text is None:
                continue
            values = fmt.parse_ifcfg(text)
            device = values.get("DEVICE")
            hwaddr = values.get("HWADDR")
            if device == name or (path == direct and not device) or (
                not device and hwaddr and link.get("mac") and hwaddr.lower() == link["mac"].lower()
            ):
                return Config(self, name, path, int_or_none(values.get("MTU")))
        self.note("no ifcfg file for %s in %s" % (name, self.DIR))
        return None

    def plan_mtu(self, cfg, mtu, plan):
        if cfg.mtu == mtu:
            return []
        before = self.ctx.read(cfg.path) or ""
        _file_change(self.ctx, cfg.path, before, fmt.ifcfg_set_mtu(before, mtu), 0o644, "ifcfg: %s sets MTU=%d" % (cfg.path, mtu))
        return []

    def read_mtu(self, cfg):
        return int_or_none(fmt.parse_ifcfg(self.ctx.read(cfg.path) or "").get("MTU"))

    RAIL_FAMILIES = (4,)

    def plan_rails(self, cfg, links, plan, exclusive=False, guard_removal=None):
        """``IPADDRn``/``PREFIXn`` in the ifcfg file, a marked block in ``route-<if>`` and ``rule-<if>``
        beside it (IPv4 only)."""
        if any(link.family == 6 for link in links):
            raise RefusedError("ifcfg: IPv6 rails on %s are not written to ifcfg files by this collection; use NetworkManager "
                               "or another backend, or persist: false" % cfg.interface)
        before = self.ctx.read(cfg.path) or ""
        after = fmt.ifcfg_set_addresses(before, links, exclusive=exclusive)
        guard_removal(cfg.interface, sorted(set(fmt.ifcfg_addresses(before)) - set(fmt.ifcfg_addresses(after))), cfg.path)
        if before != after:
            self.ctx.stage(cfg.path, after, 0o644, "ifcfg: %s gets the rail address of %s" % (cfg.path, cfg.interface))
        folder = os.path.dirname(cfg.path)
        for kind, lines in (("route", fmt.ifcfg_route_lines(links)), ("rule", fmt.ifcfg_rule_lines(links))):
            path = "%s/%s-%s" % (folder, kind, cfg.interface)
            text = self.ctx.read(path) or ""
            new = merge_block(text, lines, "rails %s" % cfg.interface)
            if new != text:
                self.ctx.stage(path, new, 0o644, "ifcfg: %s gets the rail %ss of %s" % (path, kind, cfg.interface))
        return []

    def read_rails(self, cfg):
        return fmt.ifcfg_addresses(self.ctx.read(cfg.path))


CLASSES = dict(netplan=Netplan, networkmanager=NetworkManager, networkd=Networkd, ifupdown=Ifupdown, ifcfg=Ifcfg)


def detect(ctx, link, backend="auto"):
    """The :class:`Config` that persists ``link``'s MTU, or raise an error of the collection's family.

    ``backend`` names one system, or ``auto``: the first of netplan, NetworkManager
    (running), systemd-networkd, ifupdown, ifcfg, NetworkManager keyfile (not running) that
    configures the link; with none, a new ifupdown stanza where the host uses ifupdown.
    Every backend writes the link's name into a file or a command: it is checked first.
    """
    check_netdev("interface", link["name"])
    if backend != "auto":
        impl = CLASSES[backend](ctx)
        cfg = impl.find(link)
        if cfg is None and backend == "networkmanager":
            cfg = impl.find_keyfile(link)
        if cfg is None:
            cfg = impl.create(link)
        if cfg is None:
            raise InputError(
                "backend %s does not configure %s on this host (%s). Configure the link there first (with its "
                "addresses), or use backend: auto" % (backend, link["name"], "; ".join(ctx.notes)),
                option="backend",
            )
        return cfg
    for name in BACKENDS:
        cfg = CLASSES[name](ctx).find(link)
        if cfg is not None:
            return cfg
    cfg = NetworkManager(ctx).find_keyfile(link)
    if cfg is not None:
        return cfg
    others_in_charge = NetworkManager(ctx).running() or Networkd(ctx).running() or Netplan(ctx).files()
    if not others_in_charge and ctx.runner.has("ifup"):
        cfg = Ifupdown(ctx).create(link)
        if cfg is not None:
            return cfg
    raise RefusedError(
        "nothing configures %s persistently on this host, and adding it to a network manager that does not "
        "know it yet would let that manager take the link over (and drop addresses it did not set). "
        "Checked: %s. Configure the link in the host's network configuration first, or use backend: runtime"
        % (link["name"], "; ".join(ctx.notes))
    )
