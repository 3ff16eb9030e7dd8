"""nic_layer run by ansible itself: one call for every QoS part of a port, check mode, a repeat, the boot files.

The host is the CX-7 tree with ECN sysfs and rdma_cm configfs in the kernel's format
(tests/unit/fixtures/qos/trees.py) and the dcb stand-in of tests/tools/qos_standins (no ConnectX here).
"""

import json
import os

import hosttree
from fixtures.qos import trees
from ansiblerun import adhoc, tree_env

STANDINS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "qos_standins")
PORTS = [dict(interface="ens1f0np0", device="mlx5_0", qos=dict(trust="dscp", pfc=[3]),
              ecn=dict(priorities=[3], exclusive=True), tos=dict(tos=106))]


def test_nic_layer_check_apply_repeat(tmp_path):
    root = tmp_path / "host"
    bindir = hosttree.materialize(trees.cx7(), root)
    tools = tmp_path / "tools"
    tools.mkdir()
    os.symlink(os.path.join(STANDINS, "dcb"), str(tools / "dcb"))
    state, log = tmp_path / "dcb.json", tmp_path / "argv.log"
    state.write_text("{}")
    env = dict(tree_env(root, [tools, bindir]), QOS_STANDIN_STATE=str(state), QOS_STANDIN_LOG=str(log))
    args = json.dumps(dict(ports=PORTS))
    script = root / "usr/local/sbin/rdmaops-nic-reapply"

    rc, result = adhoc("rdmaops.roce.nic_layer", args, env, check=True, diff=True)
    assert rc == 0 and result["changed"] is True and not script.exists()
    assert not log.exists() or all("show" in line for line in log.read_text().splitlines())

    rc, result = adhoc("rdmaops.roce.nic_layer", args, env)
    assert rc == 0 and result["changed"] is True, result.get("msg")
    assert result["ports"][0]["qos"]["after"]["pfc"] == [3]
    assert (root / "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos").read_text() == "106\n"
    assert script.exists() and oct(script.stat().st_mode & 0o777) == "0o755"

    rc, result = adhoc("rdmaops.roce.nic_layer", args, env)
    assert rc == 0 and result["changed"] is False and result["changes"] == []
