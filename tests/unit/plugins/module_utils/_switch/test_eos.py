"""The eos driver against Arista's own AVD: for every profile, render() is line for line what
pyavd's eos_cli_config_gen renders from the same profile in AVD's data model (validated by
pyavd's schema), and parse() reads back the profile, AVD renders of other data and the
interface-level form of Arista's RoCE examples."""

import pytest
import pyavd

import switchcli as switch_cli
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import eos
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import resolve_mtu, resolve_config

PORTS = ["Ethernet1/1", "Ethernet1/2", "Ethernet2", "Ethernet10"]


def avd_render(structured):
    """pyavd's EOS configuration for AVD structured config, after pyavd's own schema validation."""
    validated = pyavd.validate_structured_config(structured)
    violations = [(violation.path, violation.message) for violation in validated.validation_result.violations]
    assert violations == []
    return pyavd.get_device_config(validated.validated_data).splitlines()


@pytest.mark.parametrize("name", sorted(switch_cli.PROFILES))
def test_render_is_what_avd_renders(name):
    profile, ports = switch_cli.profile(name, eos.max_mtu("4.34"), PORTS)
    assert eos.render(profile, ports, "4.34") == avd_render(eos.structured_config(profile, ports))


@pytest.mark.parametrize("name", sorted(switch_cli.PROFILES))
def test_parse_of_render_is_the_profile(name):
    profile, ports = switch_cli.profile(name, eos.max_mtu("4.34"), PORTS)
    parsed = eos.parse("\n".join(eos.render(profile, ports, "4.34")), "4.34")
    assert parsed == dict(fabric=profile, interfaces=["Ethernet1/1", "Ethernet1/2", "Ethernet2", "Ethernet10"])


def test_golden_default():
    profile, ports = switch_cli.profile("default", eos.max_mtu("4.34"), ["Ethernet1/1", "Ethernet1/2"])
    golden = switch_cli.lines("eos_default.cfg")
    assert eos.render(profile, ports, "4.34") == golden
    assert golden == avd_render(eos.structured_config(profile, ports))
    assert "      random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes max-mark-probability 100" in golden
    assert "   mtu 9214" in golden


def test_ports_are_listed_in_avd_order_whatever_order_they_come_in():
    profile, dummy = switch_cli.profile("default", 9214)
    lines = eos.render(profile, ["Ethernet10", "Ethernet2", "Ethernet1/2"], "4.34")
    assert [line for line in lines if line.startswith("interface")] == [
        "interface Ethernet1/2", "interface Ethernet2", "interface Ethernet10"]


@pytest.mark.parametrize("switch_mtu, policy, written, warned", [
    (9216, "clamp", 9214, True), ("max", "clamp", 9214, False), (9214, "fail", 9214, False), (9000, "clamp", 9000, False),
])
def test_mtu_clamp(switch_mtu, policy, written, warned):
    intent, profile, dummy = resolve_config(dict(fabric=dict(switch_mtu=switch_mtu)))
    warnings = []
    profile = resolve_mtu(profile, intent, eos.NAME, eos.max_mtu("4.34"), policy, warnings.append)
    assert "   mtu %d" % written in eos.render(profile, ["Ethernet1"], "4.34")
    assert bool(warnings) == warned


def test_mtu_above_the_maximum_fails_with_policy_fail():
    intent, profile, dummy = resolve_config(dict(fabric=dict(switch_mtu=9216)))
    with pytest.raises(InputError, match="above the largest MTU Arista EOS accepts \\(9214\\)"):
        resolve_mtu(profile, intent, eos.NAME, eos.max_mtu("4.34"), "fail", None)


def test_default_class_refused_naming_the_key():
    profile, dummy = switch_cli.profile("default", 9214)
    profile["cnp_priority"] = 0
    with pytest.raises(InputError, match="config.fabric.cnp_priority=0"):
        eos.render(profile, ["Ethernet1"], "4.34")


def test_parse_interface_level_form_of_arista_roce_examples():
    parsed = eos.parse(switch_cli.text("eos_interface_form.cfg"), "4.34")
    assert parsed == dict(interfaces=["Ethernet1/1", "Ethernet2/1"], fabric=dict(
        trust="dscp", roce_priority=3, roce_dscp=24, cnp_priority=6, cnp_dscp=48, pfc_priorities=[3],
        ecn_priorities=[3], ecn=dict(min_threshold_bytes=200 * 1024, max_threshold_bytes=2 * 1024 * 1024,
                                     probability_percent=20),
        pfc_watchdog=False, switch_mtu=9000))


def test_parse_avd_render_of_other_data():
    """An AVD render we did not write: uc-tx-queues, segments, PFC watchdog with timers, two PFC
    priorities, DSCP 26 on TC1 (not a valid intent: reported as it is)."""
    structured = dict(
        qos=dict(map=dict(dscp=["26 to traffic-class 1", "46 to traffic-class 5"])),
        qos_profiles=[dict(
            name="AI_FABRIC", trust="dscp",
            priority_flow_control=dict(enabled=True, watchdog=dict(enabled=True, action="drop", timer=dict(
                timeout=0.2, polling_interval="auto", recovery_time=1)),
                priorities=[dict(priority=1, no_drop=True), dict(priority=4, no_drop=True), dict(priority=0, no_drop=False)]),
            uc_tx_queues=[
                dict(id=1, priority="no priority", bandwidth_percent=60, random_detect=dict(ecn=dict(threshold=dict(
                    units="segments", min=100, max=1000, max_probability=50)))),
                dict(id=5, priority="priority strict"),
                dict(id=0, priority="no priority", bandwidth_percent=40),
            ])],
        ethernet_interfaces=[dict(name="Ethernet3/1", mtu=9100, service_profile="AI_FABRIC"),
                             dict(name="Ethernet4/1", description="no qos here")],
    )
    parsed = eos.parse("\n".join(avd_render(structured)), "4.34")
    assert parsed == dict(interfaces=["Ethernet3/1"], fabric=dict(
        trust="dscp", roce_priority=1, roce_dscp=26, cnp_priority=5, cnp_dscp=46, pfc_priorities=[1, 4],
        ecn_priorities=[1], ecn=dict(probability_percent=50), ets=dict(roce_percent=60, default_percent=40),
        pfc_watchdog=True, switch_mtu=9100))


def test_parse_of_a_config_without_qos_is_empty():
    assert eos.parse("hostname x\n!\ninterface Ethernet1\n   mtu 9214\n!\n", "4.34") == dict(fabric={}, interfaces=[])
