"""The NVUE API stand-in (tests/tools/nvue_standin) for tests: started on 127.0.0.1, stopped after.

``standin(version, ...)`` is a context manager giving a running :class:`NvueStandin`;
``inventory(path, port, ...)`` writes an inventory whose host ``leaf01`` reaches it the way a
Cumulus switch is reached (connection ansible.netcommon.httpapi, ansible_network_os
rdmaops.roce.nvue), and ``playbook`` runs ansible-playbook against it with the JSON callback.
"""

import contextlib
import json
import os
import sys

import yaml

import ansiblerun

sys.path.insert(0, os.path.join(ansiblerun.REPO, "tests", "tools", "nvue_standin"))
import standin as _standin  # noqa: E402  (the stand-in lives with the other test tools)

NvueStandin = _standin.NvueStandin
validate = _standin.validate
USER, PASSWORD = "cumulus", "CumulusLinux!"


@contextlib.contextmanager
def standin(version="5.12", **kwargs):
    switch = NvueStandin(version, USER, PASSWORD, **kwargs)
    switch.start()
    try:
        yield switch
    finally:
        switch.stop()


def host_vars(switch, **extra):
    """The inventory variables of a Cumulus leaf reached over NVUE's REST API (here: the stand-in)."""
    hostvars = dict(
        ansible_host="127.0.0.1",
        ansible_connection="ansible.netcommon.httpapi",
        ansible_network_os="rdmaops.roce.nvue",
        ansible_httpapi_port=switch.server.server_address[1],
        ansible_httpapi_use_ssl=False,
        ansible_user=USER,
        ansible_password=PASSWORD,
        ansible_nvue_poll_interval=0.05,
        ansible_nvue_apply_timeout=3,
        ansible_python_interpreter=sys.executable,
    )
    hostvars.update(extra)
    return hostvars


def inventory(path, switch, **extra):
    data = {"all": {"hosts": {"leaf01": host_vars(switch, **extra)},
                    "children": {"leaf_cumulus": {"hosts": {"leaf01": None}}}}}
    path.write_text(yaml.safe_dump(data))
    return path


def playbook(playbook_path, inventory_path, tmp_path, check=False, extra_vars=None):
    """``ansible-playbook``; returns (rc, [(task name, leaf01 result)], stats of leaf01)."""
    argv = ["-i", str(inventory_path), str(playbook_path)] + (["--check"] if check else [])
    argv += ["--diff"] + (["-e", json.dumps(extra_vars)] if extra_vars else [])
    env = dict(ansiblerun.JSON_CALLBACK,
               ANSIBLE_PERSISTENT_CONTROL_PATH_DIR=str(tmp_path / "pc"),
               ANSIBLE_PERSISTENT_COMMAND_TIMEOUT="30",
               ANSIBLE_PERSISTENT_CONNECT_TIMEOUT="30")
    proc = ansiblerun.run("ansible-playbook", argv, env_extra=env, timeout=240)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from ansible-playbook (rc=%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    tasks = []
    for play in data["plays"]:
        for task in play["tasks"]:
            tasks.append((task["task"]["name"], task["hosts"].get("leaf01")))
    return proc.returncode, tasks, data["stats"].get("leaf01", {})


def revisions_created(switch):
    return [path for method, path, query, body in switch.requests if method == "POST" and path.endswith("/revision")]
