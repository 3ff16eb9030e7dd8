"""The fabric intent: presets, derived values, and one clear message per bad input."""

import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.rdmaops.roce.plugins.filter.roce_intent import roce_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, resolve_intent
# What must never reach a user: Python's type names (ansible-core 2.19 passes its own subclasses,
# e.g. _AnsibleLazyTemplateList) or a traceback.  "a list" / "a mapping" / "text" are the words to use.
from hostiletext import python_words

# ToS = DSCP << 2 | ECN bits; the ECN bits (RFC 3168) a sender may set, and CE, which only a switch sets.
ECN_MASK, NOT_ECT, ECT1, ECT0, CE = 0b11, 0b00, 0b01, 0b10, 0b11


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
    ({"preset": "lossles"}, "roce_fabric.preset=\"lossles\": choose one of lossless, lossy_ecn"),
    ({"roce_dscp": 64}, "roce_fabric.roce_dscp=64: must be an integer 0..63"),
    ({"cnp_dscp": -1}, "roce_fabric.cnp_dscp=-1: must be an integer 0..63"),
    ({"roce_priority": 8}, "roce_fabric.roce_priority=8: must be an integer 0..7"),
    ({"roce_priority": "3"}, "roce_fabric.roce_priority=\"3\": must be an integer 0..7"),
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
    ({"trust": "cos"}, "roce_fabric.trust=\"cos\": choose dscp"),
    ({"global_pause": True}, "global_pause=true conflicts with PFC"),
    ({"mtu": 9000}, "roce_fabric has unknown key(s) mtu; known keys:"),
    ("lossless", "roce_fabric must be a mapping"),
    # The wrong kind of value: named in plain words, with the fix, never as a Python type.
    ("lossless", "roce_fabric must be a mapping (a preset plus overrides, e.g. roce_fabric: {preset: lossless}), not text"),
    (["lossless"], "roce_fabric must be a mapping (a preset plus overrides, e.g. roce_fabric: {preset: lossless}), not a list"),
    (26, "roce_fabric must be a mapping (a preset plus overrides, e.g. roce_fabric: {preset: lossless}), not a number"),
    ({"preset": ["lossless"]}, "roce_fabric.preset=[\"lossless\"]: choose one of lossless, lossy_ecn (e.g. preset: lossless), not a list"),
    ({"preset": {"name": "lossless"}}, "roce_fabric.preset: choose one of lossless, lossy_ecn (e.g. preset: lossless), not a mapping"),
    ({"trust": ["dscp"]}, "roce_fabric.trust=[\"dscp\"]: choose dscp (routed RoCEv2, recommended) or pcp (VLAN priority), not a list"),
    ({1: 2}, "roce_fabric has key(s) 1 that are not names: write each key as a name such as preset or host_mtu"),
    ({True: 1}, "YAML reads an unquoted yes/no/on/off/true/false as true/false: quote it"),
    ({"roce_dscp": {"value": 26}}, "roce_fabric.roce_dscp: must be an integer 0..63 (the DSCP RoCE traffic is marked with, 26 by convention), not a mapping"),
    ({"roce_dscp": True}, "roce_fabric.roce_dscp=true: must be an integer 0..63 (the DSCP RoCE traffic is marked with, 26 by convention), not a boolean"),
    ({"roce_priority": False}, "roce_fabric.roce_priority=false: must be an integer 0..7"),
    ({"host_mtu": [9000]}, "roce_fabric.host_mtu=[9000]: must be an integer 1280..9216 (9000 for jumbo RoCE), not a list"),
    ({"host_mtu": 9000.0}, "roce_fabric.host_mtu=9000.0: must be an integer 1280..9216 (9000 for jumbo RoCE), not a decimal number"),
    ({"switch_mtu": None}, "roce_fabric.switch_mtu=null: must be an integer 1280..9216"),
    ({"cnp_priority": "6"}, "roce_fabric.cnp_priority=\"6\": must be an integer 0..7 (the priority of CNPs, 6 by convention), not text"),
    ({"cnp_priority": "6"}, "not text (write it without quotes)"),
    ({"roce_tos": True}, "roce_fabric.roce_tos=true: must be an integer 0..255"),
    ({"pfc_priorities": {"3": True}}, "roce_fabric.pfc_priorities: must be a list of priorities 0..7, e.g. [3], not a mapping"),
    ({"pfc_priorities": [True]}, "roce_fabric.pfc_priorities=[true]: must be a list of priorities 0..7"),
    ({"ecn_priorities": 3}, "roce_fabric.ecn_priorities=3: must be a list of priorities 0..7, e.g. [3], not a number"),
    ({"ecn": [150000]}, "roce_fabric.ecn=[150000]: must be a mapping with max_threshold_bytes, min_threshold_bytes, probability_percent"),
    ({"ecn": {1: 2}}, "roce_fabric.ecn has key(s) 1 that are not names: write each key as a name such as probability_percent"),
    ({"ecn": {"probability_percent": True}}, "roce_fabric.ecn.probability_percent=true: must be an integer 1..100"),
    ({"ecn": {"min_threshold_bytes": {"kb": 150}}}, "roce_fabric.ecn.min_threshold_bytes: must be an integer 1..1073741824"),
    ({"global_pause": "false"}, "roce_fabric.global_pause=\"false\": must be true or false, not text (write it without quotes)"),
    ({"global_pause": 0}, "roce_fabric.global_pause=0: must be true or false, not a number"),
    # ToS = DSCP << 2 | ECN bits: the ECN bits may be ECT(0), ECT(1) or Not-ECT, never CE (0b11).
    ({"roce_tos": 107}, "roce_fabric.roce_tos=107 sets the ECN bits (the two low bits) to CE, 0b11"),
    ({"roce_tos": 107}, "use 106 (DSCP 26 with ECT(0)), or drop roce_tos to derive it"),
    ({"roce_dscp": 0, "roce_tos": 3}, "roce_fabric.roce_tos=3 sets the ECN bits (the two low bits) to CE"),
    ({"roce_dscp": 24, "roce_tos": 99}, "use 98 (DSCP 24 with ECT(0))"),
    ({"roce_dscp": {}, "roce_tos": 107}, "roce_fabric.roce_tos=107 sets the ECN bits (the two low bits) to CE"),
    # Whole values only: a trailing newline is not the name it ends.
    ({"preset": "lossless\n"}, "roce_fabric.preset=\"lossless\\n\": choose one of lossless, lossy_ecn (e.g. preset: lossless); remove the whitespace"),
    ({"preset": "lossy_ecn\n"}, "roce_fabric.preset=\"lossy_ecn\\n\": choose one of"),
    ({"trust": "dscp\n"}, "roce_fabric.trust=\"dscp\\n\": choose dscp"),
    ({"trust": "pcp\n"}, "roce_fabric.trust=\"pcp\\n\": choose dscp"),
    ({"host_mtu\n": 9000}, "roce_fabric has unknown key(s) \"host_mtu\\n\"; known keys:"),
    ({"host_mtu\n": 9000}, "(remove the whitespace around the key)"),
    ({"ecn": {"probability_percent\n": 50}}, "roce_fabric.ecn has unknown key(s) \"probability_percent\\n\""),
    ({"roce_dscp": "26\n"}, "roce_fabric.roce_dscp=\"26\\n\": must be an integer 0..63"),
]


@pytest.mark.parametrize("raw, message", BAD, ids=[repr(case[0]) for case in BAD])
def test_bad_intent_names_key_and_fix(raw, message):
    with pytest.raises(IntentError) as info:
        resolve_intent(raw)
    assert message in str(info.value)
    assert not python_words(str(info.value)), str(info.value)


WRONG_KINDS = [{"a": 1}, {1: 2}, [], [1], ["x"], [[1]], [{"a": 1}], True, False, None, "text", "26\n", 1.5, -1, 1 << 70]
KEYS = sorted(["preset", "trust", "roce_dscp", "roce_priority", "cnp_dscp", "cnp_priority", "pfc_priorities",
               "ecn_priorities", "roce_tos", "host_mtu", "switch_mtu", "global_pause", "ecn", "ecn.min_threshold_bytes",
               "ecn.max_threshold_bytes", "ecn.probability_percent"])


@pytest.mark.parametrize("key", KEYS)
def test_every_key_refuses_every_wrong_kind_in_plain_words(key):
    """A mapping, list, bool, null, text or float anywhere gives IntentError naming the key, never a TypeError."""
    for value in WRONG_KINDS:
        raw = {"ecn": {key.split(".")[1]: value}} if key.startswith("ecn.") else {key: value}
        try:
            resolve_intent(raw)
        except IntentError as exc:
            text = str(exc)
            assert "roce_fabric.%s" % key in text, (raw, text)
            assert not python_words(text), (raw, text)
        else:
            assert (key, value) == ("global_pause", False), raw  # the one valid value in the list


@pytest.mark.parametrize("raw", [None, {}, [], [1, 2], "lossless", 3, 2.5, True, {1: 2}, {None: 1}, {(1, 2): 3}, {"ecn": {1: 2, None: 3}}])
def test_any_input_gives_intent_or_intent_error(raw):
    try:
        resolve_intent(raw)
    except IntentError as exc:
        assert not python_words(str(exc)), str(exc)


def test_filter_refuses_a_list_preset_and_a_number_key_with_the_module_message():
    """Once 'unhashable type: _AnsibleLazyTemplateList' and 'expected str instance, _AnsibleTaggedInt found'."""
    with pytest.raises(AnsibleFilterError) as info:
        roce_intent({"preset": ["lossless"], 1: 2})
    text = str(info.value)
    assert "roce_fabric.preset=[\"lossless\"]: choose one of lossless, lossy_ecn" in text
    assert "roce_fabric has key(s) 1 that are not names" in text
    assert not python_words(text), text


def test_bad_preset_does_not_hide_the_other_problems():
    with pytest.raises(IntentError) as info:
        resolve_intent({"preset": ["lossless"], 1: 2, "roce_dscp": {}, "roce_tos": 107, "host_mtu": True})
    assert len(info.value.problems) == 5, info.value.problems


@pytest.mark.parametrize("ecn", [NOT_ECT, ECT1, ECT0])
def test_tos_may_carry_ect_or_not_ect(ecn):
    assert resolve_intent({"roce_tos": 26 << 2 | ecn})["roce_tos"] == 26 << 2 | ecn


def test_derived_tos_is_always_ect0_never_ce():
    for dscp in range(64):
        intent = resolve_intent({"roce_dscp": dscp, "cnp_dscp": 48 if dscp != 48 else 46})
        assert intent["roce_tos"] == dscp << 2 | ECT0
        assert intent["roce_tos"] & ECN_MASK != CE


def test_every_ce_tos_is_refused():
    """Whatever the DSCP, a ToS whose ECN bits are CE is refused, with that one problem."""
    for tos in [tos for tos in range(256) if tos & ECN_MASK == CE]:
        dscp = tos >> 2
        with pytest.raises(IntentError) as info:
            resolve_intent({"roce_dscp": dscp, "cnp_dscp": 48 if dscp != 48 else 46, "roce_tos": tos})
        assert len(info.value.problems) == 1 and "to CE, 0b11" in info.value.problems[0], (tos, info.value.problems)
        assert "use %d (DSCP %d with ECT(0))" % (dscp << 2 | ECT0, dscp) in info.value.problems[0]


def test_validators_match_whole_values():
    """No validator in _intent.py may use re.match/re.search: ``$`` matches before a trailing newline."""
    import inspect

    from ansible_collections.rdmaops.roce.plugins.module_utils import _intent

    source = inspect.getsource(_intent)
    assert not re.search(r"\.(match|search)\(", source)
    assert _intent.KEY_NAME.fullmatch("host_mtu") and not _intent.KEY_NAME.fullmatch("host_mtu\n")


def test_every_problem_is_reported_at_once():
    with pytest.raises(IntentError) as info:
        resolve_intent({"roce_dscp": 99, "host_mtu": 100, "ecn_priorities": [1]})
    assert len(info.value.problems) == 3


def test_lossy_ecn_may_use_global_pause():
    assert resolve_intent({"preset": "lossy_ecn", "global_pause": True})["global_pause"] is True
