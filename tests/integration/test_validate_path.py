"""playbooks/validate.yml's path check through ansible-playbook, with real pings in a network
namespace: two play hosts read the recorded lab VM (rdma_facts on its tree: ens4, 198.18.0.11)
and ping each other's fabric address for real, over the namespace's own ens4 (a veth link with
that address, its peer standing for the switch port). Up, the pair is reachable and the intent's
MTU passes; with the switch port down the run fails on exactly one finding, the pair's
reachability, with what each end saw."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

import ansiblerun
import hosttree

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("ping"),
                                reason="needs root, iproute2 and ping (a network namespace)")


IP_WRAPPER = """#!{python}
import json, os, sys
records = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "commands.json")))
record = records.get(" ".join(["ip"] + sys.argv[1:]))
if record is None:
    os.execv("{ip}", ["{ip}"] + sys.argv[1:])
sys.stdout.write(record.get("stdout", ""))
sys.stderr.write(record.get("stderr", ""))
sys.exit(record.get("rc", 0))
"""


@pytest.fixture
def netns():
    name = "rdmaops-vpath-%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        for argv in (["link", "set", "lo", "up"], ["link", "add", "ens4", "type", "veth", "peer", "name", "ens4sw"],
                     ["link", "set", "ens4sw", "mtu", "9000", "up"], ["link", "set", "ens4", "mtu", "9000", "up"],
                     ["addr", "add", "198.18.0.11/24", "dev", "ens4"]):
            subprocess.run(["ip", "-n", name] + argv, check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def validate(tmp_path, netns):
    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    # rdma_facts reads the recorded host's ip output; every other ip command (the path check's) is the namespace's own
    with open(os.path.join(bindir, "ip"), "w") as handle:
        handle.write(IP_WRAPPER.format(python=sys.executable, ip=shutil.which("ip")))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"rdma_hosts": {"hosts": {"vm1": local, "vm2": local}}}}}))
    reports = tmp_path / "reports"
    argv = ["ip", "netns", "exec", netns, os.path.join(ansiblerun.BIN, "ansible-playbook"), "-i", str(inventory),
            os.path.join(ansiblerun.REPO, "playbooks", "validate.yml"),
            "-e", json.dumps({"validate_report_dir": str(reports), "validate_rdma": False, "validate_qos": False})]
    env = ansiblerun.ansible_env({"RDMAOPS_HOST_ROOT": str(root), "PATH": bindir + os.pathsep + os.environ["PATH"]})
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False, cwd=ansiblerun.REPO)
    path = reports / "latest" / "report.json"
    assert path.exists(), proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc, json.loads(path.read_text())


def test_reachable_pair_then_its_mtu_and_a_dead_one_named_as_dead(tmp_path, netns):
    proc, report = validate(tmp_path / "up", netns)
    path = [(f["host"], f["peer"], f["field"], f["passed"]) for f in report["findings"] if f["check"] == "path"]
    assert path == [("vm1", "vm2", "reachability", True), ("vm1", "vm2", "mtu_path", True)], proc.stdout[-3000:]
    assert proc.returncode == 0 and report["passed"] is True

    # the switch port down (ens4 loses its carrier) and the fabric address gone with it: the pair is
    # sender and receiver on this one machine, so only a missing address makes its ping fail
    subprocess.run(["ip", "-n", netns, "link", "set", "ens4sw", "down"], check=True)
    subprocess.run(["ip", "-n", netns, "addr", "del", "198.18.0.11/24", "dev", "ens4"], check=True)
    proc, report = validate(tmp_path / "down", netns)
    failed = [f for f in report["findings"] if f["passed"] is False]
    assert [(f["host"], f["peer"], f["device"], f["field"]) for f in failed] == [("vm1", "vm2", "ens4", "reachability")], failed
    finding = failed[0]
    # both ends' view of ens4 (the far end read by its own task, only now that the path failed)
    assert "vm1: ens4: NO CARRIER (LOWERLAYERDOWN)" in finding["actual"] and "vm2: ens4: NO CARRIER (LOWERLAYERDOWN)" in finding["actual"], finding
    assert finding["hint"].startswith("vm1 cannot reach vm2 (198.18.0.11) over ens4: vm1's fabric netdev has no carrier")
    assert [f["passed"] for f in report["findings"] if f["field"] == "mtu_path"] == [None]
    assert proc.returncode != 0 and "the fabric failed 1 check(s) on vm1" in proc.stdout.replace("\n        ", " ")


NONCE = "0123456789abcdef0123456789abcdef"
SCRIPT = os.path.join(ansiblerun.REPO, "roles", "validate", "files", "path-check.sh")


def path_check(netns, *operands):
    proc = subprocess.run(["ip", "netns", "exec", netns, "sh", SCRIPT, NONCE] + list(operands), capture_output=True, text=True,
                          timeout=60, check=False)
    return proc


def test_hostile_peers_never_reach_the_real_ping_and_cannot_forge_a_result(netns):
    """The role's script with the real ping in a namespace: a peer "-f" (a flood option to ping) and a
    peer holding a newline and a forged result line are refused before any ping runs; the real peer
    answers, and only the lines with the run's nonce are parts."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._validate import measure

    forged = "198.18.0.11\n== %s small rc=0\n2 packets transmitted, 2 received, 0%% packet loss" % NONCE
    for peer in ("-f", forged, "198.18.0.11 -f", "-c 1000000 198.18.0.11"):
        proc = path_check(netns, "198.18.0.11", "ens4", peer, "8972")
        assert proc.returncode == 2 and "PING" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        assert measure.parse_path_check(proc.stdout, NONCE) == {
            "refused": (2, "the peer operand is not an IPv4 address (four decimal numbers 0-255)")}
    proc = path_check(netns, "198.18.0.11", "ens4", "198.18.0.11", "8972")
    parts = measure.parse_path_check(proc.stdout, NONCE)
    assert sorted(parts) == ["jumbo", "small"] and parts["small"][0] == 0 and parts["jumbo"][0] == 0, proc.stdout
    assert measure.ping_received(parts["jumbo"][1]) == (2, 2)
