"""Run ansible / ansible-playbook from tests, against this checkout as rdmaops.roce."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def ansible_env(extra=None):
    """The environment for an ansible command: this checkout as the collection, quiet, no colour."""
    env = dict(os.environ)
    env.pop("ANSIBLE_CONFIG", None)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.environ["RDMAOPS_TEST_COLLECTIONS_ROOT"],
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
        ANSIBLE_HOST_KEY_CHECKING="0",
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
