"""roce_mtu_mismatches on facts gathered from real Soft-RoCE captures and the ConnectX-7 tree."""

import pytest
from ansible.errors import AnsibleFilterError

import hosttree
from fixtures.hosts import cx7_doca
from hosttree import gather_facts as gather

from ansible_collections.rdmaops.roce.plugins.filter.roce_mtu_mismatches import FilterModule, roce_mtu_mismatches


def test_registered():
    assert FilterModule().filters()["roce_mtu_mismatches"] is roce_mtu_mismatches


def test_rxe_at_9000_agrees(tmp_path):
    facts = gather(tmp_path, hosttree.load("rxe_bookworm_mtu9000.json"))[0]
    assert roce_mtu_mismatches(facts, 9000, host="vm1") == []


def test_rxe_at_1500_is_reported_with_host_port_netdev_and_active_mtu(tmp_path):
    facts = gather(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))[0]
    assert roce_mtu_mismatches(facts, 9000, ["ens4"], host="vm1") == [
        dict(
            host="vm1",
            device="rxe0",
            port="1",
            netdev="ens4",
            netdev_mtu=1500,
            active_mtu=1024,
            expected_active_mtu=4096,
            mtu_source="ibv_devinfo",
            problem="netdev MTU 1500, not 9000; active_mtu 1024, not 4096",
        )
    ]
    # the same host checked against a 1500 intent agrees (1500 - 96 fits 1024)
    assert roce_mtu_mismatches(facts, 1500) == []


def test_cx7_only_the_listed_interfaces_are_checked(tmp_path):
    facts = gather(tmp_path, cx7_doca.manifest())[0]
    # mlx5_0/ens1f0np0 is at 9000 and 4096; mlx5_1/ens1f1np1 is down at 1500 and 1024
    assert roce_mtu_mismatches(facts, 9000, ["ens1f0np0"]) == []
    (entry,) = roce_mtu_mismatches(facts, 9000)
    assert (entry["device"], entry["netdev"], entry["active_mtu"]) == ("mlx5_1", "ens1f1np1", 1024)


def test_bad_input_names_the_problem():
    with pytest.raises(AnsibleFilterError, match="expects ansible_facts.rdma"):
        roce_mtu_mismatches({}, 9000)
    with pytest.raises(AnsibleFilterError, match="host_mtu='jumbo' is not an integer"):
        roce_mtu_mismatches({"devices": {}}, "jumbo")


def test_one_interface_name_as_a_string_is_that_interface_not_its_letters(tmp_path):
    facts = gather(tmp_path, cx7_doca.manifest())[0]
    # set("ens1f0np0") used to be a set of letters, so no port matched and nothing was reported
    (entry,) = roce_mtu_mismatches(facts, 9000, "ens1f1np1")
    assert entry["netdev"] == "ens1f1np1"
    assert roce_mtu_mismatches(facts, 9000, "ens1f0np0") == []


@pytest.mark.parametrize("host_mtu", [True, None, "9000.0", [9000]])
def test_host_mtu_that_is_not_an_integer_is_refused(host_mtu):
    # int(True) used to be 1: every port was then reported against an MTU of 1
    with pytest.raises(AnsibleFilterError, match="is not an integer"):
        roce_mtu_mismatches({"devices": {}}, host_mtu)
    assert roce_mtu_mismatches({"devices": {}}, "9000") == []
