"""The validate role's perftest server loop (validate_server_loop, roles/validate/vars/main.yml) run
by a real sh: a server that failed or hung (its timeout, 124) listens again for the client's next
attempt, up to validate_rdma_attempts runs; a server that succeeded is not started again."""

import os
import subprocess

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, *[os.pardir] * 4))
LOOP = yaml.safe_load(open(os.path.join(REPO, "roles", "validate", "vars", "main.yml")))["validate_server_loop"]


def serve(tmp_path, attempts, outcomes):
    """Run the loop with ``attempts`` over a stand-in server whose Nth run exits with outcomes[N]
    (the last one repeated); return (exit status, how many times it ran)."""
    runs = tmp_path / "runs"
    server = tmp_path / "server"
    server.write_text('#!/bin/sh\necho run >> "%s"\nn=$(wc -l < "%s")\nset -- %s\nshift $(( n > $# ? $# - 1 : n - 1 ))\nexit "$1"\n'
                      % (runs, runs, " ".join(str(o) for o in outcomes)))
    server.chmod(0o755)
    # the role's argv: the loop (its attempts templated), then the server's own command line
    argv = LOOP[:4] + [str(attempts)] + ["timeout", "5", str(server), "-d", "rxe0"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return done.returncode, len(runs.read_text().splitlines()) if runs.exists() else 0


def test_the_role_templates_its_attempts_into_the_loop():
    assert LOOP[:2] == ["sh", "-c"] and LOOP[4] == "{{ validate_rdma_attempts | string }}"


@pytest.mark.parametrize("attempts, outcomes, expected", [
    (1, [0], (0, 1)),          # one attempt, a test that ran: as perftest alone
    (1, [1], (1, 1)),          # one attempt, failed: not started again (the default)
    (2, [124, 0], (0, 2)),     # hung (timeout's 124): listens again, the second run serves the client
    (2, [1, 0], (0, 2)),       # failed with its client: listens again
    (3, [0, 1], (0, 1)),       # succeeded: never started again
    (3, [1], (1, 3)),          # failed every time: at most the attempts, then failure
])
def test_a_server_listens_again_only_after_a_run_that_failed(tmp_path, attempts, outcomes, expected):
    assert serve(tmp_path, attempts, outcomes) == expected
