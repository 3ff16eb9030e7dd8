"""roce_nic_ports: every RoCE port's QoS for nic_layer, derived from the intent and rdma_facts."""

import pytest
from ansible.errors import AnsibleFilterError

from fixtures.hosts import cx7_doca
from hosttree import gather_facts

from ansible_collections.rdmaops.roce.plugins.filter.roce_nic_ports import nic_ports


@pytest.fixture
def cx7(tmp_path):
    return gather_facts(tmp_path, cx7_doca.manifest())[0]


def test_lossless_profile_on_every_roce_port(cx7):
    ports = nic_ports(cx7, {})
    assert [(p["interface"], p["device"], p["port"]) for p in ports] == [("ens1f0np0", "mlx5_0", 1), ("ens1f1np1", "mlx5_1", 1)]
    assert ports[0]["qos"] == dict(trust="dscp", pfc=[3], dscp2prio={26: 3, 48: 6})
    assert ports[0]["ecn"] == dict(priorities=[3], exclusive=True, cnp_dscp=48, cnp_802p_prio=6)
    assert ports[0]["tos"] == dict(tos=106, roce_mode="v2")


def test_lossy_ecn_has_no_pfc_and_overrides_follow_the_intent(cx7):
    ports = nic_ports(cx7, dict(preset="lossy_ecn", roce_dscp=24, roce_priority=4), interfaces="ens1f1np1")
    assert len(ports) == 1 and ports[0]["interface"] == "ens1f1np1"
    assert ports[0]["qos"]["pfc"] == [] and ports[0]["qos"]["dscp2prio"] == {24: 4, 48: 6}
    assert ports[0]["ecn"]["priorities"] == [4] and ports[0]["tos"]["tos"] == 24 << 2 | 2


def test_bad_input_is_a_filter_error(cx7):
    with pytest.raises(AnsibleFilterError, match="roce_tos"):
        nic_ports(cx7, dict(roce_tos=107))
    with pytest.raises(AnsibleFilterError, match="rdma_facts"):
        nic_ports({}, {})
