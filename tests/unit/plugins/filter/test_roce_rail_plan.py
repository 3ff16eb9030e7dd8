"""roce_rail_plan / roce_rail_links / roce_intent's rail check, and the plan computed from a real
inventory's hostvars by ansible-playbook."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.filter.roce_intent import roce_intent
from ansible_collections.rdmaops.roce.plugins.filter.roce_rail_plan import roce_rail_links, roce_rail_plan

import ansiblerun

RAILS = [
    {"name": "rail0", "p2p_pool": "10.10.0.0/24", "netdev": "ens1f0np0"},
    {"name": "rail1", "subnet": "10.20.0.0/24", "rdma_device": "mlx5_1"},
    {"name": "rail2", "subnet": "10.30.0.0/24", "pci": "0000:5e:00.0"},
    {"name": "rail3", "subnet": "10.40.0.0/24", "netdevs": ["ens9f0np0", "ens4f0np0"], "table": 300},
]
RDMA = {"netdevs": {
    "ens1f0np0": {"ibdev": "mlx5_0", "pci_address": "0000:17:00.0"},
    "ens2f0np0": {"ibdev": "mlx5_1", "pci_address": "0000:3a:00.0"},
    "ens3f0np0": {"ibdev": "mlx5_2", "pci_address": "0000:5e:00.0"},
    "ens4f0np0": {"ibdev": "mlx5_3", "pci_address": "0000:86:00.0"},
}}


def test_roce_intent_checks_the_rails_and_leaves_them_as_written():
    assert roce_intent({"rails": RAILS})["rails"] == RAILS
    with pytest.raises(AnsibleFilterError) as caught:
        roce_intent({"rails": [{"name": "r0", "subnet": "10.0.0.0/24"}]})
    assert "rail r0: roce_fabric.rails[0]: say which netdev of each host is on the rail" in str(caught.value)


def test_plan_then_links_resolve_each_selector_from_the_facts():
    plan = roce_rail_plan({"rails": RAILS}, {"gpu1": {"roce_rail_index": 2}, "login": {"ansible_host": "x"}})
    assert list(plan) == ["gpu1"]
    links = roce_rail_links(plan["gpu1"], RDMA, host="gpu1")
    assert [(link["rail"], link["interface"], link["address"], link["prefix"], link["gateway"], link["table"]) for link in links] == [
        ("rail0", "ens1f0np0", "10.10.0.5", 31, "10.10.0.4", 100),
        ("rail1", "ens2f0np0", "10.20.0.4", 24, "10.20.0.1", 101),
        ("rail2", "ens3f0np0", "10.30.0.4", 24, "10.30.0.1", 102),
        ("rail3", "ens4f0np0", "10.40.0.4", 24, "10.40.0.1", 300),
    ]
    assert links[0]["network"] == "10.10.0.4/31" and links[0]["rule_priority"] == 1000


def test_links_refuse_what_the_host_does_not_have():
    plan = roce_rail_plan({"rails": RAILS + [{"name": "rail4", "subnet": "10.50.0.0/24", "netdev": "ens2f0np0"}]},
                          {"gpu1": {"roce_rail_index": 0}})
    facts = {"netdevs": dict((k, v) for k, v in RDMA["netdevs"].items() if k != "ens3f0np0")}
    with pytest.raises(AnsibleFilterError) as caught:
        roce_rail_links(plan["gpu1"], facts, host="gpu1")
    message = str(caught.value)
    assert "host gpu1, rail rail2: PCI function 0000:5e:00.0 has no RDMA netdev here (RDMA netdevs: ens1f0np0, ens2f0np0, ens4f0np0)" in message
    assert "host gpu1, rail rail4: ens2f0np0 is also on rail rail1; each rail needs a NIC of its own" in message
    with pytest.raises(AnsibleFilterError, match="expects ansible_facts.rdma"):
        roce_rail_links(plan["gpu1"], {})
    assert roce_rail_links(None, RDMA) == [] and roce_rail_plan(None, {}) == {} and roce_rail_plan({}, {}) == {}


def test_plan_errors_are_one_filter_error_listing_every_problem():
    with pytest.raises(AnsibleFilterError) as caught:
        roce_rail_plan({"rails": RAILS}, {"a": {"roce_rail_index": 1}, "b": {"roce_rail_addresses": {"rail1": "10.20.0.3"}}})
    message = str(caught.value)
    assert message.startswith("the rail plan (roce_fabric.rails) is not valid:")
    assert "host b, rail rail1: address 10.20.0.3 is also host a's on rail rail1" in message
    assert "host b, rail rail0: no address" in message


def test_the_plan_from_a_real_inventory_through_hostvars(tmp_path):
    """ansible-playbook hands the filter its lazy hostvars; the plan and a refusal come out whole."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {
        "hosts": {"gpu1": {"roce_rail_index": 0}, "gpu2": {"roce_rail_index": 1},
                  "gpu3": {"roce_rail_addresses": {"rail0": "10.10.0.9", "rail1": "10.20.0.99"}},
                  "login1": {}},
        "vars": {"ansible_connection": "local", "roce_fabric": {"rails": RAILS[:2]}},
    }}))
    playbook = tmp_path / "plan.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: plan\n      ansible.builtin.set_fact:\n"
        "        plan: \"{{ roce_fabric | rdmaops.roce.roce_rail_plan(hostvars) }}\"\n"
        "      run_once: true\n"
        "    - name: mine\n      ansible.builtin.debug:\n        msg: \"{{ plan[inventory_hostname] | map(attribute='cidr') | list }}\"\n"
        "      when: inventory_hostname in plan\n"
    )
    proc = ansiblerun.run("ansible-playbook", ["-i", inventory, playbook], env_extra=ansiblerun.JSON_CALLBACK)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    mine = dict((host, result["msg"]) for host, result in tasks[1]["hosts"].items() if "msg" in result)
    assert mine == {"gpu1": ["10.10.0.1/31", "10.20.0.2/24"], "gpu2": ["10.10.0.3/31", "10.20.0.3/24"],
                    "gpu3": ["10.10.0.9/31", "10.20.0.99/24"]}
    # gpu3 takes gpu2's address: refused before any host is contacted, naming both
    inventory.write_text(inventory.read_text().replace("10.20.0.99", "10.20.0.3"))
    proc = ansiblerun.run("ansible-playbook", ["-i", inventory, playbook], env_extra=ansiblerun.JSON_CALLBACK)
    assert proc.returncode != 0
    assert "host gpu3, rail rail1: address 10.20.0.3 is also host gpu2's on rail rail1" in proc.stdout


def links_error(plan, rdma=None):
    with pytest.raises(AnsibleFilterError) as caught:
        roce_rail_links(plan, RDMA if rdma is None else rdma, host="gpu1")
    return str(caught.value)


def test_links_read_a_hand_written_plan_as_strictly_as_a_computed_one():
    good = roce_rail_plan({"rails": RAILS[:1]}, {"gpu1": {"roce_rail_index": 0}})["gpu1"][0]
    assert roce_rail_links([good], RDMA)[0]["address"] == "10.10.0.1"
    cases = [
        ("rail0", "the rail plan's entry 0 must be a mapping (one rail of a host's plan, from roce_rail_plan), not text"),
        (dict(good, address="127.0.0.1", network="127.0.0.0/31", gateway="127.0.0.0"), "network=\"127.0.0.0/31\" holds the loopback block"),
        (dict(good, address="::ffff:10.10.0.1", network="::ffff:10.10.0.0/127", gateway="::ffff:10.10.0.0"),
         "holds the IPv4-mapped block"),
        (dict(good, address="0.0.0.1", network="0.0.0.0/0", prefix=0, gateway="0.0.0.2"), "a /0 rail adds a connected route"),
        (dict(good, address="10.99.0.1"), "address=10.99.0.1 is outside its network 10.10.0.0/31"),
        (dict(good, rail="r0\n200 evil"), "rail=\"r0\\n200 evil\" must be a rail's name"),
        (dict(good, netdev=["ens1f0np0"]), "netdev=a list is not an interface name"),
        (dict(good, netdev="r0\nreboot"), "netdev=\"r0\\nreboot\" is not an interface name"),
        (dict(good, netdev="r0;reboot"), "netdev=\"r0;reboot\" is not an interface name"),
        (dict(good, table="100; ip rule flush"), "table=\"100; ip rule flush\" must be a routing table number"),
        (dict(good, prefix=24), "prefix=24 must be the prefix length of its network 10.10.0.0/31, 31"),
    ]
    for entry, expected in cases:
        message = links_error([entry])
        assert "host gpu1: " + "the rail plan's entry 0" in message and expected in message, (expected, message)
    # a netdev the facts name by PCI address whose name the kernel would not give: refused, never passed on
    for odd in ("r0 reboot", "r0;reboot", "$(reboot)"):
        facts = {"netdevs": {odd: {"ibdev": "mlx5_1", "pci_address": "0000:3a:00.0"}}}
        entry = dict(good, rail="rail1", netdev=None, rdma_device="mlx5_1")
        assert "host gpu1, rail rail1: the netdev %r it selects is not an interface name" % odd in links_error([entry], facts)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ENTRY = st.fixed_dictionaries({}, optional=dict(
    rail=st.sampled_from(["rail0", "r 0"]) | JSONISH, address=st.sampled_from(["10.10.0.1", "::1"]) | JSONISH,
    prefix=st.sampled_from([31, 24]) | JSONISH, network=st.sampled_from(["10.10.0.0/31", "0.0.0.0/0"]) | JSONISH,
    gateway=st.sampled_from(["10.10.0.0"]) | JSONISH, table=st.sampled_from([100]) | JSONISH,
    rule_priority=st.sampled_from([1000]) | JSONISH, netdev=st.sampled_from(["ens1f0np0"]) | JSONISH,
    netdevs=JSONISH, pci=JSONISH, rdma_device=st.sampled_from(["mlx5_1"]) | JSONISH))


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRY | JSONISH, max_size=3), st.dictionaries(st.text(max_size=16) | st.integers(), JSONISH, max_size=3))
def test_links_never_fail_with_a_python_error(plan, netdevs):
    try:
        links = roce_rail_links(plan, {"netdevs": dict(RDMA["netdevs"], **{str(k): v for k, v in netdevs.items()})}, host="h")
    except AnsibleFilterError as exc:
        assert "Traceback" not in str(exc) and "NoneType" not in str(exc) and "<class" not in str(exc)
        return
    for link in links:  # what passed is what nic_layer may be given
        assert link["interface"] in RDMA["netdevs"] or link["interface"] in netdevs
