"""rdmaops.roce.switch_roce on Cumulus end to end: ansible-playbook, connection ansible.netcommon.httpapi,
ansible_network_os rdmaops.roce.nvue (our httpapi plugin), against the NVUE API stand-in on 127.0.0.1
(tests/tools/nvue_standin), which checks every PATCH against NVIDIA's published model of the release
it plays. No real switch is involved."""

import copy
import json

import yaml

import ansiblerun
import nvuesite
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import nvue

# What a switch holds besides the profile: it must survive every state.
OTHER = {"system": {"hostname": "leaf01"},
         "interface": {"eth0": {"ip": {"vrf": "mgmt"}, "type": "eth"}, "swp9": {"link": {"state": {"up": {}}}}}}
NEW = {"roce_dscp": 24, "roce_priority": 4, "cnp_dscp": 46, "cnp_priority": 5,
       "ets": {"roce_percent": 70, "default_percent": 30}}


def task(name, **args):
    return {"name": name, "rdmaops.roce.switch_roce": args}


def write(tmp_path, tasks, name="play.yml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump([{"hosts": "leaf01", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    return path


def owned_part(config):
    return nvue.parse_raw(config)


def test_every_state_then_a_second_run_changes_nothing(tmp_path):
    tasks = [
        task("merged", config={"fabric": {}, "interfaces": ["swp1", "swp2"]}),
        task("merged again", config={"fabric": {}, "interfaces": ["swp1", "swp2"]}),
        task("replaced", state="replaced", config={"fabric": NEW, "interfaces": ["swp1", "swp2"]}),
        task("replaced again", state="replaced", config={"fabric": NEW, "interfaces": ["swp1", "swp2"]}),
        task("overridden", state="overridden", config={"fabric": NEW, "interfaces": ["swp1"]}),
        task("overridden again", state="overridden", config={"fabric": NEW, "interfaces": ["swp1"]}),
        task("gathered", state="gathered"),
        task("deleted", state="deleted"),
        task("deleted again", state="deleted"),
    ]
    # 5.15 writes `qos roce state`; old-style revision ids must be URL-encoded on the way
    with nvuesite.standin("5.15", applied=copy.deepcopy(OTHER), id_style="changeset") as switch:
        inventory = nvuesite.inventory(tmp_path / "hosts.yml", switch)
        rc, results, stats = nvuesite.playbook(write(tmp_path, tasks), inventory, tmp_path)
        assert rc == 0, results
        got = dict(results)
        assert [(name, got[name]["changed"]) for name, dummy in results] == [
            ("merged", True), ("merged again", False), ("replaced", True), ("replaced again", False),
            ("overridden", True), ("overridden again", False), ("gathered", False), ("deleted", True),
            ("deleted again", False)]
        # one revision per change, none when nothing differs
        assert len(nvuesite.revisions_created(switch)) == 4
        assert all(revision.startswith("changeset/") for revision in switch.revisions)
        assert all(got[name]["nos_version"] == "5.15" for name, dummy in results)
        merged = got["merged"]
        assert merged["before"] == {"fabric": {}, "interfaces": []}
        assert merged["after"]["interfaces"] == ["swp1", "swp2"]
        assert merged["after"]["fabric"]["pfc_priorities"] == [3] and merged["after"]["fabric"]["pfc_watchdog"] is True
        assert merged["commands"][0]["qos"]["roce"] == {"state": "enabled", "mode": "lossless"}
        assert merged["diff"][0]["before"] and merged["diff"][0]["after"]
        assert got["merged again"]["commands"] == []
        replaced = got["replaced"]["after"]["fabric"]
        assert (replaced["roce_dscp"], replaced["roce_priority"], replaced["cnp_priority"]) == (24, 4, 5)
        assert replaced["ets"] == {"roce_percent": 70, "default_percent": 30} and replaced["pfc_priorities"] == [4]
        # replaced removed DSCP 26 and 48, the old PFC priority and ECN class: it unsets with null
        assert got["replaced"]["commands"][0]["qos"]["mapping"]["default-global"]["dscp"] == {"26": None, "48": None}
        assert got["overridden"]["after"]["interfaces"] == ["swp1"]
        assert got["overridden"]["commands"][0]["interface"] == {
            "swp2": {"link": {"mtu": None}, "qos": {"pfc-watchdog": None}}}
        assert got["gathered"]["gathered"] == got["overridden"]["after"]
        assert got["deleted"]["after"] == {"fabric": {}, "interfaces": []}
        # what the profile does not own is untouched, and every change was saved
        assert switch.applied["system"] == OTHER["system"]
        assert switch.applied["interface"]["eth0"] == OTHER["interface"]["eth0"]
        assert switch.applied["interface"]["swp9"] == OTHER["interface"]["swp9"]
        assert switch.startup == switch.applied
        assert owned_part(switch.applied) == {"fabric": {}, "interfaces": []}


def test_check_mode_predicts_and_creates_no_revision(tmp_path):
    profile_body = nvue.render(
        dict(trust="dscp", roce_dscp=26, roce_priority=3, cnp_dscp=48, cnp_priority=6, pfc_priorities=[3],
             ecn_priorities=[3], ecn=dict(min_threshold_bytes=150000, max_threshold_bytes=1500000,
                                          probability_percent=100),
             ets=dict(roce_percent=50, default_percent=50), pfc_watchdog=True, switch_mtu=9216), ["swp1"], "5.12")
    applied = nvue.apply_patch(OTHER, profile_body)
    tasks = [
        task("same", config={"fabric": {}, "interfaces": ["swp1"]}),
        task("different", config={"fabric": {"ecn": {"min_threshold_bytes": 100000}}, "interfaces": ["swp1", "swp2"]}),
        task("replaced", state="replaced", config={"fabric": {"preset": "lossy_ecn"}, "interfaces": ["swp1"]}),
        task("deleted", state="deleted"),
    ]
    with nvuesite.standin("5.12", applied=copy.deepcopy(applied)) as switch:
        inventory = nvuesite.inventory(tmp_path / "hosts.yml", switch)
        rc, results, stats = nvuesite.playbook(write(tmp_path, tasks), inventory, tmp_path, check=True)
        assert rc == 0, results
        got = dict(results)
        assert got["same"]["changed"] is False and got["same"]["commands"] == []
        assert got["different"]["changed"] is True
        assert got["different"]["after"]["fabric"]["ecn"]["min_threshold_bytes"] == 100000
        assert got["different"]["after"]["interfaces"] == ["swp1", "swp2"]
        assert got["replaced"]["changed"] is True and got["replaced"]["after"]["fabric"]["pfc_priorities"] == []
        assert got["deleted"]["changed"] is True and got["deleted"]["after"] == {"fabric": {}, "interfaces": []}
        # nothing but reads reached the switch
        assert nvuesite.revisions_created(switch) == []
        assert set(method for method, path, query, body in switch.requests) == {"GET"}
        assert switch.applied == applied


BEHAVE = "http://127.0.0.1:{{ ansible_httpapi_port }}/_standin/behave"


def behave(**how):
    return {"name": "stand-in: %s" % json.dumps(how), "delegate_to": "localhost",
            "vars": {"ansible_connection": "local"},
            "ansible.builtin.uri": {"url": BEHAVE, "method": "POST", "body_format": "json", "body": how}}


def failing(name, **args):
    entry = task(name, **args)
    entry["ignore_errors"] = True
    return entry


def test_nvue_errors_are_told_apart_with_nvues_text_and_the_truth_about_changed(tmp_path):
    # NVUE 5.5: no PFC watchdog, so the profile must say pfc_watchdog: false
    config = {"fabric": {"pfc_watchdog": False}, "interfaces": ["swp1"]}
    tasks = [
        failing("watchdog on 5.5", config={"fabric": {}, "interfaces": ["swp1"]}),
        behave(apply="invalid"), failing("invalid", config=config),
        behave(apply="apply_fail"), failing("apply_fail", config=config),
        behave(apply="never"), failing("never finishes", config=config),
        behave(apply="ok"), failing("5.15 keys on a 5.5 switch", config=config, nos_version="5.15"),
        behave(apply="ok", save="fail"), failing("save fails", config=config),
        behave(apply="ok", save="ok"), task("applies", config=config), task("applies again", config=config),
    ]
    with nvuesite.standin("5.5") as switch:
        inventory = nvuesite.inventory(tmp_path / "hosts.yml", switch, ansible_nvue_apply_timeout=1)
        rc, results, stats = nvuesite.playbook(write(tmp_path, tasks), inventory, tmp_path)
        got = dict(results)
        assert stats["failures"] == 0 and stats["ignored"] == 6, results
        watchdog = got["watchdog on 5.5"]
        assert watchdog["failed"] and not watchdog["changed"]
        assert "NVUE 5.5 has no PFC watchdog" in watchdog["msg"] and "pfc_watchdog: false" in watchdog["msg"]
        invalid = got["invalid"]
        assert invalid["failed"] and invalid["changed"] is False
        assert invalid["msg"] == ("NVUE found revision 1 invalid and applied nothing: Only one traffic class can be "
                                  "mapped to the RoCE lossless pool (at qos.egress-queue-mapping.default-global)")
        failed = got["apply_fail"]
        assert failed["failed"] and failed["changed"] is False
        assert "NVUE could not apply revision 2 (apply_fail): switchd: failed to program" in failed["msg"]
        assert "the applied configuration is unchanged" in failed["msg"]
        never = got["never finishes"]
        assert never["failed"] and never["changed"] is False
        assert "did not finish applying in time (last state apply)" in never["msg"]
        rejected = got["5.15 keys on a 5.5 switch"]
        assert rejected["failed"] and rejected["changed"] is False
        assert "refused the change for revision 4 before applying anything" in rejected["msg"]
        assert "unknown key 'state'" in rejected["msg"]
        save = got["save fails"]
        assert save["failed"] and save["changed"] is True
        assert "applied revision 5 but could not save it" in save["msg"] and "startup.yaml" in save["msg"]
        assert got["applies"]["changed"] is False  # the failed save had applied it already
        assert got["applies again"]["changed"] is False
        assert nvue.parse_raw(switch.applied, "5.5")["fabric"]["pfc_watchdog"] is False
        assert len(nvuesite.revisions_created(switch)) == 5


def test_rendered_and_parsed_need_no_switch_and_os_comes_from_the_task_or_the_inventory(tmp_path):
    playbook = tmp_path / "local.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "rendered", "rdmaops.roce.switch_roce": {
            "os": "nvue", "state": "rendered", "config": {"fabric": {}, "interfaces": ["swp1"]}},
         "register": "out"},
        {"name": "parsed", "rdmaops.roce.switch_roce": {
            "state": "parsed", "running_config": "{{ out.rendered | to_json }}"},
         "vars": {"ansible_network_os": "rdmaops.roce.nvue"}},
        {"name": "no os", "rdmaops.roce.switch_roce": {
            "state": "rendered", "config": {"fabric": {}, "interfaces": []}}, "ignore_errors": True},
        {"name": "unknown network os", "rdmaops.roce.switch_roce": {
            "state": "rendered", "config": {"fabric": {}, "interfaces": []}},
         "vars": {"ansible_network_os": "junipernetworks.junos.junos"}, "ignore_errors": True},
    ]}]))
    rc, results, stats = ansiblerun.playbook(playbook, {})
    rendered = results["rendered"]
    assert rendered["nos_version"] == "5.18" and rendered["rendered"]["qos"]["roce"]["state"] == "enabled"
    assert nvuesite.validate("5.18", rendered["rendered"]) == []
    parsed = results["parsed"]["parsed"]
    assert parsed["interfaces"] == ["swp1"] and parsed["fabric"]["switch_mtu"] == 9216
    assert parsed["fabric"]["roce_dscp"] == 26 and isinstance(parsed["fabric"]["ecn"]["min_threshold_bytes"], int)
    assert "set os" in results["no os"]["msg"] and "ansible_network_os" in results["no os"]["msg"]
    unknown = results["unknown network os"]["msg"]
    assert "ansible_network_os=junipernetworks.junos.junos names no NOS switch_roce knows" in unknown


def test_an_apply_that_fails_part_way_is_failed_and_changed_saying_what_differs(tmp_path):
    # The stand-in applies the first half of the revision's changes, then ends it in apply_fail, as NVUE
    # does when switchd fails in the middle of programming a revision.
    config = {"fabric": {}, "interfaces": ["swp1", "swp2"]}
    tasks = [
        behave(apply="apply_fail_partway"), failing("part way", config=config),
        behave(apply="apply_fail"), failing("nothing applied", config=config),
        behave(apply="ok"), task("gathered", state="gathered"),
    ]
    with nvuesite.standin("5.12", applied=copy.deepcopy(OTHER)) as switch:
        inventory = nvuesite.inventory(tmp_path / "hosts.yml", switch)
        rc, results, stats = nvuesite.playbook(write(tmp_path, tasks), inventory, tmp_path)
        got = dict(results)
        assert stats["failures"] == 0 and stats["ignored"] == 2, results
        part = got["part way"]
        assert part["failed"] is True and part["changed"] is True, part
        assert part["revision"] == "1" and part["nvue_state"] == "apply_fail"
        assert "NVUE could not apply revision 1 (apply_fail): switchd: failed to program" in part["msg"]
        assert "the applied configuration now differs from before at " in part["msg"]
        assert "inspect revision 1" in part["msg"]
        assert "unchanged" not in part["msg"]
        # what differs: the places, each one a real difference between before and now
        assert part["differences"], part
        assert all(place in part["msg"] for place in part["differences"][:8])
        assert switch.applied != OTHER
        # before is what was read before the change; after is what the switch holds now
        assert part["before"] == {"fabric": {}, "interfaces": []}
        assert part["after"] == got["gathered"]["gathered"] != part["before"]
        # a later run that applies nothing keeps saying the truth: the second failure changed nothing
        nothing = got["nothing applied"]
        assert nothing["failed"] is True and nothing["changed"] is False
        assert "the applied configuration is unchanged" in nothing["msg"]
        assert nothing["differences"] == []
