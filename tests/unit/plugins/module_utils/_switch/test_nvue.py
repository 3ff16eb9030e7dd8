"""The nvue driver: renders checked against NVIDIA's published NVUE models (nvueschema) with unknown
keys refused, parse(render(x)) == x, and the PATCH bodies each state computes from an applied revision."""

import copy
import json

import pytest

import nvuesite
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import ReadError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import nvue
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import resolve_config, resolve_mtu

PORTS = ["swp1", "swp2", "swp31s0"]

FABRICS = {
    "default": {},
    "other_dscp_and_priorities": {"roce_dscp": 24, "roce_priority": 4, "cnp_dscp": 46, "cnp_priority": 5},
    "lossy_ecn": {"preset": "lossy_ecn"},
    "no_watchdog": {"pfc_watchdog": False},
    "other_ecn_and_ets": {"ecn": {"min_threshold_bytes": 100000, "max_threshold_bytes": 2000000,
                                  "probability_percent": 20},
                          "ets": {"roce_percent": 70, "default_percent": 30}},
    "pcp_trust_small_mtu": {"trust": "pcp", "switch_mtu": 9000, "host_mtu": 4200},
    "ecn_on_two_classes": {"ecn_priorities": [0, 3]},
}


def profile_of(fabric, version="5.18", interfaces=None):
    intent, profile, ifs = resolve_config({"fabric": fabric, "interfaces": list(interfaces or PORTS)})
    profile = resolve_mtu(profile, intent, nvue.NAME, nvue.max_mtu(version), "clamp", lambda msg: None)
    return profile, ifs


def for_version(profile, version):
    if not nvue.has_pfc_watchdog(version):
        profile = dict(profile, pfc_watchdog=False)
    return profile


@pytest.mark.parametrize("version", nvue.VERSIONS)
@pytest.mark.parametrize("name", sorted(FABRICS))
def test_render_is_valid_nvue_of_every_claimed_release_and_parses_back(version, name):
    profile, ifs = profile_of(FABRICS[name], version)
    profile = for_version(profile, version)
    body = nvue.render(profile, ifs, version)
    assert nvuesite.validate(version, body) == []
    assert nvue.parse(json.dumps(body), version) == {"fabric": profile, "interfaces": ifs}


def test_the_schema_check_refuses_typos_and_out_of_range_values():
    profile, ifs = profile_of({})
    body = nvue.render(profile, ifs, "5.12")
    typo = copy.deepcopy(body)
    typo["qos"]["roce"]["mod"] = "lossless"  # nvueschema's model alone would drop it silently
    assert any("unknown key 'mod'" in problem for problem in nvuesite.validate("5.12", typo))
    deep_typo = copy.deepcopy(body)
    deep_typo["qos"]["congestion-control"]["default-global"]["traffic-class"]["3"]["min-treshold"] = 1
    assert any("min-treshold" in problem for problem in nvuesite.validate("5.12", deep_typo))
    too_big = copy.deepcopy(body)
    too_big["interface"]["swp1"]["link"]["mtu"] = 9300
    assert nvuesite.validate("5.12", too_big)
    bad_word = copy.deepcopy(body)
    bad_word["qos"]["roce"]["mode"] = "lossles"
    assert nvuesite.validate("5.12", bad_word)


def test_roce_macro_key_follows_the_release_that_renamed_it():
    profile, ifs = profile_of({})
    assert nvue.render(profile, ifs, "5.14")["qos"]["roce"] == {"enable": "on", "mode": "lossless"}
    assert nvue.render(profile, ifs, "5.15")["qos"]["roce"] == {"state": "enabled", "mode": "lossless"}
    # each release's model refuses the other's key
    assert nvuesite.validate("5.15", nvue.render(profile, ifs, "5.14"))
    assert nvuesite.validate("5.14", nvue.render(profile, ifs, "5.15"))


def test_pfc_watchdog_before_5_6_is_refused_naming_the_fix():
    profile, ifs = profile_of({}, "5.5")
    with pytest.raises(InputError) as err:
        nvue.render(profile, ifs, "5.5")
    assert "pfc_watchdog: false" in err.value.msg and "5.6" in err.value.msg
    body = nvue.render(dict(profile, pfc_watchdog=False), ifs, "5.5")
    assert all("qos" not in port for port in body["interface"].values())
    assert nvuesite.validate("5.5", body) == []


def test_lossy_ecn_writes_no_pfc_and_the_lossy_macro():
    profile, ifs = profile_of({"preset": "lossy_ecn"})
    body = nvue.render(profile, ifs, "5.18")
    assert "pfc" not in body["qos"] and body["qos"]["roce"]["mode"] == "lossy"


def test_versions_claimed_are_the_releases_whose_model_has_the_explicit_qos_objects():
    assert nvue.VERSIONS[0] == "5.3" and nvue.VERSIONS[-1] == "5.18"
    profile, ifs = profile_of({})
    assert any("unknown key 'mapping'" in problem
               for problem in nvuesite.validate("5.2", nvue.render(dict(profile, pfc_watchdog=False), ifs, "5.2")))


# A Cumulus applied revision (filled=false) in the shape NVIDIA's RoCE chapter documents, not written
# by us: two PFC priorities, DSCP 26 still on SP3, a second ECN class, a management port with an MTU.
FOREIGN = {
    "interface": {
        "eth0": {"ip": {"vrf": "mgmt"}, "link": {"mtu": 1500}, "type": "eth"},
        "swp1": {"link": {"mtu": 9000, "state": {"up": {}}}, "type": "swp"},
        "swp2": {"link": {"mtu": 9216}, "qos": {"pfc-watchdog": {"state": "enable"}}, "type": "swp"},
    },
    "qos": {
        "roce": {"enable": "on", "mode": "lossless"},
        "mapping": {"default-global": {"trust": "l3", "dscp": {
            "26": {"switch-priority": 3}, "48": {"switch-priority": 6}, "10": {"switch-priority": 1}}}},
        "pfc": {"default-global": {"switch-priority": {"3": {}, "4": {}}, "tx": "enable", "rx": "enable"}},
        "congestion-control": {"default-global": {"traffic-class": {
            "0": {"ecn": "enable", "min-threshold": 40000, "max-threshold": 200000},
            "3": {"ecn": "enable", "min-threshold": 150000, "max-threshold": 1500000, "probability": 100}}}},
        "egress-scheduler": {"default-global": {"traffic-class": {"6": {"mode": "strict"},
                                                                  "3": {"mode": "dwrr", "bw-percent": 60},
                                                                  "0": {"mode": "dwrr", "bw-percent": 40}}}},
    },
    "system": {"hostname": "leaf01"},
}


def test_parse_reports_a_foreign_configuration_as_it_is():
    parsed = nvue.parse(json.dumps(FOREIGN), "5.12")
    assert parsed == {
        "fabric": {"trust": "dscp", "roce_dscp": 26, "roce_priority": 3, "cnp_dscp": 48, "cnp_priority": 6,
                   "pfc_priorities": [3, 4], "ecn_priorities": [0, 3],
                   "ecn": {"min_threshold_bytes": 150000, "max_threshold_bytes": 1500000, "probability_percent": 100},
                   "ets": {"roce_percent": 60, "default_percent": 40},
                   "pfc_watchdog": False, "switch_mtu": 9000},
        "interfaces": ["swp1", "swp2"],
    }
    assert nvue.parse("{}", "5.12") == {"fabric": {}, "interfaces": []}


def test_parse_reads_nv_config_show_json_change_sets():
    profile, ifs = profile_of({}, "5.12")
    text = json.dumps([{"header": {"model": "VX", "version": "cumulus-linux-5.12.0"}},
                       {"set": nvue.render(profile, ifs, "5.12")}])
    assert nvue.parse(text, "5.12") == {"fabric": profile, "interfaces": ifs}


def test_parse_refuses_text_that_is_not_a_json_object():
    # the driver says where; the engine puts it under running_config (tests/unit/.../test_resource.py)
    with pytest.raises(ReadError) as err:
        nvue.parse("interface swp1\n mtu 9216", "5.12")
    assert err.value.where == "line 1, column 1"
    with pytest.raises(ReadError, match="where an NVUE configuration tree"):
        nvue.parse("[1, 2]", "5.12")


def _leaves(tree):
    for value in tree.values():
        if isinstance(value, dict) and value:
            yield from _leaves(value)
        else:
            yield value


def _applied(raw, commands):
    for body in commands:
        raw = nvue.apply_patch(raw, body)
    return raw


@pytest.mark.parametrize("state", ["merged", "replaced", "overridden"])
def test_each_acting_state_reaches_the_profile_then_has_nothing_left_to_do(state):
    profile, ifs = profile_of({}, "5.12", ["swp1", "swp2"])
    commands, predicted = nvue.plan(state, profile, ifs, FOREIGN, "5.12")
    assert commands and _applied(FOREIGN, commands) == predicted
    for body in commands:
        # NVUE takes set or unset content in one PATCH, not both
        assert len(set(value is None for value in _leaves(body))) == 1
        assert nvuesite.validate("5.12", body) == []
    after = nvue.parse_raw(predicted)
    if state == "merged":
        # merged adds, never removes: PFC on 4 and ECN on TC0 stay
        assert after["fabric"]["pfc_priorities"] == [3, 4] and after["fabric"]["ecn_priorities"] == [0, 3]
        assert predicted["qos"]["mapping"]["default-global"]["dscp"]["10"] == {"switch-priority": 1}
    else:
        assert after["fabric"] == profile
        assert "10" not in predicted["qos"]["mapping"]["default-global"]["dscp"]
    assert predicted["system"] == FOREIGN["system"] and predicted["interface"]["eth0"] == FOREIGN["interface"]["eth0"]
    assert nvue.plan(state, profile, ifs, predicted, "5.12") == ([], predicted)


def test_overridden_removes_the_profile_from_ports_not_listed_and_replaced_does_not():
    profile, ifs = profile_of({}, "5.12", ["swp1"])
    dummy, replaced = nvue.plan("replaced", profile, ifs, FOREIGN, "5.12")
    assert replaced["interface"]["swp2"]["qos"] == {"pfc-watchdog": {"state": "enable"}}
    commands, overridden = nvue.plan("overridden", profile, ifs, FOREIGN, "5.12")
    assert commands[0]["interface"]["swp2"] == {"link": {"mtu": None}, "qos": {"pfc-watchdog": None}}
    assert overridden["interface"]["swp2"] == {"link": {}, "qos": {}, "type": "swp"}
    assert "eth0" not in commands[0]["interface"]
    assert nvue.parse_raw(overridden)["interfaces"] == ["swp1"]


def test_deleted_unsets_only_what_the_profile_owns():
    commands, predicted = nvue.plan("deleted", None, [], FOREIGN, "5.12")
    assert len(commands) == 1 and nvuesite.validate("5.12", commands[0]) == []
    assert nvue.parse_raw(predicted) == {"fabric": {}, "interfaces": []}
    assert predicted["system"] == FOREIGN["system"] and predicted["interface"]["eth0"] == FOREIGN["interface"]["eth0"]
    assert predicted["interface"]["swp1"]["link"] == {"state": {"up": {}}}
    assert nvue.plan("deleted", None, [], predicted, "5.12") == ([], predicted)
    # with config, only the listed ports lose theirs
    profile, ifs = profile_of({}, "5.12", ["swp2"])
    dummy, some = nvue.plan("deleted", profile, ifs, FOREIGN, "5.12")
    assert some["interface"]["swp1"]["link"]["mtu"] == 9000 and "mtu" not in some["interface"]["swp2"]["link"]


def test_nothing_to_do_means_no_commands():
    profile, ifs = profile_of({}, "5.12", ["swp1"])
    raw = nvue.render(profile, ifs, "5.12")
    for state in ("merged", "replaced", "overridden"):
        assert nvue.plan(state, profile, ifs, raw, "5.12") == ([], raw)
