#!/usr/bin/env python
"""Benchmark rdma_facts on recorded hosts: time per gather and tool runs per gather.

    .venv/bin/python benchmarks/rdma_facts.py [--iterations N]

Prints, for each recorded host tree, the median wall time of one in-process gather (sysfs
reads + replayed tools), how many files it read, how many tools it ran, and the wall time of
one full `ansible localhost -m rdmaops.roce.rdma_facts` round trip on that tree.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "unit"))

import conftest  # noqa: E402  (puts the collection on sys.path)
import ansiblerun  # noqa: E402
import hosttree  # noqa: E402
from fixtures.hosts import cx7_doca  # noqa: E402

from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner  # noqa: E402
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot  # noqa: E402
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts  # noqa: E402


class ReplayModule:
    def __init__(self, commands, bindir):
        self.commands, self.bindir, self.calls = commands, bindir, 0

    def get_bin_path(self, tool):
        return os.path.join(self.bindir, tool) if any(k.split(" ")[0] == tool for k in self.commands) else None

    def run_command(self, argv, **_kwargs):
        self.calls += 1
        record = self.commands[" ".join([os.path.basename(argv[0])] + list(argv[1:]))]
        return record["rc"], record["stdout"], record["stderr"]


class CountingHost(HostRoot):
    reads = 0

    def read_or_errno(self, host_path):
        CountingHost.reads += 1
        return HostRoot.read_or_errno(self, host_path)


def bench(name, manifest, iterations):
    assert os.path.isdir(conftest.COLLECTIONS_ROOT)
    root = tempfile.mkdtemp(prefix="bench-")
    bindir = hosttree.materialize(manifest, root)
    times = []
    for dummy in range(iterations):
        module = ReplayModule(manifest.get("commands", {}), bindir)
        CountingHost.reads = 0
        start = time.perf_counter()
        RdmaFacts(CountingHost(root), CommandRunner(module)).gather()
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    proc = ansiblerun.run(
        "ansible",
        ["localhost", "-m", "rdmaops.roce.rdma_facts", "-e", "ansible_python_interpreter=" + sys.executable],
        env_extra={"RDMAOPS_HOST_ROOT": root, "PATH": bindir + os.pathsep + os.environ["PATH"]},
    )
    adhoc = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(proc.stdout + proc.stderr)
    print("%-32s gather %7.2f ms (median of %d)  files read %5d  tools run %d  ansible round trip %5.2f s"
          % (name, statistics.median(times) * 1000, iterations, CountingHost.reads, module.calls, adhoc))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    bench("cx7_doca (2 ports, 8 GID slots)", cx7_doca.manifest(), args.iterations)
    bench("rxe_bookworm_mtu9000 (1024 GIDs)", hosttree.load("rxe_bookworm_mtu9000.json"), args.iterations)
    bench("nordma_debian12_container", hosttree.load("nordma_debian12_container.json"), args.iterations)


if __name__ == "__main__":
    main()
