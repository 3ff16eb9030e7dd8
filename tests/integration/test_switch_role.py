"""The rdmaops.roce.switch role through playbooks/site.yml (--tags switch) on a Cumulus leaf played by
the NVUE API stand-in (tests/tools/nvue_standin) on 127.0.0.1: the hosts' intent reaches the switch,
and a second run changes nothing."""

import json
import os

import yaml

import ansiblerun
import nvuesite
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import nvue

FABRIC = {"preset": "lossless", "roce_dscp": 26, "roce_priority": 3, "cnp_dscp": 48, "cnp_priority": 6,
          "host_mtu": 9000, "switch_mtu": "max"}


def site(tmp_path, inventory):
    argv = ["-i", str(inventory), os.path.join(ansiblerun.REPO, "playbooks", "site.yml"), "--tags", "switch"]
    env = dict(ansiblerun.JSON_CALLBACK, ANSIBLE_PERSISTENT_CONTROL_PATH_DIR=str(tmp_path / "pc"))
    proc = ansiblerun.run("ansible-playbook", argv, env_extra=env, timeout=240)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from ansible-playbook (rc=%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    results = [task["hosts"]["leaf01"] for play in data["plays"] for task in play["tasks"] if "leaf01" in task["hosts"]]
    return proc.returncode, results, data["stats"]["leaf01"]


def test_site_yml_switch_play_applies_the_intent_then_changes_nothing(tmp_path):
    with nvuesite.standin("5.14") as switch:
        inventory = tmp_path / "hosts.yml"
        inventory.write_text(yaml.safe_dump({"all": {
            "vars": {"roce_fabric": FABRIC},
            "children": {
                "rdma_hosts": {"hosts": {}},
                "leaf_switches": {"children": {"leaf_cumulus": {"hosts": {"leaf01": nvuesite.host_vars(
                    switch, switch_roce_interfaces=["swp1", "swp2", "swp3"])}}}},
            }}}))
        rc, results, stats = site(tmp_path, inventory)
        assert rc == 0 and stats["changed"] == 1, results
        parsed = nvue.parse_raw(switch.applied)
        assert parsed["interfaces"] == ["swp1", "swp2", "swp3"]
        assert parsed["fabric"]["switch_mtu"] == 9216  # "max" on NVUE
        assert (parsed["fabric"]["roce_dscp"], parsed["fabric"]["pfc_priorities"]) == (26, [3])
        assert switch.applied["qos"]["roce"] == {"enable": "on", "mode": "lossless"}  # 5.14's key
        rc, results, stats = site(tmp_path, inventory)
        assert rc == 0 and stats["changed"] == 0, results
        assert len(nvuesite.revisions_created(switch)) == 1
