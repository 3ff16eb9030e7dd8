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
* Keys match the sysctl key charset as a whole (a key ending in a newline is refused), values
  hold no line break, and the file is ``/etc/sysctl.d/<name>.conf``: all checked before anything
  is read or written.  The file carries our marker; a file at that path without it is replaced or
  removed only with ``adopt``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import FILE_NAME, full_match

PROC_SYS = "/proc/sys"
# systemd-sysctl's search path, most important first: a file name found in an earlier
# directory hides the same name in later ones; all files are then applied sorted by name.
CONF_DIR = "/etc/sysctl.d"
CONF_DIRS = (CONF_DIR, "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d")
# procps' `sysctl --system` reads /etc/sysctl.conf last (Debian links it as 99-sysctl.conf too).
LEGACY_CONF = "/etc/sysctl.conf"

# Matched against the whole key (fullmatch): "$" would also accept a key ending in a newline.
KEY_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@/+-]*[A-Za-z0-9_]")
# A line break (or another control character) in a value would start a new line of the file.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

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


def canonical_key(key):
    """The dotted form ``sysctl`` prints for ``key`` (``/``-form keys become dotted)."""
    return ".".join(part.replace(".", "/") for part in key_components(key))


def key_components(key):
    """Path components of ``key`` below /proc/sys, following sysctl.d(5)."""
    if not full_match(KEY_RE, key):
        raise InputError(
            "invalid sysctl key %r: use dotted names such as net.core.rmem_max (letters, digits, "
            "_ - : @ +, with . or / as separators)" % (key,),
            option="settings",
        )
    first_dot, first_slash = key.find("."), key.find("/")
    if first_slash != -1 and (first_dot == -1 or first_slash < first_dot):
        parts = key.split("/")
    else:
        parts = [part.replace("/", ".") for part in key.split(".")]
    if any(part in ("", ".", "..") for part in parts) or len(parts) < 2:
        raise InputError("invalid sysctl key %r: empty or relative path component" % (key,), option="settings")
    return parts


def proc_path(key):
    """The /proc/sys file of ``key``."""
    return PROC_SYS + "/" + "/".join(key_components(key))


def normalize_value(key, value):
    """The value as the kernel prints it (one space between fields), or InputError."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise InputError("sysctl %s: an empty list is not a value" % key, option="settings")
        return " ".join(normalize_value(key, item) for item in value)
    if isinstance(value, float):
        raise InputError("sysctl %s: %r is not an integer; the kernel takes integers or text" % (key, value), option="settings")
    if not isinstance(value, str):
        raise InputError("sysctl %s: unsupported value %r (use a number, a string or a list)" % (key, value), option="settings")
    if _CONTROL.search(value):
        raise InputError(
            "sysctl %s: the value %r holds a line break or another control character, which would end the line "
            "in the sysctl.d file; give the fields separated by spaces (or as a list)" % (key, value),
            option="settings",
        )
    text = " ".join(value.split())
    if not text:
        raise InputError("sysctl %s: the value is empty; remove the key instead" % key, option="settings")
    return text


def normalize_settings(settings):
    """``{canonical key: value text}`` for a user's settings, or InputError naming the key."""
    if not isinstance(settings, dict):
        raise InputError("settings must be a dictionary of sysctl keys and values", option="settings")
    result = {}
    origins = {}
    for key, value in settings.items():
        name = canonical_key(key)
        if name in result:
            raise InputError("sysctl %s is given twice (as %s and %s)" % (name, origins[name], key), option="settings")
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
        except InputError:
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


def check_path(path):
    """``path`` when it is a ``.conf`` file directly in /etc/sysctl.d, else InputError."""
    name = path[len(CONF_DIR) + 1:] if isinstance(path, str) and path.startswith(CONF_DIR + "/") else None
    if name is None or not full_match(FILE_NAME, name) or not name.endswith(".conf"):
        raise InputError(
            "path=%r must be a file directly in %s whose name ends in .conf (systemd-sysctl reads no other "
            "files there; no '..', no sub-directory), e.g. %s/90-rdmaops-roce.conf" % (path, CONF_DIR, CONF_DIR),
            option="path",
        )
    return path


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
            files.write_attribute(self.host, self.path, value + "\n")
        except (IOError, OSError) as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                return READ_ONLY + " (%s)" % errno.errorcode.get(exc.errno)
            if exc.errno == errno.ENOENT:
                return NOT_PRESENT
            if exc.errno == errno.EINVAL:
                return "the kernel rejected the value %r (EINVAL): out of range or wrong format" % value
            return "write failed: %s" % exc
        return None


def describe(unapplied):
    return "; ".join("%s (want %s, have %s): %s" % (key, v["want"], v["have"], v["reason"]) for key, v in sorted(unapplied.items()))


class SysctlProfile:
    """Plan and apply one sysctl.d file plus the running values of its keys.

    ``runtime_errors``: ``warn`` records a write the kernel refuses in :attr:`unapplied` and goes
    on; ``fail`` raises :class:`RefusedError` from the write, so the plan puts back the file and
    the values already set and says so.
    """

    def __init__(self, host, path, settings, state="present", apply_runtime=True, owner="rdmaops.roce",
                 adopt=False, runtime_errors="warn"):
        check_path(path)
        self.host = host
        self.path = path
        self.state = state
        self.settings = normalize_settings(settings) if state == "present" else {}
        self.apply_runtime = apply_runtime and state == "present"
        self.owner = owner
        self.adopt = adopt
        self.runtime_errors = runtime_errors
        self.unapplied = {}
        self.runtime = {}
        self._failed_writes = set()

    # read -> plan
    def plan(self, plan):
        """Add the file and every running value that differs to ``plan``.

        Refuses (before anything is changed) a file at ``path`` that is not ours, unless adopted."""
        if self.state == "absent":
            plan.file(self.host, self.path, None, key="file", adopt=self.adopt, option="path",
                      description="remove %s" % self.path)
            return
        plan.file(self.host, self.path, render(self.settings, self.owner), mode=0o644, key="file", adopt=self.adopt,
                  option="path", description="write %s" % self.path)
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
                self._setter(plan, entry, want),
                "set %s from %r to %r at runtime" % (key, have, want),
                undo=self._undo(entry, have),
            )

    # apply
    def _setter(self, plan, entry, want):
        def action():
            problem = entry.write(want)
            if problem:
                # The kernel kept its value: the change ran but changed nothing.
                plan.refuse("sysctl " + entry.key)
                self._failed_writes.add(entry.key)
                self.unapplied[entry.key] = dict(want=want, have=self.runtime[entry.key]["before"], reason=problem)
                if self.runtime_errors == "fail":
                    refused = {entry.key: self.unapplied[entry.key]}
                    raise RefusedError("the kernel refused these keys: %s" % describe(refused), unapplied=refused)
        return action

    @staticmethod
    def _undo(entry, old):
        def undo():
            problem = entry.write(old)
            if problem:
                raise RefusedError("setting %s back to %r failed: %s" % (entry.key, old, problem))
        return undo

    # re-read
    def verify(self):
        """After applying: what differs from the plan, as ``{key or 'file': explanation}``."""
        problems = {}
        text = files.read_text(self.host, self.path)
        if self.state == "absent":
            if text is not None:
                problems["file"] = "%s still exists" % self.path
            return problems
        if text != render(self.settings, self.owner):
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


class SysctlProfileEngine(Engine):
    """``rdmaops.roce.sysctl_profile``: one sysctl.d file and the running values of its keys."""

    commands_key = None  # nothing is run: /proc/sys is written directly
    owner = "rdmaops.roce.sysctl_profile"

    def __init__(self, ctx, params):
        super(SysctlProfileEngine, self).__init__(ctx, params)
        self.profile = None
        self.overridden = []

    def validate(self):
        params = self.params
        state = params.get("state") or "present"
        if state == "present" and params.get("settings") is None:
            raise InputError("state=present needs settings: the sysctl keys and their values", option="settings")
        self.profile = SysctlProfile(
            self.host,
            params.get("path") or CONF_DIR + "/90-rdmaops-roce.conf",
            params.get("settings") or {},
            state=state,
            apply_runtime=params.get("apply_runtime", True),
            owner=self.owner,
            adopt=bool(params.get("adopt")),
            runtime_errors=params.get("runtime_errors") or "fail",
        )

    def read(self):
        if self.profile.state == "present":
            self.overridden = later_overrides(self.host, self.profile.path, self.profile.settings)

    def plan(self, plan):
        profile = self.profile
        profile.plan(plan)
        if profile.unapplied and profile.runtime_errors == "fail":
            raise RefusedError(
                "nothing was changed: these keys cannot be set at runtime on this host: %s. Fix or remove "
                "them, or set runtime_errors=warn to persist them for the next boot anyway" % describe(profile.unapplied),
                unapplied=profile.unapplied,
                settings=profile.settings,
            )
        self._warn()

    def verify(self):
        profile = self.profile
        problems = list(profile.verify().values())
        if profile.runtime_errors == "fail":
            kept = dict((key, value) for key, value in profile.unapplied.items() if key not in profile.failed_writes())
            if kept:
                problems.append("the kernel keeps other values for these keys: %s" % describe(kept))
        self._warn()
        return problems

    def _warn(self):
        profile = self.profile
        if profile.runtime_errors == "warn":
            for key, values in sorted(profile.unapplied.items()):
                self.ctx.warn("sysctl %s not applied at runtime (want %s, have %s): %s"
                              % (key, values["want"], values["have"], values["reason"]))
        for entry in self.overridden:
            self.ctx.warn("sysctl %s = %s in %s is applied after %s at boot and wins over %s"
                          % (entry["key"], entry["value"], entry["file"], profile.path, entry["ours"]))

    def result(self):
        profile = self.profile
        if profile is None:
            return dict(path=self.params.get("path"), settings={}, runtime={}, unapplied={}, overridden=[])
        failed = profile.failed_writes()
        result = dict(
            path=profile.path,
            settings=profile.settings,
            runtime=dict(
                (key, dict(before=values["before"], after=values["after"]))
                for key, values in profile.runtime.items()
                if values["before"] != values["after"] and key not in failed
            ),
            unapplied=profile.unapplied,
            overridden=self.overridden,
        )
        return result
