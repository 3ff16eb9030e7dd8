"""The one management-path detector, on a host tree (HostRoot) and iproute2 JSON answers.

The tree and the ``ip -j`` answers come from :class:`linkhost.LinkHost`, which writes sysfs in
the kernel's layout and answers ``ip -j addr/route`` in iproute2 6.1's JSON shape.
"""

import json
import os

import pytest

from linkhost import LinkHost

from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.management import (
    ManagementPath,
    guard,
    plain_ip,
    ssh_connection,
)

SSH = "10.0.0.1 50022 10.0.0.5 22"


def path_of(host, environ=None):
    return ManagementPath(HostRoot(host.root), CommandRunner(host.module()), environ=environ if environ is not None else {})


@pytest.fixture
def flat(tmp_path):
    """eth0 carries SSH and both default routes (IPv4 twice: two metrics); ens1 is a fabric port."""
    host = LinkHost(tmp_path)
    host.link("eth0", addrs=["10.0.0.5/24", "2001:db8::5/64"], driver="virtio_net")
    host.link("ens1", mtu=9000, addrs=["192.168.100.12/24"])
    host.materialize()
    host.client_routes["10.0.0.1"] = "eth0"
    host.default_routes = [("inet", "10.0.0.254", "eth0"), ("inet", "10.0.0.253", "eth0"), ("inet6", "2001:db8::1", "eth0")]
    return host


def test_ssh_holder_route_back_and_default_routes_once_per_family(flat):
    found = path_of(flat, {"SSH_CONNECTION": SSH}).detect()
    assert found["interfaces"] == {
        "eth0": [
            "holds 10.0.0.5, the address this SSH connection came in on",
            "carries the route back to the SSH client 10.0.0.1",
            "carries an IPv4 default route",
            "carries an IPv6 default route",
        ]
    }
    assert found["protected"] == {"eth0": "eth0"}
    state = found["state"]
    assert state["ssh"] == {"client": "10.0.0.1", "server": "10.0.0.5"}
    assert state["address_holder"] == "eth0" and state["client_route"] == "eth0"
    assert state["default_routes"] == [
        "default via 10.0.0.254 dev eth0",
        "default via 10.0.0.253 dev eth0",
        "default via 2001:db8::1 dev eth0",
    ]
    assert "ip -j route get 10.0.0.1" in flat.calls


def test_route_back_can_differ_from_the_address_holder(flat):
    flat.client_routes["10.0.0.1"] = "ens1"  # asymmetric: in on eth0, back out through ens1
    found = path_of(flat, {"SSH_CONNECTION": SSH}).detect()
    assert found["interfaces"]["ens1"] == ["carries the route back to the SSH client 10.0.0.1"]
    assert found["state"]["client_route"] == "ens1"


def test_without_ssh_only_routes_and_what_the_user_names_count(flat):
    found = path_of(flat).detect(interfaces=["ens1", "nosuch0"], address="::ffff:192.168.100.12")
    assert found["state"]["ssh"] is None
    assert found["interfaces"] == {
        "eth0": ["carries an IPv4 default route", "carries an IPv6 default route"],
        # a name the host does not have is not reported as management
        "ens1": ["named in management_interfaces", "holds ::ffff:192.168.100.12, the management_address"],
    }
    assert "ip -j route get" not in " ".join(flat.calls)


def test_management_address_alone_protects_its_holder(flat):
    flat.default_routes = []
    found = path_of(flat).detect(address="192.168.100.12")
    assert found["interfaces"] == {"ens1": ["holds 192.168.100.12, the management_address"]}
    assert path_of(flat).detect(address="203.0.113.9")["interfaces"] == {}


def test_ssh_connection_found_in_an_ancestor_when_become_cleared_it(flat):
    flat.file("/proc/4242/environ", "HOME=/root\0SUDO_USER=ops\0")
    flat.file("/proc/4242/stat", "4242 (sudo) S 4000 4242 4000 0 -1\n")
    flat.file("/proc/4000/environ", "USER=ops\0SSH_CONNECTION=%s\0" % SSH.replace("10.0.0.5", "::ffff:10.0.0.5"))
    host = HostRoot(flat.root)
    assert ssh_connection(host, {}, pid=4242) == ("10.0.0.1", "10.0.0.5")
    assert ssh_connection(host, {"SSH_CONNECTION": "garbage"}, pid=4242) is None
    assert ssh_connection(host, {}, pid=1) is None


@pytest.mark.parametrize(
    "text, expected",
    [("::ffff:10.0.2.15", "10.0.2.15"), ("fe80::1%eth0", "fe80::1"), ("10.0.0.5", "10.0.0.5"), ("not-an-ip", "not-an-ip")],
)
def test_plain_ip(text, expected):
    assert plain_ip(text) == expected


@pytest.fixture
def stacked(tmp_path):
    """SSH on a VLAN over a bond (ens1, ens2); the IPv4 default route on a bridge over ens3; ens4 free."""
    host = LinkHost(tmp_path)
    host.link("ens1").link("ens2").link("ens3").link("ens4")
    host.link("bond0", kind="bond", lowers=["ens1", "ens2"])
    host.link("bond0.100", kind="vlan", lowers=["bond0"], addrs=["10.0.0.5/24"])
    host.link("br0", kind="bridge", lowers=["ens3"], addrs=["10.1.0.5/24"])
    host.materialize()
    host.client_routes["10.0.0.1"] = "bond0.100"
    host.default_routes = [("inet", "10.1.0.254", "br0")]
    return host


def unlink_lowers(host, name):
    base = host.path("/sys/class/net/" + name)
    for entry in os.listdir(base):
        if entry.startswith("lower_"):
            os.unlink(os.path.join(base, entry))


def test_vlan_parent_from_proc_net_vlan_config_and_bond_members_from_bonding_slaves(stacked):
    # Only /proc/net/vlan/config names the VLAN's parent, and only bonding/slaves the bond's members.
    unlink_lowers(stacked, "bond0.100")
    unlink_lowers(stacked, "bond0")
    found = path_of(stacked, {"SSH_CONNECTION": SSH}).detect()
    assert sorted(found["interfaces"]) == ["bond0.100", "br0"]
    assert found["protected"] == {
        "bond0.100": "bond0.100",
        "bond0": "bond0.100",
        "ens1": "bond0.100",
        "ens2": "bond0.100",
        "br0": "br0",
        "ens3": "br0",  # a bridge port, found through lower_ens3
    }
    assert "ens4" not in found["protected"]


def test_vlan_parent_is_not_guessed_from_the_name(stacked):
    # 'bond0.100' looks like a VLAN of bond0, but without the kernel saying so it is not one.
    unlink_lowers(stacked, "bond0.100")
    os.unlink(stacked.path("/proc/net/vlan/config"))
    found = path_of(stacked, {"SSH_CONNECTION": SSH}).detect()
    assert found["protected"]["bond0.100"] == "bond0.100"
    assert "bond0" not in found["protected"] and "ens1" not in found["protected"]


class MultipathHost(LinkHost):
    """An IPv6 default route with two next hops (``ip -6 route add default nexthop ... nexthop ...``)."""

    def _ip(self, args):
        if args == ["-j", "-6", "route", "show", "default"]:
            return 0, json.dumps([dict(dst="default", flags=[], nexthops=[
                dict(gateway="fe80::1", dev="ens1", weight=1, flags=[]),
                dict(gateway="fe80::2", dev="ens2", weight=1, flags=[]),
            ])]), ""
        return LinkHost._ip(self, args)


def test_every_next_hop_of_a_multipath_default_route(tmp_path):
    host = MultipathHost(tmp_path)
    host.link("ens1").link("ens2").link("ens3").materialize()
    found = path_of(host).detect()
    assert found["interfaces"] == {"ens1": ["carries an IPv6 default route"], "ens2": ["carries an IPv6 default route"]}


def test_missing_ip_tool_or_broken_json_gives_no_routes_not_an_error(flat):
    flat.tools = set()
    assert path_of(flat, {"SSH_CONNECTION": SSH}).detect()["interfaces"] == {}
    flat.tools = set(["ip"])
    flat.fail["ip -j"] = (1, "Error: something\n")
    assert path_of(flat, {"SSH_CONNECTION": SSH}).detect()["interfaces"] == {}


def test_retest_sees_nothing_wrong_when_nothing_changed(flat):
    path = path_of(flat, {"SSH_CONNECTION": SSH})
    state = path.detect()["state"]
    checked, problems = path.retest(state)
    assert problems == []
    assert checked == [
        "eth0 still holds 10.0.0.5",
        "route to the SSH client via eth0",
        "default routes: default via 10.0.0.254 dev eth0, default via 10.0.0.253 dev eth0, default via 2001:db8::1 dev eth0",
    ]


def test_retest_detects_a_lost_default_route(flat):
    path = path_of(flat, {"SSH_CONNECTION": SSH})
    state = path.detect()["state"]
    flat.default_routes = [route for route in flat.default_routes if route[0] == "inet"]
    _checked, problems = path.retest(state)
    assert problems == ["default routes lost: default via 2001:db8::1 dev eth0"]


def test_retest_detects_a_moved_address_a_down_holder_and_a_new_route_back(flat):
    path = path_of(flat, {"SSH_CONNECTION": SSH})
    state = path.detect()["state"]
    flat.file("/sys/class/net/eth0/operstate", "down\n")
    assert path.retest(state)[1] == ["eth0, which holds 10.0.0.5, is down"]
    flat.links["eth0"]["addrs"] = []
    flat.links["ens1"]["addrs"].append("10.0.0.5/24")
    flat.client_routes["10.0.0.1"] = "ens1"
    assert path.retest(state)[1] == [
        "the connection's address 10.0.0.5 moved from eth0 to ens1",
        "the route to the SSH client went from eth0 to ens1",
    ]


# -- the one guard (link_mtu's MTU, the rails' addresses, routes and rules) ------------------------
def test_management_addresses_are_the_ssh_address_and_the_one_named(flat):
    found = path_of(flat, {"SSH_CONNECTION": SSH}).detect(address="::ffff:192.168.100.12")
    assert found["addresses"] == {"10.0.0.5": "the address this SSH connection came in on",
                                  "192.168.100.12": "the management_address"}
    assert path_of(flat).detect()["addresses"] == {}


def test_guard_refuses_a_device_or_an_address_on_the_path_and_names_why(flat):
    found = path_of(flat, {"SSH_CONNECTION": SSH}).detect()
    with pytest.raises(RefusedError) as info:
        guard(found, "remove 10.0.0.9/24 (rails.exclusive, live) from", devices=["ens1", "eth0"], advice="Set rails.exclusive: false.",
              details=dict(option="rails.exclusive"))
    assert info.value.msg == (
        "refusing to remove 10.0.0.9/24 (rails.exclusive, live) from eth0: it is on the path that carries the Ansible connection "
        "(eth0 holds 10.0.0.5, the address this SSH connection came in on; carries the route back to the SSH client 10.0.0.1; "
        "carries an IPv4 default route; carries an IPv6 default route). Set rails.exclusive: false.")
    assert info.value.details == {"option": "rails.exclusive"}
    with pytest.raises(RefusedError, match=r"^refusing to add the rule for 10\.0\.0\.5: .*\(10\.0\.0\.5 is the address this SSH "):
        guard(found, "add the rule for", addresses=["::ffff:10.0.0.5"])
    # off the path, or allowed: nothing refused, and what is on the path is returned
    assert guard(found, "remove x from", devices=["ens1"], addresses=["192.168.100.12"]) == ([], [])
    assert guard(found, "change the MTU of", devices=["eth0"], allowed=True) == (["eth0"], [])
