"""switch_roce's engine against hostile and malformed input (issue 20, switch side): the port naming
rule of every NOS in every state, names read back from a switch or running_config, and
configuration of the wrong shape.  The engine runs in-process as the module runs it
(tests/unit/switchengine.py); the same cases through ansible itself are in
tests/unit/plugins/modules/test_switch_roce_hostile.py."""

import copy
import json

import pytest

import switchengine
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import eos, nvue, nxos, onyx, resource, sonic

FABRIC = {"ecn": {"min_threshold_bytes": 150 * 1024, "max_threshold_bytes": 1500 * 1024, "probability_percent": 100}}
GOOD = dict(nvue=["swp1", "swp31s0", "bond1", "peerlink"], sonic=["Ethernet0", "Ethernet120"],
            eos=["Ethernet1", "Ethernet1/1", "Ethernet3/1/1", "Port-Channel1"],
            nxos=["Ethernet1/1", "Ethernet1/1/1", "port-channel1"], onyx=["ethernet 1/1", "Eth1/2", "1/3", "1/4/1"])
# Names that carry configuration, or are no port: each refused on every NOS.
HOSTILE = ["Ethernet1\ninterface Management1\n   shutdown", "Ethernet1/1;reload", "Ethernet1/1 shutdown",
           "Ethernet0|3-4", "swp1\n", "swp1\r", "1/1\tmtu 1500", "", " swp1", "Ethernet1/1\x00", "swp1|x",
           "Ethernet1/1!", "interface", "${IFS}", "Ethernet99999999/1"]
STATES = ("merged", "replaced", "overridden", "deleted", "rendered", "parsed", "gathered")


class Untouchable:
    """A switch that must not be reached: the naming rule refuses before anything is read."""

    def __init__(self, ctx):
        raise AssertionError("the switch was reached before the names were checked")


@pytest.mark.parametrize("nos", sorted(resource.DRIVERS))
@pytest.mark.parametrize("state", STATES)
def test_a_name_that_carries_configuration_is_refused_in_every_state_before_anything(monkeypatch, nos, state):
    for driver in (nvue, sonic):
        monkeypatch.setattr(driver, "connect", Untouchable)
    for name in HOSTILE:
        result, warnings = switchengine.run(os=nos, state=state, running_config="{}",
                                            config={"fabric": FABRIC, "interfaces": GOOD[nos][:1] + [name]})
        assert result["failed"] and result["changed"] is False, (nos, state, name, result)
        assert result["msg"].startswith("config.interfaces[1]: "), result["msg"]
        switchengine.assert_clear(result["msg"], ["config.interfaces"])
        # the expected form is shown, and the name itself only escaped (no control character)
        assert "name ports as it does" in result["msg"] or "management" in result["msg"] or "longer" in result["msg"]
        assert not any(char in result["msg"] for char in "\n\r\t\x00")
        assert "rendered" not in result and "commands" not in result


@pytest.mark.parametrize("nos", ["eos", "nxos", "onyx", "nvue", "sonic"])
def test_every_form_the_nos_gives_its_ports_renders(nos):
    result, dummy = switchengine.run(os=nos, state="rendered", config={"fabric": FABRIC, "interfaces": GOOD[nos]})
    assert "failed" not in result, result
    if nos in switchengine.LINE_GRAMMAR:
        written = switchengine.ports_in_lines(nos, result["rendered"])
        assert len(written) == len(GOOD[nos])
    elif nos == "nvue":
        assert sorted(result["rendered"]["interface"]) == sorted(GOOD[nos])
    else:
        assert sorted(result["rendered"]["PORT"]) == sorted(GOOD[nos])


@pytest.mark.parametrize("nos, name, words", [
    ("nvue", "eth0", "management or loopback"), ("nvue", "mgmt", "management or loopback"),
    ("nvue", "swp1234567890123", "longer than the 15 characters"),
    ("sonic", "PortChannel0001", "take its member ports"),
    ("eos", "Management1", "Ethernet1, Ethernet1/1"), ("nxos", "mgmt0", "Ethernet1/1, Ethernet1/1/1"),
    ("onyx", "mgmt0", "ethernet 1/1, Eth1/1 or 1/1"),
])
def test_names_of_the_nos_that_never_carry_the_profile_are_refused_saying_why(nos, name, words):
    result, dummy = switchengine.run(os=nos, state="rendered", config={"fabric": FABRIC, "interfaces": [name]})
    assert result["failed"] and words in result["msg"], result["msg"]
    assert result["option"] == "config.interfaces"


def test_eos_port_channels_are_written_as_avd_writes_them():
    result, dummy = switchengine.run(os="eos", state="rendered",
                                     config={"fabric": {}, "interfaces": ["Ethernet2", "Port-Channel10"]})
    lines = result["rendered"]
    assert lines.index("interface Port-Channel10") < lines.index("interface Ethernet2")
    parsed, dummy = switchengine.run(os="eos", state="parsed", running_config="\n".join(lines))
    assert parsed["parsed"]["interfaces"] == ["Port-Channel10", "Ethernet2"]


# --- names read back --------------------------------------------------------------------------

EOS_READ = """interface Ethernet1;reload
   service-profile RDMAOPS_ROCE
interface Ethernet2
   mtu 9000
   service-profile RDMAOPS_ROCE
qos profile RDMAOPS_ROCE
   priority-flow-control on
   priority-flow-control priority 3 no-drop
"""
NXOS_READ = """interface Ethernet1/1|x
  priority-flow-control mode on
  mtu 1500
interface Ethernet1/2
  priority-flow-control mode on
  mtu 9216
"""
ONYX_READ = """interface ethernet 1/1;no mtu 9216 force
interface ethernet 1/1;no qos trust L3
interface ethernet 1/2 qos trust L3
"""


@pytest.mark.parametrize("nos, text, bad, kept", [
    ("eos", EOS_READ, '"Ethernet1;reload"', ["Ethernet2"]),
    ("nxos", NXOS_READ, '"Ethernet1/1|x"', ["Ethernet1/2"]),
    ("onyx", ONYX_READ, '"1/1;no"', ["1/2"]),
    ("sonic", json.dumps({"PORT_QOS_MAP": {"Ethernet0|3-4": {"dscp_to_tc_map": "ROCE"},
                                           "Ethernet4": {"dscp_to_tc_map": "ROCE", "pfc_enable": "3"}},
                          "PORT": {"Ethernet4": {"mtu": "9100"}}}), '"Ethernet0|3-4"', ["Ethernet4"]),
    ("nvue", json.dumps({"interface": {"swp1 x": {"link": {"mtu": 1500}}, "swp2": {"link": {"mtu": 9000}}}}),
     '"swp1 x"', ["swp2"]),
])
def test_parsed_reports_a_name_that_breaks_the_rule_and_leaves_it_out(nos, text, bad, kept):
    result, warnings = switchengine.run(os=nos, state="parsed", running_config=text)
    assert "failed" not in result, result
    assert result["parsed"]["interfaces"] == kept
    assert [w for w in warnings if w.startswith("running_config names an interface") and bad in w], warnings
    # what the fabric says comes from the ports that follow the rule (the left-out port's MTU is not read)
    if nos != "onyx":
        assert result["parsed"]["fabric"].get("switch_mtu") in (9000, 9100, 9216)


class FakeNvue:
    """An NVUE switch in memory: its applied configuration, and the PATCHes it took."""

    def __init__(self, applied):
        self.applied = copy.deepcopy(applied)
        self.patches = []

    def version(self):
        return "5.12"

    def read(self):
        return copy.deepcopy(self.applied)

    def apply(self, bodies):
        for body in bodies:
            self.applied = nvue.apply_patch(self.applied, body)
        self.patches.extend(bodies)


def _profiled(names):
    intent, profile, dummy = resource.resolve_config({"fabric": {}, "interfaces": names})
    profile = resource.resolve_mtu(profile, intent, nvue.NAME, 9216, "clamp", lambda msg: None)
    return nvue.render(profile, names, "5.12")


def test_gathered_and_acting_states_never_echo_a_bad_name_the_switch_holds(monkeypatch):
    applied = _profiled(["swp1", "swp2"])
    applied["interface"]["swp9;x"] = copy.deepcopy(applied["interface"]["swp1"])  # a name NVUE's model refuses
    switch = FakeNvue(applied)
    monkeypatch.setattr(nvue, "connect", lambda ctx: switch)
    gathered, warnings = switchengine.run(os="nvue", state="gathered")
    assert gathered["gathered"]["interfaces"] == ["swp1", "swp2"]
    assert [w for w in warnings if "the switch's applied configuration" in w and '"swp9;x"' in w], warnings
    # merged on listed ports: the plan names only them, and before/after leave the bad name out
    merged, warnings = switchengine.run(os="nvue", config={"fabric": {"switch_mtu": 9000}, "interfaces": ["swp1"]})
    assert merged["changed"] and list(merged["commands"][0]["interface"]) == ["swp1"]
    assert "swp9;x" not in json.dumps([merged["before"], merged["after"]])
    # overridden would have to unset the profile on it: refused, nothing sent
    sent = len(switch.patches)
    overridden, dummy = switchengine.run(os="nvue", state="overridden", config={"fabric": {}, "interfaces": ["swp1"]})
    assert overridden["failed"] and overridden["changed"] is False
    assert "state=overridden would have to change interface(s)" in overridden["msg"] and '"swp9;x"' in overridden["msg"]
    assert len(switch.patches) == sent
    deleted, dummy = switchengine.run(os="nvue", state="deleted")
    assert deleted["failed"] and "nothing was sent" in deleted["msg"] and len(switch.patches) == sent


# --- configuration of the wrong shape ---------------------------------------------------------

NVUE_BAD = [
    ('{"qos": [1, 2]}', "qos is a list where a mapping belongs"),
    ('{"qos": {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": "3"}}}}}}',
     'qos.mapping.default-global.dscp.26.switch-priority is text ("3") where a whole number from 0 to 7 belongs'),
    ('{"qos": {"mapping": {"default-global": {"dscp": {"x": {}}}}}}', 'has the key text ("x"), not a DSCP'),
    ('{"qos": {"mapping": {"default-global": {"dscp": {"99": {}}}}}}', "has the key 99, outside 0 to 63"),
    ('{"qos": {"mapping": {"default-global": {"trust": ["l3"]}}}}', "trust is a list where text belongs"),
    ('{"interface": {"swp1": {"link": {"mtu": 1e400}}}}', "interface.swp1.link.mtu is a decimal number (inf)"),
    ('{"interface": {"swp1": {"link": {"mtu": 99999999999999999999}}}}', "outside 1 to 65535"),
    ('{"interface": {"swp1": {"link": {"mtu": %s}}}}' % ("9" * 5000), "a number too long to be read"),
    ('{"interface": {"swp1": {"link": {"mtu": true}}}}', "is a boolean (true) where a whole number"),
    ('{"interface": ["swp1"]}', "interface is a list where a mapping belongs"),
    ('{"interface": {"swp1": {"link": ', "line 1, column 33: the text stops being JSON there"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ("qos:\n  roce:\n    mode: lossless\n", "line 1, column 1: the text stops being JSON"),  # YAML, not NVUE JSON
    ('"qos"', 'is text ("qos") where an NVUE configuration tree'),
]
SONIC_BAD = [
    ('{"PORT_QOS_MAP": []}', "PORT_QOS_MAP is a list where a mapping belongs"),
    ('{"PORT": {"Ethernet0": {"mtu": 9216}}}', "PORT.Ethernet0.mtu is a number (9216) where decimal text"),
    ('{"PORT": {"Ethernet0": {"mtu": "9k"}}}', 'PORT.Ethernet0.mtu is text ("9k") where decimal text'),
    ('{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": ["3"]}}}', "pfc_enable is a list where text belongs"),
    ('{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3;4"}}}', "not a list of priorities"),
    ('{"PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "M"}}, "QUEUE": {"Ethernet0|0-99999": {}}}',
     "QUEUE.Ethernet0|0-99999"),
    ('{"DSCP_TO_TC_MAP": {"M": {"26": "30"}}}', 'DSCP_TO_TC_MAP.M.26 is text ("30")'),
    ('{"WRED_PROFILE": {"W": {"green_min_threshold": "-1"}}}', "WRED_PROFILE.W.green_min_threshold"),
    ('{"PORT_QOS_MAP": "x"}', "PORT_QOS_MAP is text"),
    ('{"PORT": {"Ethernet0": ', "the text stops being JSON there"),
    ("PORT:\n  Ethernet0: {mtu: '9100'}\n", "line 1, column 1"),  # YAML of a CONFIG_DB, not its JSON
]
CLI_BAD = [
    ("eos", "interface Ethernet1\n   service-profile P\n   mtu 99999999999999999999", 'line 3 ("mtu 9999'),
    ("eos", "qos map dscp 0-99999999999 to traffic-class 3", "DSCP 99999999999 is outside 0 to 63"),
    ("eos", "qos map dscp 64 to traffic-class 3", "DSCP 64 is outside 0 to 63"),
    ("eos", "qos map dscp 26 to traffic-class 9", "traffic-class 9 is outside 0 to 7"),
    ("eos", "qos profile P\n   tx-queue 3\n      random-detect ecn minimum-threshold 9999999 mbytes "
            "maximum-threshold 1 mbytes", "an ECN threshold in mbytes 9999999 is outside"),
    ("eos", "qos profile P\n   tx-queue 3\n      bandwidth percent 101", "bandwidth percent 101 is outside 0 to 100"),
    ("nxos", "policy-map type network-qos N\n  class type network-qos c-8q-nq3\n    pause pfc-cos 3-99999999",
     "pfc-cos 99999999 is outside 0 to 7"),
    ("nxos", "class-map type qos match-all C\n  match dscp 26-24", "the dscp range 26-24 runs backwards"),
    ("nxos", "interface Ethernet1/1\n  priority-flow-control mode on\n  mtu 100", "mtu 100 is outside 576 to 9216"),
    ("onyx", "interface ethernet 1/1-1/99999999999 mtu 9216 force", "last port of the range 99999999999 is outside"),
    ("onyx", "interface ethernet 1/1 traffic-class 3 congestion-control ecn minimum-absolute 1 maximum-absolute "
             "99999999", "maximum-absolute (KB) 99999999 is outside"),
    ("onyx", "dcb priority-flow-control priority 0-9 enable", "priority 9 is outside 0 to 7"),
]


@pytest.mark.parametrize("nos, text, words", [("nvue",) + case for case in NVUE_BAD]
                         + [("sonic",) + case for case in SONIC_BAD] + CLI_BAD)
def test_parsed_text_of_the_wrong_shape_fails_naming_running_config_and_the_place(nos, text, words):
    result, dummy = switchengine.run(os=nos, state="parsed", running_config=text)
    assert result["failed"] and result["changed"] is False, result
    assert result["msg"].startswith("running_config: "), result["msg"]
    assert words in result["msg"], result["msg"]
    assert result["option"] == "running_config"
    switchengine.assert_clear(result["msg"], ["running_config"])


@pytest.mark.parametrize("nos, text", [
    ("eos", "qos:\n  map: [26, 3]\n"), ("nxos", "- interface: Ethernet1/1\n  mtu: 9216\n"),
    ("onyx", "{'interface': 'ethernet 1/1'}"),  # what Ansible makes of a mapping given as running_config
    ("eos", "---\nqos: {}\n"), ("nxos", "[1, 2]"),
])
def test_yaml_or_json_given_to_a_cli_parser_is_refused_as_not_running_config_text(nos, text):
    result, dummy = switchengine.run(os=nos, state="parsed", running_config=text)
    assert result["failed"] and result["msg"].startswith("running_config: line 1 (")
    assert "is structured data (YAML or JSON), not running-config text" in result["msg"]
    switchengine.assert_clear(result["msg"], ["running_config"])


def test_text_with_no_line_of_the_profile_is_read_as_nothing_configured():
    result, dummy = switchengine.run(os="eos", state="parsed", running_config="hostname leaf1\n!\nip routing\n")
    assert result["parsed"] == {"fabric": {}, "interfaces": []}


def test_gathered_from_a_switch_answering_the_wrong_shape_names_the_answer_and_the_place(monkeypatch):
    switch = FakeNvue({"qos": {"pfc": {"default-global": {"switch-priority": ["3"]}}}})
    monkeypatch.setattr(nvue, "connect", lambda ctx: switch)
    for state in ("gathered", "merged"):
        result, dummy = switchengine.run(os="nvue", state=state, config={"fabric": {}, "interfaces": ["swp1"]})
        assert result["failed"] and result["changed"] is False
        assert result["msg"] == ("the switch's applied configuration (NVUE GET /nvue_v1/?rev=applied) cannot be read: "
                                 "qos.pfc.default-global.switch-priority is a list where a mapping belongs")
        assert switch.patches == []


def test_the_sonic_switch_answering_the_wrong_shape_changes_nothing(monkeypatch):
    class Switch:
        def version(self):
            return "202411"

        def read(self):
            return {"PORT": {"Ethernet0": {"mtu": ["9100"]}}}

        def apply(self, ops):
            raise AssertionError("applied")

    monkeypatch.setattr(sonic, "connect", lambda ctx: Switch())
    result, dummy = switchengine.run(os="sonic", config={"fabric": {}, "interfaces": ["Ethernet0"]})
    assert result["failed"] and result["changed"] is False
    assert "the switch's CONFIG_DB (sonic-cfggen -d --print-data) cannot be read: PORT.Ethernet0.mtu is a list" \
        in result["msg"]


def test_the_drivers_name_their_rule_and_their_source():
    for driver in (eos, nvue, nxos, onyx, sonic):
        assert driver.PORT_NAMES.problem(GOOD[[k for k, v in resource.DRIVERS.items() if v is driver][0]][0]) is None
    assert nvue.SOURCE and sonic.SOURCE


# --- SONiC: what the switch's CONFIG_DB holds (names and shapes), in the acting states ------------

def _sonic(monkeypatch, config_db):
    switch = switchengine.FakeSonic(dict(switchengine.SONIC_BASE, **config_db))
    monkeypatch.setattr(sonic, "connect", lambda ctx: switch)
    return switch


ON_ETHERNET0 = {"fabric": {}, "interfaces": ["Ethernet0"]}
SONIC_REFUSED = "would have to change interface(s) the switch holds under a name this module never writes"


def test_sonic_a_row_moved_off_a_bad_name_is_refused_with_nothing_sent(monkeypatch):
    # overridden takes the profile off Ethernet9;x and puts the same QUEUE row on Ethernet0: jsonpatch
    # would make that one move op whose bad name is only in its "from"
    switch = _sonic(monkeypatch, {"QUEUE": {"Ethernet9;x|0": {"scheduler": "ROCE_DWRR_50"}},
                                  "SCHEDULER": {"ROCE_DWRR_50": {"type": "DWRR", "weight": "50"}}})
    result, dummy = switchengine.run(os="sonic", state="overridden", config=ON_ETHERNET0)
    assert result["failed"] and result["changed"] is False, result
    assert "state=overridden " + SONIC_REFUSED in result["msg"] and '"Ethernet9;x"' in result["msg"]
    switchengine.assert_clear(result["msg"], ["nothing was sent"])
    assert switch.applied == []


@pytest.mark.parametrize("bad", ["Ethernet0|3-4", "Ethernet0\nshutdown", "Ethernet0\u00b2", "PortChannel1"])
def test_sonic_removing_a_whole_table_is_judged_by_the_names_it_holds(monkeypatch, bad):
    # the bad-named row is the table's last: the op removes /PORT_QOS_MAP, naming no row itself
    switch = _sonic(monkeypatch, {"PORT_QOS_MAP": {bad: {"dscp_to_tc_map": "ROCE"}},
                                  "DSCP_TO_TC_MAP": {"ROCE": {"0": "0"}}})
    result, warnings = switchengine.run(os="sonic", state="deleted")
    assert result["failed"] and result["changed"] is False, result
    assert "state=deleted " + SONIC_REFUSED in result["msg"], result["msg"]
    assert "\n" not in result["msg"] and switch.applied == []
    assert [w for w in warnings if "left out of the result" in w], warnings


SONIC_NULLS = [
    ({"PORT": {"Ethernet0": None, "Ethernet4": {"mtu": "9100"}}}, "PORT.Ethernet0 is null where a mapping belongs"),
    ({"PORT_QOS_MAP": None}, "PORT_QOS_MAP is null where a mapping belongs"),
    ({"PORT_QOS_MAP": {"Ethernet4": None}}, "PORT_QOS_MAP.Ethernet4 is null where a mapping belongs"),
    ({"PORT_QOS_MAP": {"Ethernet4": {"pfc_enable": None}}}, "PORT_QOS_MAP.Ethernet4.pfc_enable is null where text"),
    ({"QUEUE": {"Ethernet4|3": None}}, "QUEUE.Ethernet4|3 is null where a mapping belongs"),
    ({"QUEUE": None}, "QUEUE is null where a mapping belongs"),
    ({"BUFFER_PG": None}, "BUFFER_PG is null where a mapping belongs"),
    ({"PFC_WD": None}, "PFC_WD is null where a mapping belongs"),
    ({"DEVICE_METADATA": {"localhost": None}}, "DEVICE_METADATA.localhost is null where a mapping belongs"),
]


@pytest.mark.parametrize("state", ("merged", "replaced", "overridden", "deleted", "gathered"))
@pytest.mark.parametrize("config_db, words", SONIC_NULLS)
def test_sonic_null_in_configdb_fails_naming_the_answer_and_the_place(monkeypatch, state, config_db, words):
    switch = _sonic(monkeypatch, config_db)
    result, dummy = switchengine.run(os="sonic", state=state, config=None if state == "gathered" else ON_ETHERNET0)
    assert result["failed"] and result["changed"] is False, result
    assert result["msg"].startswith("%s cannot be read: %s" % (sonic.SOURCE, words)), result["msg"]
    switchengine.assert_clear(result["msg"], [sonic.SOURCE])
    assert switch.applied == []


def test_a_plan_tripping_over_a_shape_the_checks_let_through_is_one_message_not_a_traceback(monkeypatch):
    # the last-resort guard around the driver's plan (the checks above come first; this proves none of
    # Python's words would reach a user if a check were missing)
    switch = _sonic(monkeypatch, {})

    def trips(*args):
        raise TypeError("'NoneType' object is not subscriptable")

    monkeypatch.setattr(sonic, "plan", trips)
    result, dummy = switchengine.run(os="sonic", state="merged", config=ON_ETHERNET0)
    assert result["failed"] and result["changed"] is False, result
    assert result["msg"].startswith(sonic.SOURCE + " " + resource.UNFORESEEN), result["msg"]
    assert not switchengine.PYTHON_WORDS.search(result["msg"]) and switch.applied == []


def test_sonic_a_port_name_with_a_superscript_digit_is_left_out_with_a_warning(monkeypatch):
    # "²" is a digit to str.isdigit(), not to int(): it once failed the whole read
    row = {"dscp_to_tc_map": "ROCE", "pfc_enable": "3"}
    _sonic(monkeypatch, {"PORT_QOS_MAP": {"Ethernet0\u00b2": dict(row), "Ethernet4": dict(row)}})
    result, warnings = switchengine.run(os="sonic", state="gathered")
    assert "failed" not in result, result
    assert result["gathered"]["interfaces"] == ["Ethernet4"]
    assert [w for w in warnings if '"Ethernet0\\u00b2" is not a port name of SONiC' in w], warnings
    parsed, warnings = switchengine.run(os="sonic", state="parsed", running_config=json.dumps(
        {"PORT_QOS_MAP": {"Ethernet0\u00b2": dict(row), "Ethernet4": dict(row)}}))
    assert parsed["parsed"]["interfaces"] == ["Ethernet4"] and warnings


def test_sonic_unknown_port_message_shows_the_switch_port_names_escaped(monkeypatch):
    _sonic(monkeypatch, {"PORT": {"Ethernet0\ninterface x": {}, "Ethernet\u00b2": {"mtu": "9100"}}})
    result, dummy = switchengine.run(os="sonic", config={"fabric": {}, "interfaces": ["Ethernet8"]})
    assert result["failed"] and result["msg"].startswith("config.interfaces: Ethernet8 is not a port of this switch")
    assert '"Ethernet0\\ninterface x"' in result["msg"] and '"Ethernet\\u00b2"' in result["msg"]
    assert not any(char in result["msg"] for char in "\n\r\u00b2")


def test_nvue_a_management_subinterface_with_an_mtu_is_no_fabric_port(monkeypatch):
    # eth0.10 is a name the naming rule refuses as management: it never carries the profile, so it is
    # neither reported nor changed, and never a name the user is told to fix on the switch
    applied = _profiled(["swp1"])
    applied["interface"]["eth0.10"] = {"link": {"mtu": 1500}}
    switch = FakeNvue(applied)
    monkeypatch.setattr(nvue, "connect", lambda ctx: switch)
    for state, config in (("overridden", {"fabric": {}, "interfaces": ["swp1"]}), ("deleted", None)):
        result, warnings = switchengine.run(os="nvue", state=state, config=config)
        assert "failed" not in result, result
        assert "eth0.10" not in json.dumps([result, warnings])
        assert switch.applied["interface"]["eth0.10"] == {"link": {"mtu": 1500}}


def test_a_hundred_thousand_bad_names_make_a_message_of_a_few_lines():
    result, dummy = switchengine.run(os="nvue", state="rendered", config={"fabric": {}, "interfaces": ["x;"] * 100000})
    assert result["failed"] and result["msg"].startswith("config.interfaces[0]: ")
    assert result["msg"].endswith("; and 99990 more") and len(result["msg"]) < 3000, len(result["msg"])
    assert "config.interfaces[9]: " in result["msg"] and "config.interfaces[10]: " not in result["msg"]
    assert len(result["problems"]) == 10 and result["problem_count"] == 100000


def test_a_switch_holding_many_bad_names_is_reported_in_a_few_warnings(monkeypatch):
    applied = _profiled(["swp1"])
    for index in range(500):
        applied["interface"]["swp%d;x" % index] = {"link": {"mtu": 9216}}
    monkeypatch.setattr(nvue, "connect", lambda ctx: FakeNvue(applied))
    result, warnings = switchengine.run(os="nvue", state="gathered")
    assert result["gathered"]["interfaces"] == ["swp1"]
    assert len(warnings) == 11 and "names 490 more interfaces this module does not read" in warnings[-1], warnings[-1]
