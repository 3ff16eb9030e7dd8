"""Two rollouts at once over disjoint hosts of one cluster (AWX job slices, two operators), against
a real Slurm (tests/unit/slurmcluster.py, on ports of its own so that it runs beside
test_rollout_slurm.py): rdmaops_max_unavailable 1 holds across both runs.

Both hosts need a link reset (their NIC's rings), so both runs want to drain their node. Each run
counts what the scheduler has out of service, drains, counts again and steps back when the other
run drained at the same moment; the one that waits gets its room once the other resumes its node.
A sampler reads both nodes' state all along: the ring of one host is never changed while the
other node is drained, and two drained nodes are only ever seen for the instant of a step back.
The race is run twice (rings 256 -> 128, then back)."""

import threading
import time

import pytest

import slurmcluster
# hosts is a fixture: imported for the tests below, which take it as an argument
from test_rollout_slurm import hosts, inventory, ring_state, rings, site  # noqa: F401  # pylint: disable=unused-import

pytestmark = pytest.mark.skipif(slurmcluster.available() is not None, reason=str(slurmcluster.available()))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = slurmcluster.SlurmCluster(tmp_path_factory.mktemp("slurm"), nodes=("vm1", "vm2"), port_base=17017).start()
    yield cluster
    cluster.stop()


class Sampler(threading.Thread):
    """Both nodes' drain flag, every 0.2 s: [(time, vm1 drained, vm2 drained)]."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.samples, self.stop = cluster, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            out = self.cluster.run("scontrol", "show", "node", "-o", "vm1,vm2").stdout
            states = {}
            for line in out.splitlines():
                fields = dict(token.split("=", 1) for token in line.split() if "=" in token)
                states[fields.get("NodeName")] = "DRAIN" in fields.get("State", "").split("+")
            if "vm1" in states and "vm2" in states:
                self.samples.append((time.time(), states["vm1"], states["vm2"]))
            self.stop.wait(0.2)


def drained_at(samples, node, when):
    """The node's drain flag in the last sample taken before ``when`` (False before the first)."""
    index = 1 if node == "vm1" else 2
    before = [sample for sample in samples if sample[0] <= when]
    return before[-1][index] if before else False


def race(cluster, tmp_path, hosts, rx):  # noqa: F811  (hosts: the fixture)
    inv = inventory(tmp_path, hosts, tuning_nic_rings=rings(rx), rdmaops_max_unavailable=1)
    results = {}

    def one(limit):
        results[limit] = site(cluster, inv, "--limit", limit)

    sampler = Sampler(cluster)
    sampler.start()
    runs = [threading.Thread(target=one, args=(limit,)) for limit in ("gpu1", "gpu2")]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    sampler.stop.set()
    sampler.join()
    return results, sampler.samples


@pytest.mark.parametrize("round_", [1, 2])
def test_two_runs_at_once_never_keep_two_nodes_out(tmp_path, cluster, hosts, round_):  # noqa: F811
    rx = 128 if round_ == 1 else 256
    if round_ == 2:  # start from the first round's end state
        for host in ("gpu1", "gpu2"):
            state = ring_state(hosts, host)
            state.update(rx=128, tx=128)
            (hosts[host]["tools"] / "ethtool-state.json").write_text(__import__("json").dumps(state))
    results, samples = race(cluster, tmp_path, hosts, rx)
    for limit, (proc, out) in results.items():
        assert proc.returncode == 0, (limit, proc.stdout[-6000:] + proc.stderr)
        assert "phase two: 1 host(s) to drain" in out, out[-3000:]
    # both changed, both back in service
    for host, node in (("gpu1", "vm1"), ("gpu2", "vm2")):
        assert ring_state(hosts, host)["rx"] == rx
        state, reason = cluster.node(node)
        assert "DRAIN" not in state.split("+"), (node, state, reason)
    # the disruptive change of each host was made while the other node was in service
    for host, other in (("gpu1", "vm2"), ("gpu2", "vm1")):
        changes = [stamp for stamp, _cmd in ring_state(hosts, host).get("log", [])]
        assert changes
        for stamp in changes[-2:]:  # this round's rx and tx
            assert not drained_at(samples, other, stamp), (host, stamp, other, samples)
    # two nodes drained at once only for the instant of a step back: never in two samples in a row
    both = [index for index, sample in enumerate(samples) if sample[1] and sample[2]]
    assert not any(index + 1 in both for index in both), [samples[i] for i in both]
    assert len(samples) > 10
