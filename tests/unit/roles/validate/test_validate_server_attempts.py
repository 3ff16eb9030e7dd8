"""The validate role's perftest servers run again after a run that failed or hung, as the role builds
them (roce_validate_perftest_servers: retries, attempts, delay) and validate_probe runs them (all at
once, each with the task's until rule), against a real sh: a server that failed or hung (its timeout,
124) listens again for the client's next attempt, up to validate_rdma_attempts runs; a server that
succeeded is not started again."""

import subprocess

import pytest

from ansible_collections.rdmaops.roce.plugins.filter.roce_validate_rail_pings import roce_validate_perftest_servers
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import probe

HOSTS = {"client": {"validate_ports": [{"device": "rxe0", "port": 1, "netdev": "ens4", "gid_index": 1, "ipv4": ["198.18.0.11"]}]},
         "server": {"validate_ports": [{"device": "rxe0", "port": 1, "netdev": "ens4", "gid_index": 1, "ipv4": ["198.18.0.12"]}]}}


def settings(attempts):
    return dict(timeout=5, attempts=attempts, port=18515, tos=106, bw_seconds=5, lat_iterations=100, rail_bw_seconds=2)


def serve(tmp_path, attempts, outcomes):
    """The role's ib_write_bw server for the pair, its perftest replaced by a stand-in whose Nth run exits
    with outcomes[N] (the last one repeated); return (its result's rc, how many times it ran)."""
    (command,) = [c for c in roce_validate_perftest_servers(HOSTS, [["client", "server"]], "server", [], settings(attempts))
                  if c["item"] == ["ib_write_bw", 0]]
    runs = tmp_path / "runs"
    server = tmp_path / "server"
    server.write_text('#!/bin/sh\necho run >> "%s"\nn=$(wc -l < "%s")\nset -- %s\nshift $(( n > $# ? $# - 1 : n - 1 ))\nexit "$1"\n'
                      % (runs, runs, " ".join(str(o) for o in outcomes)))
    server.chmod(0o755)
    assert command["argv"][:3] == ["timeout", "5", "ib_write_bw"]
    command = dict(command, argv=command["argv"][:2] + [str(server)] + command["argv"][3:])

    def run(argv):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        return done.returncode, done.stdout, done.stderr
    (result,) = probe.run_concurrently(run, [command])
    return result["rc"], len(runs.read_text().splitlines()) if runs.exists() else 0


@pytest.mark.parametrize("attempts, outcomes, expected", [
    (1, [0], (0, 1)),          # one attempt, a test that ran: as perftest alone
    (1, [1], (1, 1)),          # one attempt, failed: not started again (the default)
    (2, [124, 0], (0, 2)),     # hung (timeout's 124): listens again, the second run serves the client
    (2, [1, 0], (0, 2)),       # failed with its client: listens again
    (3, [0, 1], (0, 1)),       # succeeded: never started again
    (3, [1], (1, 3)),          # failed every time: at most the attempts, then failure
    (3, [124], (124, 3)),      # hung every time: at most the attempts
])
def test_a_server_listens_again_only_after_a_run_that_failed(tmp_path, attempts, outcomes, expected):
    assert serve(tmp_path, attempts, outcomes) == expected
