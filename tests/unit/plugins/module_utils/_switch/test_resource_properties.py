"""Property-based tests (hypothesis) of switch_roce's engine over ``config`` and ``running_config`` for
every NOS: any generated value is either refused with a message naming the option (``config.interfaces``,
``config.fabric``, ``running_config``) and no Python error text, or gives only what the NOS's naming
rule and grammar allow - CLI lines each matching the NOS's line grammar (tests/unit/switchengine.py),
NVUE bodies NVIDIA's published model accepts with unknown keys refused, CONFIG_DB keys whose port
part follows SONiC's rule.  What ``parsed`` returns is fed back to ``rendered``: the same holds.

Bounded and deterministic for CI: every test runs ``derandomize=True`` with no example database, a
fixed number of examples and no deadline (about 10 seconds in all on one core); RDMAOPS_PROPERTY_SCALE
(below) runs a longer, random hunt by hand.
"""

import json
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nvuesite
import switchengine
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import ECN_KEYS, ETS_KEYS, USER_KEYS
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import resource, sonic

NOSES = sorted(resource.DRIVERS)


# A deeper hunt by hand: RDMAOPS_PROPERTY_SCALE=20 runs 20 times the examples, with fresh random ones.
SCALE = int(os.environ.get("RDMAOPS_PROPERTY_SCALE", "1"))


def bounded(examples):
    return settings(max_examples=examples * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
                    suppress_health_check=list(HealthCheck))


# --- values ---------------------------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.integers(0, 70000),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=10),
                    st.sampled_from(["max", "dscp", "pcp", "lossless", "lossy_ecn", "3", "9216", "on", "enable"]))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
# Characters that carry configuration in one NOS or another, and a few that carry nothing.
JUNK = st.text(alphabet="\n\r\t ;|!#$&/-_.,:=\x00\x0b\x1b'\"\\{}[]eE0123456789", min_size=1, max_size=4)
NUMBER = st.integers(0, 10 ** 6) | st.integers(0, 10 ** 25)
FORMS = {
    "nvue": [st.builds("swp{}".format, NUMBER), st.builds("swp{}s{}".format, NUMBER, NUMBER),
             st.builds("bond{}".format, NUMBER), st.just("peerlink"), st.just("eth0"), st.just("lo")],
    "sonic": [st.builds("Ethernet{}".format, NUMBER), st.builds("PortChannel{:04d}".format, NUMBER)],
    "eos": [st.builds("Ethernet{}".format, NUMBER), st.builds("Ethernet{}/{}".format, NUMBER, NUMBER),
            st.builds("Ethernet{}/{}/{}".format, NUMBER, NUMBER, NUMBER), st.builds("Port-Channel{}".format, NUMBER)],
    "nxos": [st.builds("Ethernet{}/{}".format, NUMBER, NUMBER), st.builds("Ethernet{}/{}/{}".format, NUMBER, NUMBER, NUMBER),
             st.builds("port-channel{}".format, NUMBER)],
    "onyx": [st.builds("{}/{}".format, NUMBER, NUMBER), st.builds("ethernet {}/{}".format, NUMBER, NUMBER),
             st.builds("Eth{}/{}/{}".format, NUMBER, NUMBER, NUMBER)],
}


def spliced(good, junk, where):
    where = where % (len(good) + 1)
    return good[:where] + junk + good[where:]


def port_names(nos):
    form = st.one_of(*FORMS[nos])
    other = st.one_of(*[strategy for name in NOSES if name != nos for strategy in FORMS[name]])
    return st.one_of(form, form, st.builds(spliced, form, JUNK, st.integers(0, 30)), other, st.text(max_size=16))


# A profile every NOS can write (Onyx maps DSCP d to priority d/8 and takes thresholds in whole KB).
KB_ECN = {"min_threshold_bytes": 150 * 1024, "max_threshold_bytes": 1500 * 1024, "probability_percent": 100}


@st.composite
def writable_fabrics(draw):
    roce, cnp = draw(st.lists(st.integers(1, 7), min_size=2, max_size=2, unique=True))
    low = draw(st.integers(1, 4000))
    high = draw(st.integers(low + 1, 8000))
    mtu = draw(st.one_of(st.just("max"), st.integers(1500, 9214)))
    fabric = {
        "preset": draw(st.sampled_from(["lossless", "lossy_ecn"])),
        "roce_priority": roce, "cnp_priority": cnp,
        "roce_dscp": roce * 8 + draw(st.integers(0, 7)), "cnp_dscp": cnp * 8 + draw(st.integers(0, 7)),
        "ecn": {"min_threshold_bytes": low * 1024, "max_threshold_bytes": high * 1024, "probability_percent": 100},
        "pfc_watchdog": draw(st.booleans()), "switch_mtu": mtu, "host_mtu": 1500,
    }
    share = draw(st.integers(1, 99))
    fabric["ets"] = {"roce_percent": share, "default_percent": 100 - share}
    if draw(st.booleans()):
        fabric["ecn_priorities"] = [0, roce]
    return fabric


@st.composite
def hostile_fabrics(draw):
    fabric = draw(st.dictionaries(st.sampled_from(sorted(USER_KEYS) + ["bogus", "Preset"]), SCALARS | JSON_VALUES,
                                  max_size=3))
    for key, known in (("ecn", ECN_KEYS), ("ets", ETS_KEYS)):
        if draw(st.booleans()):
            fabric[key] = draw(st.dictionaries(st.sampled_from(sorted(known) + ["bogus"]), SCALARS, max_size=3))
    return fabric


# --- what a NOS may be given ----------------------------------------------------------------------

def onyx_port(name):
    found = re.fullmatch(r"(?:[Ee]thernet |[Ee]th)?(.+)", name)
    return found.group(1)


def assert_writes_only_what_the_nos_allows(nos, rendered, names):
    rule = resource.DRIVERS[nos].PORT_NAMES
    assert all(rule.problem(name) is None for name in names), names
    if nos in switchengine.LINE_GRAMMAR:
        written = switchengine.ports_in_lines(nos, rendered)
        wanted = set(onyx_port(name) for name in names) if nos == "onyx" else set(names)
        assert set(written) == wanted
    elif nos == "nvue":
        assert nvuesite.validate("5.18", rendered) == []
        assert sorted(rendered.get("interface", {})) == sorted(names)
    else:
        for table, rows in rendered.items():
            for key, row in rows.items():
                if table in sonic.PORT_TABLES:
                    port, dummy, index = key.partition("|")
                    assert rule.problem(port) is None and re.fullmatch(r"([0-9]+)?", index), key
                assert all(isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_,]*", value) for value in row.values())


def render_or_refuse(nos, config, options):
    result, dummy = switchengine.run(os=nos, state="rendered", config=config)
    if result.get("failed"):
        switchengine.assert_clear(result["msg"], options)
        assert result["changed"] is False and not result.get("rendered")
        return None
    assert_writes_only_what_the_nos_allows(nos, result["rendered"], config.get("interfaces") or [])
    return result["rendered"]


@bounded(150)
@given(st.data())
def test_any_interface_list_is_refused_naming_config_interfaces_or_renders_only_rule_abiding_ports(data):
    nos = data.draw(st.sampled_from(NOSES))
    names = data.draw(st.lists(port_names(nos), max_size=4))
    render_or_refuse(nos, {"fabric": {"ecn": KB_ECN}, "interfaces": names}, ["config.interfaces"])


@bounded(120)
@given(st.data())
def test_any_fabric_is_refused_naming_config_fabric_or_renders_within_the_grammar(data):
    nos = data.draw(st.sampled_from(NOSES))
    fabric = data.draw(st.one_of(hostile_fabrics(), writable_fabrics()))
    render_or_refuse(nos, {"fabric": fabric, "interfaces": [data.draw(st.one_of(*FORMS[nos]))]},
                     ["config.fabric", "config.interfaces"])


def normal(parsed, nos):
    """The parsed profile as written: Onyx does not carry the DSCPs, the probability or the watchdog."""
    fabric = dict(parsed)
    if nos == "onyx":
        for key in ("roce_dscp", "cnp_dscp", "pfc_watchdog"):
            fabric.pop(key, None)
        fabric["ecn"] = dict((key, value) for key, value in fabric["ecn"].items() if key != "probability_percent")
    return fabric


@bounded(100)
@given(st.data())
def test_parse_of_render_is_the_profile_for_any_writable_profile(data):
    nos = data.draw(st.sampled_from(NOSES))
    names = data.draw(st.lists(st.one_of(*FORMS[nos]), max_size=3, unique=True))
    config = {"fabric": data.draw(writable_fabrics()), "interfaces": names}
    rendered = render_or_refuse(nos, config, ["config.interfaces", "config.fabric"])
    if rendered is None:
        return
    text = "\n".join(rendered) if isinstance(rendered, list) else json.dumps(rendered)
    parsed, dummy = switchengine.run(os=nos, state="parsed", running_config=text)
    intent, profile, dummy = resource.resolve_config(config)
    driver = resource.DRIVERS[nos]
    version = driver.VERSIONS[-1]
    profile = resource.resolve_mtu(profile, intent, driver.NAME, driver.max_mtu(version), "clamp", lambda msg: None)
    wanted_ports = set(onyx_port(name) for name in names) if nos == "onyx" else set(names)
    assert set(parsed["parsed"]["interfaces"]) == wanted_ports
    if names:
        assert parsed["parsed"]["fabric"] == normal(profile, nos)


# --- running_config -------------------------------------------------------------------------------

def paths(tree, here=()):
    found = [here]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += paths(value, here + (key,))
    return found


def replaced(tree, path, value, rename=None):
    if not path:
        return value
    copy = dict(tree)
    if rename is not None and len(path) == 1:
        copy[rename] = copy.pop(path[0])
        return copy
    copy[path[0]] = replaced(tree[path[0]], path[1:], value, rename)
    return copy


BASE_PORTS = {"nvue": ["swp1", "swp2s1"], "sonic": ["Ethernet0", "Ethernet4"], "eos": ["Ethernet1", "Port-Channel2"],
              "nxos": ["Ethernet1/1", "port-channel2"], "onyx": ["1/1", "1/2/1"]}


def base_config(nos):
    """What the module renders for the profile: the text the running_config cases start from."""
    result, dummy = switchengine.run(os=nos, state="rendered",
                                     config={"fabric": {"ecn": KB_ECN}, "interfaces": BASE_PORTS[nos]})
    return result["rendered"]


BASES = dict((nos, base_config(nos)) for nos in NOSES)


@st.composite
def json_running_configs(draw, nos):
    base = BASES[nos]
    how = draw(st.sampled_from(["value", "value", "key", "truncate", "whole"]))
    if how == "whole":
        return json.dumps(draw(JSON_VALUES))
    if how == "truncate":
        text = json.dumps(base)
        return text[:draw(st.integers(0, len(text)))]
    path = draw(st.sampled_from(paths(base)[1:]))
    if how == "key":
        key = draw(st.one_of(port_names(nos), st.text(max_size=8), st.sampled_from(["99", "-1", "3|4", "26"])))
        return json.dumps(replaced(base, path, None, rename=key))
    return json.dumps(replaced(base, path, draw(JSON_VALUES)))


@st.composite
def cli_running_configs(draw, nos):
    lines = []
    for line in BASES[nos]:
        how = draw(st.sampled_from(["keep", "keep", "keep", "number", "port", "junk", "drop"]))
        if how == "number":
            numbers = list(re.finditer(r"\d+", line))
            if numbers:
                found = numbers[draw(st.integers(0, len(numbers) - 1))]
                line = line[:found.start()] + str(draw(NUMBER | st.integers(0, 10 ** 4000))) + line[found.end():]
        elif how == "port":
            line = re.sub(r"(?<=interface )(ethernet )?\S+", lambda m: (m.group(1) or "") + draw(port_names(nos)), line)
        elif how == "junk":
            line = spliced(line, draw(JUNK | st.text(max_size=8)), draw(st.integers(0, 200)))
        if how != "drop":
            lines.append(line)
    return "\n".join(lines)


def assert_parsed_is_readable(nos, result):
    if result.get("failed"):
        assert result["msg"].startswith("running_config: ") and result["option"] == "running_config"
        switchengine.assert_clear(result["msg"], ["running_config"])
        assert result["changed"] is False
        return
    parsed = result["parsed"]
    rule = resource.DRIVERS[nos].PORT_NAMES
    assert all(rule.problem(name) is None for name in parsed["interfaces"]), parsed["interfaces"]
    for key, value in parsed["fabric"].items():
        for leaf in (value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]):
            assert not isinstance(leaf, float) and (key in ("trust", "pfc_watchdog") or isinstance(leaf, int)), parsed
    # what parsed says, given back as config, is refused naming config or rendered within the grammar
    render_or_refuse(nos, {"fabric": parsed["fabric"], "interfaces": parsed["interfaces"]}, ["config."])


@bounded(150)
@given(st.data())
def test_any_json_running_config_is_refused_naming_the_place_or_read_into_what_the_nos_allows(data):
    nos = data.draw(st.sampled_from(["nvue", "sonic"]))
    result, dummy = switchengine.run(os=nos, state="parsed", running_config=data.draw(json_running_configs(nos)))
    assert_parsed_is_readable(nos, result)


@bounded(150)
@given(st.data())
def test_any_cli_running_config_is_refused_naming_the_line_or_read_into_what_the_nos_allows(data):
    nos = data.draw(st.sampled_from(["eos", "nxos", "onyx"]))
    result, dummy = switchengine.run(os=nos, state="parsed", running_config=data.draw(cli_running_configs(nos)))
    assert_parsed_is_readable(nos, result)
