"""The validate role's runs (roce_validate_rail_pings.py): the commands each host runs for its pairs, and their
results matched back to the pairs, with peers outside the batch, unreachable peers, hosts without rails
or without an RDMA address, and a peer with one rail.

tests/unit/fixtures/validate_probes/jinja.json holds what the role's Jinja loops gave before these filters
replaced them, rendered by Ansible's Templar for 96 random fabrics and 24 fabric_check results (see its
README.md); the filters must give the same for each."""

import json
import os
import re

import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.rdmaops.roce.plugins.filter.roce_validate_rail_pings import (
    FilterModule, roce_validate_arp_probes, roce_validate_failed_senders, roce_validate_hosts, roce_validate_path_checks,
    roce_validate_ping_records, roce_validate_rail_pings, roce_validate_rdma_records, roce_validate_summary, roce_validate_unreachable_pairs)

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "validate_probes", "jinja.json")
NONCE = "0123456789abcdef0123456789abcdef"
PATH_SCRIPT = "echo path-check"
ARP_SCRIPT = "echo arp"


def captured():
    with open(FIXTURE) as handle:
        return json.load(handle)


CAPTURED = captured()


def per_host(case):
    return [(case, name) for name in case["batch"]]


@pytest.mark.parametrize("case", CAPTURED["fabrics"], ids=lambda case: case["id"])
def test_each_fabric_runs_what_the_roles_jinja_built(case):
    hostvars, jinja = case["hosts"], case["jinja"]
    if case["batch"]:
        assert roce_validate_unreachable_pairs(hostvars, case["batch"], NONCE) == jinja["unreachable_pairs"]
        assert roce_validate_hosts(hostvars, case["all_hosts"]) == jinja["hosts"]
    for name, expected in jinja["per_host"].items():
        own = hostvars[name]
        got = {"rail_pings": roce_validate_rail_pings(hostvars, case["pairs"], name, case["batch"]),
               "path_checks": roce_validate_path_checks(hostvars, case["pairs"], name, NONCE, case["host_mtu"], PATH_SCRIPT),
               "arp_probes": roce_validate_arp_probes(hostvars, case["pairs"], name, ARP_SCRIPT),
               "failed_senders": roce_validate_failed_senders(hostvars, case["batch"], name, NONCE),
               "ping_records": roce_validate_ping_records(hostvars, name, case["host_mtu"], NONCE),
               "rdma_records": roce_validate_rdma_records(hostvars, case["rdma_pairs"], name, jinja["unreachable_pairs"], case["roce_tos"],
                                                          own["validate_rdma_run"], own["validate_rdma_why"],
                                                          own["validate_rdma"] and not case["check_mode"])}
        assert got == expected, name


def test_the_captured_fabrics_cover_the_cases_that_matter():
    per = [host for case in CAPTURED["fabrics"] for host in case["jinja"]["per_host"].values()]
    assert sum(1 for host in per if host["rail_pings"]) >= 10
    assert sum(1 for host in per if host["arp_probes"]) >= 10
    assert sum(1 for host in per if host["failed_senders"]) >= 10
    assert sum(1 for case in CAPTURED["fabrics"] if case["jinja"]["unreachable_pairs"]) >= 10
    assert any(pair[1] in case["partners"] for case in CAPTURED["fabrics"] for pair in case["pairs"])
    assert any(not case["hosts"][name].get("validate_ports") for case in CAPTURED["fabrics"] for name in case["batch"])
    assert any(record["skipped"] and record["why"] == "the pair does not reach each other" for host in per for record in host["rdma_records"])


@pytest.mark.parametrize("case", CAPTURED["summaries"], ids=lambda case: case["id"])
def test_the_summary_line_is_what_the_roles_jinja_wrote(case):
    assert roce_validate_summary(case["result"]) == case["jinja"]


def port(address, netdev="ens1", device="mlx5_0", number="1", gid_index=3):
    return {"device": device, "port": number, "netdev": netdev, "gid_index": gid_index, "ipv4": [address] if address else []}


def link(rail, interface, address):
    return {"rail": rail, "interface": interface, "address": address, "table": 101}


def small(rc):
    return "== %s small rc=%d\n== %s big rc=0" % (NONCE, rc, NONCE)


# a: two rails; b: two rails; c: one rail (rail1); d: no rails; e: a partner outside the batch (two rails);
# f: in the batch, ports but no IPv4 address
FABRIC = {
    "a": {"validate_ports": [port("10.0.0.1")], "validate_rail_links": [link("rail0", "r0", "172.16.0.1"), link("rail1", "r1", "172.16.1.1")]},
    "b": {"validate_ports": [port("10.0.0.2")], "validate_rail_links": [link("rail0", "r0", "172.16.0.2"), link("rail1", "r1", "172.16.1.2")]},
    "c": {"validate_ports": [port("10.0.0.3", netdev="ens9")], "validate_rail_links": [link("rail1", "r1", "172.16.1.3")]},
    "d": {"validate_ports": [port("10.0.0.4")]},
    "e": {"validate_ports": [port("10.0.0.5")], "validate_rail_links": [link("rail0", "r0", "172.16.0.5"), link("rail1", "r1", "172.16.1.5")]},
    "f": {"validate_ports": [port(None)], "validate_rail_links": [link("rail0", "r0", "172.16.0.6")]},
}
BATCH = ["a", "b", "c", "d", "f"]
PAIRS = [["a", "b"], ["a", "c"], ["a", "d"], ["a", "e"], ["b", "a"]]


def ping(source, target):
    return ["ping", "-c", "2", "-W", "3", "-I", source, target]


def test_rail_pings_each_rail_to_the_same_rail_of_peers_of_the_batch():
    got = roce_validate_rail_pings(FABRIC, PAIRS, "a", BATCH)
    assert got == [
        {"argv": ping("172.16.0.1", "172.16.0.2"), "item": [["a", "b"], FABRIC["a"]["validate_rail_links"][0]]},
        {"argv": ping("172.16.1.1", "172.16.1.2"), "item": [["a", "b"], FABRIC["a"]["validate_rail_links"][1]]},
        # c has rail1 only; d has no rails; e is outside the batch: no rail counters are read there
        {"argv": ping("172.16.1.1", "172.16.1.3"), "item": [["a", "c"], FABRIC["a"]["validate_rail_links"][1]]},
    ]


def test_rail_pings_only_the_first_peer_link_of_a_rail():
    fabric = dict(FABRIC, b={"validate_ports": [port("10.0.0.2")],
                             "validate_rail_links": [link("rail0", "r0", "172.16.0.2"), link("rail0", "r9", "172.16.0.99")]})
    got = roce_validate_rail_pings(fabric, [["a", "b"]], "a", BATCH)
    assert [command["argv"] for command in got] == [ping("172.16.0.1", "172.16.0.2")]


def test_no_rail_pings_from_a_host_without_rails_nor_as_the_server():
    assert roce_validate_rail_pings(FABRIC, PAIRS, "d", BATCH) == []
    assert roce_validate_rail_pings(FABRIC, [["b", "a"]], "a", BATCH) == []
    assert roce_validate_rail_pings(FABRIC, [], "a", BATCH) == []


def test_path_checks_from_this_hosts_address_to_each_peers_with_the_mtus_payload():
    got = roce_validate_path_checks(FABRIC, PAIRS, "a", NONCE, 9000, PATH_SCRIPT)
    assert [command["item"] for command in got] == [["a", "b"], ["a", "c"], ["a", "d"], ["a", "e"]]
    assert got[1]["argv"] == ["sh", "-c", PATH_SCRIPT, "sh", NONCE, "10.0.0.1", "ens1", "10.0.0.3", "8972"]
    assert got[3]["argv"][7:] == ["10.0.0.5", "8972"]  # a partner outside the batch is checked too
    assert roce_validate_path_checks(FABRIC, [["c", "a"]], "c", NONCE, 1500, PATH_SCRIPT)[0]["argv"][5:] == ["10.0.0.3", "ens9", "10.0.0.1", "1472"]


def test_no_path_checks_from_a_host_without_an_ipv4_address():
    assert roce_validate_path_checks(FABRIC, [["f", "a"]], "f", NONCE, 9000, PATH_SCRIPT) == []
    assert roce_validate_path_checks({"g": {"validate_ports": []}, "a": FABRIC["a"]}, [["g", "a"]], "g", NONCE, 9000, PATH_SCRIPT) == []


def test_arp_probes_ask_on_the_first_rail_for_the_peers_other_rails():
    got = roce_validate_arp_probes(FABRIC, PAIRS, "a", ARP_SCRIPT)
    # b and e have two rails (ask for their rail1 address on a's rail0 NIC); c has one rail and d none
    assert got == [{"item": ["a", "b"], "argv": ["sh", "-c", ARP_SCRIPT, "sh", "r0", "172.16.1.2"]},
                   {"item": ["a", "e"], "argv": ["sh", "-c", ARP_SCRIPT, "sh", "r0", "172.16.1.5"]}]
    assert roce_validate_arp_probes(FABRIC, [["c", "a"]], "c", ARP_SCRIPT) == [{"item": ["c", "a"], "argv": ["sh", "-c", ARP_SCRIPT, "sh", "r1", "172.16.0.1"]}]
    assert roce_validate_arp_probes(FABRIC, [["d", "a"]], "d", ARP_SCRIPT) == []


def pinged(fabric, sender, results):
    fabric = dict(fabric)
    fabric[sender] = dict(fabric[sender], validate_pings=[dict({"item": [sender, peer], "rc": rc}, **({} if rc is None else {"stdout": small(rc)}))
                                                          for peer, rc in results])
    return fabric


def test_unreachable_peers_their_senders_and_the_pairs():
    fabric = pinged(pinged(FABRIC, "a", [("b", 1), ("c", 0), ("d", None), ("e", 1)]), "b", [("a", 1)])
    assert roce_validate_failed_senders(fabric, BATCH, "b", NONCE) == ["a"]
    assert roce_validate_failed_senders(fabric, BATCH, "a", NONCE) == ["b"]
    assert roce_validate_failed_senders(fabric, BATCH, "c", NONCE) == []
    assert roce_validate_failed_senders(fabric, BATCH, "d", NONCE) == []  # no output: not a failed path
    # a and b failed each other: one pair; the partner e too
    assert roce_validate_unreachable_pairs(fabric, BATCH, NONCE) == [["a", "b"], ["a", "e"]]
    # another run's nonce does not count as answered
    assert roce_validate_unreachable_pairs(fabric, BATCH, "f" * 32) == [["a", "b"], ["a", "c"], ["a", "e"]]


def test_ping_records_carry_both_ends_and_the_far_ends_evidence():
    fabric = pinged(FABRIC, "a", [("b", 1), ("e", 0)])
    fabric["b"] = dict(fabric["b"], validate_peer_evidence={"results": [{"item": "c", "stdout": "not for a"}, {"item": "a", "rc": 1},
                                                                        {"item": "a", "stdout": "carrier 0"}]})
    got = roce_validate_ping_records(fabric, "a", 4200, NONCE)
    assert got == [
        {"host": "a", "peer": "b", "address": "10.0.0.2", "size": 4172, "rc": 1, "stdout": small(1), "stderr": "", "skipped": False,
         "why": "no RDMA address on a", "source": "10.0.0.1", "netdev": "ens1", "peer_netdev": "ens1", "peer_evidence": "carrier 0", "nonce": NONCE},
        # the partner outside the batch read no evidence
        {"host": "a", "peer": "e", "address": "10.0.0.5", "size": 4172, "rc": 0, "stdout": small(0), "stderr": "", "skipped": False,
         "why": "no RDMA address on a", "source": "10.0.0.1", "netdev": "ens1", "peer_netdev": "ens1", "peer_evidence": None, "nonce": NONCE},
    ]
    assert roce_validate_ping_records(FABRIC, "d", 4200, NONCE) == []


def test_rdma_records_match_the_clients_to_the_pairs():
    fabric = dict(FABRIC)
    fabric["a"] = dict(fabric["a"], validate_clients={"results": [
        {"item": ["ib_write_bw", 0], "rc": 0, "stdout": "bw a-b", "stderr": "", "attempts": 1},
        {"item": ["ib_write_bw", 1], "skipped": True},
        {"item": ["ib_write_lat", 0], "rc": 124, "stdout": "", "stderr": "hung", "attempts": 2},
        {"item": ["ib_write_lat", 1], "skipped": True}]})
    fabric["d"] = {"validate_ports": []}
    got = roce_validate_rdma_records(fabric, [["a", "b"], ["a", "d"], ["b", "a"]], "a", [["a", "d"]], 106, True, "", True)
    assert [(r["test"], r["peer"], r["rc"], r["stdout"], r["attempts"], r["skipped"], r["peer_device"]) for r in got] == [
        ("ib_write_bw", "b", 0, "bw a-b", 1, False, "mlx5_0/1"),
        ("ib_write_bw", "d", None, "", None, True, None),
        ("ib_write_lat", "b", 124, "", 2, False, "mlx5_0/1"),
        ("ib_write_lat", "d", None, "", None, True, None)]
    assert {(r["device"], r["gid_index"], r["tos"], r["why"], r["requested"]) for r in got} == {
        ("mlx5_0/1", 3, 106, "the pair does not reach each other", True)}
    planned_out = roce_validate_rdma_records(fabric, [["a", "b"]], "a", [], 106, False, "validate_rdma is false", False)
    assert [(r["skipped"], r["why"], r["requested"]) for r in planned_out] == [(True, "validate_rdma is false", False)] * 2


def test_hosts_collects_every_hosts_state_and_none_for_the_others():
    fabric = dict(FABRIC, a=dict(FABRIC["a"], validate_state={"rdma": {}}))
    assert roce_validate_hosts(fabric, ["a", "b", "gone"]) == {"a": {"rdma": {}}, "b": None, "gone": None}


def test_summary_names_the_verdict_the_failures_and_each_perftest():
    result = {"passed": False, "report_path": "/r", "measurements": [
        {"kind": "ib_write_bw", "host": "a", "peer": "b", "value": 97.5, "unit": "Gb/s"},
        {"kind": "ping", "host": "a", "peer": "b", "value": 0.1, "unit": "ms"},
        {"kind": "ib_write_lat", "host": "a", "peer": "b", "value": None, "unit": "us"}],
        "summary": {"checked": 10, "failed": 2, "not_checked": 1, "failed_hosts": ["a", "b"], "unproven": ["no nccl"]}}
    assert roce_validate_summary(result) == ("fabric FAILED: 8 checks passed, 2 failed (a, b), 1 not checked; not proven: no nccl;  "
                                             "ib_write_bw a -> b 97.5 Gb/s; ib_write_lat a -> b  us; report /r")


def test_every_filter_is_exported():
    assert sorted(FilterModule().filters()) == sorted([
        "roce_validate_rail_pings", "roce_validate_path_checks", "roce_validate_arp_probes", "roce_validate_failed_senders",
        "roce_validate_unreachable_pairs", "roce_validate_ping_records", "roce_validate_rdma_records", "roce_validate_hosts",
        "roce_validate_summary", "roce_validate_perftest_servers", "roce_validate_perftest_clients"])


@pytest.mark.parametrize("call, words", [
    (lambda: roce_validate_rail_pings(["a"], PAIRS, "a", BATCH), ["roce_validate_rail_pings: its input must be hostvars", "a list"]),
    (lambda: roce_validate_rail_pings(FABRIC, "a-b", "a", BATCH), ["the pairs must be a list of [client, server]", 'text ("a-b")', "validate_pair_list"]),
    (lambda: roce_validate_rail_pings(FABRIC, PAIRS, "a", "a,b"), ["the batch must be a list of host names", "ansible_play_batch"]),
    (lambda: roce_validate_path_checks(FABRIC, PAIRS, None, NONCE, 9000, PATH_SCRIPT), ["the host must be a host name, got null", "inventory_hostname"]),
    (lambda: roce_validate_path_checks(FABRIC, PAIRS, "a", NONCE, "9000", PATH_SCRIPT), ["host_mtu must be a whole number", 'text ("9000")']),
    (lambda: roce_validate_path_checks(FABRIC, PAIRS, "a", 5, 9000, PATH_SCRIPT), ["the nonce must be text, got a number (5)", "validate_path_nonce"]),
    (lambda: roce_validate_path_checks(FABRIC, [["a", "f"]], "a", NONCE, 9000, PATH_SCRIPT),
     ["host f is in the pairs but has no RDMA address", "roce_validate_pairs"]),
    (lambda: roce_validate_arp_probes(FABRIC, PAIRS, "a", ["x"]), ["the script must be text, got a list", "validate_rail_arp_script"]),
    (lambda: roce_validate_unreachable_pairs(FABRIC, BATCH, None), ["the nonce must be text, got null"]),
    (lambda: roce_validate_rdma_records(FABRIC, PAIRS, "a", "none", 106, True, "", True), ["the unreachable pairs must be", "validate_unreachable_pairs"]),
    (lambda: roce_validate_hosts(FABRIC, {"a": 1}), ["the hosts must be a list of host names, got a mapping", "ansible_play_hosts_all"]),
    (lambda: roce_validate_summary({"passed": True}), ["roce_validate_summary: its input must be the result rdmaops.roce.fabric_check registered"]),
])
def test_bad_input_is_refused_in_words(call, words):
    with pytest.raises(AnsibleFilterError) as error:
        call()
    message = str(error.value)
    for word in words:
        assert word in message
    assert not re.search(r"\b(str|dict|NoneType|int|float|bool|tuple|Traceback)\b", message), message


class CountingHostvars(Mapping):
    """hostvars that count the hosts looked up (Ansible's computes all of a host's variables on each)."""

    def __init__(self, hosts):
        self.hosts, self.read = hosts, []

    def __getitem__(self, name):
        self.read.append(name)
        return self.hosts[name]

    def __contains__(self, name):  # as Ansible's: from the inventory, no variables computed
        return name in self.hosts

    def __iter__(self):
        return iter(self.hosts)

    def __len__(self):
        return len(self.hosts)


def test_a_host_reads_only_the_hosts_its_commands_name():
    names = ["h%03d" % index for index in range(200)]
    hosts = dict((name, {"validate_ports": [port("10.1.%d.%d" % divmod(index + 1, 250))],
                         "validate_rail_links": [link("rail0", "r0", "172.16.%d.%d" % divmod(index + 1, 250))]})
                 for index, name in enumerate(names))
    ring = [[name, names[(index + 1) % len(names)]] for index, name in enumerate(names)]
    for call in (lambda hostvars: roce_validate_rail_pings(hostvars, ring, "h007", names),
                 lambda hostvars: roce_validate_path_checks(hostvars, ring, "h007", NONCE, 9000, PATH_SCRIPT),
                 lambda hostvars: roce_validate_arp_probes(hostvars, ring, "h007", ARP_SCRIPT),
                 lambda hostvars: roce_validate_rdma_records(hostvars, ring, "h007", [], 106, True, "", True)):
        hostvars = CountingHostvars(hosts)
        assert call(hostvars) is not None
        assert sorted(hostvars.read) == ["h007", "h008"]
