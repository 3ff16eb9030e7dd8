"""nic_qos run by ansible itself (ansible localhost -m rdmaops.roce.nic_qos) against the CX-7 host tree,
with the dcb/mlnx_qos stand-ins (tests/tools/qos_standins) first on PATH recording the argv they get."""

import json
import os
import shutil
import subprocess
import uuid

import pytest

import hosttree
from fixtures.hosts import cx7_doca
from ansiblerun import adhoc, tree_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDINS = os.path.join(REPO, "tests", "tools", "qos_standins")
PFC3 = "dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"
TRUST = "dcb app add dev ens1f0np0 dscp-prio " + " ".join("%d:%d" % (d, d >> 3) for d in range(64))


@pytest.fixture
def rig(tmp_path):
    root = tmp_path / "host"
    hosttree.materialize(cx7_doca.manifest(), root)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("dcb", "mlnx_qos"):
        os.symlink(os.path.join(STANDINS, tool), str(bindir / tool))
    state, log = tmp_path / "state.json", tmp_path / "argv.log"
    state.write_text("{}")
    env = tree_env(root, [bindir])
    env.update(QOS_STANDIN_STATE=str(state), QOS_STANDIN_LOG=str(log))

    def setting():
        if not log.exists():
            return []
        argvs = [json.loads(line) for line in log.read_text().splitlines()]
        return [" ".join(a) for a in argvs if "show" not in a and not (a[0] == "mlnx_qos" and len(a) <= 4)]

    return env, setting, state


def test_check_apply_repeat_and_one_part(rig):
    env, setting, _state = rig
    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=ens1f0np0 trust=dscp pfc=3", env, check=True, diff=True)
    assert rc == 0 and result["changed"] is True, result
    assert result["commands"] == [TRUST, PFC3]
    assert result["before"] == {"trust": "pcp", "pfc": [], "dscp2prio": {}, "cable_len": 7}
    assert result["after"]["trust"] == "dscp" and result["after"]["pfc"] == [3]
    assert result["diff"][0]["before"]["ens1f0np0 pfc"] == []
    assert setting() == []  # check mode ran no setting command

    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=ens1f0np0 trust=dscp pfc=3", env)
    assert rc == 0 and result["changed"] is True and result["backend"] == "dcb" and result["driver"] == "mlx5_core"
    assert result["commands"] == [TRUST, PFC3] and setting() == [TRUST, PFC3]
    assert result["after"]["dscp2prio"]["26"] == 3

    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=ens1f0np0 trust=dscp pfc=3", env)
    assert rc == 0 and result["changed"] is False and result["commands"] == []
    assert setting() == [TRUST, PFC3]

    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=ens1f0np0 trust=dscp pfc=3 cable_len=30", env)
    assert rc == 0 and result["changed"] is True
    assert result["commands"] == ["dcb pfc set dev ens1f0np0 delay 30"]
    assert setting()[-1] == "dcb pfc set dev ens1f0np0 delay 30" and len(setting()) == 3


def test_mlnx_qos_backend_and_dscp2prio_mapping(rig):
    env, setting, _state = rig
    args = json.dumps(dict(interface="ens1f0np0", backend="mlnx_qos", dscp2prio={"26": 3, "48": 6}, pfc=[3]))
    rc, result = adhoc("rdmaops.roce.nic_qos", args, env, check=True)
    assert rc == 0 and result["commands"] == ["mlnx_qos -i ens1f0np0 --dscp2prio set,26,3 --dscp2prio set,48,6",
                                              "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0"]
    assert setting() == []
    rc, result = adhoc("rdmaops.roce.nic_qos", args, env)
    assert rc == 0 and result["changed"] is True and result["backend"] == "mlnx_qos"
    assert result["after"] == {"trust": "dscp", "pfc": [3], "dscp2prio": {"26": 3, "48": 6}, "cable_len": 7}
    rc, result = adhoc("rdmaops.roce.nic_qos", args, env)
    assert rc == 0 and result["changed"] is False and len(setting()) == 2


def test_bad_input_and_driver_without_dcb(rig):
    env, setting, state = rig
    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=-r pfc=3", env)
    assert rc != 0 and "interface='-r'" in result["msg"]
    state.write_text(json.dumps(dict(iface="eno1", unsupported=True)))
    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=eno1 trust=dscp", env)
    assert rc != 0 and result["changed"] is False
    assert "its driver igb has no DCB support" in result["msg"] and result["driver"] == "igb"
    assert setting() == []


def test_failure_reports_rollback(rig):
    env, setting, state = rig
    state.write_text(json.dumps(dict(fail=["dcb pfc set dev ens1f0np0 delay"])))
    rc, result = adhoc("rdmaops.roce.nic_qos", "interface=ens1f0np0 pfc=3 cable_len=30", env)
    assert rc != 0 and result["changed"] is False
    assert result["rolled_back"] == ["ens1f0np0: set pfc from [] to [3]"]
    assert result["commands"] == [PFC3, "dcb pfc set dev ens1f0np0 delay 30",
                                  "dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off"]
    assert json.loads(state.read_text())["pfc"] == [False] * 8


REAL_DCB = shutil.which("dcb", path="/usr/sbin:/sbin:/usr/bin:/bin")


def test_real_dcb_on_a_netdev_without_dcb(tmp_path):
    """The real iproute2 dcb answers for a veth in a namespace this test creates (like the lab's virtio NICs)."""
    if REAL_DCB is None or shutil.which("ip") is None:
        pytest.skip("iproute2 dcb/ip not installed")
    name = "rdmaops-qos-%s" % uuid.uuid4().hex[:8]
    if subprocess.run(check=False, args=["ip", "netns", "add", name], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here (needs root / CAP_SYS_ADMIN)")
    try:
        made = subprocess.run(check=False, args=["ip", "-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                              capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip("cannot create a veth pair in a namespace: %s" % made.stderr)
        root = tmp_path / "host"
        (root / "sys/bus/pci/drivers/virtio_net").mkdir(parents=True)
        (root / "sys/class/net/v0/device").mkdir(parents=True)
        os.symlink("../../../../bus/pci/drivers/virtio_net", str(root / "sys/class/net/v0/device/driver"))
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "dcb").write_text("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n" % (name, REAL_DCB))
        (bindir / "dcb").chmod(0o755)
        rc, result = adhoc("rdmaops.roce.nic_qos", "interface=v0 trust=dscp pfc=3", tree_env(root, [bindir]))
    finally:
        subprocess.run(check=False, args=["ip", "netns", "del", name], capture_output=True)
    assert rc != 0 and result["changed"] is False
    assert "its driver virtio_net has no DCB support" in result["msg"]
    assert "dcb answered: Attribute read: Operation not supported" in result["msg"]
    assert result["driver"] == "virtio_net" and result["commands"] == []
