# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure readers and line-preserving editors for the files that configure a link's MTU.

Nothing here touches the host: every function takes text (or parsed data) and returns text
(or parsed data), so each format is tested against real-format files.  The editors change
one value and keep every other byte of the file, comments and blank lines included.

Formats:

* ifupdown ``/etc/network/interfaces`` (Debian's interfaces(5)): stanzas, ``mtu`` option;
* Red Hat ``ifcfg-*`` files: ``MTU=`` shell assignments;
* INI-like files: systemd-networkd ``.network`` (``[Link] MTUBytes=``) and NetworkManager
  keyfiles (``[ethernet] mtu=``);
* netplan: finding the definition that configures a link and merging files in netplan's order.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

# --------------------------------------------------------------------------------------------
# ifupdown
# --------------------------------------------------------------------------------------------

IFUPDOWN_STANZAS = ("iface", "mapping", "auto", "source", "source-directory", "rename", "no-auto-down", "no-scripts")
# Methods whose ifupdown definition takes an ``mtu`` option (interfaces(5), ifupdown 0.8).
# Others (inet dhcp, inet6 auto/dhcp ...) would silently ignore it: they get a pre-up command.
IFUPDOWN_NATIVE_MTU = {
    "inet": ("static", "manual", "tunnel"),
    "inet6": ("static", "manual", "tunnel", "v4tunnel", "6to4"),
}
SOURCE_DIRECTORY_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


def _is_stanza(word):
    return word in IFUPDOWN_STANZAS or word.startswith("allow-")


class IfupdownStanza:
    """One ``iface NAME FAMILY METHOD`` stanza: where it is and what it sets."""

    def __init__(self, name, family, method, line):
        self.name = name
        self.family = family
        self.method = method
        self.line = line  # index of the ``iface`` line
        self.last = line  # index of its last option line
        self.options = []  # (line index, option, value)
        self.indent = None

    def option(self, key):
        """Value of the last ``key`` option (ifupdown keeps the last), or None."""
        values = [value for _i, opt, value in self.options if opt == key]
        return values[-1] if values else None

    @property
    def native_mtu(self):
        return self.method in IFUPDOWN_NATIVE_MTU.get(self.family, ())


def _logical_lines(text):
    """(first physical line index, last index, words) for each non-comment logical line."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        out.append((start, i - 1, stripped.split()))
    return out


def parse_ifupdown(text):
    """Parse one interfaces(5) file: ``dict(stanzas=[IfupdownStanza], sources=[(kind, arg)], auto=[names])``."""
    stanzas = []
    sources = []
    auto = []
    current = None
    physical = text.splitlines()
    for start, end, words in _logical_lines(text):
        keyword = words[0]
        if _is_stanza(keyword):
            current = None
            if keyword == "iface" and len(words) >= 4:
                current = IfupdownStanza(words[1], words[2], words[3], start)
                current.last = end
                stanzas.append(current)
            elif keyword in ("source", "source-directory") and len(words) >= 2:
                sources.append((keyword, " ".join(words[1:])))
            elif keyword == "auto" or keyword.startswith("allow-"):
                auto.extend(words[1:])
            continue
        if current is not None:
            if current.indent is None:
                raw = physical[start]
                current.indent = raw[: len(raw) - len(raw.lstrip())]
            current.options.append((start, keyword, " ".join(words[1:])))
            current.last = end
    indents = [stanza.indent for stanza in stanzas if stanza.indent]
    return dict(stanzas=stanzas, sources=sources, auto=auto, indent=indents[0] if indents else "    ")


def _pre_up_mtu(interface):
    return re.compile(
        r"^(?P<head>\s*pre-up\s+(?:/usr)?(?:/s?bin/)?ip\s+link\s+set\s+(?:dev\s+)?%s\s+mtu\s+)(?P<mtu>\d+)(?P<tail>\s*)$"
        % re.escape(interface)
    )


def ifupdown_mtu(text, interface):
    """The MTU the file gives ``interface`` (an ``mtu`` option or our pre-up command), or None."""
    parsed = parse_ifupdown(text)
    lines = text.splitlines()
    value = None
    pattern = _pre_up_mtu(interface)
    for stanza in parsed["stanzas"]:
        if stanza.name != interface:
            continue
        for index, opt, optval in stanza.options:
            if opt == "mtu" and stanza.native_mtu:
                value = _int_or_none(optval)
            elif opt == "pre-up":
                match = pattern.match(lines[index])
                if match:
                    value = int(match.group("mtu"))
    return value


def ifupdown_set_mtu(text, interface, mtu):
    """Return ``text`` with ``interface``'s MTU set to ``mtu``.

    Every existing ``mtu`` option (and ``pre-up ip link set dev IF mtu N`` line) of the
    interface's stanzas is rewritten in place.  With none, ``mtu N`` is added as the last
    option of the first stanza whose method takes an ``mtu`` option (inet static/manual,
    inet6 static/manual ...); a stanza whose method ignores ``mtu`` (inet dhcp) gets
    ``pre-up ip link set dev IF mtu N`` instead.  Raises ValueError when the file has no
    stanza for the interface.
    """
    parsed = parse_ifupdown(text)
    mine = [stanza for stanza in parsed["stanzas"] if stanza.name == interface]
    if not mine:
        raise ValueError("no iface stanza for %s" % interface)
    lines = text.splitlines()
    pattern = _pre_up_mtu(interface)
    touched = False
    for stanza in mine:
        for index, opt, _value in stanza.options:
            if opt == "mtu" and stanza.native_mtu:
                lines[index] = re.sub(r"^(\s*mtu\s+)\S+", lambda m: m.group(1) + str(mtu), lines[index])
                touched = True
            elif opt == "pre-up":
                match = pattern.match(lines[index])
                if match:
                    lines[index] = match.group("head") + str(mtu) + match.group("tail")
                    touched = True
    if not touched:
        native = [stanza for stanza in mine if stanza.native_mtu]
        stanza = native[0] if native else mine[0]
        indent = stanza.indent if stanza.indent is not None else parsed["indent"]
        if native:
            new = "%smtu %d" % (indent, mtu)
        else:
            new = "%spre-up ip link set dev %s mtu %d" % (indent, interface, mtu)
        lines.insert(stanza.last + 1, new)
    return "\n".join(lines) + "\n"


def ifupdown_block(interface, mtu):
    """The stanza we add for an interface nothing else configures (no addresses: ``manual``)."""
    return [
        "allow-hotplug %s" % interface,
        "iface %s inet manual" % interface,
        "    mtu %d" % mtu,
    ]


# --------------------------------------------------------------------------------------------
# ifcfg (Red Hat network-scripts)
# --------------------------------------------------------------------------------------------

_IFCFG_LINE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_ifcfg(text):
    """Shell-style assignments of an ifcfg file (last one wins), comments skipped."""
    values = {}
    for line in text.splitlines():
        match = _IFCFG_LINE.match(line.strip())
        if match:
            values[match.group("key")] = _unquote(match.group("value"))
    return values


def ifcfg_set_mtu(text, mtu):
    """Set ``MTU=`` (keeping the existing quoting), or append it."""
    lines = text.splitlines()
    found = False
    for index, line in enumerate(lines):
        match = _IFCFG_LINE.match(line.strip())
        if match and match.group("key") == "MTU":
            raw = match.group("value").strip()
            quote = raw[0] if raw[:1] in ("'", '"') else ""
            prefix = line[: len(line) - len(line.lstrip())]
            lines[index] = "%sMTU=%s%d%s" % (prefix, quote, mtu, quote)
            found = True
    if not found:
        lines.append("MTU=%d" % mtu)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# INI-like files: systemd .network and NetworkManager keyfiles
# --------------------------------------------------------------------------------------------


def parse_ini(text):
    """List of ``(section, key, value)`` in file order (repeated sections and keys kept)."""
    entries = []
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
            continue
        if "=" in stripped and section is not None:
            key, value = stripped.split("=", 1)
            entries.append((section, key.strip(), value.strip()))
    return entries


def ini_get(entries, sections, key):
    """Last value of ``key`` in any of ``sections`` (later assignments win), or None."""
    value = None
    for section, k, v in entries:
        if section in sections and k == key:
            value = v
    return value


def ini_set(text, sections, key, value):
    """Set ``key=value`` in the last of ``sections`` present (the first name is used to add one).

    An existing assignment is rewritten in place; otherwise the key is added after the last
    line of that section; without the section, ``[sections[0]]`` is appended.
    """
    lines = text.splitlines()
    spans = []  # (name, header index, last content index)
    current = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = [stripped[1:-1].strip(), index, index]
            spans.append(current)
        elif stripped and current is not None:
            current[2] = index
    target = [span for span in spans if span[0] in sections]
    if target:
        name, header, last = target[-1]
        for index in range(last, header, -1):
            stripped = lines[index].strip()
            if stripped and stripped[0] not in "#;" and "=" in stripped and stripped.split("=", 1)[0].strip() == key:
                lines[index] = "%s=%s" % (lines[index].split("=", 1)[0], value)
                return "\n".join(lines) + "\n"
        lines.insert(last + 1, "%s=%s" % (key, value))
        return "\n".join(lines) + "\n"
    while lines and not lines[-1].strip():
        lines.pop()
    if lines:
        lines.append("")
    lines += ["[%s]" % sections[0], "%s=%s" % (key, value)]
    return "\n".join(lines) + "\n"


def parse_bytes(value):
    """systemd's size syntax for MTUBytes= (``9000``, ``9K`` = 9216, base 1024), or None."""
    if value is None:
        return None
    match = re.match(r"^\s*(\d+)\s*([KMG]?)\s*$", value)
    if not match:
        return None
    factor = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}[match.group(2)]
    return int(match.group(1)) * factor


def networkd_match(entries, link):
    """Whether the ``[Match]`` section of a parsed .network file selects ``link``.

    ``link`` is a dict with ``name``, ``mac``, ``permanent_mac``, ``driver``, ``type``.
    Returns True, False, or None when the file matches on something this code cannot
    evaluate from sysfs (Path=, Property=, Host= ...), so the caller never guesses.
    """
    conditions = [(k, v) for section, k, v in entries if section == "Match"]
    unknown = False
    for key, value in conditions:
        words = value.split()
        if key in ("Name", "OriginalName"):
            result = _glob_list(words, link.get("name"))
        elif key == "MACAddress":
            result = _mac_in(words, link.get("mac"))
        elif key == "PermanentMACAddress":
            result = _mac_in(words, link.get("permanent_mac"))
        elif key == "Driver":
            result = _glob_list(words, link.get("driver"))
        elif key == "Type":
            result = _glob_list(words, link.get("type"))
        else:
            unknown = True
            continue
        if not result:
            return False
    return None if unknown else True


def _glob_list(patterns, value):
    """systemd's glob lists: any positive pattern matches; a leading ``!`` inverts the list."""
    if not patterns:
        return True
    if value is None:
        return False
    invert = patterns[0].startswith("!")
    if invert:
        patterns = [patterns[0][1:]] + patterns[1:]
    hit = any(fnmatch.fnmatchcase(value, pattern) for pattern in patterns if pattern)
    return not hit if invert else hit


def _mac_in(words, mac):
    if not mac:
        return False
    wanted = set(_norm_mac(word) for word in words)
    return _norm_mac(mac) in wanted


def _norm_mac(mac):
    return (mac or "").strip().lower().replace("-", ":")


# --------------------------------------------------------------------------------------------
# netplan
# --------------------------------------------------------------------------------------------

# Definition types that carry an ``mtu`` and describe one link each (netplan-yaml(5)).
NETPLAN_SECTIONS = ("ethernets", "bonds", "bridges", "vlans")


def netplan_merge(documents):
    """Merge netplan documents (already in netplan's file order) the way netplan does.

    ``documents`` is a list of ``(path, data)``.  Returns ``{(section, id): definition}`` where
    ``definition`` is the merged mapping plus ``__files__`` (the files that mention it, in order)
    and ``__mtu_file__`` (the file whose ``mtu`` won).  Later files override scalars key by key.
    """
    merged = {}
    for path, data in documents:
        network = (data or {}).get("network") if isinstance(data, dict) else None
        if not isinstance(network, dict):
            continue
        for section in NETPLAN_SECTIONS:
            defs = network.get(section)
            if not isinstance(defs, dict):
                continue
            for netdef_id, definition in defs.items():
                entry = merged.setdefault((section, str(netdef_id)), {"__files__": []})
                entry["__files__"].append(path)
                if not isinstance(definition, dict):
                    continue
                _deep_merge(entry, definition)
                if "mtu" in definition:
                    entry["__mtu_file__"] = path
    return merged


def _deep_merge(into, new):
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value


def netplan_matches(section, netdef_id, definition, link):
    """Whether netplan definition ``netdef_id`` configures ``link`` (a dict as in networkd_match).

    Virtual devices (bonds, bridges, vlans) are named by their id.  An ethernet without
    ``match:`` is named by its id; with ``match:`` every given condition must hold (name and
    driver are globs, macaddress is compared case-insensitively).  ``set-name`` renames the
    matched device, so the link's current name is compared to it.
    """
    name = link.get("name")
    if section != "ethernets":
        return netdef_id == name
    match = definition.get("match")
    set_name = definition.get("set-name")
    if not isinstance(match, dict) or not match:
        return netdef_id == name
    if set_name and set_name != name:
        return False
    if "name" in match:
        # Before renaming the kernel name matched; after set-name the link carries set-name.
        if not set_name and not fnmatch.fnmatchcase(name or "", str(match["name"])):
            return False
    if "macaddress" in match:
        macs = set([_norm_mac(link.get("mac")), _norm_mac(link.get("permanent_mac"))])
        if _norm_mac(str(match["macaddress"])) not in macs:
            return False
    if "driver" in match:
        drivers = match["driver"] if isinstance(match["driver"], list) else [match["driver"]]
        if not any(fnmatch.fnmatchcase(link.get("driver") or "", str(d)) for d in drivers):
            return False
    return True


def netplan_renderer(documents, definition):
    """The renderer of a definition: its own ``renderer``, else the last global one, else networkd."""
    if definition.get("renderer"):
        return definition["renderer"]
    renderer = "networkd"
    for _path, data in documents:
        network = (data or {}).get("network") if isinstance(data, dict) else None
        if isinstance(network, dict) and network.get("renderer"):
            renderer = network["renderer"]
    return renderer


def netplan_dropin(section, netdef_id, mtu, interface, origin):
    """Text of our drop-in: it sets only ``mtu`` of one definition; netplan merges it."""
    return (
        "# Managed by rdmaops.roce (link_mtu): the MTU of %s.\n"
        "# netplan merges this file over the definition of %s in %s;\n"
        "# everything else about the link stays there.\n"
        "network:\n"
        "  version: 2\n"
        "  %s:\n"
        "    %s:\n"
        "      mtu: %d\n" % (interface, netdef_id, origin, section, _yaml_key(netdef_id), mtu)
    )


def _yaml_key(value):
    if re.match(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$", value) and value.lower() not in ("yes", "no", "true", "false", "null", "on", "off"):
        return value
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')


def _int_or_none(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
