"""rdmaops.roce.validate_probe's engine (_validate/probe.py) with real processes: the commands run by a
real sh with Ansible's until/retries rule (what the role's perftest clients used as tasks), and the
perftest server jobs started detached and ended with every process of their session."""

import os
import subprocess
import time

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


def _alive(pid):
    read = probe._stat(pid)  # pylint: disable=protected-access
    return read is not None and read[0] != "Z"


def _wait_for(path, seconds=10):
    end = time.time() + seconds
    while time.time() < end and not path.exists():
        time.sleep(0.05)
    return path.exists()


def test_servers_run_detached_and_stop_ends_every_process_of_their_session(tmp_path):
    jobs = tmp_path / "jobs"
    marks = tmp_path / "marks"
    marks.mkdir()
    # a server nobody comes to, itself under timeout (a process group of its own inside the session),
    # and one that finishes by itself
    waiting = ["timeout", "60", "sh", "-c", 'echo $$ > "%s/waiting"; exec sleep 60' % marks]
    served = ["sh", "-c", 'echo $$ > "%s/served"' % marks]
    started = probe.start_jobs([{"name": "abc-0-ib_write_bw", "argv": waiting, "attempts": 1},
                                {"name": "abc-0-ib_write_lat", "argv": served, "attempts": 1}], str(jobs), 120)
    assert started == ["abc-0-ib_write_bw", "abc-0-ib_write_lat"]
    assert oct(os.stat(str(jobs)).st_mode & 0o777) == "0o700"
    assert _wait_for(marks / "waiting") and _wait_for(marks / "served")
    sleeper = int((marks / "waiting").read_text())
    sid = int((jobs / "abc-0-ib_write_bw.pid").read_text())
    assert _alive(sleeper) and probe._stat(sleeper)[1] == sid and os.getsid(0) != sid  # pylint: disable=protected-access

    stopped = probe.stop_jobs([{"name": "abc-0-ib_write_bw", "wait": False}, {"name": "abc-0-ib_write_lat", "wait": True},
                               {"name": "abc-1-ib_write_bw", "wait": True}], str(jobs), 20)
    assert stopped == {"abc-0-ib_write_bw": "stopped", "abc-0-ib_write_lat": "exited", "abc-1-ib_write_bw": "not started"}
    assert not _alive(sleeper) and probe.session_members(sid) == []
    assert not jobs.exists()  # nothing left behind


def test_a_waited_server_gets_its_grace_then_is_ended(tmp_path):
    jobs = str(tmp_path / "jobs")
    probe.start_jobs([{"name": "n-0-rail0", "argv": ["sleep", "60"]}], jobs, 120)
    begun = time.time()
    assert probe.stop_jobs([{"name": "n-0-rail0"}], jobs, 1) == {"n-0-rail0": "stopped"}
    assert 1 <= time.time() - begun < 10


@pytest.mark.parametrize("name", ["../etc/x", "a b", "-x", "", "a/b", "x" * 101, None])
def test_a_bad_job_name_is_refused_before_anything_starts(tmp_path, name):
    with pytest.raises(probe.ProbeError, match="job name"):
        probe.start_jobs([{"name": "ok", "argv": ["true"]}, {"name": name, "argv": ["true"]}], str(tmp_path / "jobs"), 10)
    assert not (tmp_path / "jobs").exists()
