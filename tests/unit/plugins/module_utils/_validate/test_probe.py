"""rdmaops.roce.validate_probe's engine (_validate/probe.py) with real processes: the commands run by a
real sh, one result each as the command module reports it, with Ansible's until/retries rule when asked."""

import subprocess

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import probe


def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout, done.stderr


def counting(tmp_path, outcomes):
    """A command whose Nth run prints 'run N' and exits with outcomes[N] (the last one repeated)."""
    runs = tmp_path / "runs"
    script = ('echo run >> "%s"; n=$(wc -l < "%s"); echo "run $n"; echo "err $n" >&2; set -- %s; '
              'shift $(( n > $# ? $# - 1 : n - 1 )); exit "$1"' % (runs, runs, " ".join(str(o) for o in outcomes)))
    return ["sh", "-c", script]


def test_a_plain_command_runs_once_as_the_command_module_reports_it(tmp_path):
    sleeps = []
    results = probe.run_commands(run, [{"argv": ["sh", "-c", "printf 'a\\nb\\n\\n'; echo oops >&2; exit 3"], "item": ["vm1", "vm2"]}],
                                 sleep=sleeps.append)
    assert results == [{"item": ["vm1", "vm2"], "cmd": ["sh", "-c", "printf 'a\\nb\\n\\n'; echo oops >&2; exit 3"], "rc": 3,
                        "stdout": "a\nb", "stderr": "oops"}]
    assert sleeps == []


@pytest.mark.parametrize("outcomes, retries, attempts, runs, rc", [
    ([1, 1, 0], 5, 1, 3, 0),        # refused twice (its server not listening yet), then measured
    ([124, 0], 5, 1, 1, 124),       # hung with one attempt allowed: that is the result
    ([124, 124, 0], 5, 2, 2, 124),  # hung twice with two attempts: the second is the result
    ([124, 0], 5, 2, 2, 0),         # hung once, measured on the second attempt
    ([1, 124, 0], 6, 2, 2, 124),    # a refusal counts as a run: the hang on run 2 ends it (as until did)
    ([1], 2, 1, 3, 1),              # refused every time: 1 + retries runs, the last one's result
])
def test_retries_follow_the_tasks_until_rule(tmp_path, outcomes, retries, attempts, runs, rc):
    sleeps = []
    command = {"argv": counting(tmp_path, outcomes), "item": ["ib_write_bw", 0], "retries": retries, "delay": 5, "attempts": attempts}
    (result,) = probe.run_commands(run, [command], sleep=sleeps.append)
    assert (result["rc"], result["attempts"]) == (rc, runs)
    assert result["stdout"] == "run %d" % runs and result["stderr"] == "err %d" % runs
    assert sleeps == [5] * (runs - 1)
    assert len((tmp_path / "runs").read_text().splitlines()) == runs


def test_failed_checks_name_only_the_reads_that_had_to_pass():
    commands = [{"argv": ["sh", "-c", "exit 0"], "check": True}, {"argv": ["sh", "-c", "echo gone >&2; exit 2"], "check": True},
                {"argv": ["sh", "-c", "exit 1"]}]
    results = probe.run_commands(run, commands)
    assert probe.failed_checks(commands, results) == ["sh -c echo gone >&2; exit 2 exited 2: gone"]


def test_concurrent_commands_run_at_once_and_keep_their_order(tmp_path):
    """Each command waits for the other's mark: run one after another, the first would time out (rc 124);
    run at once (the perftest servers), both finish."""
    first, second = tmp_path / "first", tmp_path / "second"
    wait_for = 'touch "%s"; for i in $(seq 100); do [ -e "%s" ] && echo "%s" && exit 0; sleep 0.1; done; exit 124'
    commands = [{"argv": ["sh", "-c", wait_for % (first, second, "a")], "item": ["ib_write_bw", 0]},
                {"argv": ["sh", "-c", wait_for % (second, first, "b")], "item": [0, 1], "retries": 1, "attempts": 2, "delay": 0}]
    results = probe.run_concurrently(run, commands)
    assert [(r["item"], r["rc"], r["stdout"]) for r in results] == [(["ib_write_bw", 0], 0, "a"), ([0, 1], 0, "b")]
    assert results[1]["attempts"] == 1 and "attempts" not in results[0]


def test_concurrent_commands_keep_the_retry_rule_each(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sleeps = []
    commands = [{"argv": counting(tmp_path / "a", [1, 0]), "retries": 1, "attempts": 2, "delay": 0},
                {"argv": counting(tmp_path / "b", [124, 124]), "retries": 1, "attempts": 2, "delay": 0}]
    results = probe.run_concurrently(run, commands, sleep=sleeps.append)
    assert [(r["rc"], r["attempts"], r["stdout"]) for r in results] == [(0, 2, "run 2"), (124, 2, "run 2")]
    assert sleeps == [0, 0]


def test_a_concurrent_command_that_cannot_start_is_its_own_result(tmp_path):
    def refusing(argv):
        if argv[0] == "missing-tool":
            raise OSError(2, "No such file or directory: 'missing-tool'")
        return run(argv)
    results = probe.run_concurrently(refusing, [{"argv": ["missing-tool"]}, {"argv": ["sh", "-c", "echo ok"]}])
    assert results[0]["rc"] is None and "No such file" in results[0]["stderr"]
    assert (results[1]["rc"], results[1]["stdout"]) == (0, "ok")
