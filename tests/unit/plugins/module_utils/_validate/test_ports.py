"""A host's active RoCE ports (plan.active_ports: rdmaops.roce.validate_probe on the host, the filter
roce_validate_ports for a gate's partners) are what the validate role's Jinja expression gave before
it moved to Python: on the recorded lab VM read by rdma_facts, and on any facts hypothesis draws
(device and port names whose order differs as text and as numbers, ports down, InfiniBand, no netdev)."""

import re

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hosttree
from ansible_collections.rdmaops.roce.plugins.filter.roce_validate_plan import roce_validate_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.plan import active_ports, port_netdevs

# roles/validate/vars/main.yml's validate_ports_of_facts as it was, run by Jinja with Ansible's regex_replace
JINJA = """
  {%- set rows = [] -%}
  {%- for dev, device in validate_rdma_src['devices'] | dictsort -%}
  {%- for num, port in device['ports'] | dictsort
        if port['link_layer'] == 'Ethernet' and port['state'] == 'ACTIVE' and port['netdev'] -%}
  {%- set _ = rows.append({'device': dev, 'port': num, 'netdev': port['netdev'], 'gid_index': port['roce_v2_ipv4_gid_index'],
                           'ipv4': validate_rdma_src['netdevs'][port['netdev']]['ipv4'] | map('regex_replace', '/.*$', '') | list}) -%}
  {%- endfor -%}
  {%- endfor -%}
  {{ rows }}"""


def by_jinja(rdma):
    env = jinja2.Environment()
    env.filters["regex_replace"] = lambda value, pattern, replacement: re.sub(pattern, replacement, value)
    rows = []
    env.from_string(JINJA.replace("{{ rows }}", "{%- set _ = out.extend(rows) -%}")).render(validate_rdma_src=rdma, out=rows)
    return rows


@pytest.mark.parametrize("tree", ["rxe_bookworm_mtu9000.json", "rxe_bookworm_mtu1500.json", "nordma_debian12_container.json"])
def test_the_recorded_hosts_ports_are_the_ones_the_role_listed(tmp_path, tree):
    rdma = hosttree.gather_facts(tmp_path, hosttree.load(tree))[0]
    assert active_ports(rdma) == by_jinja(rdma) == roce_validate_ports(rdma)
    if tree.startswith("rxe"):
        assert active_ports(rdma)[0]["netdev"] == "ens4" and port_netdevs(active_ports(rdma)) == ["ens4"]


NAMES = st.sampled_from(["mlx5_0", "mlx5_10", "mlx5_2", "MLX5_1", "rxe0", "rxe1", "Rxe1"])
PORTS = st.sampled_from(["1", "2", "10"])
NETDEVS = st.sampled_from(["ens4", "ens7", "eth0"])
PORT = st.fixed_dictionaries({"link_layer": st.sampled_from(["Ethernet", "InfiniBand"]), "state": st.sampled_from(["ACTIVE", "DOWN"]),
                              "netdev": st.one_of(st.none(), NETDEVS), "roce_v2_ipv4_gid_index": st.one_of(st.none(), st.integers(0, 8))})
FACTS = st.fixed_dictionaries({
    "devices": st.dictionaries(NAMES, st.fixed_dictionaries({"ports": st.dictionaries(PORTS, PORT, max_size=3)}), max_size=4),
    "netdevs": st.fixed_dictionaries({name: st.fixed_dictionaries({"ipv4": st.lists(st.sampled_from(
        ["198.18.0.11/24", "10.0.0.1/31", "198.18.0.21"]), max_size=2)}) for name in ("ens4", "ens7", "eth0")}),
})


@settings(max_examples=100, deadline=None)
@given(FACTS)
def test_any_facts_give_the_ports_the_role_listed(rdma):
    assert active_ports(rdma) == by_jinja(rdma)
