"""Stopping a process the lab started (a VM's QEMU, the DOCA repository's HTTP server): one home for
lab.py and docarepo.py. Standard library only, and it imports no lab module, so any of them can use it
(lab.py imports docarepo.py, which therefore cannot import lab.py back).
"""

import contextlib
import os
import signal
import time

KILL_WAIT = 5.0  # seconds a process is given to go after SIGKILL


def running(pid):
    """Whether ``pid`` is a process that has not exited. A zombie (exited, its parent has not reaped
    it yet) has: its memory, sockets and files are released; only /proc/PID is left."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def gone_within(pid, seconds):
    """Wait at most ``seconds`` for ``pid`` to stop running; whether it did."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def stop_pid(pid, grace=10.0):
    """SIGTERM, then SIGKILL when ``pid`` still runs after ``grace`` seconds, then wait (at most
    KILL_WAIT seconds) for it to go. A pid that is already gone is no error. Whether it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if gone_within(pid, grace):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return gone_within(pid, KILL_WAIT)
