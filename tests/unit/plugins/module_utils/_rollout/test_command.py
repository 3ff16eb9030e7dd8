"""The command backend runs the site's own command lines with /bin/sh for real; the node and the
reason reach them only through the environment."""

import os
import shutil
import subprocess
import time

import pytest

import processes
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import KILL_AFTER, CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.command import CommandBackend
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import COMMAND_TIMEOUT, SchedulerUnavailable


class Shell:
    """AnsibleModule.run_command as it behaves for an argv list: no shell of its own, output decoded
    as UTF-8 with the error handler asked for (Ansible's default: surrogate escapes)."""

    def __init__(self):
        self.argvs = []

    def get_bin_path(self, tool):
        return tool if os.path.isabs(tool) else shutil.which(tool)

    def run_command(self, argv, check_rc=False, environ_update=None, errors="surrogateescape", **kwargs):
        self.argvs.append(list(argv))
        env = dict(os.environ)
        env.update(environ_update or {})
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
        return done.returncode, done.stdout.decode("utf-8", errors), done.stderr.decode("utf-8", errors)


@pytest.fixture
def site(tmp_path):
    """A tiny scheduler of files: busy/<node> lists jobs, drained/<node> holds the reason."""
    (tmp_path / "busy").mkdir()
    (tmp_path / "drained").mkdir()
    d = str(tmp_path)
    return tmp_path, dict(
        busy='cat "%s/busy/$RDMAOPS_NODE" 2>/dev/null || true' % d,
        drain='printf "%%s" "$RDMAOPS_REASON" > "%s/drained/$RDMAOPS_NODE"' % d,
        resume='rm -f "%s/drained/$RDMAOPS_NODE"' % d,
        state='if [ -e "%s/drained/$RDMAOPS_NODE" ]; then printf "drained %%s" "$(cat "%s/drained/$RDMAOPS_NODE")"; '
              'else echo available; fi' % (d, d),
    )


def test_query_drain_resume_through_the_sites_commands(site):
    root, commands = site
    (root / "busy" / "gpu1").write_text("4711 train-llm\n")
    backend = CommandBackend(Shell(), commands)
    states = backend.query(["gpu1", "gpu2"])
    assert states["gpu1"].busy and states["gpu1"].jobs[0]["id"] == "4711 train-llm"
    assert not states["gpu2"].busy and not states["gpu2"].drained
    backend.drain(["gpu2"], "rdmaops.roce: nic mtu")
    assert (root / "drained" / "gpu2").read_text() == "rdmaops.roce: nic mtu"
    state = backend.query(["gpu2"])["gpu2"]
    assert state.drained and state.ours and state.reason == "rdmaops.roce: nic mtu"
    backend.resume(["gpu2"])
    assert not (root / "drained" / "gpu2").exists()


def test_a_reason_is_never_run_as_part_of_the_command(site):
    root, commands = site
    backend = CommandBackend(Shell(), commands)
    hostile = 'rdmaops.roce: x"; touch %s/pwned; echo "$(touch %s/pwned2)' % (root, root)
    backend.drain(["gpu1"], hostile)
    assert (root / "drained" / "gpu1").read_text() == hostile
    assert not (root / "pwned").exists() and not (root / "pwned2").exists()


def test_a_failing_command_is_a_scheduler_that_does_not_answer(site):
    _root, commands = site
    commands["busy"] = "echo 'mysched: connection refused' >&2; exit 3"
    with pytest.raises(SchedulerUnavailable) as info:
        CommandBackend(Shell(), commands).query(["gpu1"])
    assert "busy command failed for gpu1 (rc=3): mysched: connection refused" in info.value.msg


@pytest.mark.parametrize("commands, words", [
    (dict(busy="true", drain="true"), "rdmaops_scheduler_commands.resume"),
    (dict(busy="true", drain="true", resume="true", drian="true"), "unknown key drian"),
    (dict(busy="true", drain=["x"], resume="true"), "must be a command line"),
])
def test_incomplete_or_misspelt_commands_are_refused(commands, words):
    with pytest.raises(InputError) as info:
        CommandBackend(Shell(), commands)
    assert words in info.value.msg


def test_a_state_command_printing_something_else_is_refused(site):
    _root, commands = site
    commands["state"] = "echo maybe"
    with pytest.raises(Exception) as info:
        CommandBackend(Shell(), commands).query(["gpu1"])
    assert "printed 'maybe'" in str(info.value)


def test_a_hanging_busy_command_is_killed_with_its_process_group_and_named(site, tmp_path):
    """The site's busy command starts a child and hangs: after the bound both are gone, and the
    failure names the command, the node and the bound."""
    _root, commands = site
    pids = tmp_path / "pids"
    commands["busy"] = 'sleep 300 & echo $! > %s; echo $$ >> %s; sleep 300' % (pids, pids)
    backend = CommandBackend(CommandRunner(Shell()), commands, timeout=2)
    started = time.time()
    with pytest.raises(SchedulerUnavailable) as info:
        backend.query(["gpu1"])
    took = time.time() - started
    assert 2 <= took < 2 + KILL_AFTER + 3, took
    msg = info.value.msg
    assert "busy command for gpu1 did not finish within 2 s (rdmaops_scheduler_timeout)" in msg
    assert "sleep 300" in msg and "nothing was drained or changed" in msg
    assert info.value.details["timed_out"] is True and info.value.details["timeout"] == 2
    started_pids = [int(pid) for pid in pids.read_text().split()]
    assert len(started_pids) == 2 and processes.gone(started_pids), started_pids


def test_a_drain_command_that_hangs_may_have_taken_effect_and_says_so(site):
    _root, commands = site
    commands["drain"] = "sleep 300"
    with pytest.raises(SchedulerUnavailable) as info:
        CommandBackend(CommandRunner(Shell()), commands, timeout=1).drain(["gpu1"], "rdmaops.roce: x")
    assert "drain command for gpu1 did not finish within 1 s" in info.value.msg
    assert "whether it took effect is unknown" in info.value.msg
    assert info.value.details["left_changed"] == "unknown"


def test_a_reason_that_is_not_utf8_is_read_with_replacement(site):
    root, commands = site
    (root / "drained" / "gpu1").write_bytes(b"disk \xff\xfe replacement, ticket 4711")
    state = CommandBackend(CommandRunner(Shell()), commands).query(["gpu1"])["gpu1"]
    assert state.reason == "disk \ufffd\ufffd replacement, ticket 4711"
    assert state.drained and state.foreign and not state.ours
    state.reason.encode("utf-8")  # what Ansible's controller insists on


def test_a_state_command_that_prints_more_lines_is_read_from_its_first(site):
    _root, commands = site
    commands["state"] = "printf 'drained disk replacement\\nNodeName=gpu1 State=IDLE\\n'"
    state = CommandBackend(CommandRunner(Shell()), commands).query(["gpu1"])["gpu1"]
    assert state.drained and state.reason == "disk replacement" and state.foreign


def test_a_module_is_still_accepted_in_place_of_a_runner(site):
    _root, commands = site
    shell = Shell()
    backend = CommandBackend(shell, commands)
    backend.query(["gpu1"])
    assert shell.argvs[0][0].endswith("/timeout") and shell.argvs[0][2] == "%ds" % COMMAND_TIMEOUT
