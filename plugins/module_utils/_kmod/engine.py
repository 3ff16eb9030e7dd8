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
owned whole by the task that names it (marker line; a file without it is refused unless
``adopt``) and planned through :meth:`Plan.file`, so it is put back when a later step fails.

A load has no undo: unloading a module under a running workload is not safe.  So when a load
fails part-way, the files are rolled back, the modules already loaded stay loaded and the run
fails with ``changed: true`` naming them (``applied``) and what was never reached
(``not_applied``).

Options that differ from what a loaded module runs with (``/sys/module/<m>/parameters``) are
reported; the module is reloaded only when the caller consents (``reload``), never on its own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import read_text
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import MODPROBE_DIR, MODULES_LOAD_DIR
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import DRIVER_RESTART
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import absolute_path, file_name, full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import MODULES, kernel_release

DEFAULT_NAMES = ("rdma_cm", "ib_uverbs", "ib_umad")
DEFAULT_MODULES_LOAD_FILE = MODULES_LOAD_DIR + "/rdmaops-roce.conf"
DEFAULT_MODPROBE_FILE = MODPROBE_DIR + "/rdmaops-roce.conf"
MODULES_LOAD_DIRS = (MODULES_LOAD_DIR + "/",)
MODPROBE_DIRS = (MODPROBE_DIR + "/",)

HEADER = (
    "# Managed by rdmaops.roce ({owner}): this whole file is rewritten on every run.\n"
    "# Change the task's variables instead of editing it.\n"
)

# The kernel's module names: letters, digits, '_' (kmod reads '-' as '_'), at most
# MODULE_NAME_LEN - 1 = 55 bytes.  Never starting with '-', so no name reads as a modprobe option.
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,54}")
NAME_RULE = "letters, digits, '_' and '-', at most 55, not starting with '-'; without .ko or a path"
PARAM_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
COMPRESSED_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
KERNEL_LOG_LINES = 15

TRUE_WORDS = ("1", "y", "yes", "true", "on")
FALSE_WORDS = ("0", "n", "no", "false", "off")


class LoadFailed(RdmaopsError):
    """``modprobe <name>`` failed, or succeeded without the module appearing in /sys/module.

    ``kernel_log`` holds the lines the kernel wrote while modprobe ran; ``earlier_log`` the last
    older lines that mention the module, shown apart because they may be from another attempt.
    A distinct type because peermem explains these failures (``diagnose``) from its fields.
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

    def explain(self, text):
        """Add an explanation (peermem's diagnosis) to the message."""
        if text:
            self.msg = "%s. %s" % (self.msg, text)
            self.args = (self.msg,)


def normalize(name):
    """The name the kernel uses for a module: ``nvidia-peermem`` -> ``nvidia_peermem``."""
    return name.replace("-", "_")


def check_module_name(key, name):
    """Return ``name`` when it is a kernel module name, else raise InputError naming ``key``."""
    if isinstance(name, str) and name.startswith("-"):
        raise InputError(
            "%s: %r starts with '-', which modprobe would read as an option; name a kernel module (%s)"
            % (key, name, NAME_RULE), option=key)
    if not full_match(NAME_RE, name):
        raise InputError("%s: %r is not a kernel module name (%s)" % (key, name, NAME_RULE), option=key)
    return name


def check_conf_path(key, path, dirs):
    """A ``.conf`` file directly in one of ``dirs`` (no '..', nothing hidden, no sub-directory)."""
    absolute_path(key, path)
    parent = os.path.dirname(path) + "/"
    try:
        file_name(key, os.path.basename(path), suffix=".conf")
        ok = parent in dirs and len(os.path.basename(path)) > len(".conf")
    except InputError:
        ok = False
    if not ok:
        raise InputError(
            "%s: %r must be a .conf file directly in %s (kmod and systemd read no other files)"
            % (key, path, " or ".join(dirs)), option=key)
    return path


# -- reading ------------------------------------------------------------------------------------
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
    base = "%s/%s" % (MODULES, normalize(name))
    if host.isdir(base):
        if host.exists(base + "/initstate"):
            return "loaded"
        return "builtin"
    if normalize(name) in builtins:
        return "builtin"
    return "absent"


def running_parameters(host, name):
    """The parameters a loaded module runs with, as the kernel shows them (readable ones only)."""
    base = "%s/%s/parameters" % (MODULES, normalize(name))
    params = {}
    for param in host.listdir(base):
        value = host.read("%s/%s" % (base, param))
        if value is not None:
            params[param] = value.strip()
    return params


def parse_options(text, where):
    """``"a=1 b=x"`` -> ``[("a", "1"), ("b", "x")]``; a bare ``flag`` gives ``("flag", None)``."""
    if "\n" in text or "\r" in text:
        raise InputError("%s: an option string is one line; remove the line break" % where, option="options")
    if any(ord(char) < 0x20 and char != "\t" for char in text):
        raise InputError("%s: %r holds a control character; write plain name=value pairs" % (where, text),
                         option="options")
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise InputError("%s: cannot parse %r (%s); quote values the way modprobe.d(5) does" % (where, text, exc),
                         option="options")
    pairs = []
    for token in tokens:
        key, sep, value = token.partition("=")
        if not full_match(PARAM_RE, key):
            raise InputError(
                "%s: %r is not a module parameter; write name=value pairs separated by spaces, "
                "e.g. 'peerdirect_support=1'" % (where, token), option="options"
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
class KernelModules(Engine):
    """One list of modules, its options file and its modules-load file: read -> plan -> apply -> re-read."""

    def __init__(self, ctx, params, owner="rdmaops.roce.kernel_modules", explain_load_failure=None):
        super(KernelModules, self).__init__(ctx, params)
        self.names = list(params.get("names") if params.get("names") is not None else DEFAULT_NAMES)
        self.options = dict(params.get("options") or {})
        self.persist = params.get("persist", True)
        self.state = params.get("state") or "present"
        self.modules_load_file = params.get("modules_load_file") or DEFAULT_MODULES_LOAD_FILE
        self.modprobe_file = params.get("modprobe_file") or DEFAULT_MODPROBE_FILE
        self.reload = bool(params.get("reload"))
        self.unload = bool(params.get("unload"))
        self.adopt = bool(params.get("adopt"))
        self.owner = owner
        # Called with a LoadFailed before it is raised; returns an explanation for the message.
        self.explain_load_failure = explain_load_failure
        self.kernel = None
        self.builtins = set()
        self.before = {}
        self.after = None
        self.modules_load_before = self.modprobe_before = None
        self.modules_load_after = self.modprobe_after = None
        self._parsed_options = {}
        self.option_mismatches = []
        self.warnings = []
        self.loaded_now = []
        self.reloaded = []
        self.unloaded = []
        self.kernel_log_since = {}

    def _warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)
        self.ctx.warn(message)

    # -- validate -------------------------------------------------------------------------------
    def validate(self):
        if self.state not in ("present", "absent"):
            raise InputError("state must be present or absent, got %r" % (self.state,), option="state")
        if not self.names:
            raise InputError("names is empty; list at least one kernel module (e.g. rdma_cm)", option="names")
        seen = set()
        for name in self.names:
            check_module_name("names", name)
            if normalize(name) in seen:
                raise InputError("names: %s is listed twice (- and _ are the same in module names)" % name,
                                 option="names")
            seen.add(normalize(name))
        texts, parsed = {}, {}
        for name, text in self.options.items():
            check_module_name("options: key", name)
            if normalize(name) in texts:
                raise InputError("options: %s is given twice (- and _ are the same in module names)" % name,
                                 option="options")
            text = "" if text is None else str(text).strip()
            texts[normalize(name)] = text
            parsed[normalize(name)] = parse_options(text, "options.%s" % name)
        self.options, self._parsed_options = texts, parsed
        check_conf_path("modules_load_file", self.modules_load_file, MODULES_LOAD_DIRS)
        check_conf_path("modprobe_file", self.modprobe_file, MODPROBE_DIRS)

    # -- read -----------------------------------------------------------------------------------
    def read(self):
        self.kernel = kernel_release(self.host)
        self.builtins = builtin_modules(self.host, self.kernel)
        self.before = dict((name, module_state(self.host, name, self.builtins)) for name in self.names)
        self.modules_load_before = read_text(self.host, self.modules_load_file)
        self.modprobe_before = read_text(self.host, self.modprobe_file)
        return self.before

    def _desired_files(self):
        if self.state == "present":
            # Both files are owned whole by this task: they hold exactly what it asks for.
            load_text = render_modules_load(self.owner, self.names) if self.persist else self.modules_load_before
            probe_text = render_modprobe(self.owner, self.options)
            return load_text, probe_text
        # absent: take our entries out; a file that has none of them is left exactly as it is.
        ours = set(normalize(name) for name in self.names)
        listed = read_conf_names(self.modules_load_before)
        kept = [n for n in listed if normalize(n) not in ours]
        load_text = render_modules_load(self.owner, kept) if len(kept) != len(listed) else self.modules_load_before
        options = read_conf_options(self.modprobe_before)
        if ours & set(options):
            for name in ours:
                options.pop(name, None)
            probe_text = render_modprobe(self.owner, options)
        else:
            probe_text = self.modprobe_before
        return load_text, probe_text

    # -- plan -----------------------------------------------------------------------------------
    def plan(self, plan):
        """Options file first, then loads (or unloads), then the boot list."""
        load_text, probe_text = self._desired_files()
        self.modules_load_after, self.modprobe_after = load_text, probe_text
        plan.file(self.host, self.modprobe_file, probe_text, mode=0o644, key="modprobe_file",
                  adopt=self.adopt, option="modprobe_file",
                  description="%s %s" % ("write" if probe_text else "remove", self.modprobe_file))
        if self.state == "present":
            self._plan_present(plan)
        else:
            self._plan_absent(plan)
        if self.persist or self.state == "absent":
            # A file we do not own is refused here, still before anything is changed.
            plan.file(self.host, self.modules_load_file, load_text, mode=0o644, key="modules_load_file",
                      adopt=self.adopt, option="modules_load_file",
                      description="%s %s" % ("write" if load_text else "remove", self.modules_load_file))
        return plan

    def _plan_present(self, plan):
        for name in self.names:
            state = self.before[name]
            if state == "absent":
                self._check_available(name)
                # No undo: unloading a module again under a running workload is not safe.
                plan.add("module " + name, "absent", "loaded", lambda name=name: self._load(name), "load %s" % name)
                continue
            mismatches = self._mismatches(name, state)
            for param, wanted, running in mismatches:
                self.option_mismatches.append(dict(module=name, parameter=param, wanted=wanted, running=running))
            if state == "builtin" and normalize(name) in self._parsed_options:
                self._warn(
                    "%s is built into the kernel: options in %s do not reach it; set them on the "
                    "kernel command line as %s.<parameter>=<value>" % (name, self.modprobe_file, normalize(name))
                )
            elif state == "loaded" and self.reload and mismatches:
                # Two steps, so a failed load after the removal says the module is now unloaded.
                plan.add("module " + name, "loaded with other options", "unloaded to reload it",
                         lambda name=name: self._unload_for_reload(name),
                         "unload %s to reload it with its options" % name, disruption=DRIVER_RESTART)
                plan.add("module " + name + " options", "unloaded",
                         "reloaded with %s" % self.options[normalize(name)],
                         lambda name=name: self._reload(name),
                         "reload %s to apply its options" % name, disruption=DRIVER_RESTART)
        if not self.reload:
            for mismatch in self.option_mismatches:
                self._warn(
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
                plan.add("module " + name, "loaded", "absent", lambda name=name: self._unload(name), "unload %s" % name,
                         disruption=DRIVER_RESTART)
            elif state == "builtin":
                self._warn("%s is built into the kernel and cannot be unloaded" % name)

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
    def _check_available(self, name):
        """Refuse, before anything changes (check mode too), a module this kernel cannot load."""
        result = self.runner.run(["modprobe", "--dry-run", name], check=False)
        if result.rc != 0:
            raise RdmaopsError(
                "%s cannot be loaded on kernel %s: %s. Install the RDMA stack that ships it "
                "(rdmaops.roce.ofed), or the kernel's modules package, then run again"
                % (name, self.kernel, (result.stderr or result.stdout or "modprobe --dry-run failed").strip()),
                module=name, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr,
            )

    def _load(self, name):
        before_log, _why = read_kernel_log(self.runner)
        result = self.runner.run(["modprobe", name], check=False)
        after_log, why = read_kernel_log(self.runner)
        since = lines_after(before_log or [], after_log) if after_log is not None else None
        self.kernel_log_since[normalize(name)] = since
        if result.rc != 0 or module_state(self.host, name, self.builtins) == "absent":
            if since is None:
                failed = LoadFailed(name, result, [], kernel_log_note=why)
            else:
                earlier = [] if since else mentioning(after_log, name)[-5:]
                failed = LoadFailed(name, result, since[-KERNEL_LOG_LINES:], earlier)
            if self.explain_load_failure is not None:
                failed.explain(self.explain_load_failure(failed))
            raise failed
        self.loaded_now.append(name)

    def _unload_for_reload(self, name):
        result = self.runner.run(["modprobe", "-r", name], check=False)
        if result.rc != 0:
            raise RdmaopsError(
                "cannot reload %s to apply its options: modprobe -r %s failed (rc=%d): %s; stop what uses "
                "it (lsmod shows the holders) or reboot" % (name, name, result.rc, (result.stderr or "").strip()),
                module=name, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr,
            )

    def _reload(self, name):
        try:
            self._load(name)
        except LoadFailed as exc:
            exc.explain("%s was unloaded to apply its options and is not loaded now" % name)
            raise
        self.loaded_now.remove(name)
        self.reloaded.append(name)

    def _unload(self, name):
        result = self.runner.run(["modprobe", "-r", name], check=False)
        if result.rc != 0 or module_state(self.host, name, self.builtins) != "absent":
            raise RdmaopsError(
                "modprobe -r %s failed (rc=%d): %s" % (name, result.rc, (result.stderr or "").strip()),
                module=name, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr,
            )
        self.unloaded.append(name)

    # -- re-read --------------------------------------------------------------------------------
    def verify(self):
        """Read everything again; return what still differs from what was asked."""
        problems = []
        after = dict((name, module_state(self.host, name, self.builtins)) for name in self.names)
        for name, state in after.items():
            if self.state == "present" and state == "absent":
                problems.append("%s is not loaded (/sys/module/%s is missing)" % (name, normalize(name)))
            if self.state == "absent" and self.unload and state == "loaded":
                problems.append("%s is still loaded" % name)
        wanted_files = [(self.modprobe_file, self.modprobe_after)]
        if self.persist or self.state == "absent":
            wanted_files.append((self.modules_load_file, self.modules_load_after))
        for path, wanted in wanted_files:
            if read_text(self.host, path) != wanted:
                problems.append("%s does not hold what was written" % path)
        for name in self.reloaded:
            if self._mismatches(name, after[name]):
                problems.append("%s was reloaded but still runs with other options" % name)
        self.after = after
        return problems

    # -- result ---------------------------------------------------------------------------------
    def result(self):
        """What the run found and did (in check mode, would do); also after a failure, from what is known."""
        if self.check_mode:
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
