# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure readers, renderers and line-preserving editors for the files that configure a link.

Nothing here touches the host: every function takes text (or parsed data) and returns text
(or parsed data), so each format is tested against real-format files.  The editors change
one value and keep every other byte of the file, comments and blank lines included.

Formats:

* ifupdown ``/etc/network/interfaces`` (Debian's interfaces(5)): stanzas, ``mtu`` option;
* Red Hat ``ifcfg-*`` files: ``MTU=`` shell assignments;
* INI-like files: systemd-networkd ``.network`` (``[Link] MTUBytes=``) and NetworkManager
  keyfiles (``[ethernet] mtu=``);
* netplan: finding the definition that configures a link and merging files in netplan's order;
* a link's rail addresses, routes and rules in each stack's words: a systemd-networkd and a netplan
  drop-in, ifupdown stanzas, ifcfg's ``IPADDRn``/``PREFIXn`` and route-/rule- files, NetworkManager
  profile properties.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

from ansible.module_utils.six.moves import shlex_quote

from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_netdev, shell_netdev
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import int_or_none as _int_or_none

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
# ifupdown 0.8.41 runs ``if [ "$(cat /sys/class/net/IF/mtu)" -lt N ]; then ip link set dev IF
# mtu N; else sysctl net.ipv6.conf.IF.mtu=N; fi`` for the mtu of these methods: the link MTU
# is only ever raised by them (a lower value is the IPv6 MTU alone).
IFUPDOWN_RAISE_ONLY = {"inet6": ("static", "manual")}
# Options ifupdown keeps one by one; any other option given twice (or inherited and given
# again) is one value with the lines joined by a newline (config.c, ifupdown 0.8).
IFUPDOWN_COMMANDS = ("pre-up", "up", "post-up", "down", "pre-down", "post-down")
SOURCE_DIRECTORY_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def _is_stanza(word):
    return word in IFUPDOWN_STANZAS or word.startswith("allow-")


class IfupdownStanza:
    """One ``iface NAME [FAMILY [METHOD]] [inherits PARENT]`` stanza: where it is and what it sets.

    ``family`` and ``method`` are the stanza's own words until :func:`ifupdown_resolve` has
    found its parent; a stanza that names neither takes both from the parent, as ifupdown does.
    """

    def __init__(self, name, family, method, line, inherits=None):
        self.name = name
        self.family = family
        self.method = method
        self.own_family = family is not None
        self.own_method = method is not None
        self.inherits = inherits  # the PARENT word of ``inherits PARENT``, or None
        self.parent = None  # the stanza ifupdown copies the options of (ifupdown_resolve)
        self.syntax_error = None  # what ifupdown says of the ``iface`` line itself
        self.error = None  # why ifupdown rejects or never reads the stanza (ifupdown_resolve)
        self.path = None  # the file, where the caller reads several (backends)
        self.line = line  # index of the ``iface`` line
        self.head_end = line  # index of the last physical line of the ``iface`` line
        self.last = line  # index of its last option line
        self.options = []  # (line index, option, value)
        self.raw = {}  # line index -> the physical lines of that option (continuations included)
        self.indent = None

    def option(self, key):
        """Value of the last ``key`` option of the stanza's own lines, or None."""
        values = [value for _i, opt, value in self.options if opt == key]
        return values[-1] if values else None

    def resolved(self):
        """``(stanza, line index, option, value)`` for every option ifupdown gives this stanza.

        ifupdown copies the options of the parent (its own parent's included) when it reads the
        ``iface`` line, then adds the stanza's own lines: inherited ones come first.
        """
        inherited = self.parent.resolved() if self.parent is not None else []
        return inherited + [(self, index, opt, value) for index, opt, value in self.options]

    def chain(self):
        """The stanza, its parent, the parent's parent ..."""
        out = [self]
        while out[-1].parent is not None:
            out.append(out[-1].parent)
        return out

    @property
    def native_mtu(self):
        return self.method in IFUPDOWN_NATIVE_MTU.get(self.family, ())

    @property
    def raises_only(self):
        return self.method in IFUPDOWN_RAISE_ONLY.get(self.family, ())

    def where(self, index=None):
        line = (self.line if index is None else index) + 1
        return "%s:%d" % (self.path, line) if self.path else "line %d" % line


def _split(text):
    """Lines split on "\\n" only, as ifupdown reads them: str.splitlines() would also split (and
    so rewrite) form feeds and "\\r\\n" in lines we do not own."""
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _logical_lines(text):
    """(first physical line index, last index, words) for each non-comment logical line.

    A line ending in a backslash goes on in the next one (ifupdown tests the backslash before
    it strips trailing blanks, so ``\\`` then ``\\r`` does not continue).
    """
    lines = _split(text)
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


def _iface_words(words):
    """(name, family, method, inherits, error) of an ``iface`` line, the way ifupdown reads it.

    ``iface NAME FAMILY METHOD [inherits PARENT]``, ``iface NAME FAMILY inherits PARENT`` (the
    method comes from the parent) and ``iface NAME inherits PARENT`` (family and method too).
    """
    rest = words[1:]
    if not rest:
        return None, None, None, None, "too few parameters for iface line"
    name, rest = rest[0], rest[1:]
    own = []
    while rest and rest[0] != "inherits" and len(own) < 2:
        own.append(rest.pop(0))
    family = own[0] if own else None
    method = own[1] if len(own) > 1 else None
    inherits = None
    error = None
    if rest and rest[0] == "inherits":
        if len(rest) < 2:
            error = "'inherits' keyword is missing a parameter"
        else:
            inherits = rest[1]
    elif family is None or method is None:
        error = "unknown or no %s and no inherits keyword specified" % ("address type" if family is None else "method")
    return name, family, method, inherits, error


def parse_ifupdown(text):
    """Parse one interfaces(5) file.

    ``dict(stanzas=[IfupdownStanza], sources=[(kind, arg)], auto=[names], indent, items)``;
    ``items`` keeps stanzas and ``source`` lines in file order (``("iface", stanza)``,
    ``("source", kind, arg)``) for a reader that follows sources where ifupdown does.  The
    stanzas' ``inherits`` are resolved within this file (:func:`ifupdown_resolve`).
    """
    stanzas = []
    sources = []
    auto = []
    items = []
    current = None
    physical = _split(text)
    for start, end, words in _logical_lines(text):
        keyword = words[0]
        if _is_stanza(keyword):
            current = None
            if keyword == "iface":
                name, family, method, inherits, error = _iface_words(words)
                if name is None:
                    continue
                current = IfupdownStanza(name, family, method, start, inherits)
                current.syntax_error = current.error = error
                current.head_end = current.last = end
                stanzas.append(current)
                items.append(("iface", current))
            elif keyword in ("source", "source-directory") and len(words) >= 2:
                sources.append((keyword, " ".join(words[1:])))
                items.append(("source", keyword, " ".join(words[1:])))
            elif keyword == "auto" or keyword.startswith("allow-"):
                auto.extend(words[1:])
            continue
        if current is not None:
            if current.indent is None:
                raw = physical[start]
                current.indent = raw[: len(raw) - len(raw.lstrip())]
            current.options.append((start, keyword, " ".join(words[1:])))
            current.raw[start] = physical[start : end + 1]
            current.last = end
    indents = [stanza.indent for stanza in stanzas if stanza.indent]
    ifupdown_resolve(stanzas)
    return dict(stanzas=stanzas, sources=sources, auto=auto, indent=indents[0] if indents else "    ", items=items)


def ifupdown_resolve(stanzas):
    """Resolve ``inherits`` over ``stanzas`` given in the order ifupdown reads them.

    As ifupdown 0.8 (config.c): the parent is the first stanza read *before* the child with
    that name and, when the child names its family, that family (``inet6`` never inherits an
    ``inet`` stanza); the child gets a copy of the parent's options (its parent's included) and,
    where it names none, the parent's family and method.  A parent read later, or none, is an
    error ("unknown iface to inherit from"), and ifupdown stops reading the file there: the
    stanzas after it in that file get an ``error`` too (where that file is the main one,
    ifupdown reads nothing at all).
    """
    seen = []
    stopped = {}  # path -> where ifupdown stopped reading it
    for stanza in stanzas:
        stanza.parent = None
        stanza.error = stanza.syntax_error
        if stanza.path in stopped:
            stanza.error = "ifupdown stops reading the file at %s" % stopped[stanza.path]
            continue
        if stanza.inherits is not None:
            stanza.family = stanza.family if stanza.own_family else None
            stanza.method = stanza.method if stanza.own_method else None
            if stanza.error is None:
                wanted = stanza.family if stanza.own_family else None
                parent = None
                for other in seen:
                    if other.name == stanza.inherits and (wanted is None or other.family == wanted):
                        parent = other
                        break
                if parent is None:
                    stanza.error = "unknown iface to inherit from: %s (%s)" % (stanza.inherits, wanted or "*")
                else:
                    stanza.parent = parent
                    if not stanza.own_family:
                        stanza.family = parent.family
                    if not stanza.own_method:
                        stanza.method = parent.method
        if stanza.error is None:
            seen.append(stanza)
        else:
            stopped[stanza.path] = "%s (%s)" % (stanza.where(), stanza.error)
    return stanzas


def _pre_up_mtu(interface):
    """Our ``pre-up ip link set dev IF mtu N`` (``$IFACE``, the name ifupdown exports, too)."""
    return re.compile(
        r"^(?P<head>\s*pre-up\s+(?:/usr)?(?:/s?bin/)?ip\s+link\s+set\s+(?:dev\s+)?(?:%s|\$IFACE|\$\{IFACE\})\s+mtu\s+)(?P<mtu>\d+)(?P<tail>\s*)$"
        % re.escape(interface)
    )


def _pre_ups(entries, interface):
    """The entries of ``entries`` that are a pre-up MTU command for ``interface``: (entry, value)."""
    pattern = _pre_up_mtu(interface)
    out = []
    for entry in entries:
        owner, index, opt, _value = entry
        raw = owner.raw.get(index, [])
        if opt == "pre-up" and len(raw) == 1:
            match = pattern.match(raw[0])
            if match:
                out.append((entry, int(match.group("mtu"))))
    return out


def _source(entry, stanza, kind, value):
    owner, index, _opt, _value = entry
    out = dict(kind=kind, mtu=value, iface=owner.name, family=owner.family, method=owner.method, path=owner.path,
               line=index + 1, inherited=owner is not stanza)
    if owner is not stanza:
        out["via"] = [link.name for link in stanza.chain()[1:]]
    return out


def ifupdown_stanza_mtu(stanza, interface=None):
    """What one stanza does to the MTU when ifupdown brings it up.

    ``dict(mtu, source, broken, raises_only)``: ``mtu`` the value its ``mtu`` option (own or
    inherited, for a method that takes one) or its last pre-up command sets, None where it
    sets none; ``source`` where that value comes from; ``broken`` a sentence where ifupdown
    would run a broken command: an ``mtu`` given twice, or given in the stanza and inherited
    too, is one value of two lines (``ip link set dev IF mtu 1500<newline>9000``);
    ``raises_only`` where the ``mtu`` only ever raises the link MTU (inet6 static/manual).
    """
    interface = interface or stanza.name
    entries = stanza.resolved()
    out = dict(mtu=None, source=None, broken=None, raises_only=False)
    for entry, value in _pre_ups(entries, interface):
        out.update(mtu=value, source=_source(entry, stanza, "pre-up", value))
    if stanza.native_mtu:
        mtus = [entry for entry in entries if entry[2] == "mtu"]
        if len(mtus) > 1:
            out.update(mtu=None, source=None, broken="%s: ifupdown joins %s into one mtu value (%s)" % (
                stanza.where(), " and ".join("mtu %s at %s" % (e[3], e[0].where(e[1])) for e in mtus),
                "a stanza's own mtu does not override an inherited one" if any(e[0] is not stanza for e in mtus)
                else "an option given twice is not overridden"))
        elif mtus:
            value = _int_or_none(mtus[0][3])
            if value is not None:
                out.update(mtu=value, source=_source(mtus[0], stanza, "mtu", value), raises_only=stanza.raises_only)
    return out


def ifupdown_effective(stanzas, interface):
    """The MTU ``interface`` gets from its stanzas (in ifupdown's order), and where it comes from.

    ``dict(mtu, source, broken)``.  ifup brings the stanzas of a name up in file order; an inet
    ``mtu`` or a pre-up command sets the link MTU, an inet6 static/manual ``mtu`` only raises it.
    ``mtu`` is None where nothing sets it or where a stanza is ``broken`` (see
    :func:`ifupdown_stanza_mtu`).  Stanzas ifupdown rejects (``error``) are skipped.
    """
    mtu = None
    source = None
    broken = []
    for stanza in stanzas:
        if stanza.name != interface or stanza.error is not None:
            continue
        found = ifupdown_stanza_mtu(stanza, interface)
        if found["broken"]:
            broken.append(found["broken"])
        if found["mtu"] is None:
            continue
        if found["raises_only"] and mtu is not None and found["mtu"] <= mtu:
            continue
        mtu, source = found["mtu"], found["source"]
    return dict(mtu=None if broken else mtu, source=None if broken else source, broken=broken)


def ifupdown_mtu(text, interface, stanzas=None):
    """The MTU the file gives ``interface`` (an ``mtu`` option, own or inherited, or our pre-up command), or None.

    ``stanzas``: the file's stanzas resolved with the files read before it (default: the file alone).
    """
    if stanzas is None:
        stanzas = parse_ifupdown(text)["stanzas"]
    return ifupdown_effective(stanzas, interface)["mtu"]


def ifupdown_set_mtu(text, interface, mtu, stanzas=None):
    """Return ``text`` with ``interface``'s MTU set to ``mtu`` (see :func:`ifupdown_edit_mtu`)."""
    return ifupdown_edit_mtu(text, interface, mtu, stanzas)[0]


def ifupdown_edit_mtu(text, interface, mtu, stanzas=None):
    """Set ``interface``'s MTU to ``mtu`` in ``text``: ``(new text, detached)``.

    Every ``mtu`` option (one per stanza: a second one is removed, ifupdown would join them)
    and ``pre-up ip link set dev IF mtu N`` line of the interface's stanzas is rewritten in
    place.  With none, ``mtu N`` is added as the last option of the first stanza whose method
    takes an ``mtu`` option (inet static/manual, inet6 static/manual ...); a stanza whose method
    ignores ``mtu`` (inet dhcp) gets ``pre-up ip link set dev IF mtu N`` instead.

    ``inherits``: a stanza that inherits the MTU it should have is left alone.  One that
    inherits another ``mtu`` cannot override it with an ``mtu`` line of its own (ifupdown
    0.8 joins the two into one value and runs a broken ``ip link set``), and the parent is
    not ours to edit (other stanzas inherit it): the stanza stops inheriting and gets the
    parent's options copied in (with ``mtu N``), so ifupdown gives it exactly what it had
    with the new MTU.  Those stanzas are returned in ``detached``.  An inherited pre-up
    command is followed by one of the stanza's own (ifupdown runs both, in that order).

    ``stanzas``: the file's stanzas resolved with the files ifupdown reads before it (default:
    the file alone).  Raises ValueError when the file has no stanza for the interface, or
    ifupdown rejects one.
    """
    check_netdev("interface", interface)
    parsed = parse_ifupdown(text)
    if stanzas is None:
        stanzas = parsed["stanzas"]
    mine = [stanza for stanza in stanzas if stanza.name == interface]
    if not mine:
        raise ValueError("no iface stanza for %s" % interface)
    for stanza in mine:
        if stanza.error is not None:
            raise ValueError("ifupdown rejects the stanza of %s at %s: %s" % (interface, stanza.where(), stanza.error))
    lines = _split(text)
    replace = {}  # line index -> the lines that take its place ([] removes it)
    after = {}  # line index -> lines inserted after it
    detached = []
    touched = False
    for stanza in mine:
        indent = stanza.indent if stanza.indent is not None else parsed["indent"]
        own_pre = _pre_ups([(stanza, i, o, v) for i, o, v in stanza.options], interface)
        inherited = stanza.parent.resolved() if stanza.parent is not None else []
        inherited_pre = _pre_ups(inherited, interface)
        own_mtu = [index for index, opt, _v in stanza.options if opt == "mtu"] if stanza.native_mtu else []
        inherited_mtu = [entry for entry in inherited if entry[2] == "mtu"] if stanza.native_mtu else []
        for (_owner, index, _o, _v), _value in own_pre:
            match = _pre_up_mtu(interface).match(lines[index])
            lines[index] = match.group("head") + str(mtu) + match.group("tail")
        touched = touched or bool(own_pre)
        if inherited_mtu and (own_mtu or len(inherited_mtu) > 1 or _int_or_none(inherited_mtu[0][3]) != mtu):
            _detach(stanza, lines, replace, after, indent, mtu, own_mtu)
            detached.append(stanza)
            touched = True
            continue
        if inherited_mtu:
            touched = True  # it inherits this very MTU
            continue
        for position, index in enumerate(own_mtu):
            if position == 0:
                lines[index] = re.sub(r"^(\s*mtu\s+)\S+", lambda m: m.group(1) + str(mtu), lines[index])
            else:
                replace[index] = []
        touched = touched or bool(own_mtu)
        if inherited_pre and not own_pre and not own_mtu:
            if stanza.native_mtu:
                after.setdefault(stanza.last, []).append("%smtu %d" % (indent, mtu))
            elif inherited_pre[-1][1] != mtu:
                after.setdefault(stanza.last, []).append("%spre-up ip link set dev %s mtu %d" % (indent, shell_netdev(interface), mtu))
            touched = True
    if not touched:
        native = [stanza for stanza in mine if stanza.native_mtu]
        stanza = native[0] if native else mine[0]
        indent = stanza.indent if stanza.indent is not None else parsed["indent"]
        if native:
            new = "%smtu %d" % (indent, mtu)
        else:
            new = "%spre-up ip link set dev %s mtu %d" % (indent, shell_netdev(interface), mtu)
        after.setdefault(stanza.last, []).append(new)
    out = []
    for index, line in enumerate(lines):
        out.extend(replace.get(index, [line]))
        out.extend(after.get(index, []))
    return "\n".join(out) + "\n", detached


def _detach(stanza, lines, replace, after, indent, mtu, own_mtu):
    """Make ``stanza`` stop inheriting: its ``iface`` line without ``inherits``, the parent's options copied in.

    The copies come right after the ``iface`` line, in the order ifupdown copied them, the
    inherited ``mtu`` becoming ``mtu N`` (or, where the stanza has an ``mtu`` line of its own,
    that line is rewritten and the inherited ones are left out).
    """
    head = lines[stanza.line]
    pattern = re.compile(r"\s+inherits\s+%s(?=\s|$)" % re.escape(stanza.inherits))
    if stanza.own_family and stanza.own_method and stanza.head_end == stanza.line and pattern.search(head):
        new_head = pattern.sub("", head, count=1)
    else:
        lead = head[: len(head) - len(head.lstrip())]
        new_head = "%siface %s %s %s" % (lead, stanza.name, stanza.family, stanza.method)
        for index in range(stanza.line + 1, stanza.head_end + 1):
            replace[index] = []
    replace[stanza.line] = [new_head]
    parents = ["%s%s" % (link.name, " in %s" % link.path if link.path and link.path != stanza.path else "") for link in stanza.chain()[1:]]
    copied = ["%s# rdmaops.roce link_mtu: options copied from %s (ifupdown cannot override an inherited mtu)"
              % (indent, " and ".join(parents))]
    wrote_mtu = bool(own_mtu)
    for owner, index, opt, _value in stanza.parent.resolved():
        if opt == "mtu":
            if not wrote_mtu:
                copied.append("%smtu %d" % (indent, mtu))
                wrote_mtu = True
            continue
        raw = list(owner.raw[index])
        raw[0] = indent + raw[0].lstrip()
        copied.extend(raw)
    after.setdefault(stanza.head_end, []).extend(copied)
    for position, index in enumerate(own_mtu):
        if position == 0:
            lines[index] = re.sub(r"^(\s*mtu\s+)\S+", lambda m: m.group(1) + str(mtu), lines[index])
        else:
            replace[index] = []


def ifupdown_block(interface, mtu):
    """The stanza we add for an interface nothing else configures (no addresses: ``manual``)."""
    check_netdev("interface", interface)
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
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", value)
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
    check_netdev("interface", interface)
    key, netdef_id, origin = netdef_id, comment_text(netdef_id), comment_text(origin)
    return (
        "# Managed by rdmaops.roce (link_mtu): the MTU of %s.\n"
        "# netplan merges this file over the definition of %s in %s;\n"
        "# everything else about the link stays there.\n"
        "network:\n"
        "  version: 2\n"
        "  %s:\n"
        "    %s:\n"
        "      mtu: %d\n" % (interface, netdef_id, origin, section, _yaml_key(key), mtu)
    )


def _yaml_key(value):
    """``value`` as a YAML mapping key that reads back as that very string.

    Plain where it is a word YAML reads as text (first a letter or ``_``, not a boolean or null
    word: ``0``, ``1e3``, ``yes``, ``~`` would read as a number, a boolean, null); else JSON's
    string, which is a YAML double-quoted scalar: a newline or a control character stays escaped,
    where a bare one would be folded into a space (another key) or end the line."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", value) and value.lower() not in YAML_WORDS:
        return value
    return '"%s"' % "".join(_yaml_char(char) for char in value)


def _yaml_char(char):
    """One character inside a YAML double-quoted scalar: printable as itself, else its escape."""
    if char in '"\\':
        return "\\" + char
    if char.isprintable():
        return char
    code = ord(char)
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


# What YAML 1.1 (PyYAML, netplan's libyaml reading) resolves to a boolean or null
YAML_WORDS = ("yes", "no", "true", "false", "null", "on", "off", "y", "n")


def comment_text(value):
    """``value`` fit for one comment line: what is not printable (a newline would start a line of
    configuration; YAML refuses a C1 control even in a comment) shown escaped."""
    return "".join(char if char.isprintable() else ("\\x%02x" % ord(char) if ord(char) < 256 else "\\u%04x" % ord(char))
                   for char in "%s" % value)


# --------------------------------------------------------------------------------------------
# the rails: addresses, routes and rules of a link, one renderer per stack (pure functions of
# the links, objects with the attributes and command builders of ``_netconf.rails.RailLink``)
# --------------------------------------------------------------------------------------------
def networkd_rails_dropin(links):
    """A .network drop-in with the links' addresses, routes and rules (one netdev)."""
    lines = ["# Managed by rdmaops.roce (nic_layer rails): the rail address, table and rule of %s." % check_netdev("interface", links[0].interface)]
    for link in links:
        lines += ["", "[Address]", "Address=%s" % link.cidr]
        lines += ["", "[Route]", "Destination=%s" % link.network] + (["PreferredSource=%s" % link.route_source] if link.route_source else [])
        lines += ["Table=%d" % link.table, "Scope=link"]
        if link.gateway:
            lines += ["", "[Route]", "Gateway=%s" % link.gateway, "Table=%d" % link.table]
        lines += ["", "[RoutingPolicyRule]", "From=%s/%d" % (link.address, link.host_prefix), "Table=%d" % link.table,
                  "Priority=%d" % link.rule_priority]
    return "\n".join(lines) + "\n"


def netplan_rails_dropin(section, netdef_id, links, origin):
    """A netplan drop-in adding the links' addresses, routes and routing policy to one definition;
    netplan appends these lists to the definition's own."""
    key = _yaml_key(netdef_id)
    lines = [
        "# Managed by rdmaops.roce (nic_layer rails): the rail address, table and rule of %s." % check_netdev("interface", links[0].interface),
        "# netplan merges this file over the definition of %s in %s." % (comment_text(netdef_id), comment_text(origin)),
        "network:", "  version: 2", "  %s:" % section, "    %s:" % key, "      addresses:",
    ]
    lines += ['        - "%s"' % link.cidr for link in links]
    lines.append("      routes:")
    for link in links:
        lines += ['        - to: "%s"' % link.network] + (['          from: "%s"' % link.route_source] if link.route_source else [])
        lines += ["          scope: link", "          table: %d" % link.table]
        if link.gateway:
            lines += ["        - to: default", '          via: "%s"' % link.gateway, "          table: %d" % link.table]
    lines.append("      routing-policy:")
    for link in links:
        lines += ['        - from: "%s/%d"' % (link.address, link.host_prefix), "          table: %d" % link.table,
                  "          priority: %d" % link.rule_priority]
    return "\n".join(lines) + "\n"


def ifupdown_rails_lines(links):
    """Stanzas of ours for the netdev (interfaces(5): every stanza of an interface is applied when
    it comes up), one per family, running the same commands as the live change.

    The method is ``manual`` and the addresses are ``ip address replace``d, never a ``static``
    stanza's ``address``: the user's own stanza often holds the very address the plan gives (an
    installer addressed the NIC as planned), and ifup's second ``ip address add`` of it fails
    ("File exists"), so ifup stopped before our routes and rules (seen in the two-rail lab: after
    a reboot vm1 had its addresses but no rule and no table).

    ifup runs each ``up`` line with ``/bin/sh -c``: the netdev name is checked (no shell syntax
    gets through) and every word is shell-quoted besides (a checked name needs no quotes, so the
    lines read as they always did)."""
    out = []
    for family in (4, 6):
        mine = [link for link in links if link.family == family]
        if not mine:
            continue
        name = check_netdev("interface", mine[0].interface)
        out.append("iface %s %s manual" % (name, "inet" if family == 4 else "inet6"))
        out.append("    up %s" % _sh(["ip", "link", "set", "dev", name, "up"]))
        for link in mine:
            out.append("    up %s" % _sh(link.address_argv("replace")))
        for link in mine:
            out.append("    up %s" % _sh(link.subnet_route_argv()))
            if link.gateway:
                out.append("    up %s" % _sh(link.default_route_argv()))
            # ip rule has no replace: take ours away first, so a second ifup adds it once
            out.append("    up %s 2>/dev/null || true" % _sh(link.rule_argv("del")))
            out.append("    up %s" % _sh(link.rule_argv("add")))
            out.append("    down %s 2>/dev/null || true" % _sh(link.rule_argv("del")))
    return out


def _sh(argv):
    """One shell command line of ``argv``, each word quoted where it needs it."""
    return " ".join(shlex_quote(str(word)) for word in argv)


def ifcfg_route_lines(links):
    """route-<netdev> lines; the network scripts word-split them unquoted into ``ip route add``,
    so the netdev name is checked (a glob or a space would reach ip as other words)."""
    lines = []
    for link in links:
        check_netdev("interface", link.interface)
        lines.append("%s dev %s src %s table %d" % (link.network, link.interface, link.route_source, link.table))
        if link.gateway:
            lines.append("default via %s dev %s table %d" % (link.gateway, link.interface, link.table))
    return lines


def ifcfg_rule_lines(links):
    return ["from %s/%d table %d priority %d" % (link.address, link.host_prefix, link.table, link.rule_priority) for link in links]


def ifcfg_set_addresses(text, links, exclusive=False):
    """``text`` with each IPv4 link's address: ``IPADDR``/``PREFIX`` when the file has none, else
    the first free ``IPADDRn``/``PREFIXn`` (n from 1); with ``exclusive``, other addresses go."""
    lines = _split(text)
    have = {}
    for key, value in parse_ifcfg(text).items():
        match = re.fullmatch(r"IPADDR([0-9]*)", key)
        if match:
            have[match.group(1)] = value
    wanted = [link for link in links if link.family == 4]
    if exclusive:
        keep = set(link.address for link in wanted)
        drop = [suffix for suffix, value in have.items() if value not in keep]
        pattern = re.compile(r"\s*(IPADDR|PREFIX|NETMASK)(%s)=.*" % "|".join(re.escape(suffix) for suffix in drop)) if drop else None
        lines = [line for line in lines if pattern is None or not pattern.fullmatch(line)]
        for suffix in drop:
            del have[suffix]
    for link in wanted:
        if link.address in have.values():
            continue
        suffix = "" if not have else next(str(n) for n in range(1, 256) if str(n) not in have)
        have[suffix] = link.address
        lines += ["IPADDR%s=%s" % (suffix, link.address), "PREFIX%s=%d" % (suffix, link.prefix)]
    return "\n".join(lines) + "\n" if lines else ""


def ifcfg_addresses(text):
    values = parse_ifcfg(text or "")
    out = []
    for key, value in values.items():
        match = re.fullmatch(r"IPADDR([0-9]*)", key)
        if match:
            out.append("%s/%s" % (value, values.get("PREFIX" + match.group(1), "?")))
    return sorted(out)


def nm_rails_properties(links, family):
    """The NetworkManager profile properties (``ipvN.addresses``, ``ipvN.routes``,
    ``ipvN.routing-rules``) that carry the links of one family, in nmcli's words."""
    mine = [link for link in links if link.family == family]
    return dict(
        addresses=[link.cidr for link in mine],
        # nmcli's route syntax: "dst/plen [next-hop] [metric] [attribute=value...]"; a direct route has no next hop
        routes=["%s table=%d%s" % (link.network, link.table, " src=%s" % link.route_source if link.route_source else "") for link in mine]
        + ["%s %s table=%d" % ("0.0.0.0/0" if family == 4 else "::/0", link.gateway, link.table) for link in mine if link.gateway],
        **{"routing-rules": ["priority %d from %s/%d table %d" % (link.rule_priority, link.address, link.host_prefix, link.table)
                             for link in mine]}
    )


def nm_split(value):
    """``nmcli -g`` prints a list property's items separated by ``,`` (and a space) and escapes ``:``
    (an IPv6 address) and ``\\`` with a backslash, as every terse field."""
    value = (value or "").replace("\\\\", "\x00").replace("\\:", ":").replace("\x00", "\\")
    return [item for item in re.split(r",\s*", value) if item]


def nm_norm(item):
    """A route or rule as nmcli prints it, compared word for word (a direct route may be printed
    with the unspecified next hop)."""
    return " ".join(word for word in item.split() if word not in ("0.0.0.0", "::"))
