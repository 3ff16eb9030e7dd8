"""The lab's Slurm: a real slurmctld on the host, slurmd on every VM, over the management network.

Debian's slurm-wlm and munge, nothing mocked. Slurm talks over the VMs' management network (QEMU's
user-mode network), as a cluster's scheduler does, never over the RDMA fabric the collection
reconfigures (two rails in one subnet, links reset by the rollout it is there to test):

* slurmctld runs on the host at port SSH base + SLURM_PORT_OFFSET (6220 for the default lab); a VM
  reaches it at 10.0.2.2, QEMU's address for the host's loopback;
* each VM's slurmd listens on SSH base + SLURM_PORT_OFFSET + N, forwarded from 127.0.0.1 on the
  host (lab.py's QEMU command line), so the nodes' NodeAddr is 127.0.0.1 with a port each, and
  messages go to each node directly (TreeWidth: no node forwards to another, which 127.0.0.1 would
  send back to itself).

Partition ``rdma`` holds vm1..vm4 (a VM that is not running is simply down; the rollout counts only
the nodes of its play).

The lab has its own munge key (made per state directory, 0400) and its own munged on the host
(its socket in /run/rdmaops-lab-munge-<id>), so a Slurm the host may run is left alone and its key never
reaches a VM. Client commands run with the lab's SLURM_CONF:

    python3 tests/lab/lab.py slurm sbatch -w vm1 -o /dev/null --wrap 'sleep 90'
    python3 tests/lab/lab.py slurm sinfo -N

Standard library only; used by lab.py (up, status, down and the ``slurm`` command).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import socket
import subprocess
import time

from procs import stop_pid

SLURM_PORT_OFFSET = 4000  # slurmctld at the lab's SSH base port + this, vmN's slurmd at + N
HOST_FROM_VM = "10.0.2.2"  # QEMU user-mode networking: the host's loopback, seen from a VM
NODES = ("vm1", "vm2", "vm3", "vm4")
PARTITION = "rdma"
HOST_PACKAGES = {"slurmctld": "slurmctld", "munged": "munge", "sbatch": "slurm-client", "scontrol": "slurm-client"}

# What every test Slurm of this project runs with (the lab's and tests/unit/slurmcluster.py's): root
# daemons, munge, no cgroups, no accounting.
SLURM_DEFAULTS = (
    ("SlurmUser", "root"), ("SlurmdUser", "root"), ("AuthType", "auth/munge"),
    ("ProctrackType", "proctrack/linuxproc"), ("TaskPlugin", "task/none"),
    ("SchedulerType", "sched/backfill"), ("SelectType", "select/linear"),
    "# a node that comes back (a VM the lab reboots) returns to service by itself; a drain someone set stays",
    ("ReturnToService", 2), ("SlurmdTimeout", 300), ("MpiDefault", "none"),
    ("JobCompType", "jobcomp/none"), ("JobAcctGatherType", "jobacct_gather/none"),
)


def render_slurm_conf(cluster, controller, port, settings, nodes, partition, header=()):
    """slurm.conf text: the cluster's name, its controller (``host(address)``) and port,
    :data:`SLURM_DEFAULTS`, then ``settings`` in order (each ``(key, value)`` or a ``# comment`` line),
    one NodeName line per ``(name, [(key, value), ...])`` of ``nodes`` and the partition that holds
    them all (the default, no time limit, up). ``header`` lines come first."""
    lines = list(header) + ["ClusterName=%s" % cluster, "SlurmctldHost=%s" % controller, "SlurmctldPort=%d" % port]
    lines += [item if isinstance(item, str) else "%s=%s" % item for item in tuple(SLURM_DEFAULTS) + tuple(settings)]
    lines += [" ".join(["NodeName=%s" % name] + ["%s=%s" % pair for pair in attributes]) for name, attributes in nodes]
    lines.append("PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP" % (partition, ",".join(node[0] for node in nodes)))
    return "\n".join(lines) + "\n"


class SlurmLabError(Exception):
    pass


def controller_port(ssh_base_port):
    return ssh_base_port + SLURM_PORT_OFFSET


def slurmd_port(ssh_base_port, index):
    """vmN's slurmd port, in the VM and forwarded from 127.0.0.1 on the host."""
    return ssh_base_port + SLURM_PORT_OFFSET + index


def render_conf(ssh_base_port, directory, host, side, socket_path=None):
    """slurm.conf text for ``side`` "host" (slurmctld, the client tools) or "vm" (slurmd)."""
    settings = [
        "# every node is 127.0.0.1 to the controller (a port each): it sends to each node itself",
        ("TreeWidth", 65533),
        ("MessageTimeout", 10),
        "# `scontrol reboot ASAP` (the rollout's way to ask for a reboot) needs a program; the lab's VMs",
        "# reboot through systemd, as a server does",
        ("RebootProgram", "/sbin/reboot"),
        "# a finished job stays in scontrol's view for an hour (default 300 s): the lab's tests read how a job",
        "# ended after a rollout that can take longer than that",
        ("MinJobAge", 3600),
        "# the host's and the VMs' files differ in their paths and munge socket only",
        ("DebugFlags", "NO_CONF_HASH"),
    ]
    if side == "host":
        settings += [("StateSaveLocation", directory + "/state"), ("SlurmctldPidFile", directory + "/slurmctld.pid"),
                     ("SlurmctldLogFile", directory + "/slurmctld.log"), ("AuthInfo", "socket=%s" % socket_path)]
    else:
        settings += [("StateSaveLocation", "/var/lib/slurm/slurmctld"), ("SlurmdSpoolDir", "/var/spool/slurmd"),
                     ("SlurmdLogFile", "/var/log/slurm/slurmd.log")]
    nodes = [(name, [("NodeAddr", "127.0.0.1"), ("Port", slurmd_port(ssh_base_port, index)), ("CPUs", 1), ("State", "UNKNOWN")])
             for index, name in enumerate(NODES, 1)]
    controller = "%s(%s)" % (host, "127.0.0.1" if side == "host" else HOST_FROM_VM)
    return render_slurm_conf("rdmaopslab", controller, controller_port(ssh_base_port), settings, nodes, PARTITION,
                             header=["# Written by tests/lab/slurmlab.py for the soft-RoCE lab; do not edit."])


def _sbin(tool):
    return shutil.which(tool) or "/usr/sbin/" + tool


def _start(argv, what, env=None):
    """Start a daemon; a failure is a SlurmLabError with what it said."""
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        raise SlurmLabError("%s did not start (exit %d): %s" % (what, proc.returncode, (proc.stderr or proc.stdout).strip()[-800:]))


def port_in_use(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def _pid_alive(pidfile, name):
    try:
        with open(pidfile, encoding="ascii") as handle:
            pid = int(handle.read().strip())
        with open("/proc/%d/comm" % pid, encoding="ascii") as handle:
            return pid if handle.read().strip() == name else None
    except (OSError, ValueError):
        return None


class SlurmLab:
    def __init__(self, state_dir, ssh_base_port, log):
        self.dir = os.path.join(state_dir, "slurm")
        self.ssh_base_port = ssh_base_port
        self.log = log
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.vm_conf = os.path.join(self.dir, "slurm.vm.conf")
        self.key = os.path.join(self.dir, "key", "munge.key")
        # munged wants every directory above its socket open to all; the state directory is root's
        # alone (0700), so the socket lives in a directory of its own, one per state directory
        self.socket_dir = "/run/rdmaops-lab-munge-%s" % hashlib.sha256(os.path.abspath(state_dir).encode()).hexdigest()[:8]
        self.socket = os.path.join(self.socket_dir, "munge.socket")

    @staticmethod
    def missing_tools():
        return sorted({pkg for tool, pkg in HOST_PACKAGES.items() if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool)})

    def env(self):
        return dict(os.environ, SLURM_CONF=self.conf)

    def run(self, argv, check=False, timeout=60):
        """A Slurm client command against the lab's controller."""
        return subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, check=check, timeout=timeout)

    # host side ---------------------------------------------------------------
    def write_files(self):
        os.makedirs(self.socket_dir, mode=0o755, exist_ok=True)
        os.chmod(self.socket_dir, 0o755)
        os.makedirs(os.path.join(self.dir, "key"), mode=0o700, exist_ok=True)
        os.makedirs(os.path.join(self.dir, "state"), mode=0o700, exist_ok=True)
        if not os.path.exists(self.key):
            fd = os.open(self.key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(1024))
        host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        changed = False
        for path, side in ((self.conf, "host"), (self.vm_conf, "vm")):
            text = render_conf(self.ssh_base_port, self.dir, host, side, self.socket)
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                with open(path + ".tmp", "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.chmod(path + ".tmp", 0o644)
                os.replace(path + ".tmp", path)
                changed = True
        return changed

    def ensure_controller(self):
        """munged and slurmctld for the lab, started unless running."""
        missing = self.missing_tools()
        if missing:
            raise SlurmLabError("the lab's Slurm controller needs Debian's %s on this host (apt-get install %s)"
                                % (", ".join(missing), " ".join(missing)))
        conf_changed = self.write_files()
        if not _pid_alive(os.path.join(self.dir, "key", "munged.pid"), "munged"):
            _start([_sbin("munged"), "--socket=" + self.socket, "--key-file=" + self.key,
                    "--pid-file=" + os.path.join(self.dir, "key", "munged.pid"), "--log-file=" + os.path.join(self.dir, "munged.log"),
                    "--seed-file=" + os.path.join(self.dir, "key", "munged.seed")], "the lab's munged")
        if not _pid_alive(os.path.join(self.dir, "slurmctld.pid"), "slurmctld"):
            port = controller_port(self.ssh_base_port)
            if port_in_use(port):
                raise SlurmLabError("port %d (the lab's slurmctld: SSH base port + %d) is in use; free it or choose other "
                                    "ports with --ssh-base-port" % (port, SLURM_PORT_OFFSET))
            # -c: no state of an earlier lab's life (a node a test left drained would be the next lab's
            # "interrupted rollout", and its first rollout would finish it: changed, not idempotent)
            _start([_sbin("slurmctld"), "-c", "-f", self.conf], "slurmctld (log %s)" % os.path.join(self.dir, "slurmctld.log"),
                   env=self.env())
            deadline = time.time() + 30
            while time.time() < deadline and self.run(["scontrol", "ping"]).returncode != 0:
                time.sleep(0.5)
            self.log("slurm: slurmctld up on port %d, %s:%d from the VMs (partition %s: %s)" % (
                controller_port(self.ssh_base_port), HOST_FROM_VM, controller_port(self.ssh_base_port), PARTITION, ",".join(NODES)))
        elif conf_changed:
            # a running controller (a lab that was up before this recipe) reads the new file
            self.run(["scontrol", "reconfigure"], check=False)

    # VM side -----------------------------------------------------------------
    def vm_script(self):
        """The shell that puts the lab's slurm.conf and munge key on a VM and (re)starts munge and
        slurmd when either changed; prints "slurm: unchanged" or "slurm: restarted"."""
        with open(self.vm_conf, "rb") as handle:
            conf = handle.read()
        with open(self.key, "rb") as handle:
            key = handle.read()
        return (
            "set -e; changed=0\n"
            "want_conf=%(conf_sha)s; want_key=%(key_sha)s\n"
            "have() { sha256sum \"$1\" 2>/dev/null | cut -d' ' -f1; }\n"
            "if [ \"$(have /etc/slurm/slurm.conf)\" != \"$want_conf\" ]; then mkdir -p /etc/slurm;"
            " echo %(conf)s | base64 -d > /etc/slurm/slurm.conf.new; chmod 644 /etc/slurm/slurm.conf.new;"
            " mv /etc/slurm/slurm.conf.new /etc/slurm/slurm.conf; changed=1; fi\n"
            "if [ \"$(have /etc/munge/munge.key)\" != \"$want_key\" ]; then"
            " (umask 077; echo %(key)s | base64 -d > /etc/munge/munge.key.new); chown munge:munge /etc/munge/munge.key.new;"
            " chmod 400 /etc/munge/munge.key.new; mv /etc/munge/munge.key.new /etc/munge/munge.key; changed=1; fi\n"
            "mkdir -p /var/log/slurm /var/spool/slurmd\n"
            "if [ $changed = 1 ] || ! systemctl -q is-active slurmd; then systemctl enable -q munge slurmd;"
            " systemctl restart munge; systemctl restart slurmd; echo 'slurm: restarted'; else echo 'slurm: unchanged'; fi\n"
        ) % {"conf_sha": hashlib.sha256(conf).hexdigest(), "key_sha": hashlib.sha256(key).hexdigest(),
             "conf": base64.b64encode(conf).decode(), "key": base64.b64encode(key).decode()}

    def node_states(self, names=NODES):
        """``{node: state}`` as sinfo reports it (e.g. idle, drained, down*), or {} when it does not answer."""
        proc = self.run(["sinfo", "-h", "-N", "-p", PARTITION, "-o", "%N %T"])
        if proc.returncode != 0:
            return {}
        states = dict(line.split(None, 1) for line in proc.stdout.splitlines() if line.strip())
        return {name: states.get(name, "unknown").strip() for name in names}

    def wait_nodes(self, names, timeout=120):
        """Wait until every named node answers slurmctld (any state but down/unknown/not responding)."""
        deadline = time.time() + timeout
        states = {}
        while time.time() < deadline:
            states = self.node_states(names)
            if states and all(not s.startswith(("down", "unk", "future")) and not s.endswith("*") for s in states.values()):
                return states
            time.sleep(2)
        raise SlurmLabError("the lab's slurmd did not register with slurmctld within %d s: %s (log: %s)" % (
            timeout, states or "sinfo did not answer", os.path.join(self.dir, "slurmctld.log")))

    def describe(self, names):
        states = self.node_states(names)
        if not states:
            return "slurm: slurmctld does not answer (%s)" % os.path.join(self.dir, "slurmctld.log")
        return "slurm: partition %s: %s" % (PARTITION, ", ".join("%s %s" % kv for kv in sorted(states.items())))

    # down --------------------------------------------------------------------
    def stop(self):
        for pidfile, name in ((os.path.join(self.dir, "slurmctld.pid"), "slurmctld"),
                              (os.path.join(self.dir, "key", "munged.pid"), "munged")):
            pid = _pid_alive(pidfile, name)
            if not pid:
                continue
            stop_pid(pid, grace=10.0)
        shutil.rmtree(self.socket_dir, ignore_errors=True)
