"""Property tests (hypothesis: derandomized, no example database, bounded examples) over
fabric_check's inputs: generated hosts and switches of any shape never raise and never pass unread,
and one wrong value put anywhere fabric_check reads in the real healthy lab state (test_hostile_inputs'
base) is named with its host and key and keeps the verdict from passing."""

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# base is a pytest fixture: imported to be used by name
from test_hostile_inputs import base, well_formed  # noqa: F401 pylint: disable=unused-import
from test_checks import INTENT, LAB_FRACTION, SWITCH
from test_rails_findings import healthy_lab

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import inputs
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.verdict import fabric_check

PROPERTY = settings(max_examples=100, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70) | st.floats(allow_nan=True)
           | st.text(max_size=12) | st.sampled_from(["off", "on", "yes", "9000", "9216", "ACTIVE", "Ethernet", "ens4", "rxe0/1", "1"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                      max_leaves=8)
HOST_STATE = st.fixed_dictionaries({}, optional=dict((key, VALUES) for key in inputs.HOST.fields)) | VALUES


@PROPERTY
@given(hosts=st.dictionaries(st.text(max_size=6), HOST_STATE, min_size=1, max_size=3),
       switches=st.none() | st.dictionaries(st.text(max_size=6), st.fixed_dictionaries({}, optional=dict(fabric=VALUES, interfaces=VALUES))
                                            | VALUES, max_size=2))
def test_any_shape_of_hosts_and_switches_never_raises_nor_passes_unread(hosts, switches):
    result = fabric_check(INTENT, hosts, switches=switches)
    well_formed(result)
    if result["passed"]:
        assert result["summary"]["checked"] > 0 and not result["summary"]["unproven"]


def _wrong_for(shape):
    """Values that are not ``shape`` in any form the reader accepts."""
    containers = st.lists(SCALARS, min_size=0, max_size=2) | st.dictionaries(st.text(max_size=4), SCALARS, max_size=2)
    floats = st.floats(allow_nan=True)
    words = st.text(min_size=1, max_size=10).filter(lambda t: not t.lstrip("+-").isdigit() and t.lower() not in inputs.BOOLEAN_TRUE
                                                    and t.lower() not in inputs.BOOLEAN_FALSE)
    if isinstance(shape, inputs.Text):
        return st.integers() | st.booleans() | floats | containers
    if isinstance(shape, inputs.Int):
        return st.booleans() | floats | containers | words | st.integers(min_value=shape.high + 1, max_value=shape.high + (1 << 70))
    if isinstance(shape, inputs.Bool):
        return floats | containers | words | st.integers(min_value=2)
    if isinstance(shape, (inputs.Record, inputs.MapOf)):
        return st.lists(SCALARS, max_size=2) | st.text(max_size=6) | st.integers() | floats
    if isinstance(shape, (inputs.ListOf, inputs.Tuple)):
        return st.dictionaries(st.text(max_size=4), SCALARS, max_size=2) | st.text(max_size=6) | st.integers() | floats
    return None


def _places(value, shape, path=()):
    """Every (path, shape) fabric_check reads in ``value``, with one of its own wrong values possible."""
    if value is None or isinstance(shape, (inputs.Either, inputs.Name, inputs.Anything)):
        return []
    out = [(path, shape)]
    if isinstance(shape, inputs.Record):
        for key, item in shape.fields.items():
            if key in value:
                out += _places(value[key], item, path + (key,))
    elif isinstance(shape, inputs.MapOf):
        for key in value:
            out += _places(value[key], shape.item, path + (key,))
    elif isinstance(shape, inputs.ListOf):
        for index, item in enumerate(value):
            out += _places(item, shape.item, path + (index,))
    elif isinstance(shape, inputs.Tuple):
        for index, (item, item_shape) in enumerate(zip(value, shape.shapes)):
            out += _places(item, item_shape, path + (index,))
    return out


def _field(path):
    text = ""
    for part in path:
        text += "[%d]" % part if isinstance(part, int) else ("." + part if text else part)
    return text


@pytest.fixture(scope="module")
def rail_base(base):  # noqa: F811
    """The healthy lab of test_hostile_inputs with the two-rail lab's rails on vm1 and vm2 (plan, read,
    vm1's rail ping and ib_write_bw, vm2's receive counters and ARP probe): it passes."""
    rails = healthy_lab()
    hosts = copy.deepcopy(base["hosts"])
    for name in ("vm1", "vm2"):
        hosts[name]["rails"] = rails[name]["rails"]
    result = fabric_check(INTENT, hosts, switches=dict(leaf1=SWITCH), min_bw_fraction=LAB_FRACTION)
    assert result["passed"] is True, [f for f in result["findings"] if f["passed"] is not True][:5]
    return hosts


@pytest.fixture(scope="module")
def places(rail_base):
    """Where to put a wrong value: anywhere in vm1's state (facts, pings, perftest runs, rails), in
    vm2's rails (its receive counters and ARP probe) and in the switch's."""
    return ([("hosts", "vm1", path, shape) for path, shape in _places(rail_base["vm1"], inputs.HOST)]
            + [("hosts", "vm2", path, shape) for path, shape in _places(rail_base["vm2"]["rails"], inputs.HOST.fields["rails"], ("rails",))]
            + [("switches", "leaf1", path, shape) for path, shape in _places(SWITCH, inputs.SWITCH)])


@PROPERTY
@given(data=st.data())
def test_a_wrong_value_anywhere_fabric_check_reads_is_named_and_never_passes(rail_base, places, data):
    option, host, path, shape = data.draw(st.sampled_from(places), label="place")
    wrong = data.draw(_wrong_for(shape), label="value")
    given_data = dict(hosts=copy.deepcopy(rail_base), switches=dict(leaf1=copy.deepcopy(SWITCH)))
    if not path:
        given_data[option][host] = wrong
    else:
        parent = given_data[option][host]
        for part in path[:-1]:
            parent = parent[part]
        parent[path[-1]] = wrong
    result = fabric_check(INTENT, given_data["hosts"], switches=given_data["switches"], min_bw_fraction=LAB_FRACTION)
    well_formed(result)
    named = [f for f in result["findings"] if f["check"] == "input" and f["host"] == host
             and (f["field"] == (_field(path) or "(all of it)") or f["field"].startswith(_field(path) + "["))]
    assert named, (path, wrong, [f for f in result["findings"] if f["check"] == "input"])
    assert result["passed"] is False


def _paths(value, path=()):
    """Every place in a JSON-like value: the path of each mapping's value and list's item, nested."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, path + (index,))
    return out


@PROPERTY
@given(data=st.data())
def test_rails_of_any_shape_never_raise_nor_pass_unread(rail_base, data):
    """The healthy rails with up to three values anywhere in them (the key itself, a leaf, a list's
    item) replaced by any value: fabric_check never raises, and its verdict passes only when what it
    read was checked."""
    hosts = copy.deepcopy(rail_base)
    for _replace in range(data.draw(st.integers(min_value=1, max_value=3), label="how many")):
        host = data.draw(st.sampled_from(["vm1", "vm2"]), label="host")
        path = data.draw(st.sampled_from(_paths(hosts[host]["rails"])), label="path")
        parent = hosts[host]
        for part in ("rails",) + path[:-1]:
            parent = parent[part]
        parent[path[-1] if path else "rails"] = data.draw(VALUES, label="value")
    result = fabric_check(INTENT, hosts, switches=dict(leaf1=SWITCH), min_bw_fraction=LAB_FRACTION)
    well_formed(result)
    if result["passed"]:
        assert result["summary"]["checked"] > 0 and not result["summary"]["unproven"]
