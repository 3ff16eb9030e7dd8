"""The fabric intent: presets, derived values, and one clear message per bad input."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, resolve_intent


def test_empty_intent_is_the_lossless_profile():
    intent = resolve_intent({})
    assert intent["preset"] == "lossless"
    assert (intent["roce_dscp"], intent["roce_priority"], intent["cnp_dscp"], intent["cnp_priority"]) == (26, 3, 48, 6)
    assert intent["trust"] == "dscp"
    assert intent["pfc_priorities"] == [3] and intent["ecn_priorities"] == [3]
    assert intent["pfc_enabled"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert intent["pfc_bitmap"] == "0,0,0,1,0,0,0,0"
    assert intent["roce_tos"] == 106
    assert intent["dscp_to_priority"] == {26: 3, 48: 6}
    assert (intent["host_mtu"], intent["switch_mtu"]) == (9000, 9216)
    assert intent["lossless"] is True and intent["global_pause"] is False
    assert resolve_intent(None) == intent


def test_lossy_ecn_has_no_pfc_but_keeps_ecn():
    intent = resolve_intent({"preset": "lossy_ecn"})
    assert intent["pfc_priorities"] == [] and intent["pfc_bitmap"] == "0,0,0,0,0,0,0,0"
    assert intent["ecn_priorities"] == [3]
    assert intent["lossless"] is False


def test_overrides_move_every_derived_value():
    intent = resolve_intent({"roce_dscp": 24, "roce_priority": 4, "host_mtu": 4200, "ecn": {"probability_percent": 50}})
    assert intent["pfc_priorities"] == [4] and intent["pfc_bitmap"] == "0,0,0,0,1,0,0,0"
    assert intent["roce_tos"] == 98
    assert intent["dscp_to_priority"] == {24: 4, 48: 6}
    assert intent["ecn"] == {"min_threshold_bytes": 150000, "max_threshold_bytes": 1500000, "probability_percent": 50}


def test_input_is_not_modified():
    raw = {"ecn": {"probability_percent": 50}}
    resolve_intent(raw)
    assert raw == {"ecn": {"probability_percent": 50}}


BAD = [
    ({"preset": "lossles"}, "roce_fabric.preset='lossles': choose one of lossless, lossy_ecn"),
    ({"roce_dscp": 64}, "roce_fabric.roce_dscp=64: must be an integer 0..63"),
    ({"cnp_dscp": -1}, "roce_fabric.cnp_dscp=-1: must be an integer 0..63"),
    ({"roce_priority": 8}, "roce_fabric.roce_priority=8: must be an integer 0..7"),
    ({"roce_priority": "3"}, "roce_fabric.roce_priority='3': must be an integer 0..7"),
    ({"cnp_priority": 3}, "roce_fabric.cnp_priority=3 equals roce_priority"),
    ({"cnp_dscp": 26}, "roce_fabric.cnp_dscp=26 equals roce_dscp"),
    ({"pfc_priorities": [3, 4]}, "the lossless preset enables PFC on the RoCE priority only (3)"),
    ({"preset": "lossy_ecn", "pfc_priorities": [3]}, "the lossy_ecn preset uses no PFC"),
    ({"pfc_priorities": [9]}, "roce_fabric.pfc_priorities=[9]: must be a list of priorities 0..7"),
    ({"ecn_priorities": [4]}, "must include the RoCE priority 3"),
    ({"host_mtu": 1000}, "roce_fabric.host_mtu=1000: must be an integer 1280..9216"),
    ({"switch_mtu": 9500}, "roce_fabric.switch_mtu=9500: must be an integer 1280..9216"),
    ({"host_mtu": 9216, "switch_mtu": 9000}, "host_mtu=9216 is above switch_mtu=9000"),
    ({"roce_tos": 104 + 256}, "roce_fabric.roce_tos=360: must be an integer 0..255"),
    ({"roce_tos": 96}, "roce_fabric.roce_tos=96 carries DSCP 24 but roce_dscp is 26; use 106"),
    ({"ecn": {"min_threshold_bytes": 2000000}}, "ecn.min_threshold_bytes=2000000 must be below max_threshold_bytes=1500000"),
    ({"ecn": {"probability_percent": 0}}, "roce_fabric.ecn.probability_percent=0: must be an integer 1..100"),
    ({"ecn": {"max": 1}}, "roce_fabric.ecn has unknown key(s) max"),
    ({"trust": "cos"}, "roce_fabric.trust='cos': choose dscp"),
    ({"global_pause": True}, "global_pause=true conflicts with PFC"),
    ({"mtu": 9000}, "roce_fabric has unknown key(s) mtu; known keys:"),
    ("lossless", "roce_fabric must be a mapping"),
]


@pytest.mark.parametrize("raw, message", BAD, ids=[str(case[0]) for case in BAD])
def test_bad_intent_names_key_and_fix(raw, message):
    with pytest.raises(IntentError) as info:
        resolve_intent(raw)
    assert message in str(info.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(IntentError) as info:
        resolve_intent({"roce_dscp": 99, "host_mtu": 100, "ecn_priorities": [1]})
    assert len(info.value.problems) == 3


def test_lossy_ecn_may_use_global_pause():
    assert resolve_intent({"preset": "lossy_ecn", "global_pause": True})["global_pause"] is True
