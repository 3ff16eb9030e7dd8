"""Turn a recorded host (a JSON manifest) into a directory tree and stub tools.

A manifest has the format written by ``tests/tools/capture_host_tree.py``:
``entries`` maps absolute host paths to ``{"type": "dir"}``, ``{"type": "file", "content": ...}``,
``{"type": "link", "target": ...}`` (relative, as the kernel gives it) or
``{"type": "error", "errno": "EINVAL"}`` (a file whose read failed on the real host; it is
left out of the tree, which the modules treat the same way), and ``commands`` maps an argv
joined by spaces to ``{"rc", "stdout", "stderr"}``.

:func:`materialize` writes the tree under ``dest`` and, for every tool the manifest recorded
(plus every tool in ``SHADOWED_TOOLS``), a stub in ``dest/bin`` that replays the recorded
answer for exactly that argv and fails loudly (rc 127) for any argv it has no record of,
so a test can never silently read the machine it runs on.
"""

import json
import os
import stat
import sys

# Tools the modules may run: shadowed in every tree so the test machine's own never answer.
SHADOWED_TOOLS = (
    "ibv_devinfo",
    "ip",
    "ofed_info",
    "dpkg-query",
    "rpm",
    "ethtool",
    "rdma",
    "modprobe",
    "lsmod",
)

_STUB = """#!{python}
import json, os, sys
records = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "commands.json")))
key = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
record = records.get(key)
if record is None:
    sys.stderr.write("stub: no recorded output for %r\\n" % key)
    sys.exit(127)
sys.stdout.write(record.get("stdout", ""))
sys.stderr.write(record.get("stderr", ""))
sys.exit(record.get("rc", 0))
"""


def load(name):
    """Load a manifest from tests/unit/fixtures/hosts by file name (``.json``)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "hosts")
    with open(os.path.join(here, name)) as handle:
        return json.load(handle)


def materialize(manifest, dest):
    """Write ``manifest`` under ``dest``; return the path of the stub ``bin`` directory."""
    dest = str(dest)
    errors = []
    for path, entry in sorted(manifest.get("entries", {}).items()):
        real = os.path.join(dest, path.lstrip("/"))
        kind = entry["type"]
        if kind == "dir":
            os.makedirs(real, exist_ok=True)
        elif kind == "file":
            os.makedirs(os.path.dirname(real), exist_ok=True)
            with open(real, "w") as handle:
                handle.write(entry["content"])
        elif kind == "link":
            os.makedirs(os.path.dirname(real), exist_ok=True)
            os.symlink(entry["target"], real)
        elif kind == "error":
            errors.append(path)
        else:
            raise ValueError("unknown manifest entry type %r for %s" % (kind, path))
    bindir = os.path.join(dest, "bin")
    os.makedirs(bindir, exist_ok=True)
    commands = manifest.get("commands", {})
    with open(os.path.join(bindir, "commands.json"), "w") as handle:
        json.dump(commands, handle)
    tools = set(SHADOWED_TOOLS) | set(key.split(" ", 1)[0] for key in commands)
    for tool in tools:
        stub = os.path.join(bindir, tool)
        with open(stub, "w") as handle:
            handle.write(_STUB.format(python=sys.executable))
        os.chmod(stub, os.stat(stub).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bindir


class ReplayModule:
    """The two AnsibleModule methods CommandRunner uses, answering from a manifest."""

    def __init__(self, commands, bindir):
        self.commands = commands
        self.bindir = bindir
        self.calls = []

    def get_bin_path(self, tool):
        return "%s/%s" % (self.bindir, tool) if any(k.split(" ")[0] == tool for k in self.commands) else None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        assert environ_update["LC_ALL"] == "C"
        key = " ".join([argv[0].rsplit("/", 1)[-1]] + list(argv[1:]))
        self.calls.append(key)
        record = self.commands[key]
        return record["rc"], record["stdout"], record["stderr"]


def gather_facts(tmp_path, manifest, **kwargs):
    """rdma_facts of a recorded host: (facts, the replaying module that answered its tools)."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
    from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts

    bindir = materialize(manifest, tmp_path)
    module = ReplayModule(manifest.get("commands", {}), bindir)
    facts = RdmaFacts(HostRoot(str(tmp_path)), CommandRunner(module), **kwargs).gather()
    return facts, module
