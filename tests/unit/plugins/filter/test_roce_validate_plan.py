"""The validate role's plan (roce_validate_pairs, roce_validate_plan): the host pairs per mode, with
hosts that are unreachable or outside the batch, and what each host measures.

tests/unit/fixtures/validate_plan/jinja.json holds what the role's Jinja gave before these filters
replaced it, captured through ansible-playbook for 191 inventories (see its README.md); the
filters must give the same for each."""

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.roce.plugins.filter.roce_validate_plan import roce_validate_pairs, roce_validate_plan

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "validate_plan", "jinja.json")


def ports(address="10.0.0.1"):
    return [{"device": "mlx5_0", "port": 1, "netdev": "ens1", "gid_index": 3, "ipv4": [address] if address else []}]


def fabric(*names, **others):
    """hostvars for hosts with an RDMA address, plus ``others`` ({name: vars})."""
    hostvars = dict((name, {"validate_ports": ports("10.0.0.%d" % (index + 1))}) for index, name in enumerate(names))
    hostvars.update(others)
    return hostvars


def captured():
    with open(FIXTURE) as handle:
        return json.load(handle)


@pytest.mark.parametrize("case", captured()["pairs"], ids=lambda case: case["id"])
def test_pairs_are_what_the_roles_jinja_chose(case):
    hostvars = dict(case["hosts"])
    hostvars.update(case["partners"])
    got = roce_validate_pairs(hostvars, list(case["hosts"]), mode=case["mode"], sample_size=case["sample_size"],
                              partners=case["partner_hosts"])
    assert got == {"paths": case["jinja"]["pairs"], "rdma": case["jinja"]["rdma"]}


@pytest.mark.parametrize("case", captured()["measure"], ids=lambda case: case["id"])
def test_what_each_host_measures_is_what_the_roles_jinja_decided(case):
    for name, host in case["hosts"].items():
        got = roce_validate_plan(host["counter_lines"], ports=host["validate_ports"], gpus=host["gpus"] or [],
                                 check_mode=case["check_mode"], rdma=host["validate_rdma"], nccl=host["validate_nccl"],
                                 nccl_command=host["validate_nccl_command"])
        assert got == case["jinja"][name], name


def test_all_pairs_every_host_with_every_later_one():
    got = roce_validate_pairs(fabric("a", "b", "c", "d"), ["a", "b", "c", "d"], mode="all")
    assert got["paths"] == [["a", "b"], ["a", "c"], ["a", "d"], ["b", "c"], ["b", "d"], ["c", "d"]]
    assert got["rdma"] == [["a", "b"], ["b", "c"], ["c", "d"], ["d", "a"]]


@pytest.mark.parametrize("count", [3, 4, 7])
def test_ring_each_host_client_once_and_server_once(count):
    names = ["h%d" % index for index in range(count)]
    got = roce_validate_pairs(fabric(*names), names, mode="ring")
    assert got["paths"] == got["rdma"]
    assert sorted(pair[0] for pair in got["rdma"]) == sorted(names)
    assert sorted(pair[1] for pair in got["rdma"]) == sorted(names)
    assert all(a != b for a, b in got["rdma"])


def test_two_hosts_make_one_pair_and_one_host_none():
    assert roce_validate_pairs(fabric("a", "b"), ["a", "b"], mode="ring") == {"paths": [["a", "b"]], "rdma": [["a", "b"]]}
    assert roce_validate_pairs(fabric("a", "b"), ["a", "b"], mode="all") == {"paths": [["a", "b"]], "rdma": [["a", "b"]]}
    assert roce_validate_pairs(fabric("a"), ["a"], mode="all") == {"paths": [], "rdma": []}
    assert roce_validate_pairs({}, [], mode="sample") == {"paths": [], "rdma": []}


def test_sample_is_the_ring_plus_other_pairs_the_same_for_the_same_hosts():
    names = ["gpu%02d" % index for index in range(1, 9)]
    got = roce_validate_pairs(fabric(*names), names, mode="sample", sample_size=5)
    ring = roce_validate_pairs(fabric(*names), names, mode="ring")["paths"]
    every = roce_validate_pairs(fabric(*names), names, mode="all")["paths"]
    assert got["paths"][:len(ring)] == ring and got["rdma"] == ring
    extra = got["paths"][len(ring):]
    assert len(extra) == 5 and all(pair in every and pair not in ring for pair in extra)
    assert len(set(map(tuple, extra))) == 5
    assert roce_validate_pairs(fabric(*names), names, mode="sample", sample_size="5") == got
    # more than there is: every pair outside the ring, once
    whole = roce_validate_pairs(fabric(*names), names, mode="sample", sample_size=1000)["paths"][len(ring):]
    assert sorted(whole) == sorted(pair for pair in every if pair not in ring)
    assert roce_validate_pairs(fabric(*names), names, mode="sample", sample_size=0)["paths"] == ring


def test_hosts_without_an_rdma_address_are_left_out():
    # d was unreachable (it never read its ports), b has no active port, c a port without an address
    hostvars = fabric("a", "e", b={"validate_ports": []}, c={"validate_ports": ports(None)}, d={})
    got = roce_validate_pairs(hostvars, ["a", "b", "c", "d", "e"], mode="all")
    assert got == {"paths": [["a", "e"]], "rdma": [["a", "e"]]}


def test_partners_outside_the_batch_each_host_with_one_in_turn():
    hostvars = fabric("a", "b", "c", "p1", "p2")
    got = roce_validate_pairs(hostvars, ["a", "b", "c"], mode="ring", partners=["p1", "p2"])
    partner_pairs = [["a", "p1"], ["b", "p2"], ["c", "p1"]]
    assert got["paths"] == [["a", "b"], ["b", "c"], ["c", "a"]] + partner_pairs
    assert got["rdma"] == [["a", "b"], ["b", "c"], ["c", "a"]] + partner_pairs


def test_partners_in_the_batch_unread_or_unknown_are_not_partners():
    # p1 could not be read (no ports), a is in the batch, ghost is in no inventory
    hostvars = fabric("a", "b", "p2", p1={})
    got = roce_validate_pairs(hostvars, ["a", "b"], mode="all", partners=["p1", "a", "ghost", "p2"])
    assert got["paths"] == [["a", "b"], ["a", "p2"], ["b", "p2"]]
    none_ready = roce_validate_pairs(hostvars, ["a", "b"], mode="all", partners=["p1", "a"])
    assert none_ready == {"paths": [["a", "b"]], "rdma": [["a", "b"]]}


def test_an_unreachable_batch_host_gets_no_partner():
    hostvars = fabric("a", "p1", b={})
    got = roce_validate_pairs(hostvars, ["a", "b"], mode="ring", partners=["p1"])
    assert got == {"paths": [["a", "p1"]], "rdma": [["a", "p1"]]}


@pytest.mark.parametrize("hostvars, batch, partners, words", [
    ([], ["a"], [], "expects hostvars"),
    ({}, "a,b", [], "the batch (ansible_play_batch) must be a list"),
    ({}, ["a"], "p1", "validate_partner_hosts must be a list"),
    ({}, None, [], "the batch (ansible_play_batch) must be a list"),
])
def test_wrong_inputs_are_named(hostvars, batch, partners, words):
    with pytest.raises(AnsibleFilterError, match=words.replace("(", r"\(").replace(")", r"\)")):
        roce_validate_pairs(hostvars, batch, partners=partners)


TOOLS = ["== counters ens1", "== tool ib_write_bw /usr/bin/ib_write_bw", "== tool ib_write_lat /usr/bin/ib_write_lat",
         "== tool all_reduce_perf /opt/nccl-tests/all_reduce_perf"]


def test_a_ready_host_measures_everything():
    got = roce_validate_plan(TOOLS, ports=ports(), gpus=[{"pci": "0000:17:00.0"}])
    assert got["rdma_run"] is True and got["nccl_ready"] is True


@pytest.mark.parametrize("lines, kwargs, rdma_why, nccl_why", [
    (TOOLS, dict(rdma=False, nccl=False), "validate_rdma is false", "validate_nccl is false"),
    (TOOLS, dict(check_mode=True), "check mode: perftest loads the fabric, skipped", "check mode: nccl-tests skipped"),
    (TOOLS, dict(ports=[], gpus=[]), "no active RoCE port", "no GPU on this host"),
    (TOOLS[:2], dict(), "perftest (ib_write_bw, ib_write_lat) is not installed", "all_reduce_perf (nccl-tests) is not installed"),
    (TOOLS, dict(nccl_command="my_all_reduce"), None, "my_all_reduce (nccl-tests) is not installed"),
])
def test_what_a_host_does_not_measure_says_why(lines, kwargs, rdma_why, nccl_why):
    args = dict(ports=ports(), gpus=[{"pci": "0000:17:00.0"}])
    args.update(kwargs)
    got = roce_validate_plan(lines, **args)
    assert got["nccl_ready"] is False and got["nccl_why"] == nccl_why
    if rdma_why:
        assert not got["rdma_run"] and got["rdma_why"] == rdma_why
    else:
        assert got["rdma_run"] is True


def test_the_counter_read_must_be_lines():
    with pytest.raises(AnsibleFilterError, match="output lines"):
        roce_validate_plan("== tool ib_write_bw /usr/bin/ib_write_bw")
