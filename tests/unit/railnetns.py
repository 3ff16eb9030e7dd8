"""Run the NIC layer's rails on a real kernel: a network namespace of the test's own.

``python railnetns.py SPEC.json`` is started by the tests under ``unshare --net --mount``: it
mounts a sysfs of the new namespace on /sys (so /sys/class/net shows its links), creates the veth
pairs SPEC names, then runs :class:`NicLayer` once per step of SPEC (``check``, ``apply``...; ``probe``
is validate_probe's read through ``check_read``, in a run not in check mode) with
``RDMAOPS_HOST_ROOT`` at a tree whose ``proc`` and ``sys`` are the namespace's own and whose
``etc`` is the test's, and prints one JSON document: each step's result (or error), and what
``ip -N -j`` and procfs say afterwards.  Real iproute2, real kernel; nothing of the machine's own
network is touched (the namespace dies with this process).
"""

import json
import os
import shutil
import subprocess
import sys

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import NicLayer, check_read


class Module:
    def __init__(self, bindir, check_mode):
        self.bindir = bindir
        self.check_mode = check_mode
        self._diff = True

    def get_bin_path(self, tool):
        return shutil.which(tool, path=self.bindir + os.pathsep + os.environ["PATH"])

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        env = dict(os.environ)
        env.update(environ_update or {})
        env["PATH"] = self.bindir + os.pathsep + env["PATH"]
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def sh(*argv):
    return subprocess.run(list(argv), check=True, capture_output=True, text=True).stdout


def main(spec_path):
    with open(spec_path) as handle:
        spec = json.load(handle)
    sh("mount", "-t", "sysfs", "sysfs", "/sys")
    for name, peer in spec["veths"]:
        sh("ip", "link", "add", name, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", name, "up")
        sh("ip", "link", "set", peer, "up")
    for argv in spec.get("before", []):
        sh(*argv)
    out = dict(steps=[])
    for step in spec["steps"]:
        if step == "probe":
            # validate_probe's nic read: nic_layer's engine in check mode, in a call that is not in check mode
            os.environ["RDMAOPS_HOST_ROOT"] = spec["root"]
            module = Module(spec["bindir"], False)
            module.warnings = []
            module.warn = module.warnings.append
            out["steps"].append(dict(step=step, result=check_read(module, spec["params"]), warnings=module.warnings))
            continue
        ctx = Context(Module(spec["bindir"], step == "check"), host=HostRoot(spec["root"]))
        ctx.runner = CommandRunner(ctx.module)
        engine = NicLayer(ctx, spec["params"], environ=spec.get("environ") or {})
        try:
            result, _plan = execute(engine)
            out["steps"].append(dict(step=step, result=result, warnings=ctx.warnings))
        except RdmaopsError as exc:
            out["steps"].append(dict(step=step, error=exc.msg, details=json.loads(json.dumps(exc.details, default=str))))
    out["rules"] = json.loads(sh("ip", "-N", "-j", "rule", "show"))
    ours = os.path.join(spec["root"], "etc/iproute2/rt_tables.d")
    if os.path.isdir("/etc/iproute2/rt_tables.d") and os.path.isdir(ours):
        # iproute2 itself reads the table names we wrote (a bind mount, in this mount namespace only)
        sh("mount", "--bind", ours, "/etc/iproute2/rt_tables.d")
        out["rules_named"] = json.loads(sh("ip", "-j", "rule", "show"))
    out["routes"] = json.loads(sh("ip", "-N", "-j", "route", "show", "table", "all"))
    out["addresses"] = json.loads(sh("ip", "-j", "address", "show"))
    out["sysctls"] = {}
    for name, _peer in spec["veths"]:
        for key in ("arp_ignore", "arp_announce", "rp_filter"):
            with open("/proc/sys/net/ipv4/conf/%s/%s" % (name, key)) as handle:
                out["sysctls"]["%s.%s" % (name, key)] = int(handle.read())
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
