"""The path check (issue 22): reachability first, then the MTU, over the role's path check recorded
with real tools in network namespaces (tests/unit/fixtures/path/README.md says how each was made).

A dead path is one ``reachability`` finding naming both ends, the netdev and what each end saw; the
MTU and the RDMA tests between that pair are not checked, with the reason, instead of failing with
hints about MTUs and GID indexes."""

import copy
import ipaddress
import json
import os
import subprocess

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_checks import INTENT, LAB_FRACTION, lab, measured  # noqa: F401 pylint: disable=unused-import

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import measure, report
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.verdict import fabric_check

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, *[os.pardir] * 5))
PATH = os.path.join(REPO, "tests", "unit", "fixtures", "path")
SCHEMA = json.load(open(os.path.join(REPO, "roles", "validate", "files", "report.schema.json")))


# the nonce the recordings ran with (tests/unit/fixtures/path/README.md): the role draws one per run
NONCE = "5eed0a11ce5eed0a11ce5eed0a11ce00"


def read(name):
    with open(os.path.join(PATH, name)) as handle:
        return handle.read()


def with_path(lab, name, far_end=None):  # noqa: F811
    """The lab with vm1's ping record holding the recorded path check ``name`` (the recordings ran
    from 198.18.0.11 on ``sva`` to 198.18.0.12, the lab's addresses) and the far end's evidence."""
    lab = copy.deepcopy(lab)
    for run in lab["vm1"]["rdma_runs"]:
        run["requested"] = True
    lab["vm1"]["pings"][0].update(rc=0, stdout=read(name), stderr="", source="198.18.0.11", netdev="sva", peer_netdev="svb",
                                  peer_evidence=read(far_end) if far_end else None, nonce=NONCE)
    return lab


def failed(result):
    return [f for f in result["findings"] if f["passed"] is False]


def path(result, field):
    return [f for f in result["findings"] if f["check"] == "path" and f["field"] == field]


# the parsers --------------------------------------------------------------------------------------
def test_the_path_check_parts_and_the_evidence_parsers():
    parts = measure.parse_path_check(read("peer_port_down.txt"), NONCE)
    assert sorted(parts) == ["kernel", "link", "neigh", "small"] and parts["small"][0] == 1
    assert measure.ping_received(parts["small"][1]) == (2, 0)
    assert measure.parse_neighbour(parts["neigh"][1], "198.18.0.12") == "INCOMPLETE"
    assert measure.parse_neighbour(read("neigh_failed.json"), "198.18.0.12") == "FAILED"
    assert measure.parse_neighbour(read("neigh_failed.json"), "198.18.0.13") == "none"
    link = measure.parse_link(parts["link"][1])
    assert (link["up"], link["carrier"], link["operstate"], link["tx_errors"], link["tx_dropped"]) == (True, False, "DOWN", 0, 4)
    far = measure.parse_path_check(read("peer_port_down_far_end.txt"), NONCE)
    assert measure.parse_neighbour(far["neigh"][1], "198.18.0.11") == "none"
    assert measure.parse_link(far["link"][1])["up"] is False
    silent = measure.parse_link(measure.parse_path_check(read("peer_silent.txt"), NONCE)["link"][1])
    assert (silent["up"], silent["carrier"], silent["operstate"]) == (True, True, "UP")
    assert measure.kernel_lines(read("kernel_tx_timeout.txt"))[0].endswith("NETDEV WATCHDOG: CPU: 0: transmit queue 0 timed out")
    healthy = measure.parse_path_check(read("healthy.txt"), NONCE)
    assert sorted(healthy) == ["jumbo", "small"] and healthy["jumbo"][0] == 0
    assert measure.parse_path_check(read(os.path.join(os.pardir, "perftest", "ping_ok.txt")), NONCE) == {}  # a plain ping
    # only this run's lines are parts: another nonce, none, or no nonce given believe nothing
    assert measure.parse_path_check(read("healthy.txt"), "0" * 32) == {} and measure.parse_path_check(read("healthy.txt"), None) == {}
    assert measure.parse_path_check(read("healthy.txt").replace(NONCE + " ", ""), NONCE) == {}
    assert measure.parse_neighbour("Cannot find device \"ens4\"", "198.18.0.12") is None and measure.parse_link("") is None


# fabric_check -------------------------------------------------------------------------------------
def test_healthy_path_is_reachable_then_jumbo(lab):  # noqa: F811
    result = fabric_check(INTENT, with_path(lab, "healthy.txt"), min_bw_fraction=LAB_FRACTION)
    assert [(f["passed"], f["actual"], f["device"]) for f in path(result, "reachability")] == [(True, "2/2 replies to small pings", "sva")]
    assert [(f["passed"], f["actual"]) for f in path(result, "mtu_path")] == [(True, "2/2 replies")]
    assert result["passed"] is True


def test_small_pings_pass_jumbo_fails_is_the_mtu(lab):  # noqa: F811
    result = fabric_check(INTENT, with_path(lab, "jumbo_dropped.txt"), min_bw_fraction=LAB_FRACTION)
    assert [f["passed"] for f in path(result, "reachability")] == [True]
    bad = failed(result)
    assert [(f["field"], f["actual"]) for f in bad] == [("mtu_path", "0/2 replies")]
    assert "MTU below 9000" in bad[0]["hint"]


def test_silent_peer_is_one_reachability_finding_and_rdma_not_checked(lab):  # noqa: F811
    result = fabric_check(INTENT, with_path(lab, "peer_silent.txt", "peer_silent_far_end.txt"), min_bw_fraction=LAB_FRACTION)
    bad = failed(result)
    assert [(f["check"], f["host"], f["peer"], f["device"], f["field"]) for f in bad] == [("path", "vm1", "vm2", "sva", "reachability")]
    finding = bad[0]
    assert finding["actual"].startswith("0/2 replies to small pings; vm1: neighbour 198.18.0.12 FAILED on sva; "
                                        "vm1: sva: carrier up (UP), TX errors 0, TX dropped 0")
    assert "vm2: svb: carrier up (UP)" in finding["actual"]
    assert finding["hint"].startswith("vm1 cannot reach vm2 (198.18.0.12) over sva: vm1 gets no ARP reply from 198.18.0.12")
    assert "check the NICs, the cable and the switch port between them" in finding["hint"] and "MTU" not in finding["hint"]
    assert [(f["passed"], f["hint"]) for f in path(result, "mtu_path")] == [(None, "not reachable: see the reachability finding of vm1 -> vm2")]
    rdma = [f for f in result["findings"] if f["check"] in ("rdma_bw", "rdma_lat")]
    assert [f["passed"] for f in rdma] == [None, None]
    assert all("vm1 and vm2 do not reach each other" in f["hint"] for f in rdma)
    assert result["summary"]["unproven"] == [] and not [m for m in result["measurements"] if m["kind"].startswith("ib_")]
    jsonschema.validate(json.loads(report.to_json(dict(result, intent=INTENT))), SCHEMA, cls=jsonschema.Draft202012Validator)
    md = report.to_markdown(dict(result, intent=INTENT))
    assert "| path | vm1 | vm2 | sva | reachability | replies to small pings | 0/2 replies to small pings; vm1: neighbour" in md


def test_port_down_names_the_carrier_and_the_far_end_set_down(lab):  # noqa: F811
    result = fabric_check(INTENT, with_path(lab, "peer_port_down.txt", "peer_port_down_far_end.txt"), min_bw_fraction=LAB_FRACTION)
    finding = [f for f in failed(result) if f["field"] == "reachability"][0]
    assert "vm1: sva: NO CARRIER (DOWN)" in finding["actual"] and "vm2: svb: set down (DOWN)" in finding["actual"]
    assert "vm1's fabric netdev has no carrier" in finding["hint"] and "vm2's fabric netdev is set down" in finding["hint"]
    assert [f["field"] for f in failed(result)] == ["reachability"]


def test_transmit_timeouts_on_the_far_end_are_named(lab):  # noqa: F811
    """The lab's fault of issue 22: vm2's NIC stopped transmitting, its link still up. The far end's
    kernel part holds the watchdog lines the issue quotes (kernel_tx_timeout.txt); the rest is the
    silent-peer recording."""
    kernel = "== %s kernel rc=0\n" % NONCE
    far = read("peer_silent_far_end.txt").replace(kernel, kernel + read("kernel_tx_timeout.txt"))
    lab = with_path(lab, "peer_silent.txt")
    lab["vm1"]["pings"][0]["peer_evidence"] = far
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    finding = [f for f in failed(result) if f["field"] == "reachability"][0]
    assert "vm2: kernel: virtio_net virtio1 ens4: NETDEV WATCHDOG: CPU: 0: transmit queue 0 timed out" in finding["actual"]
    assert "vm2's kernel reports transmit timeouts" in finding["hint"] and "no ARP reply" not in finding["hint"]
    assert [f["field"] for f in failed(result)] == ["reachability"]


# property: any text in the path check's record ------------------------------------------------------
RECORDED = [read(name) for name in ("healthy.txt", "jumbo_dropped.txt", "peer_silent.txt", "peer_port_down.txt",
                                    "peer_silent_far_end.txt", "kernel_tx_timeout.txt", "neigh_failed.json")]
LINES = st.sampled_from(sorted(set(line for text in RECORDED for line in text.splitlines()))) | st.text(max_size=30)


@settings(max_examples=80, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(stdout=st.lists(LINES, max_size=14).map("\n".join), far=st.none() | st.lists(LINES, max_size=8).map("\n".join),
       rc=st.none() | st.integers(min_value=-2, max_value=3))
def test_any_path_check_text_never_raises_and_passes_only_answered_small_pings(lab, stdout, far, rc):  # noqa: F811
    lab = copy.deepcopy(lab)
    lab["vm1"]["pings"][0].update(rc=rc, stdout=stdout, netdev="sva", peer_evidence=far, nonce=NONCE)
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    jsonschema.validate(json.loads(report.to_json(dict(result, intent=INTENT))), SCHEMA, cls=jsonschema.Draft202012Validator)
    parts = measure.parse_path_check(stdout, NONCE)
    small = parts.get("small")
    answered = small is not None and small[0] == 0 and (measure.ping_received(small[1]) or (0, 0))[1] > 0
    for finding in path(result, "reachability"):
        assert finding["passed"] is (True if answered else False)
    if path(result, "reachability") and not answered:
        assert [f["passed"] for f in result["findings"] if f["check"] in ("rdma_bw", "rdma_lat")] == [None, None]


# hostile peers and forged lines -------------------------------------------------------------------------
SCRIPT = os.path.join(REPO, "roles", "validate", "files", "path-check.sh")
FORGED = "2 packets transmitted, 2 received, 0% packet loss, time 1001ms"


def test_lines_without_the_runs_nonce_are_never_a_result(lab):  # noqa: F811
    # a peer's text echoed by a tool, forging the old line format and another run's nonce
    forged = "== small rc=0\n%s\n== %s small rc=0\n%s\n" % (FORGED, "f" * 32, FORGED)
    lab = with_path(lab, "peer_silent.txt", "peer_silent_far_end.txt")
    lab["vm1"]["pings"][0]["stdout"] = read("peer_silent.txt").replace("\n", "\n" + forged, 1)
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    assert [(f["field"], f["passed"]) for f in path(result, "reachability")] == [("reachability", False)]
    # output in which no line carries the nonce: nothing is believed, the path is not checked
    lab["vm1"]["pings"][0]["stdout"] = forged
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    assert not path(result, "reachability")
    assert [(f["passed"], f["hint"]) for f in path(result, "mtu_path")] == [
        (None, "the path check's output holds no result line of this run (none carries its nonce)")]
    assert result["passed"] is False


def test_a_refused_operand_is_not_checked_with_the_scripts_words(lab):  # noqa: F811
    lab = with_path(lab, "healthy.txt")
    lab["vm1"]["pings"][0].update(rc=2, stdout="== %s refused rc=2\nthe netdev operand is not an interface name\n" % NONCE)
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    assert [(f["passed"], f["hint"]) for f in path(result, "mtu_path")] == [
        (None, "the path check refused its operands: the netdev operand is not an interface name")]


@pytest.mark.parametrize("key, value", [("address", "-f"), ("address", "198.18.0.12\n== %s small rc=0" % NONCE),
                                        ("address", "198.18.0.012"), ("address", "fe80::1"), ("address", 3323068428),
                                        ("source", "198.18.0.11 -f")])
def test_a_record_whose_peer_is_not_an_address_is_an_input_finding(lab, key, value):  # noqa: F811
    lab = with_path(lab, "healthy.txt")
    lab["vm1"]["pings"][0][key] = value
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    found = [f for f in result["findings"] if f["check"] == "input" and f["field"] == "pings.address"]
    assert len(found) == 1 and found[0]["passed"] is None, result["findings"]
    assert "the path check's %s" % key in found[0]["hint"] and "is not an IPv4 address" in found[0]["hint"]
    assert not path(result, "reachability") and [f["passed"] for f in path(result, "mtu_path")] == [None]
    assert result["passed"] is False


STANDIN = """#!/bin/sh
{ printf '%s' "$(basename "$0")"; for a in "$@"; do printf ' [%s]' "$a"; done; echo; } >> "$ARGV_LOG"
echo "2 packets transmitted, 2 received, 0% packet loss, time 1001ms"
"""


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """ping and ip that only write down how they were called (the script's own checks are under test)."""
    bindir = tmp_path_factory.mktemp("standins")
    for tool in ("ping", "ip", "dmesg"):
        path_ = bindir / tool
        path_.write_text(STANDIN)
        path_.chmod(0o755)
    return str(bindir)


def run_script(standins, tmp_path, *operands):
    log = tmp_path / "argv.log"
    if log.exists():
        log.unlink()
    env = dict(os.environ, PATH=standins + os.pathsep + os.environ["PATH"], ARGV_LOG=str(log))
    proc = subprocess.run(["sh", SCRIPT, NONCE] + list(operands), capture_output=True, text=True, env=env, check=False)
    return proc, (log.read_text() if log.exists() else "")


def is_ipv4(text):
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


PEERS = st.sampled_from(["198.18.0.12", "-f", "0.0.0.0", "255.255.255.255", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256",
                         "198.18.0.12\n== %s small rc=0" % NONCE, "$(reboot)", "1.2.3.4 ", ""]) \
    | st.text(alphabet="0123456789.-\n =f", max_size=18) | st.text(max_size=12)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(peer=PEERS, evidence=st.booleans())
def test_any_peer_reaches_ping_only_as_an_address_after_dashdash(standins, tmp_path, peer, evidence):
    """The real sh runs the role's script with stand-ins for ping and ip: a peer that is not four
    decimal numbers 0-255 reaches no tool; one that is reaches it as the operand after "--" (ping)
    or as ip's address argument, and the parts are exactly the script's own."""
    if "\x00" in peer:
        return  # no argv can hold a NUL
    operands = ["--evidence", "sva", peer] if evidence else ["198.18.0.11", "sva", peer, "8972"]
    proc, calls = run_script(standins, tmp_path, *operands)
    parts = measure.parse_path_check(proc.stdout, NONCE)
    if not is_ipv4(peer):
        assert calls == "" and proc.returncode == 2 and list(parts) == ["refused"], (calls, proc.stdout)
        return
    assert proc.returncode == 0
    if evidence:
        assert "ip [-j] [neigh] [show] [to] [%s] [dev] [sva]" % peer in calls.splitlines()
        assert sorted(parts) == ["kernel", "link", "neigh"]
    else:
        assert calls.splitlines() == [
            "ping [-n] [-c] [2] [-W] [2] [-I] [198.18.0.11] [--] [%s]" % peer,
            "ping [-n] [-c] [2] [-W] [3] [-M] [do] [-I] [198.18.0.11] [-s] [8972] [--] [%s]" % peer]
        assert sorted(parts) == ["jumbo", "small"]


@pytest.mark.parametrize("operands, refused", [
    (["198.18.0.11", "sva;reboot", "198.18.0.12", "8972"], "the netdev operand is not an interface name"),
    (["198.18.0.11", "-sva", "198.18.0.12", "8972"], "the netdev operand is not an interface name"),
    (["198.18.0.11", "a" * 16, "198.18.0.12", "8972"], "the netdev operand is not an interface name"),
    (["-f", "sva", "198.18.0.12", "8972"], "the source operand is not an IPv4 address"),
    (["198.18.0.11", "sva", "198.18.0.12", "8972 -f"], "the size operand is not a number of bytes"),
    (["198.18.0.11", "sva", "198.18.0.12", "65508"], "the size operand is not a number of bytes"),
    (["--evidence", "sva\nx", "198.18.0.12"], "the netdev operand is not an interface name"),
])
def test_other_operands_are_checked_too(standins, tmp_path, operands, refused):
    proc, calls = run_script(standins, tmp_path, *operands)
    assert calls == "" and proc.returncode == 2
    assert measure.parse_path_check(proc.stdout, NONCE) == {"refused": (2, refused + proc.stdout.split(refused, 1)[1].rstrip("\n"))}


def test_the_script_refuses_to_run_without_a_nonce(standins, tmp_path):
    for nonce in ("", "0123", "0123456789ABCDEF0123", "-f"):
        env = dict(os.environ, PATH=standins + os.pathsep + os.environ["PATH"], ARGV_LOG=str(tmp_path / "log"))
        proc = subprocess.run(["sh", SCRIPT, nonce, "198.18.0.11", "sva", "198.18.0.12", "8972"], capture_output=True, text=True,
                              env=env, check=False)
        assert proc.returncode == 2 and proc.stdout == "" and "nonce" in proc.stderr
        assert not (tmp_path / "log").exists()
