"""A real Slurm cluster on this machine for the rollout's tests: Debian's slurmctld, one slurmd per
node (``slurmd -N NAME``, each on its own port) and munge, all on 127.0.0.1, configured in a
temporary directory (SLURM_CONF points the client tools at it). Needs root and Debian's
slurmctld, slurmd, slurm-client and munge packages; the unit tier installs them.
benchmarks/fleet.py --scheduler slurm imports it too (node names: its container hosts), on
its own ports so that it and the rollout's tests can run at the same time."""

import os
import shutil
import signal
import subprocess
import time
import sys

# the one slurm.conf renderer of the tests (the lab's Slurm uses it too)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lab"))
import slurmlab  # noqa: E402  pylint: disable=wrong-import-position

# not Slurm's default 6817, so a cluster of the machine's own is left alone; RDMAOPS_TEST_SLURM_PORT
# moves it, so that two checkouts (or two people) can run the rollout's tests at once; each pytest-xdist
# worker (the unit tier runs two) has its own cluster 1000 ports further on (benchmarks/fleet.py: 16917)
PORT_BASE = int(os.environ.get("RDMAOPS_TEST_SLURM_PORT", "16817")) + 1000 * int(
    (os.environ.get("PYTEST_XDIST_WORKER") or "gw0").lstrip("gw") or 0)


def available():
    """Why a cluster cannot run here, or None."""
    if os.geteuid() != 0:
        return "the Slurm daemons need root"
    missing = [tool for tool in ("slurmctld", "slurmd", "scontrol", "squeue", "sbatch", "munged") if not shutil.which(tool)
               and not os.path.exists("/usr/sbin/" + tool)]
    if missing:
        return "not installed: %s (apt-get install slurmctld slurmd slurm-client munge)" % ", ".join(missing)
    return None


def _sbin(tool):
    return shutil.which(tool) or "/usr/sbin/" + tool


class SlurmCluster:
    def __init__(self, directory, nodes=("vm1", "vm2"), port_base=PORT_BASE):
        self.dir = str(directory)
        self.nodes = list(nodes)
        self.port_base = port_base  # slurmctld's port; slurmd N listens on port_base + N
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.procs = []

    def write_conf(self):
        os.makedirs(os.path.join(self.dir, "state"), exist_ok=True)
        host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        settings = [("StateSaveLocation", self.dir + "/state"), ("SlurmdSpoolDir", self.dir + "/spool-%n"),
                    ("SlurmctldPidFile", self.dir + "/slurmctld.pid"), ("SlurmdPidFile", self.dir + "/slurmd-%n.pid"),
                    ("SlurmctldLogFile", self.dir + "/slurmctld.log"), ("SlurmdLogFile", self.dir + "/slurmd-%n.log"),
                    ("MessageTimeout", 5), ("RebootProgram", "/bin/true")]
        nodes = [(name, [("NodeHostname", host), ("NodeAddr", "127.0.0.1"), ("Port", self.port_base + 1 + index), ("CPUs", 1),
                         ("State", "UNKNOWN")]) for index, name in enumerate(self.nodes)]
        with open(self.conf, "w") as handle:
            handle.write(slurmlab.render_slurm_conf("rdmaopstest", "%s(127.0.0.1)" % host, self.port_base, settings, nodes, "rdma"))

    def _munge(self):
        # a munged on the default socket (the one Slurm uses) answers; the lab's munged on a socket
        # of its own does not count
        if subprocess.run(["munge", "-n"], capture_output=True, check=False).returncode == 0:
            return
        os.makedirs("/run/munge", exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        if not os.path.exists("/etc/munge/munge.key"):
            subprocess.run(["mungekey", "--create"], check=True)
            shutil.chown("/etc/munge/munge.key", "munge", "munge")
        started = subprocess.run(["runuser", "-u", "munge", "--", _sbin("munged")], capture_output=True, text=True, check=False)
        # another test process (an xdist worker) may have started it a moment before: what counts is
        # that one answers
        if started.returncode != 0 and subprocess.run(["munge", "-n"], capture_output=True, check=False).returncode != 0:
            raise RuntimeError("munged did not start: %s" % started.stderr)

    def start(self, timeout=60):
        self.write_conf()
        self._munge()
        subprocess.run([_sbin("slurmctld"), "-f", self.conf], env=self.env, check=True)
        for name in self.nodes:
            subprocess.run([_sbin("slurmd"), "-f", self.conf, "-N", name], env=self.env, check=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
            states = dict(line.split() for line in out.splitlines() if line.strip())
            if all(states.get(name) == "idle" for name in self.nodes):
                return self
            time.sleep(1)
        raise RuntimeError("the Slurm nodes did not come up: %s\n%s" % (out, self.log()))

    def run(self, *argv, check=False):
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def log(self):
        path = os.path.join(self.dir, "slurmctld.log")
        return open(path).read()[-3000:] if os.path.exists(path) else ""

    def submit(self, node, seconds):
        """A job that stands for a training run: ``sleep`` on one node; returns its id."""
        out = self.run("sbatch", "--parsable", "-w", node, "-o", "/dev/null", "--wrap", "sleep %d" % seconds, check=True)
        job = out.stdout.strip().split(";")[0]
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.job_state(job) == "RUNNING":
                return job
            time.sleep(0.5)
        raise RuntimeError("job %s did not start: %s" % (job, self.run("squeue").stdout))

    def job_state(self, job):
        """The job's state, from squeue while it is known there, else from scontrol."""
        out = self.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()
        if out:
            return out
        out = self.run("scontrol", "show", "job", "-o", job).stdout
        for token in out.split():
            if token.startswith("JobState="):
                return token.split("=", 1)[1]
        return None

    def node(self, name):
        out = self.run("scontrol", "show", "node", "-o", name, check=True).stdout
        state = next(token.split("=", 1)[1] for token in out.split() if token.startswith("State="))
        reason = out.split(" Reason=", 1)[1].rsplit(" [", 1)[0].strip() if " Reason=" in out else None
        return state, reason

    def stop_controller(self):
        self._kill(os.path.join(self.dir, "slurmctld.pid"))

    def start_controller(self, timeout=60):
        """slurmctld again after stop_controller (the slurmd keep running) until the nodes answer."""
        subprocess.run([_sbin("slurmctld"), "-f", self.conf], env=self.env, check=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
            states = dict(line.split() for line in out.splitlines() if line.strip())
            if all(states.get(name) in ("idle", "drained", "mixed", "allocated") for name in self.nodes):
                return self
            time.sleep(1)
        raise RuntimeError("slurmctld came back without its nodes: %s\n%s" % (out, self.log()))

    def stop(self):
        for name in self.nodes:
            self._kill(os.path.join(self.dir, "slurmd-%s.pid" % name))
        self.stop_controller()

    @staticmethod
    def _kill(pidfile):
        try:
            pid = int(open(pidfile).read().strip())
        except (OSError, ValueError):
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            return
        for _attempt in range(50):
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.1)
