"""tests/lab/procs.py, the one home of how the lab stops a process (a VM's QEMU in lab.py, the DOCA
repository's server in docarepo.py): real processes, started here, so each is this test's child and
stays a zombie until the test reaps it (as a server docarepo.start started in-process does)."""

import contextlib
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import docarepo  # noqa: E402  pylint: disable=wrong-import-position
import procs  # noqa: E402  pylint: disable=wrong-import-position

# Prints "ready" once its SIGTERM disposition is set, then sleeps; IGNORE ignores SIGTERM.
CHILD = ("import signal, sys, time\n"
         "if sys.argv[1] == 'IGNORE':\n"
         "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "print('ready', flush=True)\n"
         "time.sleep(120)\n")


@contextlib.contextmanager
def child(mode="DEFAULT"):
    """The child, started and ready; killed and reaped afterwards, whatever the test did."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def zombie(proc):
    """Wait (at most 10 s) until ``proc`` has exited but is not reaped: its /proc/PID/stat says Z."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open("/proc/%d/stat" % proc.pid) as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        time.sleep(0.05)
    return False


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace():
    with child("IGNORE") as proc:
        assert procs.running(proc.pid)
        started = time.monotonic()
        assert procs.stop_pid(proc.pid, grace=1.0) is True
        took = time.monotonic() - started
        # it outlived the grace (SIGTERM ignored), then SIGKILL; its zombie counts as gone at once
        assert 1.0 <= took < 1.0 + procs.KILL_WAIT, took
        assert proc.wait(timeout=5) == -9


def test_a_child_that_ends_on_sigterm_is_not_waited_for_the_whole_grace():
    # The child exits on SIGTERM but stays a zombie (nobody reaps it during stop_pid): /proc/PID is
    # still there. lab.py's old stop_pid looked at /proc/PID and waited the whole grace, then sent SIGKILL.
    with child() as proc:
        started = time.monotonic()
        assert procs.stop_pid(proc.pid, grace=8.0) is True
        assert time.monotonic() - started < 4.0
        assert os.path.exists("/proc/%d" % proc.pid)  # the zombie, not yet reaped
        assert proc.wait(timeout=5) == -15  # SIGTERM ended it, not SIGKILL


def test_a_zombie_child_is_not_running():
    with child() as proc:
        proc.terminate()
        assert zombie(proc)
        assert os.path.exists("/proc/%d" % proc.pid)
        assert not procs.running(proc.pid)


def test_a_pid_that_is_already_gone_is_no_error():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid names no process now
    assert not procs.running(proc.pid)
    started = time.monotonic()
    assert procs.stop_pid(proc.pid, grace=5.0) is True
    assert time.monotonic() - started < 1.0


def test_the_doca_repository_server_is_stopped_through_it(tmp_path):
    # docarepo.stop finds its server by the pid file and the command line (http.server serving the
    # repository directory), stops it and removes the pid file; no repository build needed for that
    state = str(tmp_path)
    where = docarepo.paths(state)
    os.makedirs(where["repo"])
    server = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1",
                               "--directory", where["repo"]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(where["pid"], "w") as handle:
            handle.write("%d\n" % server.pid)
        deadline = time.monotonic() + 10  # its /proc/PID/cmdline is the server's once it has exec'd
        while docarepo.server_pid(state) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert docarepo.server_pid(state) == server.pid
        started = time.monotonic()
        assert docarepo.stop(state, grace=8.0) == server.pid
        assert time.monotonic() - started < 4.0  # its zombie (this test's child) counts as stopped
        assert not procs.running(server.pid)
        assert not os.path.exists(where["pid"]) and docarepo.server_pid(state) is None
        assert docarepo.stop(state) is None  # none running: nothing to stop
    finally:
        server.kill()
        server.wait()


def test_lab_py_runs_as_a_script_with_it():
    # lab.py is run as `python3 tests/lab/lab.py ...`: tests/lab is then first on sys.path, procs with it
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tests", "lab", "lab.py"), "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "doca-repo" in proc.stdout
