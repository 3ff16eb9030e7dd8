"""roce_ecn and roce_tos run by ansible itself against host trees (RDMAOPS_HOST_ROOT).

ECN and traffic_class trees are in the kernel's format (tests/unit/fixtures/qos/trees.py, no
ConnectX to capture); the configfs tree of roce_tos is a real Soft-RoCE capture.
"""

import os

import hosttree
from fixtures.hosts import cx7_doca
from fixtures.qos import trees
from ansiblerun import adhoc, tree_env

ECN = cx7_doca.NIC0 + "/net/ens1f0np0/ecn"
TC = cx7_doca.NIC0 + "/infiniband/mlx5_0/tc/1/traffic_class"
ECN_ARGS = "interface=ens1f0np0 priorities=3 exclusive=true cnp_dscp=48 cnp_802p_prio=6"


def snapshot(root):
    out = {}
    for base, dirs, names in os.walk(str(root)):
        for name in dirs + names:
            path = os.path.join(base, name)
            out[path] = open(path, "rb").read() if os.path.isfile(path) and not os.path.islink(path) else None
    return out


def read(root, rel):
    with open(os.path.join(str(root), rel.lstrip("/"))) as handle:
        return handle.read()


def materialize(tmp_path, manifest):
    bindir = hosttree.materialize(manifest, tmp_path)
    return tree_env(tmp_path, [bindir])


def test_roce_ecn_check_apply_repeat(tmp_path):
    env = materialize(tmp_path, trees.cx7())
    before = snapshot(tmp_path)
    rc, result = adhoc("rdmaops.roce.roce_ecn", ECN_ARGS, env, check=True, diff=True)
    assert rc == 0 and result["changed"] is True and len(result["changes"]) == 14
    assert result["after"]["np"]["enabled"] == [3]
    assert result["diff"][0]["before"]["ecn ens1f0np0 np enable 0"] == 1
    assert snapshot(tmp_path) == before

    rc, result = adhoc("rdmaops.roce.roce_ecn", ECN_ARGS, env)
    assert rc == 0 and result["changed"] is True
    assert result["after"]["np"]["enabled"] == [3] and result["after"]["rp"]["enabled"] == [3]
    assert read(tmp_path, ECN + "/roce_rp/enable/7") == "0\n"

    rc, result = adhoc("rdmaops.roce.roce_ecn", ECN_ARGS, env)
    assert rc == 0 and result["changed"] is False and result["changes"] == []


def test_roce_ecn_inbox_refused_before_anything_or_warned(tmp_path):
    env = materialize(tmp_path, trees.cx7(ecn=False))
    before = snapshot(tmp_path)
    rc, result = adhoc("rdmaops.roce.roce_ecn", ECN_ARGS, env)
    assert rc != 0 and result["failed"] is True and result["changed"] is False
    assert "ROCE_CC_PRIO_MASK_P1=8" in result["msg"] and "mlxconfig -y -d 0000:3d:00.0 set" in result["msg"]
    assert snapshot(tmp_path) == before

    rc, result = adhoc("rdmaops.roce.roce_ecn", ECN_ARGS + " unsupported=warn", env)
    assert rc == 0 and result["changed"] is False and result["supported"] is False
    assert result["firmware_alternative"]["params"]["CNP_DSCP_P1"] == 48
    assert len([w for w in result["warnings"] if "ROCE_CC_PRIO_MASK_P1" in w]) == 1


def test_roce_ecn_bad_value_refused(tmp_path):
    env = materialize(tmp_path, trees.cx7())
    before = snapshot(tmp_path)
    rc, result = adhoc("rdmaops.roce.roce_ecn", "interface=ens1f0np0: cnp_dscp=48", env)
    assert rc != 0 and "is not a kernel interface name" in result["msg"]
    rc, result = adhoc("rdmaops.roce.roce_ecn", "interface=ens1f0np0 cnp_dscp=64", env)
    assert rc != 0 and "cnp_dscp=64 is out of range" in result["msg"]
    assert snapshot(tmp_path) == before


def test_roce_tos_on_the_soft_roce_capture(tmp_path):
    env = materialize(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))
    before = snapshot(tmp_path)
    args = "device=rxe0 tos=106 roce_mode=v2"
    rc, result = adhoc("rdmaops.roce.roce_tos", args, env, check=True)
    assert rc == 0 and result["changed"] is True and result["after"]["tos"] == 106
    assert snapshot(tmp_path) == before

    rc, result = adhoc("rdmaops.roce.roce_tos", args, env)
    assert rc == 0 and result["changed"] is True
    assert result["before"] == {"tos": 0, "roce_mode": "v2"} and result["after"] == {"tos": 106, "roce_mode": "v2"}
    assert read(tmp_path, "/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos") == "106\n"

    rc, result = adhoc("rdmaops.roce.roce_tos", args, env)
    assert rc == 0 and result["changed"] is False


def test_roce_tos_ce_refused_before_anything(tmp_path):
    env = materialize(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))
    before = snapshot(tmp_path)
    rc, result = adhoc("rdmaops.roce.roce_tos", "device=rxe0 tos=107", env)
    assert rc != 0 and result["changed"] is False and "CE" in result["msg"] and "106 (DSCP 26 with ECT(0))" in result["msg"]
    rc, result = adhoc("rdmaops.roce.roce_tos", "device=rxe0 tos=106 traffic_class=106", env)
    assert rc != 0 and "MLNX_OFED" in result["msg"]
    assert snapshot(tmp_path) == before


def test_roce_tos_traffic_class_on_ofed(tmp_path):
    env = materialize(tmp_path, trees.cx7(traffic_class="Global tclass=106\n"))
    rc, result = adhoc("rdmaops.roce.roce_tos", "device=mlx5_0 tos=106 traffic_class=106", env)
    assert rc == 0 and result["changed"] is True and result["changes"] == ["set default_roce_tos of mlx5_0 port 1 to 106 (was 0)"]
    assert result["after"] == {"tos": 106, "roce_mode": "v2", "traffic_class": 106}
    rc, result = adhoc("rdmaops.roce.roce_tos", "device=mlx5_0 tos=106 traffic_class=106", env)
    assert rc == 0 and result["changed"] is False

    before = snapshot(tmp_path)
    rc, result = adhoc("rdmaops.roce.roce_tos", "device=mlx5_0 traffic_class=104", env, check=True)
    assert rc == 0 and result["changed"] is True and result["after"]["traffic_class"] == 104
    assert snapshot(tmp_path) == before
