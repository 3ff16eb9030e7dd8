"""Run ansible / ansible-playbook from tests, against this checkout as rdmaops.roce.

``run`` gives the raw process; ``adhoc`` and ``playbook`` run against localhost with the
``ansible.posix.json`` callback, so tests assert on module results and play stats, not on
screen text.  ``tree_env`` points modules at a recorded host tree and its stub tools.
"""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
JSON_CALLBACK = dict(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")


def ansible_env(extra=None):
    """The environment for an ansible command: this checkout as the collection, quiet, no colour."""
    env = dict(os.environ)
    env.pop("ANSIBLE_CONFIG", None)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.environ["RDMAOPS_TEST_COLLECTIONS_ROOT"],
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
        ANSIBLE_HOST_KEY_CHECKING="0",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_NOCOLOR="1",
    )
    env.update(extra or {})
    return env


def run(tool, args, env_extra=None, timeout=300):
    """Run ``ansible``/``ansible-playbook``/... from the test's virtualenv; never raises on rc."""
    argv = [os.path.join(BIN, tool)] + [str(arg) for arg in args]
    return subprocess.run(
        argv, env=ansible_env(env_extra), capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO
    )


def tree_env(root, bindirs):
    """RDMAOPS_HOST_ROOT and a PATH whose first entries are the tree's stub tools."""
    return dict(RDMAOPS_HOST_ROOT=str(root), PATH=os.pathsep.join([str(b) for b in bindirs] + [os.environ["PATH"]]))


def _flags(check, diff):
    return (["--check"] if check else []) + (["--diff"] if diff else [])


def _json(proc, what):
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from %s (rc=%d):\n%s\n%s" % (what, proc.returncode, proc.stdout, proc.stderr))


def adhoc(module, args, env, check=False, diff=False):
    """``ansible localhost -m module -a args``; return (rc, the localhost result)."""
    argv = ["localhost", "-m", module, "-e", "ansible_python_interpreter=" + sys.executable]
    argv += (["-a", args] if args else []) + _flags(check, diff)
    proc = run("ansible", argv, env_extra=dict(JSON_CALLBACK, **env), timeout=180)
    return proc.returncode, _json(proc, "ansible")["plays"][0]["tasks"][0]["hosts"]["localhost"]


def playbook(path, env, extra_vars=None, check=False, diff=False):
    """``ansible-playbook path`` against localhost; return (rc, {task name: result}, stats)."""
    argv = ["-i", "localhost,", "-c", "local", str(path), "-e", "ansible_python_interpreter=" + sys.executable]
    argv += (["-e", json.dumps(extra_vars)] if extra_vars else []) + _flags(check, diff)
    proc = run("ansible-playbook", argv, env_extra=dict(JSON_CALLBACK, **env))
    data = _json(proc, "ansible-playbook")
    tasks = {}
    for play in data["plays"]:
        for task in play["tasks"]:
            tasks[task["task"]["name"]] = task["hosts"].get("localhost")
    return proc.returncode, tasks, data["stats"].get("localhost", {})
