"""rdmaops.roce.switch_roce through ansible-playbook against hostile and malformed input (issue 20):
names that carry configuration refused for every NOS and read-back names reported, never rendered;
running_config of the wrong shape for every NOS failing with one message naming running_config and
the place; and on a SONiC switch (fake sonic-cfggen and config on PATH) and a Cumulus switch (the
NVUE API stand-in, tests/tools/nvue_standin) names and shapes the switch itself answers with.  Engine-level cases: tests/unit/plugins/module_utils/_switch/
test_resource.py and its property tests."""

import json
import os

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
             'running_config: line 1 ("interface ethernet 1/1-1/999999 qos trus"...): last port of the range 999999 '
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


# A SONiC switch's CONFIG_DB as the fake sonic-cfggen prints it (one file per task), and a fake
# `config` that only records being called: a refused plan must never reach it.
FAKE_CFGGEN = '#!/bin/sh\ncat "$FAKE_CONFIG_DB"\n'
FAKE_CONFIG = '#!/bin/sh\necho "$@" >> "$FAKE_CONFIG_LOG"\n'
SONIC_BASE = {"PORT": {"Ethernet0": {"mtu": "9100"}, "Ethernet4": {"mtu": "9100"}},
              "DEVICE_METADATA": {"localhost": {"buffer_model": "dynamic"}},
              "BUFFER_PROFILE": {"egress_lossless_profile": {}}}
SONIC_ANSWERS = {
    # the same QUEUE row off a bad name and onto Ethernet0: jsonpatch's move, its bad name in "from"
    "moved": dict(SONIC_BASE, QUEUE={"Ethernet9;x|0": {"scheduler": "ROCE_DWRR_50"}},
                  SCHEDULER={"ROCE_DWRR_50": {"type": "DWRR", "weight": "50"}}),
    # the bad-named row is its table's last: the whole table is removed
    "last row": dict(SONIC_BASE, PORT_QOS_MAP={"Ethernet0|3-4": {"dscp_to_tc_map": "ROCE"}},
                     DSCP_TO_TC_MAP={"ROCE": {"0": "0"}}),
    "null table": dict(SONIC_BASE, PORT_QOS_MAP=None),
    "superscript": dict(SONIC_BASE, PORT_QOS_MAP={"Ethernet0\u00b2": {"dscp_to_tc_map": "ROCE"}}),
}


def test_a_sonic_switch_holding_bad_names_or_nulls_is_refused_with_nothing_sent(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sonic-cfggen", FAKE_CFGGEN), ("config", FAKE_CONFIG)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "config.log"
    tasks = []
    for answer, state in (("moved", "overridden"), ("last row", "deleted"), ("null table", "merged"),
                          ("superscript", "gathered"), ("superscript", "deleted")):
        (tmp_path / ("%s.json" % answer)).write_text(json.dumps(SONIC_ANSWERS[answer]))
        args = dict(os="sonic", state=state, nos_version="202411")
        if state in ("overridden", "merged"):
            args["config"] = dict(fabric={}, interfaces=["Ethernet0"])
        tasks.append(task("%s %s" % (answer, state), args, environment=dict(
            FAKE_CONFIG_DB=str(tmp_path / ("%s.json" % answer)), FAKE_CONFIG_LOG=str(log))))
    tasks.append(task("many bad names", dict(os="sonic", state="rendered",
                                             config=dict(fabric={}, interfaces=["x;"] * 20000))))
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump([dict(hosts="localhost", gather_facts=False, tasks=tasks)]))
    rc, results, stats = ansiblerun.playbook(path, dict(PATH="%s:%s" % (bin_dir, os.environ["PATH"])))
    assert "Traceback" not in json.dumps(results)
    refused = "would have to change interface(s) the switch holds under a name this module never writes"
    for name, bad in (("moved overridden", '"Ethernet9;x"'), ("last row deleted", '"Ethernet0|3-4"'),
                      ("superscript deleted", '"Ethernet0\\u00b2"')):
        assert results[name]["failed"] is True and results[name]["changed"] is False, results[name]
        assert refused in results[name]["msg"] and bad in results[name]["msg"], results[name]["msg"]
    null = results["null table merged"]
    assert null["failed"] is True and null["msg"] == (
        "the switch's CONFIG_DB (sonic-cfggen -d --print-data) cannot be read: PORT_QOS_MAP is null where a mapping "
        "belongs"), null
    gathered = results["superscript gathered"]
    assert gathered["gathered"]["interfaces"] == [], gathered
    assert [w for w in gathered["warnings"] if '"Ethernet0\\u00b2" is not a port name of SONiC' in w], gathered
    many = results["many bad names"]
    assert many["failed"] is True and many["msg"].endswith("; and 19990 more") and len(many["msg"]) < 3000
    assert not log.exists(), log.read_text()  # `config` was never run: nothing was sent
    assert stats["failures"] == 0 and stats["ignored"] == 5, stats
