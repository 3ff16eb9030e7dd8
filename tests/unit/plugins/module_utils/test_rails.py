"""The fabric's address plan (roce_fabric.rails): allocation, gateways, and one refusal per problem."""

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._rails import check_rails, plan_rails

# What must never reach a user: Python's type names or a traceback.
from hostiletext import python_words


def problems(rails, hosts=None, only=None):
    with pytest.raises(IntentError) as caught:
        plan_rails(rails, hosts or {}, only=only)
    for problem in caught.value.problems:
        assert not python_words(problem), problem
    return caught.value.problems


def one_problem(rails, hosts=None):
    found = problems(rails, hosts)
    assert len(found) == 1, found
    return found[0]


def test_no_rails_is_todays_intent_byte_for_byte():
    assert "rails" not in resolve_intent({})
    assert resolve_intent({}) == resolve_intent({"preset": "lossless"})
    assert plan_rails(None, {"h": {"roce_rail_index": 0}}) == {}
    assert check_rails(None) == []


def test_rails_pass_through_the_intent_as_written():
    rails = [{"name": "rail0", "subnet": "10.0.0.0/24", "netdev": "ens1f0np0"}]
    assert resolve_intent({"rails": rails})["rails"] == rails


def test_subnet_rail_gateway_first_and_hosts_after_it():
    plan = plan_rails([{"name": "rail0", "subnet": "10.0.0.0/24", "netdev": "ens1f0np0"}],
                      {"gpu1": {"roce_rail_index": 0}, "gpu2": {"roce_rail_index": 9}, "mgmt": {}})
    assert sorted(plan) == ["gpu1", "gpu2"]  # a host without rail variables is not on the rails
    assert plan["gpu1"] == [dict(
        rail="rail0", family="ipv4", kind="subnet", address="10.0.0.2", prefix=24, cidr="10.0.0.2/24",
        network="10.0.0.0/24", gateway="10.0.0.1", table=100, rule_priority=1000, netdev="ens1f0np0",
    )]
    assert plan["gpu2"][0]["address"] == "10.0.0.11"


def test_gateway_last_and_given_and_ipv6():
    plan = plan_rails([
        {"name": "v4last", "subnet": "10.0.0.0/24", "gateway": "last", "rdma_device": "mlx5_0"},
        {"name": "v4given", "subnet": "10.1.0.0/24", "gateway": "10.1.0.200", "host_offset": 9, "pci": "0000:17:00.0"},
        {"name": "v6", "subnet": "fd00:1::/64", "netdevs": ["ens2f0np0", "eth2"], "table": 5000, "rule_priority": 200},
    ], {"h": {"roce_rail_index": 0}})["h"]
    assert [(e["address"], e["gateway"]) for e in plan] == [
        ("10.0.0.1", "10.0.0.254"), ("10.1.0.10", "10.1.0.200"), ("fd00:1::2", "fd00:1::1")]
    assert plan[0]["rdma_device"] == "mlx5_0" and plan[1]["pci"] == "0000:17:00.0"
    assert plan[2]["netdevs"] == ["ens2f0np0", "eth2"] and plan[2]["family"] == "ipv6"
    assert (plan[2]["table"], plan[2]["rule_priority"], plan[1]["table"]) == (5000, 200, 101)


def test_p2p_pool_gives_each_host_a_link_and_the_leaf_the_other_side():
    rails = [{"name": "r0", "p2p_pool": "10.10.0.0/22", "netdev": "ens1f0np0"},
             {"name": "r1", "p2p_pool": "10.11.0.0/22", "gateway": "last", "netdev": "ens2f0np0"},
             {"name": "r6", "p2p_pool": "fd00:6::/120", "netdev": "ens3f0np0"}]
    plan = plan_rails(rails, {"h3": {"roce_rail_index": 3}})["h3"]
    assert [(e["cidr"], e["network"], e["gateway"]) for e in plan] == [
        ("10.10.0.7/31", "10.10.0.6/31", "10.10.0.6"),
        ("10.11.0.6/31", "10.11.0.6/31", "10.11.0.7"),
        ("fd00:6::7/127", "fd00:6::6/127", "fd00:6::6"),
    ]


def test_explicit_addresses_win_over_the_index_for_their_rail():
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "r1", "p2p_pool": "10.9.0.0/24", "netdev": "b"}]
    plan = plan_rails(rails, {"h": {"roce_rail_index": 4, "roce_rail_addresses": {"r0": "10.0.0.77/24", "r1": "10.9.0.9"}},
                              "k": {"roce_rail_addresses": {"r0": "10.0.0.78", "r1": "10.9.0.11/31"}}})
    assert [e["cidr"] for e in plan["h"]] == ["10.0.0.77/24", "10.9.0.9/31"]
    assert plan["h"][1]["gateway"] == "10.9.0.8"
    assert [e["cidr"] for e in plan["k"]] == ["10.0.0.78/24", "10.9.0.11/31"]


def test_two_rails_may_share_one_subnet_with_disjoint_host_ranges():
    # The ARP-flux layout: both NICs in one subnet; the rules keep each address on its NIC.
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"},
             {"name": "r1", "subnet": "10.0.0.0/24", "netdev": "b", "host_offset": 101}]
    plan = plan_rails(rails, {"h": {"roce_rail_index": 0}})["h"]
    assert [e["address"] for e in plan] == ["10.0.0.2", "10.0.0.102"]
    assert [e["table"] for e in plan] == [100, 101]


def test_only_limits_the_plan_and_requires_every_listed_host():
    hosts = {"a": {"roce_rail_index": 0}, "b": {"roce_rail_index": 1}, "c": {}}
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}]
    assert sorted(plan_rails(rails, hosts, only=["b"])) == ["b"]
    assert problems(rails, hosts, only=["c", "zz"]) == [
        "host c, rail r0: no address: set roce_rail_index (the host's place in the rail's pool) or roce_rail_addresses.r0",
        'host "zz" is not in the inventory',
    ]


# -- refusals: one per problem, naming the rail and the host -------------------------------------
def test_overlapping_rails_are_refused_naming_both():
    found = one_problem([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "r1", "subnet": "10.0.0.128/25", "netdev": "b"}])
    assert found.startswith("rail r0 (roce_fabric.rails[0]) and rail r1 (roce_fabric.rails[1]) overlap (subnet 10.0.0.0/24 and subnet 10.0.0.128/25)")
    found = one_problem([{"name": "r0", "p2p_pool": "10.0.0.0/24", "netdev": "a"}, {"name": "r1", "p2p_pool": "10.0.0.0/24", "netdev": "b"}])
    assert "overlap (p2p_pool 10.0.0.0/24 and p2p_pool 10.0.0.0/24): give each rail a network of its own" in found


def test_address_outside_its_rail_names_host_and_rail():
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "r1", "subnet": "fd00::/64", "netdev": "b"}]
    found = problems(rails, {"gpu7": {"roce_rail_addresses": {"r0": "10.0.1.5", "r1": "10.0.0.5"}}})
    assert found == ["host gpu7, rail r0: address 10.0.1.5 is outside the rail's subnet 10.0.0.0/24",
                     "host gpu7, rail r1: address 10.0.0.5 is outside the rail's subnet fd00::/64"]


def test_two_hosts_with_one_address():
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}]
    found = one_problem(rails, {"gpu1": {"roce_rail_index": 3}, "gpu2": {"roce_rail_addresses": {"r0": "10.0.0.5"}}})
    assert found == "host gpu2, rail r0: address 10.0.0.5 is also host gpu1's on rail r0: give each NIC an address of its own"


def test_shared_subnet_with_overlapping_host_ranges_is_two_hosts_one_address():
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "r1", "subnet": "10.0.0.0/24", "netdev": "b"}]
    found = one_problem(rails, {"h": {"roce_rail_index": 0}})
    assert found == "host h, rail r1: address 10.0.0.2 is also host h's on rail r0: give each NIC an address of its own"


def test_pool_too_small_names_each_host_that_does_not_fit():
    rails = [{"name": "r0", "p2p_pool": "10.0.0.0/30", "netdev": "a"}]
    found = problems(rails, dict(("h%d" % i, {"roce_rail_index": i}) for i in range(4)))
    assert found == [
        "host h%d, rail r0: p2p_pool 10.0.0.0/30 is too small for roce_rail_index=%d: it has room for 2 host(s) "
        "(one /31 link each); use a larger p2p_pool or a smaller index" % (i, i) for i in (2, 3)]
    found = one_problem([{"name": "r0", "subnet": "10.0.0.0/29", "netdev": "a"}], {"h": {"roce_rail_index": 5}})
    assert "subnet 10.0.0.0/29 is too small for roce_rail_index=5: it has room for 5 host(s) (from host_offset 1 on)" in found


def test_gateway_inside_the_host_range():
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "gateway": "10.0.0.10", "netdev": "a"}]
    found = one_problem(rails, {"h%d" % i: {"roce_rail_index": i} for i in range(12)})
    assert found.startswith("host h9, rail r0: the gateway 10.0.0.10 (gateway: given) is inside the host range")
    # gateway first with the hosts moved onto it
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "host_offset": 0, "netdev": "a"}]
    assert one_problem(rails, {"h": {"roce_rail_index": 0}}).startswith("host h, rail r0: the gateway 10.0.0.1 (gateway: first) is inside")
    # an explicit address on the gateway, or on the leaf's side of a /31
    rails = [{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "p", "p2p_pool": "10.1.0.0/24", "netdev": "b"}]
    assert problems(rails, {"h": {"roce_rail_addresses": {"r0": "10.0.0.1", "p": "10.1.0.4"}}}) == [
        "host h, rail r0: address 10.0.0.1 is the rail's gateway; give the host another address",
        "host h, rail p: address 10.1.0.4 is the leaf's side of its /31 (gateway: first); the host's side is 10.1.0.5",
    ]


MALFORMED = [
    ("rails", "roce_fabric.rails must be a list of rails"),
    ({"name": "r0"}, "roce_fabric.rails must be a list of rails (name, subnet or p2p_pool, gateway, netdev...), not a mapping"),
    (["r0"], "roce_fabric.rails[0] must be a mapping (name, subnet or p2p_pool, gateway, netdev...), not text"),
    ([{"subnet": "10.0.0.0/24", "netdev": "a"}], "roce_fabric.rails[0].name=null: give each rail a name"),
    ([{"name": "r 0", "subnet": "10.0.0.0/24", "netdev": "a"}], "roce_fabric.rails[0].name=\"r 0\": give each rail a name"),
    ([{"name": "r0", "netdev": "a"}], "rail r0: roce_fabric.rails[0]: give exactly one of subnet"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "p2p_pool": "10.1.0.0/24", "netdev": "a"}], "give exactly one of subnet"),
    ([{"name": "r0", "subnet": "10.0.0.5/24", "netdev": "a"}], "subnet=\"10.0.0.5/24\" has host bits set: write the network, 10.0.0.0/24"),
    ([{"name": "r0", "subnet": "10.0.0.0", "netdev": "a"}], "subnet=\"10.0.0.0\" needs a prefix length"),
    ([{"name": "r0", "subnet": "10.0.0.0/24\n", "netdev": "a"}], "subnet=\"10.0.0.0/24\\n\" is not an IPv4 or IPv6 network"),
    ([{"name": "r0", "subnet": "10.0.0.0/24; rm -rf /", "netdev": "a"}], "is not an IPv4 or IPv6 network"),
    ([{"name": "r0", "subnet": 167772160, "netdev": "a"}], "subnet=167772160 must be text such as 10.0.0.0/24"),
    ([{"name": "r0", "subnet": "10.0.0.0/31", "netdev": "a"}], "leaves no room for hosts and a gateway; for point-to-point links write p2p_pool"),
    ([{"name": "r0", "p2p_pool": "10.0.0.0/32", "netdev": "a"}], "is smaller than one /31 link"),
    ([{"name": "r0", "p2p_pool": "10.0.0.0/24", "gateway": "10.0.0.1", "netdev": "a"}], "a p2p_pool rail's gateway is the leaf's side"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "gateway": "10.0.1.1", "netdev": "a"}], "gateway=10.0.1.1 is outside the rail's subnet"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "gateway": "10.0.0.255", "netdev": "a"}], "is the subnet's broadcast address"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "gateway": "router", "netdev": "a"}], "gateway=\"router\" is not an IPv4 or IPv6 address"),
    ([{"name": "r0", "subnet": "10.0.0.0/24"}], "say which netdev of each host is on the rail"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", "pci": "0000:17:00.0"}], "not several"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "-a"}], "netdev=\"-a\" must be an interface name"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "eth0\nip link del eth0"}], "netdev=\"eth0\\nip link del eth0\" must be an interface name"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "r0;reboot"}], "netdev=\"r0;reboot\" must be an interface name: 1-15 characters"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdevs": ["ens1", "$(reboot)"]}],
     "netdevs=[...] must be a non-empty list of interface names (each 1-15 characters of A-Z"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdevs": "a"}], "netdevs=\"a\" must be a non-empty list of interface names"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdevs": ["a", "a"]}], "netdevs names an interface twice"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "pci": "17:00.0"}], "pci=\"17:00.0\" must be a PCI address"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "rdma_device": {"x": 1}}], "rdma_device=a mapping must be an RDMA device name"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", "table": 254}], "table=254 must be a routing table number"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", "table": "100"}], "table=\"100\" must be a routing table number 1..2147483647"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", "rule_priority": 32766}], "rule_priority=32766 must be a number 1..32765"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", "host_offset": -1}], "host_offset=-1 must be a number 0 or more"),
    ([{"name": "r0", "p2p_pool": "10.0.0.0/24", "netdev": "a", "host_offset": 1}], "a p2p_pool rail gives host index N the N-th link"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", "mtu": 9000}], "roce_fabric.rails[0] has unknown key(s) \"mtu\""),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a", True: 1}], "has unknown key(s) true;"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "r0", "subnet": "10.1.0.0/24", "netdev": "b"}],
     "roce_fabric.rails[1].name=\"r0\": another rail has this name"),
    ([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}, {"name": "r1", "subnet": "10.1.0.0/24", "netdev": "b", "table": 100}],
     "rail r1 (roce_fabric.rails[1]).table=100 is also rail r0 (roce_fabric.rails[0])'s table"),
]


@pytest.mark.parametrize("rails, expected", MALFORMED)
def test_malformed_rails_get_one_clear_message(rails, expected):
    found = problems(rails)
    assert len(found) == 1, found
    assert expected in found[0], found[0]


HOST_MALFORMED = [
    ({"roce_rail_index": "3"}, "host h: roce_rail_index=\"3\" must be a number 0 or more"),
    ({"roce_rail_index": -1}, "host h: roce_rail_index=-1 must be a number 0 or more"),
    ({"roce_rail_index": True}, "roce_rail_index=true must be a number"),
    ({"roce_rail_addresses": ["10.0.0.5"]}, "host h: roce_rail_addresses must be a mapping of rail name to address"),
    ({"roce_rail_addresses": {"r0": "10.0.0.5", "r9": "1"}}, "host h: roce_rail_addresses names no rail: \"r9\"; rails: r0"),
    ({"roce_rail_addresses": {"r0": "10.0.0.5/25"}}, "the rail's prefix is /24"),
    ({"roce_rail_addresses": {"r0": "10.0.0.5 "}}, "roce_rail_addresses.r0=\"10.0.0.5 \" is not an IPv4 or IPv6 address"),
    ({"roce_rail_addresses": {"r0": 5}}, "roce_rail_addresses.r0=5 must be text such as 10.0.0.5 (got a number)"),
    ({"roce_rail_addresses": {"r0": "10.0.0.0"}}, "address 10.0.0.0 is the subnet's network address, not a host's"),
    ({"roce_rail_addresses": {"r0": "x" * 10000}}, "roce_rail_addresses.r0=\"" + "x" * 60 + "\"... is not an IPv4"),
]


@pytest.mark.parametrize("variables, expected", HOST_MALFORMED)
def test_malformed_host_variables(variables, expected):
    found = problems([{"name": "r0", "subnet": "10.0.0.0/24", "netdev": "a"}], {"h": variables}, only=["h"])
    assert any(expected in problem for problem in found), found


# -- hostile networks: every block a rail may not hold, and IPv6 that embeds IPv4 -------------
def rail(network, key="subnet", name="r0", netdev="a"):
    return {"name": name, key: network, "netdev": netdev}


RESERVED_RAILS = [
    ("0.0.0.0/0", "subnet", "is every IPv4 address: a /0 rail adds a connected route to everywhere, which competes with the "
                            "default route; give the rail its own network (e.g. 10.0.0.0/24)"),
    ("::/0", "p2p_pool", "is every IPv6 address: a /0 rail adds a connected route to everywhere"),
    ("0.0.0.0/1", "subnet", "holds the unspecified address 0.0.0.0"),
    ("127.0.0.0/24", "subnet", "holds the loopback block 127.0.0.0/8, where no rail's addresses may be; give the rail a "
                               "unicast network of its own (e.g. 10.0.0.0/24)"),
    ("127.0.0.0/31", "p2p_pool", "holds the loopback block 127.0.0.0/8"),
    ("::1/128", "p2p_pool", "holds the loopback address ::1"),  # smaller than a /127 link too: refused as loopback first
    ("::/126", "subnet", "holds the unspecified address ::"),
    ("169.254.0.0/16", "subnet", "holds the link-local block 169.254.0.0/16"),
    ("169.254.10.0/24", "p2p_pool", "holds the link-local block 169.254.0.0/16"),
    ("fe80::/64", "subnet", "holds the link-local block fe80::/10"),
    ("224.0.0.0/24", "subnet", "holds the multicast block 224.0.0.0/4"),
    ("239.1.0.0/16", "p2p_pool", "holds the multicast block 224.0.0.0/4"),
    ("ff02::/64", "subnet", "holds the multicast block ff00::/8"),
    ("255.255.255.254/31", "p2p_pool", "holds the limited broadcast address 255.255.255.255"),
    ("::ffff:10.0.0.0/120", "subnet", "holds the IPv4-mapped block ::ffff:0:0/96 (its addresses are IPv4 addresses to the kernel"),
    ("::ffff:a00:0/120", "p2p_pool", "holds the IPv4-mapped block ::ffff:0:0/96"),
    ("::10.0.0.0/120", "subnet", "holds the IPv4-compatible block ::/96"),
    ("::ffff:0:a00:0/120", "subnet", "holds the IPv4-translated block ::ffff:0:0:0/96"),
    ("64:ff9b::a00:0/120", "subnet", "holds NAT64's well-known block 64:ff9b::/96"),
    ("::/64", "subnet", "holds the unspecified address ::"),
    ("8000::/1", "subnet", "holds the link-local block fe80::/10"),
]


@pytest.mark.parametrize("network, key, expected", RESERVED_RAILS)
def test_rails_in_reserved_blocks_are_refused_naming_the_rail_and_the_fix(network, key, expected):
    found = one_problem([rail(network, key)])
    assert found.startswith("rail r0: roce_fabric.rails[0].%s=%s " % (key, json.dumps(network))), found
    assert expected in found, found


def test_ipv4_mapped_rail_beside_its_ipv4_rail_never_gives_two_hosts_one_address():
    rails = [rail("10.0.0.0/24"), rail("::ffff:10.0.0.0/120", name="r1", netdev="b")]
    found = one_problem(rails, {"h1": {"roce_rail_index": 0}, "h2": {"roce_rail_addresses": {"r1": "::ffff:10.0.0.2"}}})
    assert found.startswith("rail r1: roce_fabric.rails[1].subnet=\"::ffff:10.0.0.0/120\" holds the IPv4-mapped block"), found


def test_unicast_networks_next_to_the_reserved_blocks_are_planned():
    rails = [rail("126.255.255.0/24"), rail("128.0.0.0/24", name="r1", netdev="b"), rail("169.253.0.0/31", "p2p_pool", "r2", "c"),
             rail("223.255.255.0/24", name="r3", netdev="d"), rail("::1:0:0:0/120", name="r4", netdev="e"),
             rail("64:ff9b:1::/64", name="r5", netdev="f"), rail("fe00::/64", name="r6", netdev="g")]
    plan = plan_rails(rails, {"h": {"roce_rail_index": 0}})["h"]
    assert [entry["address"] for entry in plan] == [
        "126.255.255.2", "128.0.0.2", "169.253.0.1", "223.255.255.2", "::1:0:0:2", "64:ff9b:1::2", "fe00::2"]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, (1 << 32) - 1), st.integers(0, 32), st.integers(0, (1 << 128) - 1), st.integers(0, 128))
def test_no_planned_address_is_reserved_or_embeds_ipv4(v4, v4_prefix, v6, v6_prefix):
    """Whatever two networks are given, every planned address is unicast, not loopback, link-local,
    multicast or unspecified, and no IPv6 address stands for an IPv4 one."""
    import ipaddress

    v4_net = ipaddress.IPv4Network((v4, v4_prefix), strict=False)
    v6_net = ipaddress.IPv6Network((v6, v6_prefix), strict=False)
    rails = [rail(str(v4_net), "p2p_pool" if v4_prefix > 30 else "subnet"),
             rail(str(v6_net), "p2p_pool" if v6_prefix > 126 else "subnet", "r1", "b")]
    try:
        plan = plan_rails(rails, {"h": {"roce_rail_index": 0}})
    except IntentError as exc:
        assert all(problem.startswith("rail r") for problem in exc.problems), exc.problems
        assert all(not python_words(problem) for problem in exc.problems)
        return
    for entry in plan["h"]:
        for text in (entry["address"], entry["gateway"]):
            address = ipaddress.ip_address(text)
            assert not (address.is_loopback or address.is_link_local or address.is_multicast or address.is_unspecified), entry
            if address.version == 6:
                # IPv4-compatible (::/96), -mapped (::ffff:0:0/96), -translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96)
                assert int(address) >> 32 not in (0, 0xFFFF, 0xFFFF0000, 0x64FF9B << 64), entry
            else:
                assert str(address) != "255.255.255.255"
        assert ipaddress.ip_network(entry["network"]).prefixlen > 0


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
RAIL_LIKE = st.dictionaries(
    st.sampled_from(["name", "subnet", "p2p_pool", "gateway", "netdev", "netdevs", "pci", "rdma_device", "table",
                     "rule_priority", "host_offset"]) | st.text(max_size=6),
    JSONISH | st.sampled_from(["10.0.0.0/24", "fd00::/64", "10.0.0.0/31", "first", "last", "r0", "mlx5_0", "10.0.0.1"]),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(RAIL_LIKE, max_size=4) | JSONISH, st.dictionaries(st.text(max_size=8), JSONISH, max_size=3))
def test_hostile_input_is_refused_in_words_never_a_python_error(rails, host):
    try:
        plan_rails(rails, {"h": host, "k": {"roce_rail_index": 0}})
    except IntentError as exc:
        for problem in exc.problems:
            assert not python_words(problem), problem


def test_a_thousand_hosts_on_eight_rails_in_well_under_a_second():
    rails = [{"name": "rail%d" % i, "p2p_pool": "10.%d.0.0/20" % i, "netdev": "ens%df0np0" % i} for i in range(4)]
    rails += [{"name": "rail%d" % i, "subnet": "fd00:%d::/64" % i, "gateway": "last", "pci": "0000:%02x:00.0" % i} for i in range(4, 8)]
    hosts = dict(("gpu%04d" % i, {"roce_rail_index": i}) for i in range(1000))
    started = time.perf_counter()
    plan = plan_rails(rails, hosts)
    elapsed = time.perf_counter() - started
    print("rail plan: 1000 hosts x 8 rails in %.3f s" % elapsed)
    assert len(plan) == 1000 and all(len(entries) == 8 for entries in plan.values())
    assert len(set(e["address"] for entries in plan.values() for e in entries)) == 8000
    assert plan["gpu0999"][0]["cidr"] == "10.0.7.207/31" and plan["gpu0999"][7]["address"] == "fd00:7::3e8"
    assert elapsed < 2.0  # generous on a loaded 2-core CI machine; about 0.2 s measured
