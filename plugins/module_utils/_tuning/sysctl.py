# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel parameter profiles: one sysctl.d file, and the running kernel brought in line with it.

* Keys follow sysctl.d(5): ``.`` or ``/`` separate path components; when the first separator
  is a dot, a ``/`` inside the key stands for a literal dot (``net.ipv4.conf.eth0/100.rp_filter``
  is ``/proc/sys/net/ipv4/conf/eth0.100/rp_filter``).
* Values compare the way the kernel prints them: whitespace runs are one space, so
  ``"4096 87380 4194304"`` equals the tab-separated text ``/proc/sys/net/ipv4/tcp_rmem`` returns.
* The running value of a key is read from and written to ``/proc/sys`` through
  :class:`~.host.HostRoot`. A key that cannot be set here (absent from this kernel, or read-only
  in this network namespace, as ``net.core.*`` keys are inside a container) is reported with the
  reason, never skipped silently.
* Files that systemd-sysctl and ``sysctl --system`` read *after* ours and that set the same key
  to another value are reported: at the next boot their value wins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import write_atomic

PROC_SYS = "/proc/sys"
# systemd-sysctl's search path, most important first: a file name found in an earlier
# directory hides the same name in later ones; all files are then applied sorted by name.
CONF_DIRS = ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d")
# procps' `sysctl --system` reads /etc/sysctl.conf last (Debian links it as 99-sysctl.conf too).
LEGACY_CONF = "/etc/sysctl.conf"

KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@/+-]*[A-Za-z0-9_]$")

HEADER = (
    "# Managed by rdmaops.roce ({owner}). Changes here are overwritten on the next run.\n"
    "# Put local overrides in a file that sorts after this one, e.g. 99-local.conf.\n"
)

NOT_PRESENT = (
    "not present under /proc/sys here: this kernel lacks it, the driver that provides it is "
    "not loaded, or it exists only in the initial network namespace (as net.core.netdev_max_backlog "
    "does) and this host is a container"
)
READ_ONLY = (
    "read-only here: the key is global to the kernel and this host runs in its own namespace "
    "(a container), or /proc/sys is mounted read-only"
)


class ProfileError(Exception):
    """Invalid input: raised before anything is read or written."""


def canonical_key(key):
    """The dotted form ``sysctl`` prints for ``key`` (``/``-form keys become dotted)."""
    return ".".join(part.replace(".", "/") for part in key_components(key))


def key_components(key):
    """Path components of ``key`` below /proc/sys, following sysctl.d(5)."""
    if not isinstance(key, str) or not KEY_RE.match(key):
        raise ProfileError(
            "invalid sysctl key %r: use dotted names such as net.core.rmem_max (letters, digits, "
            "_ - : @ +, with . or / as separators)" % (key,)
        )
    first_dot, first_slash = key.find("."), key.find("/")
    if first_slash != -1 and (first_dot == -1 or first_slash < first_dot):
        parts = key.split("/")
    else:
        parts = [part.replace("/", ".") for part in key.split(".")]
    if any(part in ("", ".", "..") for part in parts) or len(parts) < 2:
        raise ProfileError("invalid sysctl key %r: empty or relative path component" % (key,))
    return parts


def proc_path(key):
    """The /proc/sys file of ``key``."""
    return PROC_SYS + "/" + "/".join(key_components(key))


def normalize_value(key, value):
    """The value as the kernel prints it (one space between fields), or ProfileError."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise ProfileError("sysctl %s: an empty list is not a value" % key)
        return " ".join(normalize_value(key, item) for item in value)
    if isinstance(value, float):
        raise ProfileError("sysctl %s: %r is not an integer; the kernel takes integers or text" % (key, value))
    if not isinstance(value, str):
        raise ProfileError("sysctl %s: unsupported value %r (use a number, a string or a list)" % (key, value))
    text = " ".join(value.split())
    if not text:
        raise ProfileError("sysctl %s: the value is empty; remove the key instead" % key)
    return text


def normalize_settings(settings):
    """``{canonical key: value text}`` for a user's settings, or ProfileError naming the key."""
    if not isinstance(settings, dict):
        raise ProfileError("settings must be a dictionary of sysctl keys and values")
    result = {}
    origins = {}
    for key, value in settings.items():
        name = canonical_key(key)
        if name in result:
            raise ProfileError("sysctl %s is given twice (as %s and %s)" % (name, origins[name], key))
        result[name] = normalize_value(name, value)
        origins[name] = key
    return result


def render(settings, owner):
    """The sysctl.d file for ``settings`` (sorted, so the file does not depend on dict order)."""
    lines = [HEADER.format(owner=owner)]
    for key in sorted(settings):
        lines.append("%s = %s\n" % (key, settings[key]))
    return "".join(lines)


def parse_conf(text):
    """``[(canonical key, value)]`` from a sysctl.d or sysctl.conf file (unparsable lines skipped)."""
    entries = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip().lstrip("-")
        try:
            entries.append((canonical_key(key), " ".join(value.split())))
        except ProfileError:
            continue
    return entries


def boot_order(host):
    """Host paths of the files systemd-sysctl applies, in the order it applies them."""
    chosen = {}
    for directory in CONF_DIRS:
        for name in host.listdir(directory):
            if name.endswith(".conf") and name not in chosen:
                chosen[name] = directory + "/" + name
    ordered = [chosen[name] for name in sorted(chosen)]
    real = set(host.realpath(path) for path in ordered)
    if host.exists(LEGACY_CONF) and host.realpath(LEGACY_CONF) not in real:
        ordered.append(LEGACY_CONF)
    return ordered


def later_overrides(host, path, settings):
    """Entries of files applied after ``path`` that give one of our keys another value."""
    order = boot_order(host)
    if path in order:
        later = order[order.index(path) + 1:]
    else:
        name = os.path.basename(path)
        later = [item for item in order if os.path.basename(item) > name or item == LEGACY_CONF]
    found = []
    for item in later:
        for key, value in parse_conf(host.read(item, "")):
            if key in settings and value != settings[key]:
                found.append(dict(key=key, file=item, value=value, ours=settings[key]))
    return found


class RuntimeKey:
    """One key's running value: read, whether it can be written, and the write itself."""

    def __init__(self, host, key):
        self.host = host
        self.key = key
        self.path = proc_path(key)

    def read(self):
        """``(value, problem)``: the normalized running value, or None and why it is unreadable."""
        text, err = self.host.read_or_errno(self.path)
        if text is None:
            if err in ("ENOENT", "ENOTDIR"):
                return None, NOT_PRESENT
            return None, "cannot be read (%s)" % err
        return " ".join(text.split()), None

    def writable(self):
        return os.access(self.host.path(self.path), os.W_OK)

    def write(self, value):
        """Write ``value``; return None or the reason it was refused."""
        try:
            with open(self.host.path(self.path), "w") as handle:
                handle.write(value + "\n")
        except (IOError, OSError) as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                return READ_ONLY + " (%s)" % errno.errorcode.get(exc.errno)
            if exc.errno == errno.ENOENT:
                return NOT_PRESENT
            if exc.errno == errno.EINVAL:
                return "the kernel rejected the value %r (EINVAL): out of range or wrong format" % value
            return "write failed: %s" % exc
        return None


class SysctlProfile:
    """Plan and apply one sysctl.d file plus the running values of its keys."""

    def __init__(self, host, path, settings, state="present", apply_runtime=True, owner="rdmaops.roce"):
        if not isinstance(path, str) or not path.startswith("/") or not path.endswith(".conf"):
            raise ProfileError("path must be an absolute file name ending in .conf (systemd-sysctl ignores others), got %r" % (path,))
        self.host = host
        self.path = path
        self.state = state
        self.settings = normalize_settings(settings) if state == "present" else {}
        self.apply_runtime = apply_runtime and state == "present"
        self.owner = owner
        self.unapplied = {}
        self.runtime = {}
        self._failed_writes = set()

    # read -> plan
    def plan(self, plan):
        """Add the file and every running value that differs to ``plan``."""
        before, _err = self.host.read_or_errno(self.path)
        if before is not None:
            before += "\n"  # HostRoot.read strips the final newline
        if self.state == "absent":
            if before is not None:
                plan.add("file", before, "", self._remove, "remove %s" % self.path, header=self.path)
            return
        after = render(self.settings, self.owner)
        plan.add("file", before, after, self._write_file, "write %s" % self.path, header=self.path)
        if not self.apply_runtime:
            return
        for key in sorted(self.settings):
            want = self.settings[key]
            entry = RuntimeKey(self.host, key)
            have, problem = entry.read()
            self.runtime[key] = dict(before=have, after=have, path=entry.path)
            if problem:
                self.unapplied[key] = dict(want=want, have=have, reason=problem)
                continue
            if have == want:
                continue
            if not entry.writable():
                self.unapplied[key] = dict(want=want, have=have, reason=READ_ONLY)
                continue
            self.runtime[key]["after"] = want
            plan.add(
                "sysctl " + key,
                have,
                want,
                self._setter(entry, want),
                "set %s from %r to %r at runtime" % (key, have, want),
            )

    # apply
    def _write_file(self):
        write_atomic(self.host, self.path, render(self.settings, self.owner), mode=0o644, makedirs=True)

    def _remove(self):
        os.unlink(self.host.path(self.path))

    def _setter(self, entry, want):
        def action():
            problem = entry.write(want)
            if problem:
                self._failed_writes.add(entry.key)
                self.unapplied[entry.key] = dict(want=want, have=self.runtime[entry.key]["before"], reason=problem)
        return action

    # re-read
    def verify(self):
        """After applying: what differs from the plan, as ``{key or 'file': explanation}``."""
        problems = {}
        text, _err = self.host.read_or_errno(self.path)
        if self.state == "absent":
            if text is not None:
                problems["file"] = "%s still exists" % self.path
            return problems
        if text is None or text + "\n" != render(self.settings, self.owner):
            problems["file"] = "%s does not hold the profile after writing it" % self.path
        for key, values in self.runtime.items():
            if key in self.unapplied or values["before"] == values["after"]:
                continue
            have, problem = RuntimeKey(self.host, key).read()
            if have != values["after"]:
                # The kernel took the write but kept (or rounded to) another value.
                self.unapplied[key] = dict(
                    want=values["after"],
                    have=have,
                    reason=problem or "the kernel reports %r after %r was written" % (have, values["after"]),
                )
                values["after"] = have
        return problems

    def failed_writes(self):
        return set(self._failed_writes)
