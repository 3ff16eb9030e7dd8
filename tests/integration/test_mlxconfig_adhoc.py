"""rdmaops.roce.mlxconfig run by ``ansible localhost -m`` with the mlxconfig/mstconfig stand-ins first
on PATH (they replay the recorded table format, keep the device's values in a state file and log
every argv) and the ConnectX-7 host tree under RDMAOPS_HOST_ROOT."""

import json
import os
import subprocess

import pytest

import ansiblerun
import hosttree
from fixtures.hosts import cx7_doca

STANDINS = os.path.join(ansiblerun.REPO, "tests", "tools", "mlxconfig_standins")
SEED = os.path.join(ansiblerun.REPO, "tests", "unit", "fixtures", "tools", "mlxconfig", "cx7-e-q-composed.txt")
DEV = "0000:3d:00.0"
SETTINGS = {"ROCE_CC_PRIO_MASK_P1": 8, "CNP_DSCP_P1": 48, "CNP_802P_PRIO_P1": 6, "SRIOV_EN": True, "NUM_OF_VFS": 4}


@pytest.fixture
def host(tmp_path):
    tree = tmp_path / "host"
    hosttree.materialize(cx7_doca.manifest(), str(tree))
    env = ansiblerun.tree_env(tree, [STANDINS, tree / "bin"])
    env.update(MLXCFG_STANDIN_SEED=SEED, MLXCFG_STANDIN_STATE=str(tmp_path / "state.json"),
               MLXCFG_STANDIN_LOG=str(tmp_path / "argv.log"), MLXCFG_STANDIN_ALIASES="3d:00.0")

    def run(args, check=False, diff=False):
        return ansiblerun.adhoc("rdmaops.roce.mlxconfig", json.dumps(args), env, check=check, diff=diff)

    def argv_log():
        path = tmp_path / "argv.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def reboot():
        subprocess.run([os.path.join(STANDINS, "mlxconfig"), "_standin_reboot"], env=dict(os.environ, **env), check=True)

    run.argv_log = argv_log
    run.reboot = reboot
    return run


def sets(log):
    return [argv for argv in log if "set" in argv]


def test_set_differences_then_nothing_until_reboot(host):
    rc, result = host(dict(device=DEV, settings=SETTINGS), diff=True)
    assert rc == 0, result
    assert result["changed"] is True
    assert sets(host.argv_log()) == [
        ["mlxconfig", "-d", DEV, "-y", "set", "ROCE_CC_PRIO_MASK_P1=8", "SRIOV_EN=1", "NUM_OF_VFS=4"]]
    assert result["before"]["ROCE_CC_PRIO_MASK_P1"] == dict(default="255", current="255", next_boot="255")
    assert result["after"]["ROCE_CC_PRIO_MASK_P1"] == dict(default="255", current="255", next_boot="8")
    assert result["after"]["SRIOV_EN"]["next_boot"] == "True(1)"
    assert result["reboot_required"] is True
    assert result["pending"] == ["NUM_OF_VFS", "ROCE_CC_PRIO_MASK_P1", "SRIOV_EN"]
    assert result["commands"][1] == "mlxconfig -d %s -y set ROCE_CC_PRIO_MASK_P1=8 SRIOV_EN=1 NUM_OF_VFS=4" % DEV
    assert result["diff"][0]["before"] == {"mlxconfig %s" % DEV: {
        "ROCE_CC_PRIO_MASK_P1": "255", "SRIOV_EN": "False(0)", "NUM_OF_VFS": "0"}}

    rc, again = host(dict(device=DEV, settings=SETTINGS))
    assert rc == 0 and again["changed"] is False, again
    assert again["reboot_required"] is True
    assert len(sets(host.argv_log())) == 1

    host.reboot()
    rc, booted = host(dict(device=DEV, settings=SETTINGS))
    assert rc == 0 and booted["changed"] is False and booted["reboot_required"] is False, booted
    assert booted["before"]["SRIOV_EN"] == dict(default="False(0)", current="True(1)", next_boot="True(1)")
    assert len(sets(host.argv_log())) == 1


def test_check_mode_runs_no_set(host):
    rc, result = host(dict(device=DEV, settings={"LINK_TYPE_P1": "IB", "CNP_DSCP_P1": 48}), check=True)
    assert rc == 0 and result["changed"] is True, result
    assert sets(host.argv_log()) == []
    assert [argv[-1] for argv in host.argv_log()] == ["q"]
    assert result["after"]["LINK_TYPE_P1"]["next_boot"] == "IB"
    assert result["changes"] == ["mlxconfig set on %s for the next boot: LINK_TYPE_P1 ETH(2) -> IB" % DEV]
    # and nothing was stored: a real run still has the change to make
    rc, real = host(dict(device=DEV, settings={"LINK_TYPE_P1": "IB"}))
    assert rc == 0 and real["changed"] is True and real["after"]["LINK_TYPE_P1"]["next_boot"] == "IB(1)"


def test_unknown_key_refused_before_any_set(host):
    rc, result = host(dict(device=DEV, settings={"NUM_OF_VFS": 8, "ROCE_CC_PRIO_MASK_P3": 8}))
    assert rc != 0 and result["failed"] is True
    assert result["changed"] is False
    assert "ROCE_CC_PRIO_MASK_P3" in result["msg"] and "nothing was set" in result["msg"]
    assert result["unknown"] == ["ROCE_CC_PRIO_MASK_P3"]
    assert sets(host.argv_log()) == []


def test_option_like_and_bad_values_never_reach_the_tool(host):
    for args in (dict(device="--help", settings={"NUM_OF_VFS": 8}),
                 dict(device=DEV, settings={"NUM_OF_VFS": "-y"}),
                 dict(device=DEV, settings={"NUM_OF_VFS\n": 8}),
                 dict(device="/dev/mst/mt4129_pciconf0", tool="mstconfig", settings={"NUM_OF_VFS": 8})):
        rc, result = host(args)
        assert rc != 0 and result["changed"] is False, (args, result)
    assert host.argv_log() == []


def test_mstconfig_chosen_explicitly(host):
    rc, result = host(dict(device="3d:00.0", tool="mstconfig", settings={"CNP_802P_PRIO_P1": 5}))
    assert rc == 0 and result["changed"] is True and result["tool"] == "mstconfig", result
    assert sets(host.argv_log()) == [["mstconfig", "-d", "3d:00.0", "-y", "set", "CNP_802P_PRIO_P1=5"]]
