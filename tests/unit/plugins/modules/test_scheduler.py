"""The scheduler module as Ansible runs it: its argument spec, AnsibleModule.run_command with the
real /bin/sh and coreutils timeout, and stand-ins for scontrol and squeue on PATH that print
Slurm 22.05's recorded lines (tests/unit/fixtures/slurm) - or hang, or print a reason that is not
UTF-8. The cases of a hostile or broken cluster: a command that hangs is killed and named within
its bound; a reason that is not UTF-8 reaches the controller (which refuses invalid UTF-8 in a
result) decoded with U+FFFD."""

import json
import os
import stat
import sys
import time

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

import ansiblerun
import processes
from ansible_collections.rdmaops.roce.plugins.modules import scheduler

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "slurm")

SCONTROL = r'''#!{python}
"""scontrol show node -o: the node lines in show_node.bin (bytes, as Slurm printed them)."""
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
if os.path.exists(os.path.join(here, "hang-scontrol")):
    time.sleep(300)
if sys.argv[1:3] == ["show", "node"]:
    sys.stdout.buffer.write(open(os.path.join(here, "show_node.bin"), "rb").read()); sys.exit(0)
with open(os.path.join(here, "calls"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
'''
SQUEUE = """#!/bin/sh
# squeue: no job, or a hang (a controller that accepts the connection and never answers)
here=$(dirname "$0")
if [ -e "$here/hang-squeue" ]; then echo $$ > "$here/squeue.pid"; sleep 300; fi
exit 0
"""


def recorded(name, node):
    with open(os.path.join(FIXTURES, name)) as handle:
        return next(line for line in handle.read().splitlines() if line.startswith("NodeName=%s " % node))


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """scontrol and squeue stand-ins first on PATH; the real sh, timeout and coreutils after them."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("scontrol", SCONTROL.format(python=sys.executable)), ("squeue", SQUEUE)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755 | stat.S_IXUSR)
    (bindir / "show_node.bin").write_bytes((recorded("show_node_idle.txt", "vm1") + "\n").encode())
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    return bindir


def call(args, capsys, monkeypatch):
    """scheduler.main() with ``args``; (result, warnings, seconds)."""
    seen = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning, **kwargs: seen.append(warning))
    started = time.time()
    with patch_module_args(args), pytest.raises(SystemExit):
        scheduler.main()
    return json.loads(capsys.readouterr().out), seen, time.time() - started


def test_a_hanging_squeue_is_killed_and_named_within_the_command_timeout(tools, capsys, monkeypatch):
    (tools / "hang-squeue").write_text("")
    result, _warnings, took = call(dict(action="query", nodes=["vm1"], command_timeout=2), capsys, monkeypatch)
    assert result["failed"] is True and result["changed"] is False
    assert "squeue -h -w vm1" in result["msg"] and "did not finish within 2 s (rdmaops_scheduler_timeout)" in result["msg"]
    assert "nothing was drained or changed" in result["msg"]
    assert result["timed_out"] is True and result["timeout"] == 2
    assert took < 2 + 2 + 4, took
    assert processes.gone([int((tools / "squeue.pid").read_text())])


def test_wait_idle_with_a_3s_timeout_ends_soon_when_squeue_hangs(tools, capsys, monkeypatch):
    """The case as it was seen: wait_idle with timeout 3 and a squeue that never answers was still
    running after 30 s. Now the read ends with the wait (at least 5 s), whatever command_timeout is."""
    (tools / "hang-squeue").write_text("")
    result, _warnings, took = call(dict(action="wait_idle", nodes=["vm1"], timeout=3, poll_interval=1),
                                   capsys, monkeypatch)
    assert result["failed"] is True
    assert "did not finish within 5 s (what was left of the wait for jobs to end)" in result["msg"]
    assert took < 5 + 2 + 5, took


def test_a_hanging_site_busy_command_is_killed_and_named(tools, capsys, monkeypatch, tmp_path):
    commands = dict(busy="sleep 60", drain="true", resume="true")
    result, _warnings, took = call(dict(action="query", nodes=["gpu1"], backend="command", commands=commands,
                                        command_timeout=3), capsys, monkeypatch)
    assert result["failed"] is True
    assert "busy command for gpu1 did not finish within 3 s (rdmaops_scheduler_timeout)" in result["msg"]
    assert "sleep 60" in result["msg"]
    assert took < 3 + 2 + 4, took


@pytest.mark.parametrize("value", [0, -1])
def test_a_command_timeout_below_one_second_is_refused(tools, capsys, monkeypatch, value):
    result, _warnings, _took = call(dict(action="query", nodes=["vm1"], command_timeout=value), capsys, monkeypatch)
    assert result["failed"] is True and "command_timeout is %d" % value in result["msg"]


def test_reboot_of_a_node_someone_else_drained_is_refused_with_a_warning(tools, capsys, monkeypatch):
    (tools / "show_node.bin").write_bytes((recorded("show_node_drained_other.txt", "vm1") + "\n").encode())
    result, warnings, _took = call(dict(action="reboot", nodes=["vm1"], reason="mlxconfig next boot"),
                                   capsys, monkeypatch)
    assert "failed" not in result and result["changed"] is False and result["foreign"] == ["vm1"]
    assert not (tools / "calls").exists()  # no scontrol reboot, no scontrol update
    assert len(warnings) == 1 and "disk replacement, ticket 4711" in warnings[0]
    assert "still needs a reboot for: mlxconfig next boot" in warnings[0]


def test_a_reason_that_is_not_utf8_reaches_the_controller_decoded_with_replacement(tools):
    """Through ansible itself: the controller refuses a module result with invalid UTF-8 ("Refusing
    to deserialize an invalid UTF8 string value"), which made every query of such a node fail."""
    line = recorded("show_node_drained_other.txt", "vm1").encode().replace(b"disk replacement", b"disk \xff\xfe replacement")
    (tools / "show_node.bin").write_bytes(line + b"\n")
    rc, result = ansiblerun.adhoc("rdmaops.roce.scheduler", json.dumps(dict(action="query", nodes=["vm1"])),
                                  dict(PATH=os.environ["PATH"]))
    assert rc == 0, result
    vm1 = result["nodes"]["vm1"]
    assert vm1["reason"] == "disk \ufffd\ufffd replacement, ticket 4711"
    assert vm1["drained"] is True and vm1["foreign"] is True and vm1["ours"] is False
