"""validate's rail checks: each rail's address, rule and table as planned, and ARP/rp_filter."""

from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.checks import fabric_check
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.rails import rail_findings

LINKS = [
    dict(rail="rail0", interface="v0", address="10.10.0.1", prefix=31, network="10.10.0.0/31", gateway="10.10.0.0", table=100,
         rule_priority=1000),
    dict(rail="rail1", interface="v1", address="10.20.0.2", prefix=24, network="10.20.0.0/24", gateway="10.20.0.1", table=101,
         rule_priority=1000),
]
# nic_layer's rails.before in check mode, read from a real kernel (the network namespace of
# tests/unit/plugins/module_utils/_mtu/test_rail_links.py, after the rails were applied)
READ = {
    "v0": {"addresses": ["192.168.9.9/24", "10.10.0.1/31"], "routes": ["default via 10.10.0.0 table 100", "10.10.0.0/31 table 100"],
           "rules": ["1000 from 10.10.0.1 lookup 100"], "sysctls": {"arp_announce": 2, "arp_ignore": 1, "rp_filter": 2}},
    "v1": {"addresses": ["10.20.0.2/24"], "routes": ["default via 10.20.0.1 table 101", "10.20.0.0/24 table 101"],
           "rules": ["1000 from 10.20.0.2 lookup 101"], "sysctls": {"arp_announce": 2, "arp_ignore": 1, "rp_filter": 2}},
}


def test_a_host_as_planned_passes_every_rail_check():
    found = rail_findings("gpu1", dict(rails=dict(links=LINKS, read=READ)))
    assert len(found) == 12 and all(f["passed"] is True for f in found)
    assert found[0] == dict(check="rails", host="gpu1", peer=None, device="v0", field="rail rail0 address", expected="10.10.0.1/31",
                            actual="192.168.9.9/24, 10.10.0.1/31", hint="", passed=True)


def test_the_arp_flux_host_and_a_missing_rule_are_findings():
    read = {"v0": dict(READ["v0"], rules=[], sysctls={"arp_announce": 0, "arp_ignore": 0, "rp_filter": 1}), "v1": READ["v1"]}
    failed = [f for f in rail_findings("gpu1", dict(rails=dict(links=LINKS, read=read))) if f["passed"] is False]
    assert [(f["field"], f["expected"], f["actual"]) for f in failed] == [
        ("rail rail0 rule", "1000 from 10.10.0.1 lookup 100", "none"),
        ("net.ipv4.conf.v0.arp_ignore", 1, 0),
        ("net.ipv4.conf.v0.arp_announce", 2, 0),
        ("net.ipv4.conf.v0.rp_filter", 2, 1),
    ]
    assert "ARP flux" in failed[1]["hint"] and "leaves by the main table's route" in failed[0]["hint"]


def test_a_host_not_read_is_not_checked_and_a_host_without_rails_is_not_reported():
    found = rail_findings("gpu1", dict(rails=dict(links=LINKS, read=None, error="rails: interface v1 does not exist")))
    assert [f["passed"] for f in found] == [None, None] and found[1]["hint"] == "rails: interface v1 does not exist"
    assert rail_findings("gpu1", {}) == [] and rail_findings("gpu1", dict(rails=None)) == []


def test_fabric_check_reports_the_rails_with_the_hosts():
    result = fabric_check(resolve_intent({}), {"gpu1": {"rails": dict(links=LINKS, read=dict(READ, v1=dict(READ["v1"], addresses=[])))}})
    rails = [f for f in result["findings"] if f["check"] == "rails"]
    assert len(rails) == 12
    assert [f["field"] for f in rails if f["passed"] is False] == ["rail rail1 address"]
    assert "gpu1" in result["summary"]["failed_hosts"]


def test_a_ping_per_rail_to_the_peer_is_a_finding():
    pings = [
        {"item": [["gpu1", "gpu2"], LINKS[0]], "rc": 0, "cmd": ["ping", "-c", "2", "-W", "3", "-I", "10.10.0.1", "10.10.0.3"],
         "stdout": "2 packets transmitted, 2 received, 0% packet loss, time 1001ms\n"},
        {"item": [["gpu1", "gpu2"], LINKS[1]], "rc": 1, "cmd": ["ping", "-c", "2", "-W", "3", "-I", "10.20.0.2", "10.20.0.3"],
         "stdout": "2 packets transmitted, 0 received, 100% packet loss, time 1030ms\n"},
    ]
    found = [f for f in rail_findings("gpu1", dict(rails=dict(links=LINKS, read=READ, pings=pings))) if f["field"].endswith("path")]
    assert [(f["peer"], f["field"], f["passed"]) for f in found] == [("gpu2", "rail rail0 path", True), ("gpu2", "rail rail1 path", False)]
    assert found[1]["expected"] == "10.20.0.2 -> 10.20.0.3 answers"
    assert found[1]["actual"] == "rc 1: 2 packets transmitted, 0 received, 100% packet loss, time 1030ms"


# -- the per-rail proof, over outputs recorded in the two-rail soft-RoCE lab (tests/unit/fixtures/rails):
# vm1 and vm2, rail1 on ens4 (rxe0), rail2 on ens7 (rxe1), both rails in 198.18.0.0/24
import os  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.rails import (  # noqa: E402  pylint: disable=wrong-import-position
    gid_address, parse_arp_probe, parse_rail_perftest, parse_rx)

RAILS = os.path.join(os.path.dirname(os.path.abspath(__file__)), *([os.pardir] * 3 + ["fixtures", "rails"]))


def recorded(name):
    with open(os.path.join(RAILS, name), encoding="utf-8") as handle:
        return handle.read()


def lab_links(n):
    return [dict(rail="rail1", interface="ens4", address="198.18.0.1%d" % n, prefix=24, network="198.18.0.0/24",
                 gateway="198.18.0.1", table=100, rule_priority=1000),
            dict(rail="rail2", interface="ens7", address="198.18.0.2%d" % n, prefix=24, network="198.18.0.0/24",
                 gateway="198.18.0.1", table=101, rule_priority=1000)]


def lab_states(vm1=None, vm2=None):  # noqa: D103
    return {"vm1": {"rails": dict(dict(links=lab_links(1)), **(vm1 or {}))},
            "vm2": {"rails": dict(dict(links=lab_links(2)), **(vm2 or {}))}}


RAIL2_PING = {"item": [["vm1", "vm2"], lab_links(1)[1]], "rc": 0, "cmd": ["ping", "-c", "2", "-W", "3", "-I", "198.18.0.21", "198.18.0.22"]}


def test_the_rail_ping_arrived_on_the_peers_nic_of_that_rail():
    states = lab_states(vm1=dict(pings=[dict(RAIL2_PING, stdout=recorded("ping_rail2.txt"))]),
                        vm2=dict(rx=dict(before=recorded("rx_before.txt"), after=recorded("rx_after.txt"))))
    assert parse_rx(recorded("rx_before.txt")) == {"ens4": 185, "ens7": 10047}
    found = [f for f in rail_findings("vm1", states["vm1"], states) if f["field"] == "rail rail2 path"]
    assert [(f["passed"], f["actual"]) for f in found] == [(True, "answers; vm2's ens7 received +2 packets")]
    assert found[0]["expected"] == "198.18.0.21 -> 198.18.0.22 answers, received on vm2's ens7"


def test_a_rail_ping_answered_through_another_nic_is_a_finding():
    # recorded with vm1's rule for 198.18.0.21 deleted and vm2's ens4 at arp_ignore=0: the ping left
    # by rail 1 and vm2 answered it on ens4; its ens7 received nothing
    states = lab_states(vm1=dict(pings=[dict(RAIL2_PING, stdout=recorded("ping_rail2_wrong_nic.txt"))]),
                        vm2=dict(rx=dict(before=recorded("rx_before_wrong_nic.txt"), after=recorded("rx_after_wrong_nic.txt"))))
    found = [f for f in rail_findings("vm1", states["vm1"], states) if f["field"] == "rail rail2 path"]
    assert [(f["passed"], f["actual"]) for f in found] == [(False, "answers; vm2's ens7 received +0 packets")]
    assert "arrived on another of its NICs" in found[0]["hint"] and "received 0 packets for the 2 sent" in found[0]["hint"]


ARP_CMD = ["sh", "-c", "script", "sh", "ens4", "198.18.0.21"]


def test_arp_for_another_rails_address_answered_is_flux_on_the_peer():
    assert parse_arp_probe(recorded("arp_probe_answered.txt")) == {"198.18.0.21": "52:54:00:18:00:11"}
    assert parse_arp_probe(recorded("arp_probe_no_answer.txt")) == {"198.18.0.21": None}
    flux = lab_states(vm2=dict(arp=[dict(item=["vm2", "vm1"], cmd=ARP_CMD, rc=0, stdout=recorded("arp_probe_answered.txt"))]))
    found = [f for f in rail_findings("vm2", flux["vm2"], flux) if "ARP" in f["field"]]
    assert [(f["host"], f["peer"], f["field"], f["passed"], f["actual"]) for f in found] == [
        ("vm1", "vm2", "rail rail2 ARP on another rail", False, "answered by 52:54:00:18:00:11")]
    assert "ARP flux" in found[0]["hint"] and "arp_ignore=1" in found[0]["hint"]
    fixed = lab_states(vm2=dict(arp=[dict(item=["vm2", "vm1"], cmd=ARP_CMD, rc=0, stdout=recorded("arp_probe_no_answer.txt"))]))
    assert [(f["passed"], f["actual"]) for f in rail_findings("vm2", fixed["vm2"], fixed) if "ARP" in f["field"]] == [(True, "no answer")]


BW_CMD = ["timeout", "120", "ib_write_bw", "-d", "rxe1", "-i", "1", "-x", "1", "--tclass=106", "-D", "2", "--report_gbits",
          "-p", "18517", "198.18.0.12"]


def test_ib_write_bw_per_rail_names_the_device_and_both_gids():
    text = recorded("ib_write_bw_rail2_rxe1.txt")
    assert parse_rail_perftest(text) == ("rxe1", "198.18.0.21", "198.18.0.22")
    assert gid_address("254:128:00:00:00:00:00:00:80:84:00:255:254:24:00:33") == "fe80:0:0:0:5054:ff:fe18:21"
    assert gid_address("not a gid") is None
    states = lab_states(vm1=dict(rdma=[dict(item=[0, 1], cmd=BW_CMD, rc=0, stdout=text)]))
    found = [f for f in rail_findings("vm1", states["vm1"], states) if f["field"].endswith("RDMA")]
    assert [(f["field"], f["peer"], f["device"], f["passed"], f["actual"]) for f in found] == [
        ("rail rail2 RDMA", "vm2", "rxe1", True, "rxe1, GID 198.18.0.21 -> 198.18.0.22: 0.130 Gb/s")]
    # the same run reported for rail 1: it did not run from rail 1's address on rail 1's device
    wrong = lab_states(vm1=dict(rdma=[dict(item=[0, 0], cmd=BW_CMD[:4] + ["rxe0"] + BW_CMD[5:], rc=0, stdout=text)]))
    found = [f for f in rail_findings("vm1", wrong["vm1"], wrong) if f["field"].endswith("RDMA")]
    assert [(f["field"], f["passed"]) for f in found] == [("rail rail1 RDMA", False)]
    failed = lab_states(vm1=dict(rdma=[dict(item=[0, 1], cmd=BW_CMD, rc=1, stdout="Received 10 times ADDR_ERROR\n")]))
    found = [f for f in rail_findings("vm1", failed["vm1"], failed) if f["field"].endswith("RDMA")]
    assert found[0]["passed"] is False and found[0]["actual"] == "rc 1: Received 10 times ADDR_ERROR"
