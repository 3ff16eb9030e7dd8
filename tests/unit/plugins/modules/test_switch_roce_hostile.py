"""rdmaops.roce.switch_roce through ansible-playbook against hostile and malformed input (issue 20):
names that carry configuration refused for every NOS and read-back names reported, never rendered;
running_config of the wrong shape for every NOS failing with one message naming running_config and
the place; and on a Cumulus switch (the NVUE API stand-in, tests/tools/nvue_standin) names and
shapes the switch itself answers with.  Engine-level cases: tests/unit/plugins/module_utils/_switch/
test_resource.py and its property tests."""

import json

import yaml

import ansiblerun
import nvuesite

MODULE = "rdmaops.roce.switch_roce"
# Each one renders an extra line, another CONFIG_DB key, or a CLI word the NOS would run.
HOSTILE = {
    "eos": "Ethernet1\ninterface Management1\n   shutdown",
    "nxos": "Ethernet1/1\ninterface mgmt0\n  shutdown",
    "onyx": "1/1 shutdown\ninterface mgmt0 shutdown",
    "sonic": "Ethernet0|3-4",
    "nvue": "swp1;reboot",
}
FORMS = {"eos": "Ethernet1, Ethernet1/1", "nxos": "Ethernet1/1, Ethernet1/1/1", "onyx": "ethernet 1/1, Eth1/1 or 1/1",
         "sonic": "Ethernet0, Ethernet4", "nvue": "swp1, swp1s0"}
WRONG_SHAPE = {
    "nvue": ('{"qos": {"congestion-control": {"default-global": {"traffic-class": {"3": {"min-threshold": "150000"}}}}}}',
             'running_config: qos.congestion-control.default-global.traffic-class.3.min-threshold is text ("150000") '
             "where a whole number from 0 to 4294967296 belongs"),
    "sonic": ('{"PORT_QOS_MAP": {"Ethernet0": [1, 2]}}',
              "running_config: PORT_QOS_MAP.Ethernet0 is a list where a mapping belongs"),
    "eos": ("qos map dscp 26 to traffic-class 3\ninterface Ethernet1\n   service-profile P\n   mtu 1" + "0" * 30,
            'running_config: line 4 ("mtu 1000000000000000000000000000000"): mtu 100000000000... (31 digits) is outside '
            "68 to 65535"),
    "nxos": ("class-map type qos match-all C\n  match dscp 0-99999999999",
             'running_config: line 2 ("match dscp 0-99999999999"): dscp 99999999999 is outside 0 to 63'),
    "onyx": ("interface ethernet 1/1-1/999999 qos trust L3",
             'running_config: line 1 ("interface ethernet 1/1-1/999999 qos trus..."): last port of the range 999999 '
             "is outside 1 to 128"),
}


def task(name, args, **extra):
    return dict({"name": name, MODULE: args, "ignore_errors": True}, **extra)


def test_hostile_names_and_malformed_running_config_for_every_nos(tmp_path):
    tasks = []
    for nos in sorted(HOSTILE):
        for state in ("rendered", "parsed"):
            tasks.append(task("%s %s name" % (nos, state), dict(
                os=nos, state=state, running_config="{}",
                config=dict(fabric={}, interfaces=[HOSTILE[nos]]))))
        text, dummy = WRONG_SHAPE[nos]
        tasks.append(task("%s wrong shape" % nos, dict(os=nos, state="parsed", running_config=text)))
        # a YAML mapping where the text belongs (Ansible hands the module its text)
        tasks.append(task("%s yaml" % nos, dict(os=nos, state="parsed", running_config={"qos": [26, 3]})))
    tasks.append(task("nvue truncated", dict(os="nvue", state="parsed", running_config='{"qos": {"roce": ')))
    tasks.append(task("eos name read back", dict(os="eos", state="parsed", running_config=(
        "interface Ethernet1;reload\n   service-profile RDMAOPS_ROCE\ninterface Ethernet2\n   service-profile RDMAOPS_ROCE\n"
        "qos profile RDMAOPS_ROCE\n   priority-flow-control on\n   priority-flow-control priority 3 no-drop\n"))))
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump([dict(hosts="localhost", gather_facts=False, tasks=tasks)]))
    rc, results, stats = ansiblerun.playbook(path, {})
    assert "Traceback" not in json.dumps(results)
    for nos in HOSTILE:
        for state in ("rendered", "parsed"):
            result = results["%s %s name" % (nos, state)]
            assert result["failed"] is True and result["changed"] is False, result
            assert result["msg"].startswith("config.interfaces[0]: "), result["msg"]
            assert FORMS[nos] in result["msg"] and "\n" not in result["msg"]
            assert not result.get("rendered") and not result.get("parsed")
        shape = results["%s wrong shape" % nos]
        assert shape["failed"] is True and shape["msg"] == WRONG_SHAPE[nos][1], shape
        yaml_given = results["%s yaml" % nos]
        assert yaml_given["failed"] is True and yaml_given["msg"].startswith("running_config: line 1"), yaml_given
    assert results["nvue truncated"]["msg"].startswith("running_config: line 1, column 18: the text stops being JSON")
    read_back = results["eos name read back"]
    assert read_back["parsed"]["interfaces"] == ["Ethernet2"]
    assert [w for w in read_back["warnings"] if '"Ethernet1;reload" is not a port name of Arista EOS' in w]
    assert stats["failures"] == 0 and stats["ignored"] == 21


BEHAVE = "http://127.0.0.1:{{ ansible_httpapi_port }}/_standin/behave"


def behave(**how):
    return {"name": "stand-in: %s" % sorted(how), "delegate_to": "localhost", "vars": {"ansible_connection": "local"},
            "ansible.builtin.uri": {"url": BEHAVE, "method": "POST", "body_format": "json", "body": how}}


def test_names_and_shapes_a_cumulus_switch_answers_with(tmp_path):
    profile = {"fabric": {}, "interfaces": ["swp1", "swp2"]}
    # swp9;x is a name NVUE's model refuses: a switch (or a stand-in) answering it is not echoed anywhere
    odd_name = {"interface": {"swp1": {"link": {"mtu": 9216}}, "swp9;x": {"link": {"mtu": 9216}}}}
    wrong_shape = {"interface": {"swp1": {"link": {"mtu": "9216"}}}}
    tasks = [
        behave(applied=odd_name),
        task("gathered odd name", dict(state="gathered")),
        task("overridden odd name", dict(state="overridden", config=profile)),
        behave(applied=wrong_shape),
        task("gathered wrong shape", dict(state="gathered")),
        task("merged wrong shape", dict(config=profile)),
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "leaf01", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    with nvuesite.standin("5.12") as switch:
        inventory = nvuesite.inventory(tmp_path / "hosts.yml", switch)
        rc, results, stats = nvuesite.playbook(playbook, inventory, tmp_path)
        got = dict(results)
        gathered = got["gathered odd name"]
        assert gathered["gathered"]["interfaces"] == ["swp1"], gathered
        assert [w for w in gathered["warnings"] if '"swp9;x"' in w and "left out of the result" in w]
        overridden = got["overridden odd name"]
        assert overridden["failed"] is True and overridden["changed"] is False
        assert "state=overridden would have to change interface(s)" in overridden["msg"] and "nothing was sent" in \
            overridden["msg"]
        source = "the switch's applied configuration (NVUE GET /nvue_v1/?rev=applied) cannot be read: "
        for name in ("gathered wrong shape", "merged wrong shape"):
            assert got[name]["failed"] is True and got[name]["changed"] is False
            assert got[name]["msg"].startswith(source + 'interface.swp1.link.mtu is text ("9216") where a whole number')
        assert nvuesite.revisions_created(switch) == []
        assert stats["failures"] == 0 and stats["ignored"] == 3, results
