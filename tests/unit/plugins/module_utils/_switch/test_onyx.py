"""The onyx driver: golden render in the command forms of NVIDIA's lossless RoCE manual configuration,
parse(render(x)) == x less what Onyx configuration does not carry, KB units exact or refused, and
parse of the manual form as NVIDIA documents it (port ranges, ## comments, indentation)."""

import pytest

import switchcli as switch_cli
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import onyx
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import resolve_config, resolve_mtu

PORTS = ["1/1", "1/2", "1/10", "1/2/1"]
# Onyx (trust L3) maps DSCP d to switch-priority d/8 and prints no DSCP map, no marking probability
# (absolute thresholds) and, as written here, no PFC watchdog: parse cannot report those.
NOT_CARRIED = ("roce_dscp", "cnp_dscp", "pfc_watchdog")


def carried(profile):
    expected = dict((key, value) for key, value in profile.items() if key not in NOT_CARRIED)
    expected["ecn"] = dict((key, value) for key, value in profile["ecn"].items() if key != "probability_percent")
    return expected


@pytest.mark.parametrize("name", sorted(set(switch_cli.PROFILES) - set(["default", "odd_bytes"])))
def test_parse_of_render_is_the_profile(name):
    profile, ports = switch_cli.profile(name, onyx.max_mtu("3.10"), PORTS)
    parsed = onyx.parse("\n".join(onyx.render(profile, ports, "3.10")), "3.10")
    assert parsed == dict(fabric=carried(profile), interfaces=["1/1", "1/2", "1/2/1", "1/10"])


def test_golden_kb_thresholds():
    profile, ports = switch_cli.profile("kb_thresholds", onyx.max_mtu("3.10"), ["1/1", "1/2"])
    assert onyx.render(profile, ports, "3.10") == switch_cli.lines("onyx_kb_thresholds.cfg")


def test_port_names_in_onyx_forms():
    profile, dummy = switch_cli.profile("kb_thresholds", 9216)
    lines = onyx.render(profile, ["Eth1/3", "ethernet 1/1"], "3.10")
    assert lines[0] == "interface ethernet 1/1 mtu 9216 force"
    assert "interface ethernet 1/3 qos trust L3" in lines
    with pytest.raises(InputError, match="config.interfaces: swp1 is not an Onyx Ethernet port"):
        onyx.render(profile, ["swp1"], "3.10")


@pytest.mark.parametrize("key, value, fix", [
    ("min_threshold_bytes", 150000, "149504 (146 KB) or 150528 (147 KB)"),
    ("max_threshold_bytes", 1500000, "1499136 (1464 KB) or 1500160 (1465 KB)"),
])
def test_thresholds_not_whole_kb_refused_with_the_nearest(key, value, fix):
    profile, dummy = switch_cli.profile("kb_thresholds", 9216)
    profile["ecn"] = dict(profile["ecn"], **{key: value})
    with pytest.raises(InputError) as err:
        onyx.render(profile, ["1/1"], "3.10")
    assert "config.fabric.ecn.%s=%d" % (key, value) in err.value.msg and fix in err.value.msg


def test_default_profile_thresholds_are_not_whole_kb():
    profile, dummy = switch_cli.profile("default", 9216)
    with pytest.raises(InputError, match="config.fabric.ecn.min_threshold_bytes=150000"):
        onyx.render(profile, ["1/1"], "3.10")


@pytest.mark.parametrize("change, message", [
    (dict(roce_dscp=34), "config.fabric.roce_dscp=34: Onyx \\(trust L3\\) maps DSCP 34 to switch-priority 4"),
    (dict(cnp_dscp=46), "config.fabric.cnp_dscp=46"),
    (dict(trust="pcp"), "config.fabric.trust=pcp"),
    (dict(ecn=dict(switch_cli.KB_ECN, probability_percent=20)), "config.fabric.ecn.probability_percent=20"),
    (dict(cnp_priority=0), "config.fabric.cnp_priority=0"),
])
def test_values_onyx_cannot_write_are_refused_naming_the_key(change, message):
    profile, dummy = switch_cli.profile("kb_thresholds", 9216)
    profile.update(change)
    with pytest.raises(InputError, match=message):
        onyx.render(profile, ["1/1"], "3.10")


@pytest.mark.parametrize("switch_mtu, written", [(9216, 9216), ("max", 9216), (9000, 9000)])
def test_mtu(switch_mtu, written):
    intent, profile, dummy = resolve_config(dict(fabric=dict(switch_mtu=switch_mtu, ecn=switch_cli.KB_ECN)))
    profile = resolve_mtu(profile, intent, onyx.NAME, onyx.max_mtu("3.10"), "fail", None)
    assert onyx.render(profile, ["1/1"], "3.10")[0] == "interface ethernet 1/1 mtu %d force" % written


def test_lossy_ecn_turns_port_pfc_off_and_writes_no_global_pfc():
    profile, dummy = switch_cli.profile("lossy_ecn", 9216)
    lines = onyx.render(profile, ["1/1"], "3.10")
    assert "interface ethernet 1/1 no dcb priority-flow-control mode force" in lines
    assert not [line for line in lines if line.startswith("dcb ")]


def test_parse_nvidia_manual_form():
    parsed = onyx.parse(switch_cli.text("onyx_manual_form.cfg"), "3.10")
    assert parsed == dict(interfaces=["1/1", "1/2", "1/3", "1/4"], fabric=dict(
        trust="dscp", roce_priority=3, cnp_priority=6, pfc_priorities=[3], ecn_priorities=[3],
        ecn=dict(min_threshold_bytes=150 * 1024, max_threshold_bytes=1500 * 1024), switch_mtu=9216))
