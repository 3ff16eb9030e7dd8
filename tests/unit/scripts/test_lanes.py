"""scripts/lib/lanes.sh, the named jobs in lanes that the molecule tier's scenarios and test-all.sh's
static tiers run in: real bash and flock, jobs made of sleep, echo, false and files the jobs leave for
one another (a job that waits for another's file proves the two ran at once)."""

import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# JOBS=$DIR: files the jobs leave. `meet A B`: say A has started, then wait (at most 20 s) for B's start.
# `busy`: count itself among the jobs running now (under a lock), the highest count kept in $JOBS/peak.
FAKES = r"""
meet() { touch "$JOBS/$1.started"; for _ in $(seq 200); do [ -e "$JOBS/$2.started" ] && return 0; sleep 0.1; done; echo "no $2"; return 1; }
busy() {
  ( flock 8; n=$(( $(cat "$JOBS/now" 2>/dev/null || echo 0) + 1 )); echo $n > "$JOBS/now"
    [ "$n" -le "$(cat "$JOBS/peak" 2>/dev/null || echo 0)" ] || echo $n > "$JOBS/peak" ) 8>"$JOBS/lock"
  sleep 0.3
  ( flock 8; echo $(( $(cat "$JOBS/now") - 1 )) > "$JOBS/now" ) 8>"$JOBS/lock"
}
job() {
  case $1 in
    a) busy; meet a b; echo "a's output"; echo "a's complaint" >&2 ;;
    b) busy; meet b a; echo "b's output" ;;
    slow) busy; sleep 1; echo "slow's output" ;;
    bad) echo "bad before"; false; echo "bad after (errexit did not stop it)" ;;
    three) echo "three's output"; return 3 ;;
    *) busy; echo "$1's output" ;;
  esac
}
"""


def bash(script, tmp_path, env=None, timeout=120):
    """``script`` in bash after scripts/lib/bootstrap.sh (log, errexit, nounset) and lanes.sh."""
    jobs = tmp_path / "jobs"
    jobs.mkdir(exist_ok=True)
    return subprocess.run(["bash", "-c", "source scripts/lib/bootstrap.sh; source scripts/lib/lanes.sh\n" + FAKES + script],
                          capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO,
                          env=dict(os.environ, JOBS=str(jobs), DIR=str(tmp_path / "logs"), **(env or {})))


def results(tmp_path, names):
    return {name: subprocess.run(["bash", "-c", 'source scripts/lib/lanes.sh; lanes_result "$0" "$1"',
                                  str(tmp_path / "logs"), name], capture_output=True, text=True, cwd=REPO,
                                 check=True).stdout.split() for name in names}


def test_two_lanes_run_two_jobs_at_once_and_never_more(tmp_path):
    # a and b each wait for the other's start: they pass only when both run at once
    proc = bash('lanes_run "$DIR" 2 job job a b c d e; lanes_print "$DIR" job a b c d e', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "jobs" / "peak").read_text().strip() == "2"
    assert all(rc == "0" and took.isdigit() for took, rc in results(tmp_path, "abcde").values())
    for name in "abcde":
        assert re.search(r"^==> job %s: ok in \d+ s$" % name, proc.stdout, re.M), proc.stdout


def test_one_lane_runs_one_job_at_a_time(tmp_path):
    proc = bash('lanes_run "$DIR" 1 job job c slow d', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "jobs" / "peak").read_text().strip() == "1"


def test_each_jobs_output_is_kept_apart_and_printed_in_the_order_asked(tmp_path):
    # slow ends last (c, d take the second lane meanwhile) but is printed first, as asked
    proc = bash('lanes_run "$DIR" 2 job job slow c d; lanes_print "$DIR" job slow c d', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    logs = tmp_path / "logs"
    assert (logs / "slow.log").read_text() == "slow's output\n"
    assert (logs / "c.log").read_text() == "c's output\n"
    ends = re.findall(r"^==> job (\w+): ok in", proc.stdout, re.M)
    assert ends.index("slow") > ends.index("c")
    printed = proc.stdout[proc.stdout.index("==> job: slow"):]
    assert printed.split("\n\n") == ["==> job: slow\nslow's output", "==> job: c\nc's output", "==> job: d\nd's output\n"]


def test_stderr_goes_to_the_jobs_log_too(tmp_path):
    proc = bash('lanes_run "$DIR" 2 job job a b', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "logs" / "a.log").read_text() == "a's output\na's complaint\n"
    assert "complaint" not in proc.stdout + proc.stderr


def test_failures_are_recorded_and_the_others_still_run(tmp_path):
    proc = bash('lanes_run "$DIR" 2 job job bad three c d; lanes_print "$DIR" job bad three c d ghost', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # lanes_run reports, the caller decides
    found = results(tmp_path, ["bad", "three", "c", "d", "ghost"])
    assert [found[name][1] for name in ("bad", "three", "c", "d")] == ["1", "3", "0", "0"]
    assert found["ghost"] == ["?", "?"]  # never run: no record
    # each job runs with errexit: bad stopped at its `false`
    assert (tmp_path / "logs" / "bad.log").read_text() == "bad before\n"
    assert re.search(r"^==> job bad: FAILED \(rc=1\) in \d+ s$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^==> job three: FAILED \(rc=3\) in \d+ s$", proc.stdout, re.M), proc.stdout
    assert "==> job: ghost\njob ghost left no output\n" in proc.stdout


def test_the_log_folder_starts_empty(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "stale.log").write_text("an earlier run's")
    proc = bash('lanes_run "$DIR" 2 job job c', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(os.listdir(logs)) == ["c.log", "c.time", "queue", "queue.lock"]


@pytest.mark.parametrize("lanes", ["0", "two", "-1", ""])
def test_a_lane_count_that_is_no_whole_number_is_refused(tmp_path, lanes):
    proc = bash('lanes_run "$DIR" "%s" job job c' % lanes, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "lanes_run: LANES must be a whole number, 1 or more (not '%s')" % lanes
    assert not (tmp_path / "logs").exists()


# ------------------------------------------------------------------- the molecule tier on the lanes


def fake_molecule_tree(tmp_path, scenarios):
    """A checkout of fake scenarios (the base image's build an echo) and `molecule` on PATH that
    fails the scenario `tuning` with rc 4."""
    root = tmp_path / "root"
    (root / "molecule" / "shared").mkdir(parents=True)
    (root / "molecule" / "shared" / "build-image.sh").write_text("echo 'base image: cached'\n")
    for name in scenarios:
        (root / "molecule" / name).mkdir()
        (root / "molecule" / name / "molecule.yml").write_text("---\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    molecule = bindir / "molecule"
    molecule.write_text('#!/bin/sh\necho "molecule $* in $PWD"\n[ "$3" != tuning ] || exit 4\nsleep 0.2\n')
    molecule.chmod(0o755)
    return root, bindir


def run_molecule_tier(tmp_path, scenarios, lanes, selected=""):
    root, bindir = fake_molecule_tree(tmp_path, scenarios)
    script = ('source scripts/lib/tier-molecule.sh; ensure_apt() { :; }; REPO_ROOT="$ROOT"; BUILD_DIR="$ROOT/build"; '
              'tier_molecule')
    return root, bash(script, tmp_path, env=dict(ROOT=str(root), PATH="%s:%s" % (bindir, os.environ["PATH"]),
                                                 RDMAOPS_MOLECULE_LANES=lanes, RDMAOPS_MOLECULE_SCENARIOS=selected))


def test_the_molecule_tier_runs_its_scenarios_in_lanes_longest_first(tmp_path):
    root, proc = run_molecule_tier(tmp_path, ["tuning", "extra", "ofed_doca", "harness"], "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # the order by cost: ofed_doca, harness, tuning (MOLECULE_COST_ORDER), then those it does not list
    assert "==> molecule scenarios, 2 at once: ofed_doca harness tuning extra\n" in proc.stdout
    logs = root / "build" / "molecule-logs"
    assert (logs / "harness.log").read_text() == "molecule test -s harness in %s\n" % root
    printed = re.findall(r"^==> molecule scenario: (\w+)\nmolecule test -s \1 in ", proc.stdout, re.M)
    assert printed == ["ofed_doca", "harness", "tuning", "extra"]
    rows = proc.stdout[proc.stdout.index("==> molecule scenarios\n"):].splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["(base", "ofed_doca", "harness", "tuning", "extra", "(all,"]
    assert re.fullmatch(r"  tuning +\d+s FAILED \(rc=4\)", rows[3]) and re.fullmatch(r"  extra +\d+s ok", rows[4])
    assert re.fullmatch(r"  \(all, 2 at once\) +\d+s", rows[5])
    assert proc.stderr.strip() == "failed scenarios: tuning"


def test_the_molecule_tier_refuses_a_lane_count_before_it_builds_anything(tmp_path):
    root, proc = run_molecule_tier(tmp_path, ["harness"], "none", selected="harness")
    assert proc.returncode == 2
    assert "RDMAOPS_MOLECULE_LANES: a whole number of scenarios at once, 1 or more (not 'none')" in proc.stderr
    assert "base image" not in proc.stdout and not (root / "build").exists()


# -------------------------------------------------------- test-all.sh's static tiers run at once


def tier_together_functions():
    """tier_together and its job function as test-all.sh defines them (the script itself runs the
    tiers when it is run, so its functions are taken out of it)."""
    with open(os.path.join(REPO, "scripts", "test-all.sh")) as handle:
        text = handle.read()
    together = re.search(r"^tier_together\(\) \{\n.*?^\}\n", text, re.M | re.S)
    by_name = re.search(r"^_tier_by_name\(\) .*\n", text, re.M)
    assert together and by_name
    return by_name.group(0) + together.group(0)


def run_together(tmp_path, tiers, *names):
    """tier_together NAME... with ``tiers`` (shell code: the tier functions) for the real tiers."""
    script = tier_together_functions() + 'BUILD_DIR="$JOBS/build"; TIMINGS=()\n' + tiers + "tier_together " + " ".join(names)
    return bash(script, tmp_path)


def test_the_static_tiers_run_sanity_beside_the_others_and_report_each(tmp_path):
    # sanity and lint wait for each other (two lanes); docs fails; the output comes in the order asked
    proc = run_together(tmp_path, 'tier_sanity() { busy; meet sanity lint; echo "sanity ran"; }\n'
                                  'tier_lint() { busy; meet lint sanity; echo "lint ran"; }\n'
                                  'tier_docs() { busy; echo "docs before"; false; echo "docs after"; }\n',
                        "lint", "sanity", "docs")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (tmp_path / "jobs" / "peak").read_text().strip() == "2"
    logs = tmp_path / "jobs" / "build" / "tier-logs"
    assert (logs / "docs.log").read_text() == "docs before\n"
    printed = re.findall(r"^==> tier: (\w+)\n(.*)$", proc.stdout, re.M)
    assert printed == [("lint", "lint ran"), ("sanity", "sanity ran"), ("docs", "docs before")]
    rows = proc.stdout[proc.stdout.index("==> timings of the tiers run at once\n"):].splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["lint", "sanity", "docs", "(lint"]
    assert re.fullmatch(r"docs +\d+s  FAILED", rows[2]) and re.fullmatch(r"lint +\d+s", rows[0])
    assert re.fullmatch(r"\(lint sanity docs at once\) +\d+s", rows[3])


def test_the_static_tiers_without_sanity_run_one_after_another(tmp_path):
    proc = run_together(tmp_path, 'tier_lint() { busy; echo "lint ran"; }\ntier_docs() { busy; echo "docs ran"; }\n',
                        "lint", "docs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "jobs" / "peak").read_text().strip() == "1"
    assert re.findall(r"^==> tier: (\w+)$", proc.stdout, re.M) == ["lint", "docs"]
