"""nic_layer: the three QoS engines of every port in one plan, and the boot re-apply generated from them."""

import json
import os
import shutil
import subprocess

import pytest

import hosttree
from fixtures.qos import trees

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import boot
from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import NicLayer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
STANDINS = os.path.join(REPO, "tests", "tools", "qos_standins")

PORT = dict(interface="ens1f0np0", device="mlx5_0", port=1,
            qos=dict(trust="dscp", pfc=[3]),
            ecn=dict(priorities=[3], exclusive=True, cnp_dscp=48, cnp_802p_prio=6),
            tos=dict(tos=106, roce_mode="v2"))


class Module:
    def __init__(self, bindir, env, check_mode=False):
        self.bindir = bindir
        self.env = env
        self.check_mode = check_mode
        self._diff = True

    def get_bin_path(self, tool):
        return shutil.which(tool, path=self.bindir)

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        env = dict(os.environ, **self.env)
        env.update(environ_update or {})
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


class Host:
    """The CX-7 tree with ECN and rdma_cm configfs, and a dcb stand-in that keeps the NIC's DCB state."""

    def __init__(self, tmp_path, **standin_state):
        self.root = tmp_path / "host"
        hosttree.materialize(trees.cx7(), self.root)
        self.bindir = tmp_path / "bin"
        self.bindir.mkdir()
        os.symlink(os.path.join(STANDINS, "dcb"), str(self.bindir / "dcb"))
        self.state = tmp_path / "dcb-state.json"
        self.state.write_text(json.dumps(standin_state))
        self.log = tmp_path / "argv.log"
        self.env = dict(QOS_STANDIN_STATE=str(self.state), QOS_STANDIN_LOG=str(self.log))

    def run(self, check_mode=False, **params):
        module = Module(str(self.bindir), self.env, check_mode)
        ctx = Context(module, host=HostRoot(str(self.root)), runner=CommandRunner(module))
        params.setdefault("ports", [PORT])
        result, _plan = execute(NicLayer(ctx, params), Plan())
        return result, ctx

    def settings(self):
        lines = [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []
        return [" ".join(argv) for argv in lines if "show" not in argv]

    def read(self, path):
        return (self.root / path.lstrip("/")).read_text()


def test_every_part_of_a_port_in_one_plan_then_nothing_to_do(tmp_path):
    host = Host(tmp_path)
    result, ctx = host.run()
    assert result["changed"] is True and ctx.warnings == []
    assert any(change.startswith("ens1f0np0: set trust") for change in result["changes"])
    assert host.read("/sys/class/net/ens1f0np0/ecn/roce_np/enable/2") == "0\n"  # only the RoCE priority
    assert host.read("/sys/class/net/ens1f0np0/ecn/roce_np/enable/3") == "1\n"
    assert host.read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "106\n"
    port = result["ports"][0]
    assert (port["qos"]["after"]["trust"], port["qos"]["after"]["pfc"]) == ("dscp", [3])
    assert result["boot_reapply"] == [boot.SCRIPT_PATH, boot.UNIT_PATH, boot.RULES_PATH]
    script = host.read(boot.SCRIPT_PATH)
    assert "dcb pfc set dev ens1f0np0 prio-pfc" in script
    assert "write /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos 106" in script
    assert "write /sys/class/net/ens1f0np0/ecn/roce_rp/enable/3 1" in script
    written = host.settings()
    again, _ctx = host.run()
    assert again["changed"] is False and again["changes"] == [] and host.settings() == written
    assert again["disruption"] == "none"


def test_check_mode_predicts_and_touches_nothing(tmp_path):
    host = Host(tmp_path)
    result, _ctx = host.run(check_mode=True)
    assert result["changed"] is True and host.settings() == []
    # trust and PFC break the port's RDMA connections: the host's run is a link reset
    assert result["disruption"] == "link_reset"
    assert any(line.startswith("link_reset: ens1f0np0: set trust") for line in result["disruptive_changes"])
    assert any(line.startswith("link_reset: ens1f0np0: set pfc") for line in result["disruptive_changes"])
    # the ToS, ECN and the boot re-apply change in place: not listed as disruptive
    assert not any("default_roce_tos" in line or "/ecn/" in line for line in result["disruptive_changes"])
    assert host.read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "0\n"
    assert not (host.root / boot.SCRIPT_PATH.lstrip("/")).exists()


def test_a_netdev_without_dcb_is_reported_once_and_the_rest_applies(tmp_path):
    host = Host(tmp_path, unsupported=True)
    result, ctx = host.run()
    assert len(ctx.warnings) == 1 and ctx.warnings[0].startswith("trust, PFC and ETS not applied on ens1f0np0")
    assert "no DCB support" in ctx.warnings[0]
    assert list(result["unsupported"]["qos"]) == ["ens1f0np0"]
    assert host.read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "106\n"
    assert "dcb" not in host.read(boot.SCRIPT_PATH)  # what cannot apply is not re-applied at boot


def test_unsupported_fail_fails_before_anything_changes(tmp_path):
    host = Host(tmp_path, unsupported=True)
    with pytest.raises(Exception) as info:
        host.run(unsupported="fail")
    assert "no DCB support" in str(info.value)
    assert host.read("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "0\n"


def test_the_generated_script_puts_everything_back_after_a_reboot(tmp_path):
    host = Host(tmp_path)
    host.run()
    # "reboot": the NIC forgets its DCB state, ECN and rdma_cm values go back to the defaults
    host.state.write_text(json.dumps({}))
    host.run(boot_reapply=False, ports=[dict(PORT, qos=dict(trust="pcp", pfc=[]), ecn=dict(priorities=list(range(8))),
                                             tos=dict(tos=0))])
    env = dict(os.environ, RDMAOPS_HOST_ROOT=str(host.root), PATH="%s:%s" % (host.bindir, os.environ["PATH"]), **host.env)
    proc = subprocess.run(["sh", str(host.root / boot.SCRIPT_PATH.lstrip("/")), "mlx5_0"], env=env, check=False,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    after, _ctx = host.run()
    assert after["changed"] is False, after["changes"]


def test_ports_must_name_interface_and_device(tmp_path):
    host = Host(tmp_path)
    with pytest.raises(InputError):
        host.run(ports=[dict(interface="ens1f0np0")])
    # the name reaches the boot re-apply script and the parts' commands
    for name in ("ens1f0np0;reboot", "$(reboot)", "ens1f0np0\n"):
        with pytest.raises(InputError) as caught:
            host.run(ports=[dict(PORT, interface=name)])
        assert caught.value.details["option"] == "ports[0].interface", caught.value.msg
        assert not (host.root / "usr/local/sbin/rdmaops-nic-reapply").exists() and host.settings() == []
    with pytest.raises(InputError):
        host.run(ports=[])


def test_a_driver_without_the_ecn_tree_is_said_once_for_every_port(tmp_path):
    root = tmp_path / "host"
    hosttree.materialize(trees.cx7(ecn=False), root)
    module = Module(str(tmp_path), {})
    ctx = Context(module, host=HostRoot(str(root)), runner=CommandRunner(module))
    ecn = dict(priorities=[3], exclusive=True)
    ports = [dict(interface="ens1f0np0", device="mlx5_0", ecn=ecn, tos=dict(tos=106)),
             dict(interface="ens1f1np1", device="mlx5_1", ecn=ecn)]
    result, _plan = execute(NicLayer(ctx, dict(ports=ports, boot_reapply=False)), Plan())
    assert len(ctx.warnings) == 1, ctx.warnings
    assert ctx.warnings[0].startswith("ECN on ens1f0np0, ens1f1np1: not applied at runtime (priorities): ens1f0np0 has no ECN")
    assert sorted(result["unsupported"]["ecn"]) == ["ens1f0np0", "ens1f1np1"]
    assert "ens1f1np1 has no ECN sysfs tree" in result["unsupported"]["ecn"]["ens1f1np1"]
