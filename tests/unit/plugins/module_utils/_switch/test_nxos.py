"""The nxos driver: golden render in the forms of Cisco's Nexus 9000 QoS guide, parse(render(x)) == x
for every profile, and parse of configurations in the forms Cisco and Microsoft publish (RoCE by a
DSCP range or by CoS 3, CNPs by DSCP 48 or CoS 6)."""

import pytest

import switchcli as switch_cli
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import nxos
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import resolve_config, resolve_mtu

PORTS = ["Ethernet1/1", "Ethernet1/2", "Ethernet1/10"]


@pytest.mark.parametrize("name", sorted(switch_cli.PROFILES))
def test_parse_of_render_is_the_profile(name):
    profile, ports = switch_cli.profile(name, nxos.max_mtu("10.5"), PORTS)
    parsed = nxos.parse("\n".join(nxos.render(profile, ports, "10.5")), "10.5")
    assert parsed == dict(fabric=profile, interfaces=PORTS)


def test_golden_default():
    profile, ports = switch_cli.profile("default", nxos.max_mtu("10.5"), ["Ethernet1/1", "Ethernet1/2"])
    golden = switch_cli.lines("nxos_default.cfg")
    assert nxos.render(profile, ports, "10.5") == golden


def test_render_units_and_shapes():
    profile, ports = switch_cli.profile("other_classes", 9216, ["Ethernet1/1"])
    lines = nxos.render(profile, ports, "10.5")
    queuing = lines[lines.index("policy-map type queuing RDMAOPS_ROCE_OUT"):lines.index("policy-map type network-qos RDMAOPS_ROCE_NQ")]
    assert queuing == [
        "policy-map type queuing RDMAOPS_ROCE_OUT",
        "  class type queuing c-out-8q-q7",
        "    priority level 1",
        "  class type queuing c-out-8q-q4",
        "    bandwidth remaining percent 70",
        "    random-detect minimum-threshold 150 kbytes maximum-threshold 1500 kbytes drop-probability 100 weight 0 ecn",
        "  class type queuing c-out-8q-q-default",
        "    bandwidth remaining percent 30",
    ]
    assert "    pause pfc-cos 4" in lines and "  mtu 9000" in lines


def test_lossy_ecn_has_no_pause_and_pfc_off():
    profile, ports = switch_cli.profile("lossy_ecn", 9216, ["Ethernet1/1"])
    lines = nxos.render(profile, ports, "10.5")
    assert not [line for line in lines if "pause" in line]
    assert "  priority-flow-control mode off" in lines


@pytest.mark.parametrize("switch_mtu, policy, written, warned", [
    (9216, "fail", 9216, False), ("max", "clamp", 9216, False), (9000, "clamp", 9000, False),
])
def test_mtu(switch_mtu, policy, written, warned):
    intent, profile, dummy = resolve_config(dict(fabric=dict(switch_mtu=switch_mtu)))
    warnings = []
    profile = resolve_mtu(profile, intent, nxos.NAME, nxos.max_mtu("10.5"), policy, warnings.append)
    lines = nxos.render(profile, ["Ethernet1/1"], "10.5")
    assert "  mtu %d" % written in lines and "    mtu %d" % written in lines
    assert bool(warnings) == warned


def test_trust_pcp_refused_naming_the_key():
    intent, profile, dummy = resolve_config(dict(fabric=dict(trust="pcp")))
    profile["switch_mtu"] = 9216
    with pytest.raises(InputError, match="config.fabric.trust=pcp"):
        nxos.render(profile, ["Ethernet1/1"], "10.5")


def test_default_class_refused_naming_the_key():
    profile, dummy = switch_cli.profile("default", 9216)
    profile["roce_priority"] = 0
    with pytest.raises(InputError, match="config.fabric.roce_priority=0"):
        nxos.render(profile, ["Ethernet1/1"], "10.5")


def test_parse_cisco_aiml_blueprint_form():
    parsed = nxos.parse(switch_cli.text("nxos_aiml_blueprint.cfg"), "10.5")
    assert parsed == dict(interfaces=["Ethernet1/1", "Ethernet1/2"], fabric=dict(
        trust="dscp", roce_priority=3, roce_dscp=24, cnp_priority=7, cnp_dscp=48, pfc_priorities=[3],
        ecn_priorities=[3], ecn=dict(min_threshold_bytes=150 * 1024, max_threshold_bytes=3000 * 1024, probability_percent=7),
        ets=dict(roce_percent=60, default_percent=40), pfc_watchdog=True, switch_mtu=9216))


def test_parse_roce_and_cnp_matched_by_cos():
    parsed = nxos.parse(switch_cli.text("nxos_cos_classified.cfg"), "10.5")
    assert parsed == dict(interfaces=["Ethernet1/1"], fabric=dict(
        trust="pcp", roce_priority=3, cnp_priority=6, pfc_priorities=[3], ecn_priorities=[3],
        ecn=dict(min_threshold_bytes=300 * 1024, max_threshold_bytes=300 * 1024, probability_percent=100),
        ets=dict(roce_percent=50, default_percent=48)))


def test_parse_policies_defined_but_not_applied():
    text = "\n".join(switch_cli.lines("nxos_default.cfg"))
    text = text.split("system qos", maxsplit=1)[0]  # no system qos, no interfaces
    parsed = nxos.parse(text, "10.5")
    assert parsed["interfaces"] == []
    assert parsed["fabric"]["pfc_priorities"] == [3] and parsed["fabric"]["roce_dscp"] == 26
