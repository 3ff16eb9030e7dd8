"""fabric_check on data of the wrong type or shape, on missing data and on runs that checked nothing
(issue 20, classes 4 to 6): never an exception, never ``passed: true`` for what it could not read,
missing data not checked, and no PASSED for a validation that proved nothing.

The healthy base is real: the lab's Soft-RoCE VM read by rdma_facts from its recorded tree, ping's
and perftest's outputs recorded in the lab, the CX-7 GPU host's recorded tree. The property tests
over the same inputs are in test_fabric_check_properties.py."""

import copy
import json
import os

import jsonschema
import pytest
import hosttree
from fixtures.qos import trees
from test_checks import INTENT, LAB_FRACTION, SWITCH, measured, rxe_facts

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import report
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import FINDING_KEYS
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.verdict import fabric_check

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 5))
SCHEMA = json.load(open(os.path.join(REPO, "roles", "validate", "files", "report.schema.json")))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The healthy lab: vm1 measuring against vm2 (pings, ib_write_bw, ib_write_lat, all recorded), a
    switch at the intent, and the CX-7 GPU host's facts."""
    tmp = tmp_path_factory.mktemp("facts")
    vm1 = dict(rdma=rxe_facts(tmp / "vm1"), nic=None)
    vm1.update(measured("vm1", "vm2", "198.18.0.12"))
    for run in vm1["rdma_runs"]:
        run["requested"] = True
    vm2 = dict(rdma=rxe_facts(tmp / "vm2"), nic=None)
    gpu = hosttree.gather_facts(tmp / "cx7", trees.cx7())[0]
    return dict(hosts=dict(vm1=vm1, vm2=vm2), switches=dict(leaf1=SWITCH), gpu=gpu)


def check(hosts, switches=None):
    return fabric_check(INTENT, hosts, switches=switches, min_bw_fraction=LAB_FRACTION)


def by(result, host, field):
    return [f for f in result["findings"] if f["host"] == host and f["field"] == field]


def well_formed(result):
    """The result is what report.json holds: every finding complete, the report writers take it."""
    assert all(tuple(sorted(f)) == tuple(sorted(FINDING_KEYS)) for f in result["findings"])
    assert all(f["passed"] is not False or f["hint"] for f in result["findings"])
    data = json.loads(report.to_json(dict(result, intent=INTENT)))
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    report.to_markdown(dict(result, intent=INTENT))
    report.to_junit(result)
    unreadable = [f for f in result["findings"] if f["check"] == "input"]  # data that could not be read
    assert all(f["passed"] is None and f["hint"] for f in unreadable)
    if unreadable:
        assert result["passed"] is False and result["summary"]["unproven"]


# class 4: the wrong type or shape ------------------------------------------------------------------
def test_facts_of_the_wrong_shape_are_named_never_raised(base):
    hosts = copy.deepcopy(base["hosts"])
    hosts["vm2"]["rdma"]["modules"] = ["rdma_cm", "ib_uverbs"]  # a list where rdma_facts writes a mapping
    hosts["vm2"]["rdma"]["netdevs"]["ens4"]["mtu"] = "9000 bytes"
    hosts["vm1"]["pings"] = "198.18.0.12"
    result = check(hosts)
    well_formed(result)
    modules = by(result, "vm2", "rdma.modules")[0]
    assert (modules["check"], modules["passed"], modules["expected"], modules["actual"]) == ("input", None, "a mapping", "a list")
    assert "hosts.vm2.rdma.modules" in modules["hint"] and "rdma_facts" in modules["hint"]
    mtu = by(result, "vm2", "rdma.netdevs.ens4.mtu")[0]
    assert mtu["passed"] is None and 'text ("9000 bytes")' in mtu["hint"] and "list" not in mtu["hint"]
    # what depends on them is not checked, never passed or failed
    assert [f["passed"] for f in by(result, "vm2", "mtu")] == [None]
    assert [f["passed"] for f in by(result, "vm2", "rdma_cm")] == [None]
    assert by(result, "vm1", "pings")[0]["passed"] is None and not by(result, "vm1", "mtu_path")
    assert result["passed"] is False
    assert "data that could not be read: vm1 pings, vm2 rdma.netdevs.ens4.mtu, vm2 rdma.modules" in result["summary"]["unproven"]


def test_numbers_and_booleans_only_as_what_they_are_or_their_documented_text(base):
    hosts = copy.deepcopy(base["hosts"])
    hosts["vm1"]["rdma"]["netdevs"]["ens4"]["mtu"] = "9000"  # a number's text, matched whole
    hosts["vm1"]["rdma"]["modules"]["rdma_cm"] = "yes"
    hosts["vm2"]["rdma"]["modules"]["rdma_cm"] = "no"
    switch = copy.deepcopy(SWITCH)
    switch["fabric"].update(switch_mtu="9216", pfc_watchdog="off")  # "off" is false, not a non-empty text
    result = check(hosts, dict(leaf1=switch))
    well_formed(result)
    assert by(result, "vm1", "mtu")[0]["passed"] is True and by(result, "vm1", "rdma_cm")[0]["passed"] is True
    assert by(result, "vm2", "rdma_cm")[0]["actual"] == "not loaded"
    watchdog = by(result, "leaf1", "pfc_watchdog")[0]
    assert (watchdog["actual"], watchdog["passed"]) == (False, False) and "watchdog" in watchdog["hint"]
    assert by(result, "leaf1", "switch_mtu")[0]["passed"] is True
    for mtu, word in (("9216 bytes", 'text ("9216 bytes")'), (True, "true"), (9216.0, "decimal"), (1 << 80, "bits")):
        switch["fabric"].update(switch_mtu=mtu, pfc_watchdog={"enabled": "on"})
        result = check(hosts, dict(leaf1=switch))
        well_formed(result)
        assert [f["passed"] for f in by(result, "leaf1", "switch_mtu")] == [None]
        assert word in by(result, "leaf1", "fabric.switch_mtu")[0]["hint"]
        assert by(result, "leaf1", "pfc_watchdog")[0]["passed"] is True


def test_switch_state_of_the_wrong_shape(base):
    states = dict(a=dict(fabric=[1, 2]), b=dict(fabric=dict(ecn=[150000]), interfaces={"swp1": {}}), c="leaf",
                  d=dict(fabric=dict(pfc_priorities="3", switch_mtu=10 ** 30)))
    result = check(base["hosts"], states)
    well_formed(result)
    fields = dict(((f["host"], f["field"]), f) for f in result["findings"] if f["check"] == "input")
    assert set(fields) == {("a", "fabric"), ("b", "fabric.ecn"), ("b", "interfaces"), ("c", "(all of it)"),
                           ("d", "fabric.pfc_priorities"), ("d", "fabric.switch_mtu")}
    assert "switches.c is text" in fields[("c", "(all of it)")]["hint"]
    assert "a whole number of bytes from 0 to 65536, such as 9216" in fields[("d", "fabric.switch_mtu")]["hint"]


def test_the_action_refuses_what_is_not_its_inputs_naming_the_option(base):
    for kwargs, option in ((dict(hosts=[base["hosts"]]), "hosts"), (dict(switches=["leaf1"]), "switches"),
                           (dict(min_bw_fraction="most"), "min_bw_fraction"), (dict(min_bw_fraction=True), "min_bw_fraction")):
        args = dict(dict(hosts=base["hosts"], switches=None, min_bw_fraction=0.5), **kwargs)
        with pytest.raises(InputError) as caught:
            fabric_check(INTENT, **args)
        assert caught.value.msg.startswith(option) and "class" not in caught.value.msg
    bad = dict(INTENT, host_mtu="9000 bytes")
    with pytest.raises(InputError, match=r"intent\.host_mtu"):
        fabric_check(bad, base["hosts"])
    assert fabric_check(INTENT, base["hosts"], min_bw_fraction="0.002")["passed"] is True


# class 5: missing data is not checked --------------------------------------------------------------
def test_gpu_host_without_module_facts_is_not_checked_for_peermem(base):
    gpu = copy.deepcopy(base["gpu"])
    del gpu["modules"]
    result = check(dict(gpu1=dict(rdma=gpu, nic=None)))
    peermem = by(result, "gpu1", "nvidia_peermem")[0]
    assert (peermem["passed"], peermem["actual"]) == (None, "not checked") and "module facts" in peermem["hint"]
    assert [f["passed"] for f in by(result, "gpu1", "rdma_cm")] == [None]
    gpu["modules"] = dict(base["gpu"]["modules"], nvidia_peermem=False, nv_peer_mem=False)
    assert by(check(dict(gpu1=dict(rdma=gpu, nic=None))), "gpu1", "nvidia_peermem")[0]["passed"] is False


def test_missing_results_are_not_checked_never_failed(base):
    hosts = copy.deepcopy(base["hosts"])
    for key in ("rc", "stdout"):
        del hosts["vm1"]["pings"][0][key]
        for run in hosts["vm1"]["rdma_runs"]:
            del run[key]
    del hosts["vm2"]["rdma"]["devices"]["rxe0"]["ports"]["1"]["state"]
    result = check(hosts)
    well_formed(result)
    assert [f["passed"] for f in by(result, "vm1", "mtu_path")] == [None]
    assert [f["passed"] for f in result["findings"] if f["check"] in ("rdma_bw", "rdma_lat")] == [None, None]
    assert [f["passed"] for f in by(result, "vm2", "active_roce_ports")] == [None]
    assert result["summary"]["failed"] == 0 and result["passed"] is False  # perftest was asked for and measured nothing
    assert [p for p in result["summary"]["unproven"] if p.startswith("ib_write_bw vm1 -> vm2 asked for")]


# class 6: nothing checked is not a pass ----------------------------------------------------------
def test_hosts_with_no_data_are_not_a_pass(base):
    result = check(dict(vm1=None, vm2={}))
    well_formed(result)
    assert result["passed"] is False and result["summary"]["checked"] == 0
    assert result["summary"]["unproven"][:3] == [
        "nothing was checked",
        "host vm1: nothing checked (no readable rdma_facts for this host (unreachable, a task before fabric_check failed on it, "
        "or its facts could not be read))",
        "host vm2: nothing checked (no readable rdma_facts for this host (unreachable, a task before fabric_check failed on it, "
        "or its facts could not be read))"]
    md = report.to_markdown(dict(result, intent=INTENT))
    assert md.startswith("# Fabric validation: NOT PROVEN") and "## Not proven" in md


def test_a_part_asked_for_and_not_checked_at_all_is_not_a_pass(base):
    hosts = copy.deepcopy(base["hosts"])
    assert check(hosts, dict(leaf1=SWITCH))["passed"] is True
    one_dead = dict(hosts, vm3=None)  # a host of the play with no data
    assert check(one_dead)["passed"] is False
    assert check(one_dead)["summary"]["unproven"][0].startswith("host vm3: nothing checked")
    unread_switch = check(hosts, dict(leaf1=SWITCH, leaf2=None))  # a switch the play could not gather
    assert unread_switch["passed"] is False and unread_switch["summary"]["unproven"][0].startswith("switch leaf2: nothing checked")
    for run in hosts["vm1"]["rdma_runs"]:
        run.update(skipped=True, why="perftest (ib_write_bw, ib_write_lat) is not installed", rc=None, stdout="")
    result = check(hosts)
    assert result["passed"] is False and result["summary"]["failed"] == 0
    assert result["summary"]["unproven"] == [
        "ib_write_bw vm1 -> vm2 asked for (validate_rdma) but not measured: perftest (ib_write_bw, ib_write_lat) is not installed",
        "ib_write_lat vm1 -> vm2 asked for (validate_rdma) but not measured: perftest (ib_write_bw, ib_write_lat) is not installed"]
    xml = report.to_junit(dict(result, intent=INTENT))
    assert 'name="coverage"' in xml and 'type="not proven"' in xml
    for run in hosts["vm1"]["rdma_runs"]:
        run["requested"] = False  # validate_rdma false, or check mode: not asked for
    assert check(hosts)["passed"] is True


def test_what_the_property_tests_found_beyond_the_issue(base):
    """Found by generated inputs on the old code: true counted as the number 1, a number too large to
    write into report.json passing as an MTU, a watchdog mapping without ``enabled`` counted as on,
    the text "no" counted as a loaded module."""
    intent = dict(INTENT, roce_priority=1, pfc_priorities=[1], ecn_priorities=[1])
    hosts = copy.deepcopy(base["hosts"])
    hosts["vm2"]["rdma"]["modules"]["rdma_cm"] = "no"
    switch = dict(fabric=dict(roce_priority=True, switch_mtu=10 ** 5000, pfc_watchdog={"state": "disable"}))
    result = fabric_check(intent, hosts, switches=dict(leaf1=switch), min_bw_fraction=LAB_FRACTION)
    well_formed(result)  # report.json is written (an integer of 5000 digits is not carried into it)
    leaf = dict((f["field"], f["passed"]) for f in result["findings"] if f["host"] == "leaf1")
    assert leaf["roce_priority"] is None and leaf["fabric.roce_priority"] is None
    assert leaf["switch_mtu"] is None and leaf["pfc_watchdog"] is None
    assert [(f["actual"], f["passed"]) for f in by(result, "vm2", "rdma_cm")] == [("not loaded", False)]


# found by review after the rails input was added (issue 20, again) -----------------------------------
def test_a_port_named_by_a_digit_python_alone_calls_one_is_a_name_never_raised(base):
    hosts = copy.deepcopy(base["hosts"])
    ports = hosts["vm2"]["rdma"]["devices"]["rxe0"]["ports"]
    ports["\u00b2"] = ports.pop("1")  # "²": str.isdigit() says yes, int() refuses it
    result = check(hosts)
    well_formed(result)
    assert [f["passed"] for f in by(result, "vm2", "active_roce_ports")] == [True]


def test_devices_or_a_device_of_null_are_not_checked_never_failed(base):
    for devices in (None, {"rxe0": None}, {"rxe0": {"fw_ver": "1"}}):
        hosts = copy.deepcopy(base["hosts"])
        hosts["vm2"]["rdma"]["devices"] = devices
        result = check(hosts)
        well_formed(result)
        ports = by(result, "vm2", "active_roce_ports")
        assert [(f["passed"], f["actual"]) for f in ports] == [(None, "not checked")], devices
        assert "not read" in ports[0]["hint"]
    hosts = copy.deepcopy(base["hosts"])
    hosts["vm2"]["rdma"]["devices"] = {}  # read, and none there: a failure
    assert [f["passed"] for f in by(check(hosts), "vm2", "active_roce_ports")] == [False]


def test_two_keys_naming_one_host_are_an_input_finding_naming_both(base):
    good = base["hosts"]["vm1"]
    for hosts in ({"1": {}, 1: good}, {1: good, "1": {}}):
        result = check(hosts, dict(leaf1=SWITCH))
        well_formed(result)
        found = [f for f in result["findings"] if f["check"] == "input"]
        assert [(f["host"], f["field"], f["passed"]) for f in found] == [("1", "(all of it)", None)]
        assert 'text ("1")' in found[0]["hint"] and "a number (1)" in found[0]["hint"] and found[0]["hint"].startswith("hosts has")
        assert result["passed"] is False
    switches = {"1": SWITCH, 1: {}}
    result = check(base["hosts"], switches)
    well_formed(result)
    assert [f["host"] for f in result["findings"] if f["check"] == "input"] == ["1"] and result["passed"] is False
    hosts = copy.deepcopy(base["hosts"])
    # the port 1 twice (YAML's number and text): neither is read, rather than the last hiding the first
    hosts["vm2"]["rdma"]["devices"]["rxe0"]["ports"] = {1: {}, "1": hosts["vm2"]["rdma"]["devices"]["rxe0"]["ports"]["1"]}
    result = check(hosts)
    well_formed(result)
    assert [f["field"] for f in result["findings"] if f["check"] == "input"] == ["rdma.devices.rxe0.ports.1"]
    assert result["passed"] is False and by(result, "vm2", "active_roce_ports")[0]["passed"] is not True


def test_a_lossless_switch_without_its_pfc_watchdog_is_not_checked(base):
    assert INTENT.get("lossless")
    switch = copy.deepcopy(SWITCH)
    del switch["fabric"]["pfc_watchdog"]
    result = check(base["hosts"], dict(leaf1=switch))
    well_formed(result)
    assert [(f["passed"], f["actual"]) for f in by(result, "leaf1", "pfc_watchdog")] == [(None, "not checked")]


BW_ROW = "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n %s %s %s %s 0.1\n"


def test_perftest_rows_that_cannot_be_read_are_not_checked_never_passed(base):
    for row in (("65536", "5000", "1.2.3", "1.2.3"), ("65536", "5000", "9" * 400, "9" * 400), ("9" * 400, "5000", "1", "1")):
        hosts = copy.deepcopy(base["hosts"])
        hosts["vm1"]["rdma_runs"][0]["stdout"] = BW_ROW % row
        result = check(hosts)  # 400 digits: float() makes inf, which passed any threshold; int(inf) raised
        well_formed(result)
        assert [f["passed"] for f in by(result, "vm1", "bandwidth_gbps")] == [None], row
        unread = by(result, "vm1", "rdma_runs.stdout")
        assert [(f["check"], f["passed"], f["peer"]) for f in unread] == [("input", None, "vm2")] and "hosts.vm1.rdma_runs" in unread[0]["hint"]
        assert result["passed"] is False and all(m["value"] != float("inf") for m in result["measurements"])


def test_counts_of_more_digits_than_python_reads_and_deep_json_never_raise(base):
    hosts = copy.deepcopy(base["hosts"])
    hosts["vm1"]["pings"][0]["stdout"] = "9" * 5000 + " packets transmitted, 1 received"
    hosts["vm1"]["counters"] = dict(ports=[["rxe0/1", "ens4"]], before="/sys/class/infiniband/rxe0/ports/1/hw_counters/out_of_buffer: "
                                    + "9" * 5000, after="")
    result = check(hosts)
    well_formed(result)
    assert [f["passed"] for f in by(result, "vm1", "mtu_path")] == [None]
    assert [f["check"] for f in by(result, "vm1", "pings.stdout")] == ["input"] and result["passed"] is False
    assert [m["value"] for m in result["measurements"] if m["kind"] == "counter" and m["name"] == "out_of_buffer"] == [None]
    hosts = copy.deepcopy(base["hosts"])
    nonce = "0123456789abcdef" * 2
    hosts["vm1"]["pings"][0].update(rc=1, nonce=nonce, stdout="== %s small rc=1\n1 packets transmitted, 0 received\n== %s neigh rc=0\n"
                                    % (nonce, nonce) + "[" * 100000)
    result = check(hosts)  # json.loads raised RecursionError
    well_formed(result)
    reach = by(result, "vm1", "reachability")
    assert [f["passed"] for f in reach] == [False] and "neighbour" not in reach[0]["actual"]


# the innermost key that is wrong, and what it should be ----------------------------------------------
def input_hints(result, owner):
    return dict((f["field"], f["hint"]) for f in result["findings"] if f["check"] == "input" and f["host"] == owner)


def test_a_switch_interface_names_its_own_key_that_is_wrong(base):
    switch = copy.deepcopy(SWITCH)
    switch["interfaces"] = [{"name": "swp1", "mtu": "9216 bytes"}, {"name": "swp2", "pfc_priorities": [3, "x"]},
                            "swp3", ["swp4"], {"name": 7}]
    switch["fabric"]["pfc_watchdog"] = {"enabled": "maybe"}
    result = check(base["hosts"], dict(sw1=switch))
    well_formed(result)
    hints = input_hints(result, "sw1")
    assert set(hints) == {"interfaces[0].mtu", "interfaces[1].pfc_priorities[1]", "interfaces[3]", "interfaces[4].name",
                          "fabric.pfc_watchdog.enabled"}, hints
    assert hints["interfaces[0].mtu"].startswith(
        'switches.sw1.interfaces[0].mtu is text ("9216 bytes"); expected a whole number of bytes from 0 to 65536, such as 9216: '
        "fabric_check cannot read it"), hints
    assert hints["interfaces[1].pfc_priorities[1]"].startswith(
        'switches.sw1.interfaces[1].pfc_priorities[1] is text ("x"); expected a whole number from 0 to 7, such as 3')
    assert hints["interfaces[3]"].startswith("switches.sw1.interfaces[3] is a list; expected text or a mapping")
    assert hints["interfaces[4].name"].startswith("switches.sw1.interfaces[4].name is a number (7); expected text")
    assert hints["fabric.pfc_watchdog.enabled"].startswith('switches.sw1.fabric.pfc_watchdog.enabled is text ("maybe"); '
                                                           "expected true or false")
    for hint in hints.values():  # never the self-contradiction "is a mapping, not text or a mapping"
        kind = hint.split(" is ", 1)[1].split(";", 1)[0]
        assert kind not in hint.split("expected ", 1)[1].split(":", 1)[0].split(" or "), hint


def test_a_list_of_the_wrong_length_says_how_long_it_is(base):
    hosts = copy.deepcopy(base["hosts"])
    hosts["vm1"]["rails"] = {"arp": [{"item": ["vm1", "vm2", "vm3"], "cmd": ["arping"], "rc": 0, "stdout": ""}]}
    result = check(hosts)
    hints = input_hints(result, "vm1")
    assert hints["rails.arp[0].item"].startswith("hosts.vm1.rails.arp[0].item is a list of 3; expected a list of 2"), hints
