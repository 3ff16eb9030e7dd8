"""The validate role's perftest server loop (probe.SERVER_LOOP, which rdmaops.roce.validate_probe starts
each server through) run by a real sh: a server that failed or hung (its timeout, 124) with its client
listens again for the client's next attempt, up to validate_rdma_attempts runs; a server that succeeded
is not started again; one that timed out with no client connected (started before its client's turn)
listens again without using an attempt."""

import subprocess

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.probe import SERVER_LOOP


def serve(tmp_path, attempts, outcomes, say=""):
    """Run the loop with ``attempts`` over a stand-in server whose Nth run prints ``say`` and exits with
    outcomes[N] (the last one repeated); return (exit status, how many times it ran)."""
    runs = tmp_path / "runs"
    server = tmp_path / "server"
    server.write_text('#!/bin/sh\necho run >> "%s"\nn=$(wc -l < "%s")\necho "%s"\nset -- %s\nshift $(( n > $# ? $# - 1 : n - 1 ))\n'
                      'exit "$1"\n' % (runs, runs, say, " ".join(str(o) for o in outcomes)))
    server.chmod(0o755)
    argv = ["sh", "-c", SERVER_LOOP, "perftest-server", str(attempts), "timeout", "5", str(server), "-d", "rxe0"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return done.returncode, len(runs.read_text().splitlines()) if runs.exists() else 0


CONNECTED = " local address: LID 0000 QPN 0x0011 PSN 0x3f1a"


@pytest.mark.parametrize("attempts, outcomes, expected", [
    (1, [0], (0, 1)),          # one attempt, a test that ran: as perftest alone
    (1, [1], (1, 1)),          # one attempt, failed: not started again (the default)
    (2, [124, 0], (0, 2)),     # hung (timeout's 124): listens again, the second run serves the client
    (2, [1, 0], (0, 2)),       # failed with its client: listens again
    (3, [0, 1], (0, 1)),       # succeeded: never started again
    (3, [1], (1, 3)),          # failed every time: at most the attempts, then failure
    (1, [124], (1, 1)),        # hung with its client connected: that was its one attempt
])
def test_a_server_listens_again_only_after_a_run_that_failed(tmp_path, attempts, outcomes, expected):
    assert serve(tmp_path, attempts, outcomes, say=CONNECTED) == expected


def test_a_server_nobody_came_to_listens_again_without_using_an_attempt(tmp_path):
    # two timeouts with no client (no "local address" printed), then its client: served, with one attempt
    assert serve(tmp_path, 1, [124, 124, 0]) == (0, 3)
    # a failure that is not a timeout always uses an attempt, client or not
    other = tmp_path / "other"
    other.mkdir()
    assert serve(other, 1, [2, 0]) == (1, 1)
