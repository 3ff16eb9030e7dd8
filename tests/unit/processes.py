"""Whether processes a test started are still there (a command killed with its process group)."""

import time


def alive(pid):
    """Whether ``pid`` runs (a zombie waiting for its parent counts as ended)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pids, seconds=5):
    """True once none of ``pids`` runs, waiting at most ``seconds``."""
    deadline = time.time() + seconds
    while any(alive(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.1)
    return not any(alive(pid) for pid in pids)
