# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loading and persisting kernel modules: read -> plan -> apply -> re-read.

What counts as *loaded* is what the kernel says: ``/sys/module/<name>`` exists.  A module that
is compiled into the kernel is loaded too; it shows up either as a ``/sys/module/<name>``
directory without ``initstate`` (built-ins that have parameters) or only as a line in
``/lib/modules/<kernel>/modules.builtin``.  Module names are compared the way the kernel and
kmod compare them: ``-`` and ``_`` are the same character (``nvidia-peermem.ko`` is loaded as
``nvidia_peermem``).

Loading is ``modprobe <name>``, one module at a time in the order given, so a module's options
come from ``/etc/modprobe.d`` exactly as they would at boot, and a failure names the one
module that failed together with modprobe's stderr and the kernel log lines written while it
tried.  Persistence is one ``/etc/modules-load.d`` file and one ``/etc/modprobe.d`` file, each
owned whole by the task that names it and written atomically.

Options that differ from what a loaded module runs with (``/sys/module/<m>/parameters``) are
reported; the module is reloaded only when the caller consents (``reload``), never on its own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex

from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import read_text, write_atomic

DEFAULT_NAMES = ("rdma_cm", "ib_uverbs", "ib_umad")
DEFAULT_MODULES_LOAD_FILE = "/etc/modules-load.d/rdmaops-roce.conf"
DEFAULT_MODPROBE_FILE = "/etc/modprobe.d/rdmaops-roce.conf"
MODULES_LOAD_DIRS = ("/etc/modules-load.d/",)
MODPROBE_DIRS = ("/etc/modprobe.d/",)

HEADER = (
    "# Managed by rdmaops.roce ({owner}): this whole file is rewritten on every run.\n"
    "# Change the task's variables instead of editing it.\n"
)

NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
PARAM_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
COMPRESSED_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
KERNEL_LOG_LINES = 15

TRUE_WORDS = ("1", "y", "yes", "true", "on")
FALSE_WORDS = ("0", "n", "no", "false", "off")


class KmodError(Exception):
    """Bad input, or a host that did not end up as asked; ``details`` go into fail_json."""

    def __init__(self, msg, **details):
        super(KmodError, self).__init__(msg)
        self.details = details


class LoadFailed(KmodError):
    """``modprobe <name>`` failed, or succeeded without the module appearing in /sys/module.

    ``kernel_log`` holds the lines the kernel wrote while modprobe ran; ``earlier_log`` the last
    older lines that mention the module, shown apart because they may be from another attempt.
    """

    def __init__(self, name, result, kernel_log, earlier_log=None, kernel_log_note=None):
        stderr = (result.stderr or "").strip()
        if result.rc != 0:
            what = "modprobe %s failed (rc=%d)" % (name, result.rc)
        else:
            what = "modprobe %s exited 0 but /sys/module/%s did not appear" % (name, normalize(name))
        msg = what + (": " + stderr if stderr else "")
        if kernel_log:
            msg += "; kernel log: " + " | ".join(kernel_log)
        elif kernel_log_note:
            msg += "; " + kernel_log_note
        else:
            msg += "; the kernel logged nothing while it ran"
            if earlier_log:
                msg += " (earlier lines about %s: %s)" % (name, " | ".join(earlier_log))
        super(LoadFailed, self).__init__(
            msg,
            module=name,
            cmd=result.cmd,
            rc=result.rc,
            stdout=result.stdout,
            stderr=result.stderr,
            kernel_log=kernel_log,
            kernel_log_earlier=earlier_log or [],
        )
        self.name = name
        self.result = result
        self.kernel_log = kernel_log
        self.earlier_log = earlier_log or []


def normalize(name):
    """The name the kernel uses for a module: ``nvidia-peermem`` -> ``nvidia_peermem``."""
    return name.replace("-", "_")


# -- reading ------------------------------------------------------------------------------------
def kernel_release(host):
    return (host.read("/proc/sys/kernel/osrelease") or "").strip() or None


def builtin_modules(host, kernel):
    """Normalised names from ``/lib/modules/<kernel>/modules.builtin`` (empty when unreadable)."""
    if not kernel:
        return set()
    text = host.read("/lib/modules/%s/modules.builtin" % kernel) or ""
    names = set()
    for line in text.splitlines():
        base = os.path.basename(line.strip())
        for suffix in COMPRESSED_SUFFIXES:
            if base.endswith(suffix):
                names.add(normalize(base[: -len(suffix)]))
                break
    return names


def module_state(host, name, builtins):
    """``loaded`` (a loadable module, any initstate), ``builtin`` or ``absent``."""
    base = "/sys/module/" + normalize(name)
    if host.isdir(base):
        if host.exists(base + "/initstate"):
            return "loaded"
        return "builtin"
    if normalize(name) in builtins:
        return "builtin"
    return "absent"


def running_parameters(host, name):
    """The parameters a loaded module runs with, as the kernel shows them (readable ones only)."""
    base = "/sys/module/%s/parameters" % normalize(name)
    params = {}
    for param in host.listdir(base):
        value = host.read("%s/%s" % (base, param))
        if value is not None:
            params[param] = value.strip()
    return params


def parse_options(text, where):
    """``"a=1 b=x"`` -> ``[("a", "1"), ("b", "x")]``; a bare ``flag`` gives ``("flag", None)``."""
    if "\n" in text or "\r" in text:
        raise KmodError("%s: an option string is one line; remove the line break" % where)
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise KmodError("%s: cannot parse %r (%s); quote values the way modprobe.d(5) does" % (where, text, exc))
    pairs = []
    for token in tokens:
        key, sep, value = token.partition("=")
        if not PARAM_RE.match(key):
            raise KmodError(
                "%s: %r is not a module parameter; write name=value pairs separated by spaces, "
                "e.g. 'peerdirect_support=1'" % (where, token)
            )
        pairs.append((key, value if sep else None))
    return pairs


def same_value(running, wanted):
    """Compare a parameter as the kernel prints it with the value written in modprobe.d."""
    if wanted is None:
        wanted = "1"
    run, want = running.strip(), wanted.strip()
    if run == want:
        return True
    low_run, low_want = run.lower(), want.lower()
    for words in (TRUE_WORDS, FALSE_WORDS):
        if low_run in words and low_want in words:
            return True
    try:
        return int(run, 0) == int(want, 0)
    except ValueError:
        return False


def read_conf_names(text):
    """Module names listed in a modules-load.d file (comments and blank lines skipped)."""
    names = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")):
            names.append(line)
    return names


def read_conf_options(text):
    """``{module: option string}`` from the ``options`` lines of a modprobe.d file."""
    options = {}
    for line in (text or "").splitlines():
        parts = line.strip().split(None, 2)
        if len(parts) >= 2 and parts[0] == "options":
            options[normalize(parts[1])] = parts[2] if len(parts) == 3 else ""
    return options


def render_modules_load(owner, names):
    if not names:
        return None
    return HEADER.format(owner=owner) + "".join(name + "\n" for name in names)


def render_modprobe(owner, options):
    lines = ["options %s %s\n" % (name, options[name]) for name in sorted(options) if options[name]]
    if not lines:
        return None
    return HEADER.format(owner=owner) + "".join(lines)


def read_kernel_log(runner):
    """The kernel ring buffer as a list of lines, or ``(None, why)`` when it cannot be read."""
    if runner is None or not runner.has("dmesg"):
        return None, "dmesg is not installed, the kernel log was not read"
    result = runner.run(["dmesg"], check=False)
    if result.rc != 0:
        why = (result.stderr or "").strip() or "rc=%d" % result.rc
        return None, "the kernel log is not readable (dmesg: %s)" % why
    return result.stdout.splitlines(), None


def lines_after(before, after):
    """The lines of ``after`` written since the snapshot ``before`` (all of them if it rotated)."""
    if not before:
        return list(after)
    marker = before[-1]
    for index in range(len(after) - 1, -1, -1):
        if after[index] == marker:
            return list(after[index + 1:])
    return list(after)


def mentioning(lines, name):
    """Kernel log lines that mention a module by either spelling of its name."""
    keys = set([name.lower(), normalize(name).lower(), normalize(name).replace("_", "-").lower()])
    return [line for line in lines if any(key in line.lower() for key in keys)]


# -- the engine ---------------------------------------------------------------------------------
class KernelModules:
    """Plan, apply and verify one list of modules, its options file and its modules-load file."""

    def __init__(
        self,
        host,
        runner,
        names=DEFAULT_NAMES,
        options=None,
        persist=True,
        state="present",
        modules_load_file=DEFAULT_MODULES_LOAD_FILE,
        modprobe_file=DEFAULT_MODPROBE_FILE,
        reload=False,
        unload=False,
        owner="rdmaops.roce.kernel_modules",
    ):
        self.host = host
        self.runner = runner
        self.names = list(names)
        self.options = dict(options or {})
        self.persist = persist
        self.state = state
        self.modules_load_file = modules_load_file
        self.modprobe_file = modprobe_file
        self.reload = reload
        self.unload = unload
        self.owner = owner
        self.kernel = kernel_release(host)
        self.builtins = builtin_modules(host, self.kernel)
        self.before = {}
        self.option_mismatches = []
        self.warnings = []
        self.loaded_now = []
        self.reloaded = []
        self.unloaded = []
        self.kernel_log_since = {}
        self._validate()

    # -- input ----------------------------------------------------------------------------------
    def _validate(self):
        if self.state not in ("present", "absent"):
            raise KmodError("state must be present or absent, got %r" % (self.state,))
        if not self.names:
            raise KmodError("names is empty; list at least one kernel module (e.g. rdma_cm)")
        seen = set()
        for name in self.names:
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise KmodError(
                    "names: %r is not a kernel module name (letters, digits, '_' and '-' only, "
                    "without .ko or a path)" % (name,)
                )
            if normalize(name) in seen:
                raise KmodError("names: %s is listed twice (- and _ are the same in module names)" % name)
            seen.add(normalize(name))
        parsed = {}
        for name, text in self.options.items():
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise KmodError("options: key %r is not a kernel module name" % (name,))
            text = "" if text is None else str(text).strip()
            parsed[normalize(name)] = (text, parse_options(text, "options.%s" % name))
        self.options = dict((name, pair[0]) for name, pair in parsed.items())
        self._parsed_options = dict((name, pair[1]) for name, pair in parsed.items())
        _check_conf_path(self.modules_load_file, MODULES_LOAD_DIRS, "modules_load_file")
        _check_conf_path(self.modprobe_file, MODPROBE_DIRS, "modprobe_file")

    # -- read -----------------------------------------------------------------------------------
    def read(self):
        self.before = dict((name, module_state(self.host, name, self.builtins)) for name in self.names)
        self.modules_load_before = read_text(self.host, self.modules_load_file)
        self.modprobe_before = read_text(self.host, self.modprobe_file)
        return self.before

    def _desired_files(self):
        if self.state == "present":
            # Both files are owned whole by this task: they hold exactly what it asks for.
            load_text = render_modules_load(self.owner, self.names) if self.persist else self.modules_load_before
            probe_text = render_modprobe(self.owner, self.options)
        else:
            ours = set(normalize(name) for name in self.names)
            kept = [n for n in read_conf_names(self.modules_load_before) if normalize(n) not in ours]
            load_text = render_modules_load(self.owner, kept)
            options = read_conf_options(self.modprobe_before)
            for name in ours:
                options.pop(name, None)
            probe_text = render_modprobe(self.owner, options)
        return load_text, probe_text

    # -- plan -----------------------------------------------------------------------------------
    def plan_into(self, plan):
        """Add this task's changes to ``plan`` (options file first, then loads, then the list)."""
        if not self.before:
            self.read()
        load_text, probe_text = self._desired_files()
        self.modules_load_after, self.modprobe_after = load_text, probe_text
        plan.add(
            "modprobe_file",
            self.modprobe_before,
            probe_text,
            lambda: self._write(self.modprobe_file, probe_text),
            "%s %s" % ("write" if probe_text else "remove", self.modprobe_file),
            header=self.modprobe_file,
        )
        if self.state == "present":
            self._plan_present(plan)
        else:
            self._plan_absent(plan)
        if self.persist or self.state == "absent":
            plan.add(
                "modules_load_file",
                self.modules_load_before,
                load_text,
                lambda: self._write(self.modules_load_file, load_text),
                "%s %s" % ("write" if load_text else "remove", self.modules_load_file),
                header=self.modules_load_file,
            )
        return plan

    def _plan_present(self, plan):
        for name in self.names:
            state = self.before[name]
            if state == "absent":
                self._check_available(name)
                plan.add(
                    "module " + name, "absent", "loaded",
                    lambda name=name: self._load(name),
                    "load %s" % name,
                )
                continue
            for param, wanted, running in self._mismatches(name, state):
                self.option_mismatches.append(
                    dict(module=name, parameter=param, wanted=wanted, running=running)
                )
            if state == "builtin" and normalize(name) in self._parsed_options:
                self.warnings.append(
                    "%s is built into the kernel: options in %s do not reach it; set them on the "
                    "kernel command line as %s.<parameter>=<value>" % (name, self.modprobe_file, normalize(name))
                )
            elif state == "loaded" and self.reload and self._mismatches(name, state):
                plan.add(
                    "module " + name, "loaded with other options", "reloaded with %s" % self.options[normalize(name)],
                    lambda name=name: self._reload(name),
                    "reload %s to apply its options" % name,
                )
        for mismatch in self.option_mismatches:
            if not self.reload:
                self.warnings.append(
                    "%s runs with %s=%s but the options ask for %s; it takes effect when the module is "
                    "next loaded (reboot, or reload=true to reload it now)"
                    % (mismatch["module"], mismatch["parameter"], mismatch["running"], mismatch["wanted"])
                )

    def _plan_absent(self, plan):
        if not self.unload:
            return
        for name in reversed(self.names):
            state = self.before[name]
            if state == "loaded":
                plan.add(
                    "module " + name, "loaded", "absent",
                    lambda name=name: self._unload(name),
                    "unload %s" % name,
                )
            elif state == "builtin":
                self.warnings.append("%s is built into the kernel and cannot be unloaded" % name)

    def _mismatches(self, name, state):
        if state != "loaded":
            return []
        running = running_parameters(self.host, name)
        found = []
        for param, wanted in self._parsed_options.get(normalize(name), []):
            if param in running and not same_value(running[param], wanted):
                found.append((param, "1" if wanted is None else wanted, running[param]))
        return found

    # -- apply ----------------------------------------------------------------------------------
    def _write(self, path, text):
        if text is None:
            try:
                os.unlink(self.host.path(path))
            except OSError:
                if self.host.exists(path):
                    raise
            return
        write_atomic(self.host, path, text, mode=0o644, makedirs=True)

    def _check_available(self, name):
        """Refuse, before anything changes (check mode too), a module this kernel cannot load."""
        result = self.runner.run(["modprobe", "--dry-run", name], check=False)
        if result.rc != 0:
            raise KmodError(
                "%s cannot be loaded on kernel %s: %s. Install the RDMA stack that ships it "
                "(rdmaops.roce.ofed), or the kernel's modules package, then run again"
                % (name, self.kernel, (result.stderr or result.stdout or "modprobe --dry-run failed").strip()),
                cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr,
            )

    def _load(self, name):
        before_log, _why = read_kernel_log(self.runner)
        result = self.runner.run(["modprobe", name], check=False)
        after_log, why = read_kernel_log(self.runner)
        since = lines_after(before_log or [], after_log) if after_log is not None else None
        self.kernel_log_since[normalize(name)] = since
        if result.rc != 0 or module_state(self.host, name, self.builtins) == "absent":
            if since is None:
                raise LoadFailed(name, result, [], kernel_log_note=why)
            earlier = [] if since else mentioning(after_log, name)[-5:]
            raise LoadFailed(name, result, since[-KERNEL_LOG_LINES:], earlier)
        self.loaded_now.append(name)

    def _reload(self, name):
        result = self.runner.run(["modprobe", "-r", name], check=False)
        if result.rc != 0:
            raise KmodError(
                "cannot reload %s to apply its options: modprobe -r %s failed (rc=%d): %s; stop what uses "
                "it (lsmod shows the holders) or reboot" % (name, name, result.rc, (result.stderr or "").strip()),
                cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr,
            )
        self._load(name)
        self.loaded_now.remove(name)
        self.reloaded.append(name)

    def _unload(self, name):
        result = self.runner.run(["modprobe", "-r", name], check=False)
        if result.rc != 0 or module_state(self.host, name, self.builtins) != "absent":
            raise KmodError(
                "modprobe -r %s failed (rc=%d): %s" % (name, result.rc, (result.stderr or "").strip()),
                cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr,
            )
        self.unloaded.append(name)

    # -- re-read --------------------------------------------------------------------------------
    def verify(self):
        """Read everything again; raise :class:`KmodError` naming whatever still differs."""
        problems = []
        after = dict((name, module_state(self.host, name, self.builtins)) for name in self.names)
        for name, state in after.items():
            if self.state == "present" and state == "absent":
                problems.append("%s is not loaded (/sys/module/%s is missing)" % (name, normalize(name)))
            if self.state == "absent" and self.unload and state == "loaded":
                problems.append("%s is still loaded" % name)
        for path, wanted in ((self.modprobe_file, self.modprobe_after), (self.modules_load_file, self.modules_load_after)):
            if read_text(self.host, path) != wanted:
                problems.append("%s does not hold what was written" % path)
        for name in self.reloaded:
            if self._mismatches(name, after[name]):
                problems.append("%s was reloaded but still runs with other options" % name)
        if problems:
            raise KmodError("after applying: " + "; ".join(problems), modules=after)
        self.after = after
        return after

    # -- report ---------------------------------------------------------------------------------
    def report(self, check_mode=False):
        """What the run found and did (or, in check mode, would do)."""
        if check_mode:
            loaded_now = [n for n in self.names if self.before.get(n) == "absent"] if self.state == "present" else []
        else:
            loaded_now = list(self.loaded_now)
        return dict(
            kernel=self.kernel,
            modules=dict(self.before),
            loaded_now=loaded_now,
            already_loaded=[n for n in self.names if self.before.get(n) == "loaded"],
            builtin=[n for n in self.names if self.before.get(n) == "builtin"],
            reloaded=list(self.reloaded),
            unloaded=list(self.unloaded),
            option_mismatches=list(self.option_mismatches),
            modules_load_file=self.modules_load_file if (self.persist or self.state == "absent") else None,
            modprobe_file=self.modprobe_file,
        )


def _check_conf_path(path, dirs, key):
    ok = isinstance(path, str) and path.endswith(".conf")
    if ok:
        parent = os.path.dirname(path) + "/"
        ok = parent in dirs and len(os.path.basename(path)) > len(".conf")
    if not ok:
        raise KmodError(
            "%s: %r must be a .conf file directly in %s (kmod and systemd read no other files)"
            % (key, path, " or ".join(dirs))
        )
