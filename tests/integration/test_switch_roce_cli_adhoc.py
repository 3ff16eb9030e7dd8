"""switch_roce run by ansible itself for the CLI-configured NOSes (eos, nxos, onyx): rendered lines
and parsed integers with no switch (`ansible localhost -m rdmaops.roce.switch_roce`, and one
playbook of the same calls so the tier pays one ansible start-up), the MTU policy, bad values,
and acting states refused pointing at state=rendered."""

import json

import yaml

import switchcli as switch_cli
from ansiblerun import adhoc, playbook

MODULE = "rdmaops.roce.switch_roce"
PORTS = dict(eos=["Ethernet1/1", "Ethernet1/2"], nxos=["Ethernet1/1", "Ethernet1/2"], onyx=["1/1", "1/2"])
GOLDEN = dict(eos=("default", "eos_default.cfg"), nxos=("default", "nxos_default.cfg"),
              onyx=("kb_thresholds", "onyx_kb_thresholds.cfg"))


def test_adhoc_parsed_integers():
    args = dict(os="nxos", state="parsed", running_config=switch_cli.text("nxos_aiml_blueprint.cfg"))
    rc, result = adhoc(MODULE, json.dumps(args), {})
    assert rc == 0 and result["changed"] is False
    assert result["parsed"]["fabric"]["ecn"] == dict(min_threshold_bytes=153600, max_threshold_bytes=3072000,
                                                     probability_percent=7)
    assert result["parsed"]["interfaces"] == ["Ethernet1/1", "Ethernet1/2"]


def task(name, args, **extra):
    return dict({"name": name, MODULE: args, "register": "r", "ignore_errors": True}, **extra)


def test_playbook_every_nos(tmp_path):
    tasks = []
    for nos, (profile, dummy) in sorted(GOLDEN.items()):
        config = dict(fabric=switch_cli.PROFILES[profile], interfaces=PORTS[nos])
        tasks.append(task("render %s" % nos, dict(os=nos, state="rendered", config=config), register="rendered_" + nos))
        tasks.append(task("parse %s" % nos, dict(os=nos, state="parsed",
                                                 running_config="{{ rendered_%s.rendered | join(newline) }}" % nos)))
    eos_port = dict(fabric=dict(switch_mtu=9216), interfaces=["Ethernet1"])
    tasks.append(task("eos clamp", dict(os="eos", state="rendered", config=eos_port)))
    tasks.append(task("eos fail", dict(os="eos", state="rendered", config=eos_port, mtu_policy="fail")))
    tasks.append(task("onyx bytes", dict(os="onyx", state="rendered", config=dict(fabric={}, interfaces=["1/1"]))))
    for nos, state in (("eos", "merged"), ("nxos", "gathered"), ("onyx", "deleted"), ("eos", "replaced")):
        tasks.append(task("%s %s" % (nos, state), dict(os=nos, state=state, config=dict(fabric={}, interfaces=PORTS[nos]))))
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump([dict(hosts="localhost", gather_facts=False, vars=dict(newline="\n"), tasks=tasks)]))
    rc, results, stats = playbook(path, {})

    for nos, (dummy, golden) in GOLDEN.items():
        assert results["render %s" % nos]["rendered"] == switch_cli.lines(golden), results["render %s" % nos]
        parsed = results["parse %s" % nos]["parsed"]
        assert parsed["interfaces"] == PORTS[nos]
        assert parsed["fabric"]["roce_priority"] == 3 and parsed["fabric"]["pfc_priorities"] == [3]
        assert isinstance(parsed["fabric"]["switch_mtu"], int)
        assert isinstance(parsed["fabric"]["ecn"]["min_threshold_bytes"], int)
    assert results["render eos"]["nos_version"] == "4.34" and results["render onyx"]["nos_version"] == "3.10"

    clamp = results["eos clamp"]
    assert "   mtu 9214" in clamp["rendered"] and [w for w in clamp["warnings"] if "9214 written instead" in w]
    assert results["eos fail"]["failed"] is True
    assert "above the largest MTU Arista EOS accepts (9214)" in results["eos fail"]["msg"]
    assert "config.fabric.ecn.min_threshold_bytes=150000" in results["onyx bytes"]["msg"]
    for name in ("eos merged", "nxos gathered", "onyx deleted", "eos replaced"):
        assert results[name]["failed"] is True and results[name]["changed"] is False
        assert "use state=rendered" in results[name]["msg"], results[name]
    assert "Traceback" not in json.dumps(results)
    assert stats["failures"] == 0 and stats["ignored"] == 6 and stats["changed"] == 0
