"""The lab's signed DOCA-style apt repository (``lab.py doca-repo``): the lab flavour of the stand-in
packages (tests/tools/ofed_standins/build.py --flavour lab), built once per state directory into
``STATE/doca-repo/repo`` with a signing key kept in ``STATE/doca-repo/gnupg``, served by
``python3 -m http.server`` on the host's 127.0.0.1 at the lab's SSH base port + 5000 (7220 for the
default lab), which the VMs reach as 10.0.2.2 (QEMU user-mode networking). ``lab.py down`` stops
the server; the built repository stays with the state directory (``down --purge`` removes it).

Releases: OLD and NEW (a working upgrade and downgrade), BROKEN (its mlnx-ofed-kernel-dkms postinst
fails). MISSING is a release the repository does not hold.
"""

import json
import os
import socket
import subprocess
import sys
import time

import procs

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(os.path.dirname(HERE), "tools", "ofed_standins", "build.py")
PORT_OFFSET = 5000  # the repository at the lab's SSH base port + this
HOST_FROM_VM = "10.0.2.2"  # QEMU user-mode networking: the host's loopback, seen from a VM
OLD, NEW, BROKEN = "3.2.1", "3.3.0", "3.4.0"
MISSING = "3.9.9"
KEY_FILE = "GPG-KEY-test.pub"


class RepoError(Exception):
    pass


def paths(state_dir):
    base = os.path.join(state_dir, "doca-repo")
    return dict(base=base, repo=os.path.join(base, "repo"), gnupg=os.path.join(base, "gnupg"),
                built=os.path.join(base, "build.json"), pid=os.path.join(base, "http.pid"),
                log=os.path.join(base, "http.log"))


def port(ssh_base_port):
    return ssh_base_port + PORT_OFFSET


def describe(built, ssh_base_port):
    """The one JSON line ``lab.py doca-repo`` prints: what the ofed role is given."""
    url = "http://%s:%d/" % (HOST_FROM_VM, port(ssh_base_port))
    return dict(url=url, versions=[OLD, NEW], key_url=url + KEY_FILE, fingerprint=built["fingerprint"],
                broken=BROKEN, missing=MISSING)


def build(state_dir):
    """Build the repository unless this state directory has it; returns build.py's JSON."""
    where = paths(state_dir)
    if os.path.exists(where["built"]) and os.path.exists(os.path.join(where["repo"], "InRelease")):
        with open(where["built"]) as handle:
            return json.load(handle)
    os.makedirs(where["base"], mode=0o700, exist_ok=True)
    argv = [sys.executable, BUILD, "doca-repo", where["repo"], "--flavour", "lab", "--version", OLD,
            "--version", NEW, "--broken", BROKEN, "--gnupghome", where["gnupg"]]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise RepoError("building the DOCA stand-in repository failed (rc %d): %s" % (
            proc.returncode, (proc.stderr or proc.stdout).strip()[-800:]))
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    tmp = where["built"] + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(built, handle)
    os.replace(tmp, where["built"])
    return built


def server_pid(state_dir):
    """The PID of this lab's repository server, or None."""
    where = paths(state_dir)
    try:
        with open(where["pid"]) as handle:
            pid = int(handle.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            cmdline = handle.read().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if b"http.server" in cmdline and where["repo"].encode() in cmdline else None


def answers(number, timeout=1.0):
    try:
        with socket.create_connection(("127.0.0.1", number), timeout=timeout):
            return True
    except OSError:
        return False


def start(state_dir, ssh_base_port, timeout=20):
    """Build (once) and serve the repository; returns the description (idempotent)."""
    built = build(state_dir)
    where = paths(state_dir)
    number = port(ssh_base_port)
    if server_pid(state_dir) is None:
        if answers(number):
            raise RepoError("port %d (the lab's DOCA repository: SSH base port + %d) is in use; free it or choose "
                            "other ports with --ssh-base-port" % (number, PORT_OFFSET))
        with open(where["log"], "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "http.server", str(number), "--bind", "127.0.0.1",
                                     "--directory", where["repo"]], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        with open(where["pid"], "w") as handle:
            handle.write("%d\n" % proc.pid)
        deadline = time.time() + timeout
        while not answers(number):
            if proc.poll() is not None or time.time() > deadline:
                raise RepoError("the DOCA repository's server did not answer on 127.0.0.1:%d (log %s)" % (
                    number, where["log"]))
            time.sleep(0.2)
    return describe(built, ssh_base_port)


def stop(state_dir, grace=5.0):
    """Stop this lab's repository server (procs.stop_pid: SIGKILL after ``grace`` seconds); returns its
    PID or None when none ran."""
    pid = server_pid(state_dir)
    if pid is not None:
        procs.stop_pid(pid, grace)
    try:
        os.unlink(paths(state_dir)["pid"])
    except FileNotFoundError:
        pass
    return pid
