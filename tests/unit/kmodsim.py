"""A small kernel-module simulator over a host tree: modprobe, modinfo, dmesg, systemctl.

Used two ways, with the same behaviour:

* in-process: :class:`FakeAnsibleModule` gives ``get_bin_path``/``run_command`` to the real
  ``CommandRunner``, so unit tests drive the real module_utils code;
* as executables: :func:`install_stubs` writes ``modprobe``, ``modinfo``, ``dmesg`` and
  ``systemctl`` into a bin directory (this file, run by the test's Python), so tests that run
  ``ansible``/``ansible-playbook`` get the same simulation through PATH.

State lives in the tree (``RDMAOPS_HOST_ROOT``), so a second run sees what the first did:

* ``modprobe NAME`` creates ``/sys/module/<name>/initstate`` (``live``) and one file per
  parameter under ``parameters/``, taken from the ``options`` lines of ``/etc/modprobe.d/*.conf``
  in the tree, exactly where a real load takes its options from; ``modprobe -r`` removes it.
* ``<root>/.kmodsim/config.json`` says how modules behave: ``modules.<name>`` may give ``rc``,
  ``stderr``, ``log`` (kernel log lines to append), ``creates`` (``{host path: content}`` written
  on a successful load) and ``in_use`` (``modprobe -r`` refuses); ``missing`` lists modules
  that have no ``.ko`` for the running kernel; ``modinfo.<name>`` is the text ``modinfo``
  prints; ``dmesg_readable: false`` makes ``dmesg`` fail as it does under dmesg_restrict.
* ``<root>/.kmodsim/kmsg`` is the kernel log; ``<root>/.kmodsim/calls`` records every argv.

Nothing here touches the machine running the tests: every path is under the tree.
"""

import json
import os
import shutil
import stat
import sys

TOOLS = ("modprobe", "modinfo", "dmesg", "systemctl")


def _norm(name):
    return name.replace("-", "_")


class Sim:
    def __init__(self, root):
        self.root = str(root)
        self.dir = os.path.join(self.root, ".kmodsim")

    # -- set-up helpers for tests ---------------------------------------------------------------
    def configure(self, **config):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "config.json"), "w") as handle:
            json.dump(config, handle)

    def config(self):
        try:
            with open(os.path.join(self.dir, "config.json")) as handle:
                return json.load(handle)
        except (IOError, OSError):
            return {}

    def log(self, *lines):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "kmsg"), "a") as handle:
            for line in lines:
                handle.write(line + "\n")

    def calls(self):
        try:
            with open(os.path.join(self.dir, "calls")) as handle:
                return [json.loads(line) for line in handle if line.strip()]
        except (IOError, OSError):
            return []

    def path(self, host_path):
        return os.path.join(self.root, host_path.lstrip("/"))

    # -- the tools --------------------------------------------------------------------------------
    def run(self, argv):
        """Run one tool invocation; return (rc, stdout, stderr)."""
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "calls"), "a") as handle:
            handle.write(json.dumps(argv) + "\n")
        tool = os.path.basename(argv[0])
        return getattr(self, "_" + tool)(argv[1:])

    def _kernel(self):
        try:
            with open(self.path("/proc/sys/kernel/osrelease")) as handle:
                return handle.read().strip()
        except (IOError, OSError):
            return "unknown"

    def _modprobe(self, args):
        config = self.config()
        remove = args and args[0] in ("-r", "--remove")
        dry_run = "-n" in args or "--dry-run" in args
        names = [a for a in args if not a.startswith("-")]
        if len(names) != 1:
            return 1, "", "kmodsim: one module name expected, got %r\n" % (args,)
        name = names[0]
        mod = _norm(name)
        behaviour = config.get("modules", {}).get(mod, {})
        sysdir = self.path("/sys/module/" + mod)
        if remove:
            if not os.path.isdir(sysdir):
                return 0, "", ""
            if behaviour.get("in_use"):
                return 1, "", "modprobe: FATAL: Module %s is in use.\n" % mod
            shutil.rmtree(sysdir)
            return 0, "", ""
        if os.path.isdir(sysdir):
            return 0, "", ""
        if mod in [_norm(m) for m in config.get("missing", [])]:
            return 1, "", "modprobe: FATAL: Module %s not found in directory /lib/modules/%s\n" % (name, self._kernel())
        if dry_run:
            return 0, "insmod /lib/modules/%s/kernel/%s.ko\n" % (self._kernel(), mod), ""
        if behaviour.get("log"):
            self.log(*behaviour["log"])
        if behaviour.get("rc", 0) != 0:
            return behaviour["rc"], "", behaviour.get("stderr", "")
        if behaviour.get("silently_absent"):
            return 0, "", ""
        os.makedirs(os.path.join(sysdir, "parameters"), exist_ok=True)
        with open(os.path.join(sysdir, "initstate"), "w") as handle:
            handle.write("live\n")
        for key, value in self._options(mod).items():
            with open(os.path.join(sysdir, "parameters", key), "w") as handle:
                handle.write(value + "\n")
        for host_path, content in behaviour.get("creates", {}).items():
            real = self.path(host_path)
            os.makedirs(os.path.dirname(real), exist_ok=True)
            with open(real, "w") as handle:
                handle.write(content)
        return 0, "", ""

    def _options(self, mod):
        options = {}
        conf_dir = self.path("/etc/modprobe.d")
        for conf in sorted(os.listdir(conf_dir)) if os.path.isdir(conf_dir) else []:
            if not conf.endswith(".conf"):
                continue
            with open(os.path.join(conf_dir, conf)) as handle:
                for line in handle:
                    parts = line.split()
                    if len(parts) >= 3 and parts[0] == "options" and _norm(parts[1]) == mod:
                        for pair in parts[2:]:
                            key, _sep, value = pair.partition("=")
                            options[key] = value or "Y"
        return options

    def _modinfo(self, args):
        names = [a for a in args if not a.startswith("-")]
        text = self.config().get("modinfo", {}).get(_norm(names[-1])) if names else None
        if text is None:
            return 1, "", "modinfo: ERROR: Module %s not found.\n" % (names[-1] if names else "")
        return 0, text, ""

    def _dmesg(self, args):
        if not self.config().get("dmesg_readable", True):
            return 1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"
        try:
            with open(os.path.join(self.dir, "kmsg")) as handle:
                return 0, handle.read(), ""
        except (IOError, OSError):
            return 0, "", ""

    def _systemctl(self, args):
        return 0, "", ""


class FakeAnsibleModule:
    """Just enough of AnsibleModule for CommandRunner: tools resolve to the simulator."""

    def __init__(self, root, tools=TOOLS, check_mode=False, diff=False):
        self.sim = Sim(root)
        self.tools = tools
        self.check_mode = check_mode
        self._diff = diff
        self.params = {}
        self.warnings = []

    def get_bin_path(self, tool):
        return "/sim/bin/" + tool if tool in self.tools else None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        return self.sim.run(list(argv))

    def warn(self, text):
        self.warnings.append(text)


_STUB = """#!{python}
import sys
sys.path.insert(0, {here!r})
import kmodsim
kmodsim.main()
"""


def install_stubs(bindir, tools=TOOLS):
    """Write the simulator's tools into ``bindir`` (they act on $RDMAOPS_HOST_ROOT)."""
    os.makedirs(str(bindir), exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for tool in tools:
        path = os.path.join(str(bindir), tool)
        with open(path, "w") as handle:
            handle.write(_STUB.format(python=sys.executable, here=here))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(bindir)


def main():
    root = os.environ.get("RDMAOPS_HOST_ROOT")
    if not root or root == "/":
        sys.stderr.write("kmodsim: RDMAOPS_HOST_ROOT must point at a test tree\n")
        sys.exit(127)
    rc, out, err = Sim(root).run(sys.argv)
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.exit(rc)
