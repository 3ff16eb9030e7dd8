# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SONiC driver: render/parse/plan, and every table it writes validated by SONiC's own YANG
models (sonic-yang-models, tests/unit/fixtures/sonic_yang/) with libyang's yanglint."""

import copy
import json
import os
import shutil
import sys

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import sonic
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import resolve_config, resolve_mtu
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import ReadError

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(TESTS, "tools", "sonic_standins"))
import sonic_yang  # noqa: E402  (test tool, not collection code)

with open(os.path.join(TESTS, "unit", "fixtures", "sonic", "config_db.json")) as _stream:
    STOCK = json.load(_stream)  # a SN2700-style CONFIG_DB with SONiC's stock AZURE QoS (qos_config.j2)

needs_yanglint = pytest.mark.skipif(shutil.which("yanglint") is None,
                                    reason="yanglint (Debian libyang-tools) is not installed")

VARIED = [
    {},
    {"roce_dscp": 24, "roce_priority": 4, "cnp_dscp": 46, "cnp_priority": 5},
    {"preset": "lossy_ecn"},
    # no PFC and ECN on the default queue too: RoCE is still the class its DSCP maps to (found by hypothesis)
    {"preset": "lossy_ecn", "ecn_priorities": [0, 3]},
    {"pfc_watchdog": False},
    {"ecn": {"min_threshold_bytes": 100000, "max_threshold_bytes": 400000, "probability_percent": 20},
     "ets": {"roce_percent": 70, "default_percent": 30}},
    {"switch_mtu": 9100},
    {"switch_mtu": "max", "ets": {"roce_percent": 60, "default_percent": 40}},
]


def profile_of(fabric, interfaces=("Ethernet0", "Ethernet4")):
    intent, profile, ifs = resolve_config({"fabric": fabric, "interfaces": list(interfaces)})
    return resolve_mtu(profile, intent, sonic.NAME, sonic.max_mtu("202511"), "clamp", lambda msg: None), ifs


@pytest.mark.parametrize("version", sonic.VERSIONS)
@pytest.mark.parametrize("fabric", VARIED)
def test_parse_of_render_is_the_profile(fabric, version):
    profile, ifs = profile_of(fabric)
    tables = sonic.render(profile, ifs, version)
    assert sonic.parse(json.dumps(tables), version) == {"fabric": profile, "interfaces": ifs}


def test_no_pfc_is_written_as_each_release_accepts_it():
    profile, ifs = profile_of({"preset": "lossy_ecn"}, ["Ethernet0"])
    assert sonic.render(profile, ifs, "202511")["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == ""
    assert "pfc_enable" not in sonic.render(profile, ifs, "202411")["PORT_QOS_MAP"]["Ethernet0"]


def test_overridden_takes_the_profile_off_other_ports():
    profile, ifs = profile_of({}, ["Ethernet0", "Ethernet4"])
    dummy, both = sonic.plan("merged", profile, ifs, STOCK, "202511")
    dummy, one = sonic.plan("overridden", profile, ["Ethernet4"], both, "202511")
    assert "Ethernet0" not in one["PORT_QOS_MAP"]
    assert not any(sonic._queue_uses_ours(row) for k, row in one["QUEUE"].items() if k.startswith("Ethernet0|"))
    assert one["QUEUE"]["Ethernet0|4"] == {"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"}  # not ours
    assert one["PORT_QOS_MAP"]["Ethernet4"]["dscp_to_tc_map"] == "ROCE"


def test_render_writes_what_configdb_stores():
    profile, ifs = profile_of({})
    tables = sonic.render(profile, ifs, "202511")
    dscp = tables["DSCP_TO_TC_MAP"]["ROCE"]
    assert sorted(dscp, key=int) == ["%d" % d for d in range(64)]
    assert dscp["26"] == "3" and dscp["48"] == "6" and dscp["0"] == "0" and dscp["46"] == "0"
    assert tables["PORT"] == {"Ethernet0": {"mtu": "9216"}, "Ethernet4": {"mtu": "9216"}}
    assert tables["PORT_QOS_MAP"]["Ethernet0"] == {
        "dscp_to_tc_map": "ROCE", "tc_to_queue_map": "ROCE", "tc_to_pg_map": "ROCE", "pfc_to_queue_map": "ROCE",
        "pfc_enable": "3", "pfcwd_sw_enable": "3"}
    assert tables["QUEUE"]["Ethernet0|3"] == {"scheduler": "ROCE_DWRR_50", "wred_profile": "ROCE_ECN"}
    assert tables["QUEUE"]["Ethernet0|6"] == {"scheduler": "ROCE_STRICT"}
    assert tables["QUEUE"]["Ethernet0|0"] == {"scheduler": "ROCE_DWRR_50"}
    assert tables["SCHEDULER"] == {"ROCE_STRICT": {"type": "STRICT"}, "ROCE_DWRR_50": {"type": "DWRR", "weight": "50"}}
    wred = tables["WRED_PROFILE"]["ROCE_ECN"]
    assert (wred["ecn"], wred["wred_green_enable"], wred["green_min_threshold"], wred["green_max_threshold"],
            wred["green_drop_probability"]) == ("ecn_all", "true", "150000", "1500000", "100")
    assert tables["TC_TO_PRIORITY_GROUP_MAP"]["ROCE"] == {"0": "0", "1": "0", "2": "0", "3": "3", "4": "0", "5": "0",
                                                          "6": "0", "7": "0"}
    assert tables["PFC_WD"]["Ethernet4"] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}
    assert tables["BUFFER_PG"] == {"Ethernet0|3": {"profile": "NULL"}, "Ethernet4|3": {"profile": "NULL"}}
    every_value = [v for rows in tables.values() for row in rows.values() for v in row.values()]
    assert all(isinstance(v, str) for v in every_value)


def test_render_refuses_what_sonic_driver_cannot_write():
    for fabric, word in (({"trust": "pcp"}, "trust"), ({"roce_priority": 0, "ecn_priorities": [0]}, "roce_priority")):
        profile, ifs = profile_of(fabric)
        with pytest.raises(InputError) as err:
            sonic.render(profile, ifs, "202511")
        assert word in err.value.msg


def test_parse_stock_azure_reports_what_it_says():
    parsed = sonic.parse(json.dumps(STOCK), "202411")
    assert parsed["interfaces"] == ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]
    # Stock SONiC: lossless TCs 3 and 4 carry DSCP 3 and 4; DSCP 26 (the RoCE convention) lands on TC1.
    assert parsed["fabric"] == {
        "trust": "dscp", "roce_dscp": 3, "roce_priority": 3, "pfc_priorities": [3, 4], "ecn_priorities": [3, 4],
        "ecn": {"min_threshold_bytes": 1048576, "max_threshold_bytes": 2097152, "probability_percent": 5},
        "ets": {"roce_percent": 15, "default_percent": 14}, "pfc_watchdog": True, "switch_mtu": 9100}
    assert STOCK["DSCP_TO_TC_MAP"]["AZURE"]["26"] == "1"
    # the range-keyed queues of older templates read the same
    only12 = copy.deepcopy(STOCK)
    for port in ("Ethernet0", "Ethernet4", "Ethernet8"):
        del only12["PORT_QOS_MAP"][port]
    assert sonic.parse_raw(only12)["fabric"] == parsed["fabric"]


def test_parse_refuses_text_that_is_not_configdb():
    with pytest.raises(ReadError, match="line 1, column 1"):
        sonic.parse("interface Ethernet1\n", "202511")
    with pytest.raises(ReadError, match="where CONFIG_DB's tables"):
        sonic.parse("[]", "202511")
    assert sonic.parse("{}", "202511") == {"fabric": {}, "interfaces": []}


@pytest.mark.parametrize("state", ["merged", "replaced", "overridden"])
def test_plan_reaches_the_profile_and_then_changes_nothing(state):
    profile, ifs = profile_of({}, ["Ethernet0", "Ethernet12"])
    ops, predicted = sonic.plan(state, profile, ifs, STOCK, "202511")
    assert ops and all(op["op"] in ("add", "remove", "replace", "move") for op in ops)
    after = sonic.parse_raw(predicted)
    if state == "merged":
        # merged leaves the stock queue 4 (AZURE_LOSSLESS WRED) as it was, and parse says so
        assert after["fabric"] == dict(profile, ecn_priorities=[3, 4])
    else:
        assert after["fabric"] == profile
    # the stock AZURE QoS of the other ports is not the profile: overridden leaves it
    assert after["interfaces"] == ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]
    assert sonic.plan(state, profile, ifs, predicted, "202511") == ([], predicted)
    # the rows of configured ports are whole; PORT keeps everything but the mtu
    assert predicted["PORT_QOS_MAP"]["Ethernet12"] == sonic.render(profile, ifs, "202511")["PORT_QOS_MAP"]["Ethernet12"]
    assert predicted["PORT"]["Ethernet0"] == dict(STOCK["PORT"]["Ethernet0"], mtu="9216")
    # stock buffers already cover lossless PG/queue 3 (3-4): nothing to add
    assert predicted["BUFFER_PG"] == STOCK["BUFFER_PG"] and predicted["BUFFER_QUEUE"] == STOCK["BUFFER_QUEUE"]


def test_merged_splits_queue_ranges_and_keeps_the_other_queues():
    profile, ifs = profile_of({}, ["Ethernet12"])
    dummy, predicted = sonic.plan("merged", profile, ifs, STOCK, "202511")
    queues = dict((k, v) for k, v in predicted["QUEUE"].items() if k.startswith("Ethernet12|"))
    assert queues == {
        "Ethernet12|0": {"scheduler": "ROCE_DWRR_50"}, "Ethernet12|1": {"scheduler": "scheduler.0"},
        "Ethernet12|2": {"scheduler": "scheduler.0"},
        "Ethernet12|3": {"scheduler": "ROCE_DWRR_50", "wred_profile": "ROCE_ECN"},
        "Ethernet12|4": {"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"},
        "Ethernet12|5": {"scheduler": "scheduler.0"}, "Ethernet12|6": {"scheduler": "ROCE_STRICT"}}
    dummy, replaced = sonic.plan("replaced", profile, ifs, STOCK, "202511")
    ours = sorted(k for k in replaced["QUEUE"] if k.startswith("Ethernet12|"))
    assert ours == ["Ethernet12|0", "Ethernet12|3", "Ethernet12|6"]


def test_deleted_removes_what_the_profile_owns():
    profile, ifs = profile_of({}, ["Ethernet0", "Ethernet4"])
    dummy, configured = sonic.plan("merged", profile, ifs, STOCK, "202511")
    ops, one_off = sonic.plan("deleted", None, ["Ethernet0"], configured, "202511")
    assert "Ethernet0" not in one_off["PORT_QOS_MAP"] and "ROCE" in one_off["DSCP_TO_TC_MAP"]  # Ethernet4 still uses it
    ops, none_left = sonic.plan("deleted", None, [], configured, "202511")
    assert all(not sonic._is_ours(t, n) for t in ("DSCP_TO_TC_MAP", "SCHEDULER", "WRED_PROFILE")
               for n in none_left.get(t, {}))
    assert set(none_left["PORT_QOS_MAP"]) == {"Ethernet8", "Ethernet12"}
    assert not any(sonic._queue_uses_ours(row) for row in none_left["QUEUE"].values())
    assert sonic.plan("deleted", None, [], none_left, "202511") == ([], none_left)


def test_replaced_new_shares_swap_schedulers_and_drop_the_old_one():
    profile, ifs = profile_of({}, ["Ethernet0"])
    dummy, configured = sonic.plan("merged", profile, ifs, STOCK, "202511")
    profile70, dummy = profile_of({"ets": {"roce_percent": 70, "default_percent": 30}}, ["Ethernet0"])
    ops, predicted = sonic.plan("replaced", profile70, ifs, configured, "202511")
    assert set(predicted["SCHEDULER"]) == {"scheduler.0", "scheduler.1", "ROCE_STRICT", "ROCE_DWRR_70", "ROCE_DWRR_30"}
    assert sonic.parse_raw(predicted)["fabric"]["ets"] == {"roce_percent": 70, "default_percent": 30}


def test_changed_scheduler_is_removed_and_added_whole():
    profile, ifs = profile_of({}, ["Ethernet0"])
    dummy, configured = sonic.plan("merged", profile, ifs, STOCK, "202511")
    configured["SCHEDULER"]["ROCE_DWRR_50"]["weight"] = "10"  # someone edited it by hand
    ops, predicted = sonic.plan("merged", profile, ifs, configured, "202511")
    assert ops == [{"op": "remove", "path": "/SCHEDULER/ROCE_DWRR_50"},
                   {"op": "add", "path": "/SCHEDULER/ROCE_DWRR_50", "value": {"type": "DWRR", "weight": "50"}}]


def test_plan_refuses_unknown_ports_and_missing_buffer_profiles():
    profile, ifs = profile_of({}, ["Ethernet99"])
    with pytest.raises(InputError) as err:
        sonic.plan("merged", profile, ifs, STOCK, "202511")
    assert "Ethernet99" in err.value.msg
    traditional = copy.deepcopy(STOCK)
    traditional["DEVICE_METADATA"]["localhost"]["buffer_model"] = "traditional"
    traditional["BUFFER_PG"] = dict((k, v) for k, v in traditional["BUFFER_PG"].items() if not k.endswith("3-4"))
    profile, ifs = profile_of({}, ["Ethernet0"])
    with pytest.raises(InputError) as err:
        sonic.plan("merged", profile, ifs, traditional, "202511")
    assert "never computes headroom" in err.value.msg
    traditional["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"] = {
        "pool": "ingress_lossless_pool", "size": "56368", "xon": "18432", "xoff": "37936", "dynamic_th": "0"}
    traditional["BUFFER_PG"]["Ethernet0|4"] = {"profile": "pg_lossless_100000_5m_profile"}
    dummy, predicted = sonic.plan("merged", profile, ifs, traditional, "202511")
    assert predicted["BUFFER_PG"]["Ethernet0|3"] == {"profile": "pg_lossless_100000_5m_profile"}


@needs_yanglint
@pytest.mark.parametrize("version", sonic.VERSIONS)
def test_stock_and_every_state_validate_against_sonic_yang(version):
    assert sonic_yang.validate(STOCK, version) == []
    for fabric in VARIED:
        profile, ifs = profile_of(fabric, ["Ethernet0", "Ethernet12"])
        for state in ("merged", "replaced", "overridden"):
            dummy, predicted = sonic.plan(state, profile, ifs, STOCK, version)
            assert sonic_yang.validate(predicted, version) == [], (fabric, state)
        dummy, deleted = sonic.plan("deleted", None, [], predicted, version)
        assert sonic_yang.validate(deleted, version) == []
    # what rendered prints, on the stock switch's ports and buffers, validates as well
    profile, ifs = profile_of({}, ["Ethernet0"])
    merged = copy.deepcopy(STOCK)
    for table, rows in sonic.render(profile, ifs, version).items():
        for key, row in rows.items():
            merged.setdefault(table, {}).setdefault(key, {}).update(row)
    assert sonic_yang.validate(merged, version) == []


@needs_yanglint
def test_the_yang_oracle_rejects_what_sonic_rejects():
    profile, ifs = profile_of({}, ["Ethernet0"])
    dummy, predicted = sonic.plan("merged", profile, ifs, STOCK, "202511")
    for table, key, field, value in (("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3;4"),
                                     ("WRED_PROFILE", "ROCE_ECN", "green_min_threshold", "99999999"),
                                     ("SCHEDULER", "ROCE_DWRR_50", "type", "dwrr"),
                                     ("PORT", "Ethernet0", "mtu", "9217"),
                                     ("QUEUE", "Ethernet0|6", "scheduler", "ROCE_MISSING")):
        broken = copy.deepcopy(predicted)
        broken[table][key][field] = value
        assert sonic_yang.validate(broken, "202511"), (table, field, value)


class FakeRunner:
    """Answers the SONiC commands with scripted return codes (the container test runs the real ones)."""

    def __init__(self, rcs, dbs=None):
        self.rcs = rcs
        self.commands = []
        # what each `sonic-cfggen -d --print-data` prints, in turn (the last one again after that)
        self.dbs = list(dbs or [{}])

    def run(self, argv, check=True):
        class Result:
            pass
        result = Result()
        if argv[0] == "sonic-cfggen":
            db = self.dbs.pop(0) if len(self.dbs) > 1 else self.dbs[0]
            result.rc, result.stdout, result.stderr = 0, json.dumps(db), ""
            return result
        self.commands.append(" ".join(argv[:2]) if argv[1] != "apply-patch" else "config apply-patch")
        rc = self.rcs.get(" ".join(argv[:2]), 0)
        result.rc, result.stdout, result.stderr = rc, "", "stand-in said no" if rc else ""
        return result


class Ctx:
    def __init__(self, rcs, dbs=None):
        self.runner = FakeRunner(rcs, dbs)
        self.warnings = []

    def warn(self, msg):
        self.warnings.append(msg)


def _applied(ctx, ops):
    switch = sonic.connect(ctx)
    switch.read()  # the engine reads before it plans: that read is the "before" of a failed apply
    switch.apply(ops)


def test_apply_tells_the_truth_about_rollback():
    ops = [{"op": "add", "path": "/PORT/Ethernet0/mtu", "value": "9216"}]
    ctx = Ctx({})
    _applied(ctx, ops)
    assert ctx.runner.commands == ["config checkpoint", "config apply-patch", "config delete-checkpoint"]
    ctx = Ctx({"config apply-patch": 1})
    with pytest.raises(RdmaopsError) as err:
        _applied(ctx, ops)
    assert err.value.details["checkpoint_restored"] is True and "left_changed" not in err.value.details
    assert ctx.runner.commands == ["config checkpoint", "config apply-patch", "config rollback",
                                   "config delete-checkpoint"]
    ctx = Ctx({"config apply-patch": 1, "config rollback": 1})
    with pytest.raises(RdmaopsError) as err:
        _applied(ctx, ops)
    assert err.value.details["left_changed"] is True and "config rollback" in err.value.msg


def test_a_rollback_that_says_done_is_checked_by_reading_configdb_again():
    ops = [{"op": "add", "path": "/PORT/Ethernet0/mtu", "value": "9216"}]
    before = {"PORT": {"Ethernet0": {"mtu": "9100"}}}
    left = {"PORT": {"Ethernet0": {"mtu": "9216"}}}
    ctx = Ctx({"config apply-patch": 1}, dbs=[before, left])
    with pytest.raises(RdmaopsError) as err:
        _applied(ctx, ops)
    assert err.value.details["left_changed"] is True and err.value.details["checkpoint_restored"] is False
    assert err.value.details["differences"] == ["PORT|Ethernet0"]
    assert "reported success, yet CONFIG_DB differs from before at PORT|Ethernet0" in err.value.msg
    # the checkpoint is kept for the user to roll back by hand
    assert "config delete-checkpoint" not in ctx.runner.commands


class FakeSwitch:
    """A CONFIG_DB in memory that takes patches the way the Generic Config Updater does."""

    def __init__(self, config):
        self.config = copy.deepcopy(config)
        self.applied = []
        self.dry_runs = 0

    def version(self):
        return "202411"

    def read(self):
        return copy.deepcopy(self.config)

    def dry_run(self, ops):
        self.dry_runs += 1

    def apply(self, ops):
        import jsonpatch
        self.config = jsonpatch.apply_patch(self.config, ops)
        self.applied.append(ops)


class FakeModule:
    def __init__(self, check_mode):
        self.check_mode = check_mode
        self._diff = True
        self.no_log_values = set()


def run_engine(monkeypatch, switch, check_mode=False, **params):
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
    from ansible_collections.rdmaops.roce.plugins.module_utils._switch.resource import SwitchRoce
    monkeypatch.setattr(sonic, "connect", lambda ctx: switch)
    full = dict(state="merged", os="sonic", mtu_policy="clamp", nos_version=None, config=None, running_config=None)
    full.update(params)
    result, dummy = execute(SwitchRoce(Context(FakeModule(check_mode), runner=object()), full))
    return result


def test_engine_a_change_the_profile_summary_does_not_show_is_still_a_change(monkeypatch):
    switch = FakeSwitch(STOCK)
    config = {"fabric": {"switch_mtu": 9100}, "interfaces": ["Ethernet12"]}  # Ethernet0 speaks for the switch
    checked = run_engine(monkeypatch, switch, check_mode=True, config=config)
    assert checked["changed"] and checked["commands"] and switch.applied == [] and switch.dry_runs == 1
    assert checked["before"] == checked["after"]
    assert checked["diff"][0]["after"]["switch_commands"] == checked["commands"]
    result = run_engine(monkeypatch, switch, config=config)
    assert result["changed"] and switch.config["PORT_QOS_MAP"]["Ethernet12"]["dscp_to_tc_map"] == "ROCE"
    again = run_engine(monkeypatch, switch, config=config)
    assert not again["changed"] and again["commands"] == []


# --- names in the operations, and CONFIG_DB of the wrong shape (issue 20) -------------------------

MOVED = dict(STOCK, QUEUE=dict(STOCK["QUEUE"], **{"Ethernet9;x|0": {"scheduler": "ROCE_DWRR_50"}}),
             SCHEDULER=dict(STOCK["SCHEDULER"], ROCE_DWRR_50={"type": "DWRR", "weight": "50"}))


@pytest.mark.parametrize("state", ["merged", "replaced", "overridden", "deleted"])
def test_plan_writes_only_add_remove_and_replace(state):
    # jsonpatch makes a move of a row removed in one place and added alike in another (overridden:
    # the QUEUE row of Ethernet9;x onto Ethernet0): the plan spells it as the remove and add it is
    profile, ifs = profile_of({}, ["Ethernet0"])
    if state == "deleted":  # every port: the profile comes off Ethernet9;x too
        profile, ifs = None, []
    ops, predicted = sonic.plan(state, profile, ifs, MOVED, "202411")
    assert ops and all(op["op"] in ("add", "remove", "replace") for op in ops), ops
    import jsonpatch
    assert predicted == jsonpatch.apply_patch(MOVED, ops)
    if state == "overridden":
        assert {"op": "remove", "path": "/QUEUE/Ethernet9;x|0"} in ops
        assert "Ethernet9;x" in sonic.command_ports(ops, MOVED)


def test_command_ports_reads_where_an_operation_takes_from_and_what_a_table_holds():
    move = {"op": "move", "from": "/QUEUE/Ethernet9;x|0", "path": "/QUEUE/Ethernet0|0"}
    assert sonic.command_ports([move]) == ["Ethernet0", "Ethernet9;x"]
    held = {"PORT_QOS_MAP": {"Ethernet0|3-4": {}, "Ethernet4": {}}, "QUEUE": {"Ethernet8|3": {}}}
    # a whole table removed names every row it holds; PORT_QOS_MAP keys are names whole, QUEUE's "<port>|<q>"
    assert sonic.command_ports([{"op": "remove", "path": "/PORT_QOS_MAP"}], held) == ["Ethernet0|3-4", "Ethernet4"]
    assert sonic.command_ports([{"op": "remove", "path": "/QUEUE"}], held) == ["Ethernet8"]
    assert sonic.command_ports([{"op": "remove", "path": "/PORT_QOS_MAP/Ethernet0|3-4"}]) == ["Ethernet0|3-4"]
    # a table replaced names the rows it held and the rows it gets
    replace = {"op": "replace", "path": "/PFC_WD", "value": {"Ethernet12": {}}}
    assert sonic.command_ports([replace], {"PFC_WD": {"Ethernet0 x": {}}}) == ["Ethernet0 x", "Ethernet12"]
    assert sonic.command_ports([{"op": "remove", "path": "/SCHEDULER"}], held) == []


@pytest.mark.parametrize("config_db, place", [
    ({"PORT_QOS_MAP": None}, "PORT_QOS_MAP"), ({"PORT": {"Ethernet0": None}}, "PORT.Ethernet0"),
    ({"QUEUE": {"Ethernet4|3": None}}, "QUEUE.Ethernet4|3"), ({"BUFFER_PG": None}, "BUFFER_PG"),
    ({"PFC_WD": None}, "PFC_WD"), ({"SCHEDULER": {"S": {"type": None}}}, "SCHEDULER.S.type"),
])
def test_parse_refuses_null_where_configdb_holds_a_table_row_or_text(config_db, place):
    # CONFIG_DB keeps text in Redis and never holds null: one where a table, row or field belongs is
    # malformed, and the acting states must not plan over it
    with pytest.raises(ReadError) as err:
        sonic.parse_raw(config_db)
    assert err.value.msg.startswith(place + " is null where ") and err.value.where == place


def test_names_with_digits_other_than_ascii_sort_and_are_read_as_names():
    row = {"dscp_to_tc_map": "ROCE"}
    found = sonic.parse_raw({"PORT_QOS_MAP": dict((name, row) for name in (
        "Ethernet10", "Ethernet0\u00b2", "Ethernet\u0663", "Ethernet2"))})
    assert found["interfaces"] == ["Ethernet0\u00b2", "Ethernet2", "Ethernet10", "Ethernet\u0663"]
    assert not sonic._is_ours("SCHEDULER", "ROCE_DWRR_\u00b2")
