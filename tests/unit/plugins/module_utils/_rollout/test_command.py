"""The command backend runs the site's own command lines with /bin/sh for real; the node and the
reason reach them only through the environment."""

import os
import subprocess

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.command import CommandBackend
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import SchedulerUnavailable


class Shell:
    """AnsibleModule.run_command as it behaves for an argv list: no shell of its own."""

    def run_command(self, argv, check_rc=False, environ_update=None, **kwargs):
        env = dict(os.environ)
        env.update(environ_update or {})
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr


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
