"""The lab rollout scenarios' own judgement (tests/lab/rollout.py): how long two nodes were out at
once, from sinfo samples, and each concurrent run's output kept under a number of its own."""

import os
import sys
import threading

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import rollout  # noqa: E402  pylint: disable=wrong-import-position


def test_both_out_spans_measure_each_stretch_in_seconds():
    samples = [(0.0, ["vm1"]), (1.0, ["vm1", "vm2"]), (2.2, ["vm1", "vm2"]), (3.5, []),
               (4.0, ["vm2"]), (5.0, ["vm1", "vm2"]), (6.0, ["vm2"]), (9.0, ["vm1", "vm2"])]
    # 1.0 to 3.5, 5.0 to 6.0, and one still open at the last sample (counted to it)
    assert rollout.both_out_spans(samples) == [2.5, 1.0, 0.0]
    assert rollout.both_out_spans([(0.0, []), (1.0, ["vm1"])]) == []
    assert rollout.both_out_spans([]) == []


def test_two_runs_at_once_write_their_outputs_under_two_numbers(tmp_path, monkeypatch):
    calls = []

    class Finished:
        returncode, stdout, stderr = 0, "ok", ""

    def fake_run(argv, **_kwargs):
        calls.append(argv)
        return Finished()

    monkeypatch.setattr(rollout.subprocess, "run", fake_run)
    run = rollout.Run("inventory", str(tmp_path))
    threads = [threading.Thread(target=run, args=({}, {}), kwargs=dict(limit=vm)) for vm in ("vm1", "vm2", "vm1", "vm2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(os.listdir(tmp_path)) == sorted(["overlay-%d.yml" % n for n in range(1, 5)] + ["run-%d.out" % n for n in range(1, 5)])
    # each run read its own overlay inventory (the second -i)
    overlays = [argv[[i for i, arg in enumerate(argv) if arg == "-i"][1] + 1] for argv in calls]
    assert len(set(overlays)) == 4
