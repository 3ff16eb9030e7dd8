"""nic_qos engine: validation, planning per state, command sequences against the recorded-format
stand-ins (tests/tools/qos_standins), and the real iproute2 dcb's answer for a netdev without DCB."""

import json
import os
import shutil
import subprocess
import uuid

import pytest

import hosttree
from fixtures.hosts import cx7_doca
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError, Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import nic_qos
from ansible_collections.rdmaops.roce.plugins.module_utils._qos.nic_qos import DcbUnsupported, NicQos

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
STANDINS = os.path.join(REPO, "tests", "tools", "qos_standins")
FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures", "tools", "mlnx_qos")


class Module:
    """What CommandRunner needs from AnsibleModule: tools from ``path`` only."""

    def __init__(self, path, env, check_mode=False):
        self.path = path
        self.env = env
        self.check_mode = check_mode

    def get_bin_path(self, tool):
        return shutil.which(tool, path=self.path)

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        env = dict(os.environ, **self.env)
        env.update(environ_update or {})
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


class Rig:
    def __init__(self, tmp_path, tools=("dcb", "mlnx_qos"), **state):
        self.root = tmp_path / "host"
        hosttree.materialize(cx7_doca.manifest(), self.root)
        self.bindir = tmp_path / "bin"
        self.bindir.mkdir()
        for tool in tools:
            os.symlink(os.path.join(STANDINS, tool), str(self.bindir / tool))
        self.state_file = tmp_path / "state.json"
        self.log = tmp_path / "argv.log"
        self.state_file.write_text(json.dumps(state))
        self.env = dict(QOS_STANDIN_STATE=str(self.state_file), QOS_STANDIN_LOG=str(self.log))

    def run(self, check_mode=False, **params):
        module = Module(str(self.bindir), self.env, check_mode)
        ctx = Context(module, host=HostRoot(str(self.root)), runner=CommandRunner(module))
        params.setdefault("interface", "ens1f0np0")
        engine = NicQos(ctx, params)
        result, _plan = execute(engine, Plan())
        return result

    def argv(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def setting(self):
        """The logged commands that are not reads."""
        return [" ".join(a) for a in self.argv() if not (a[0] == "dcb" and "show" in a)
                and not (a[0] == "mlnx_qos" and len(a) <= 4 and all(x in ("-i", "-a", a[2]) for x in a[1:]))]

    def state(self):
        return json.loads(self.state_file.read_text())


PFC3_DCB = "dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"
TRUST_DCB = "dcb app add dev ens1f0np0 dscp-prio " + " ".join("%d:%d" % (d, d >> 3) for d in range(64))


# -- validation -------------------------------------------------------------------------------------
@pytest.mark.parametrize("params,option", [
    (dict(interface="-r"), "interface"),
    (dict(interface="eth0:1"), "interface"),
    (dict(interface="../x"), "interface"),
    (dict(interface="e", pfc=[8]), "pfc"),
    (dict(interface="e", pfc="3"), "pfc"),
    (dict(interface="e", trust="pcp", dscp2prio={26: 3}), "dscp2prio"),
    (dict(interface="e", dscp2prio={64: 3}), "dscp2prio"),
    (dict(interface="e", dscp2prio=[[26, 3], [26, 4]]), "dscp2prio"),
    (dict(interface="e", prio_tc=[0, 1]), "prio_tc"),
    (dict(interface="e", ets=dict(tsa=["ets"] * 8, bw=[10] * 8)), "ets"),
    (dict(interface="e", ets=dict(tsa=["strict"] * 7 + ["ets"], bw=[10] + [0] * 6 + [90])), "ets"),
    (dict(interface="e", cable_len=1000), "cable_len"),
    (dict(interface="e", backend="lldptool"), "backend"),
])
def test_bad_input_refused_naming_the_option(params, option):
    with pytest.raises(InputError) as info:
        nic_qos.normalize(params)
    assert info.value.details["option"] == option


def test_dscp2prio_forms():
    assert nic_qos.normalize(dict(interface="e", dscp2prio={"26": "3", 48: 6}))["dscp2prio"] == {26: 3, 48: 6}
    assert nic_qos.normalize(dict(interface="e", dscp2prio=[[26, 3], "48:6"]))["dscp2prio"] == {26: 3, 48: 6}
    assert nic_qos.normalize(dict(interface="e", pfc=[3, "3", 1]))["pfc"] == [1, 3]


# -- reapply (boot) --------------------------------------------------------------------------------
def test_reapply_commands_dcb_and_mlnx_qos():
    desired = dict(interface="ens1f0np0", trust="dscp", pfc=[3], cable_len=30)
    assert nic_qos.reapply_commands(desired) == [
        ["dcb", "app", "replace", "dev", "ens1f0np0", "dscp-prio"] + ["%d:%d" % (d, d >> 3) for d in range(64)],
        PFC3_DCB.split(),
        ["dcb", "pfc", "set", "dev", "ens1f0np0", "delay", "30"],
    ]
    assert nic_qos.reapply_commands(dict(desired, dscp2prio={26: 3}), backend="mlnx_qos") == [
        ["mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp"],
        ["mlnx_qos", "-i", "ens1f0np0", "--dscp2prio", "set,26,3"],
        ["mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,1,0,0,0,0"],
        ["mlnx_qos", "-i", "ens1f0np0", "--cable_len", "30"],
    ]
    with pytest.raises(InputError):
        nic_qos.reapply_commands(dict(interface="-x", pfc=[3]))


@pytest.mark.parametrize("backend", ["dcb", "mlnx_qos"])
def test_reapply_twice_gives_the_same_state(tmp_path, backend):
    rig = Rig(tmp_path)
    ets = dict(tsa=["ets", "strict", "strict", "ets"] + ["strict"] * 4, bw=[50, 0, 0, 50, 0, 0, 0, 0])
    desired = dict(interface="ens1f0np0", trust="dscp", dscp2prio={26: 3, 48: 6}, pfc=[3],
                   prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], ets=ets, cable_len=30,
                   buffer_size=[130944, 130944, 0, 0, 0, 0, 0, 0], prio2buffer=[0, 0, 0, 1, 0, 0, 0, 0])
    env = dict(os.environ, **rig.env)
    for _round in range(2):
        for argv in nic_qos.reapply_commands(desired, backend=backend):
            subprocess.run([str(rig.bindir / argv[0])] + argv[1:], env=env, check=True, capture_output=True)
        if _round == 0:
            first = rig.state()
    assert rig.state() == first

    # the boot re-apply ends where a module run from the same (PCP, empty) start ends
    fresh = Rig(tmp_path / "fresh")
    fresh.run(backend=backend, **dict((k, v) for k, v in desired.items() if k != "interface"))

    def table_order_aside(state):  # the stand-in keeps app entries in the order they were added
        return dict(state, app=sorted(map(tuple, state.get("app", []))))

    assert table_order_aside(rig.state()) == table_order_aside(fresh.state())
    # and a module run afterwards finds nothing to do
    assert rig.run(backend=backend, **dict((k, v) for k, v in desired.items() if k != "interface"))["changed"] is False


def test_standin_reproduces_the_recorded_mlnx_qos_outputs(tmp_path):
    rig = Rig(tmp_path, app=[[d, d >> 3] for d in range(64)], pfc=[False, False, False, True] + [False] * 4,
              buffer_size=[130944, 130944, 0, 0, 0, 0, 0, 0], prio2buffer=[0, 0, 0, 1, 0, 0, 0, 0])
    env = dict(os.environ, **rig.env)
    out = subprocess.run(check=False, args=[str(rig.bindir / "mlnx_qos"), "-i", "ens1f0np0"], env=env, capture_output=True, text=True)
    with open(os.path.join(FIXTURES, "current-a-trust-dscp-pfc3.txt")) as handle:
        assert out.stdout == handle.read()
    rig.state_file.write_text("{}")
    out = subprocess.run(check=False, args=[str(rig.bindir / "mlnx_qos"), "-i", "ens1f0np0"], env=env, capture_output=True, text=True)
    with open(os.path.join(FIXTURES, "current-c-boot-defaults.txt")) as handle:
        assert out.stdout == handle.read()


# -- command sequences per state -------------------------------------------------------------------
def test_dcb_from_boot_defaults_then_repeat_runs_nothing(tmp_path):
    rig = Rig(tmp_path)
    check = rig.run(check_mode=True, trust="dscp", pfc=[3])
    assert check["changed"] is True and check["backend"] == "dcb" and check["driver"] == "mlx5_core"
    assert check["commands"] == [TRUST_DCB, PFC3_DCB]
    assert check["before"] == dict(trust="pcp", pfc=[], dscp2prio={}, cable_len=7)
    assert check["after"]["trust"] == "dscp" and check["after"]["pfc"] == [3]
    assert rig.setting() == []  # check mode ran no setting command

    result = rig.run(trust="dscp", pfc=[3])
    assert result["changed"] is True and result["commands"] == [TRUST_DCB, PFC3_DCB]
    assert rig.setting() == [TRUST_DCB, PFC3_DCB]
    assert result["after"]["trust"] == "dscp" and result["after"]["pfc"] == [3]
    assert result["after"]["dscp2prio"][26] == 3

    before = len(rig.argv())
    again = rig.run(trust="dscp", pfc=[3])
    assert again["changed"] is False and again["commands"] == [] and again["changes"] == []
    assert all("show" in argv for argv in rig.argv()[before:])


def test_only_the_differing_part_is_written(tmp_path):
    rig = Rig(tmp_path, app=[[d, d >> 3] for d in range(64)], pfc=[False] * 8)
    result = rig.run(trust="dscp", pfc=[3], cable_len=7)
    assert result["commands"] == [PFC3_DCB]
    assert rig.setting() == [PFC3_DCB]
    # PFC already right, one DSCP entry differs: only that entry is written, nothing else
    result = rig.run(trust="dscp", pfc=[3], dscp2prio={26: 5, 27: 3})
    assert result["commands"] == ["dcb app add dev ens1f0np0 dscp-prio 26:5"]
    assert result["changes"] == ["ens1f0np0: set DSCP->priority 26:5"]


def test_mlnx_qos_backend_sequences(tmp_path):
    rig = Rig(tmp_path, tools=("mlnx_qos",))
    result = rig.run(trust="dscp", pfc=[3], prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], cable_len=30)
    assert result["backend"] == "mlnx_qos"
    assert result["commands"] == [
        "mlnx_qos -i ens1f0np0 -p 0,0,0,3,0,0,6,0",
        "mlnx_qos -i ens1f0np0 --trust dscp",
        "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0",
        "mlnx_qos -i ens1f0np0 --cable_len 30",
    ]
    assert result["after"] == dict(trust="dscp", pfc=[3], dscp2prio=dict((d, d >> 3) for d in range(64)), cable_len=30,
                                   prio_tc=[0, 0, 0, 3, 0, 0, 6, 0])
    again = rig.run(trust="dscp", pfc=[3], prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], cable_len=30)
    assert again["changed"] is False and again["commands"] == []
    # trust and dscp2prio never share one mlnx_qos call (the tool refuses that)
    result = rig.run(trust="pcp")
    assert result["commands"] == ["mlnx_qos -i ens1f0np0 --trust pcp"]
    result = rig.run(trust="dscp", dscp2prio={26: 3, 48: 6})
    assert result["commands"] == ["mlnx_qos -i ens1f0np0 --trust dscp"]  # both already default entries
    result = rig.run(dscp2prio={26: 4})
    assert result["commands"] == ["mlnx_qos -i ens1f0np0 --dscp2prio set,26,4"]


def test_ets_with_mlnx_qos_is_read_with_all_tcs(tmp_path):
    rig = Rig(tmp_path, tools=("mlnx_qos",))
    ets = dict(tsa=["ets", "strict", "strict", "ets", "strict", "strict", "strict", "strict"], bw=[50, 0, 0, 50, 0, 0, 0, 0])
    result = rig.run(ets=ets)
    assert result["commands"] == ["mlnx_qos -i ens1f0np0 -s ets,strict,strict,ets,strict,strict,strict,strict "
                                  "-t 50,0,0,50,0,0,0,0"]
    assert ["mlnx_qos", "-i", "ens1f0np0", "-a"] in rig.argv()
    assert rig.run(ets=ets)["changed"] is False


def test_failure_rolls_back_with_the_old_values(tmp_path):
    rig = Rig(tmp_path, fail=["dcb pfc set dev ens1f0np0 delay"])
    with pytest.raises(ApplyError) as info:
        rig.run(trust="dscp", pfc=[3], cable_len=30)
    assert info.value.details["rolled_back"] == ["ens1f0np0: set pfc from [] to [3]", "ens1f0np0: set trust from pcp to dscp"]
    assert info.value.applied == []
    state = rig.state()
    assert state["app"] == [] and state["pfc"] == [False] * 8


def test_buffers_not_reported_are_refused_before_anything(tmp_path):
    rig = Rig(tmp_path, buffer_size=None, prio2buffer=None)
    with pytest.raises(RdmaopsError) as info:
        rig.run(pfc=[3], prio2buffer=[0, 0, 0, 1, 0, 0, 0, 0])
    assert "does not report prio2buffer" in info.value.msg
    assert rig.setting() == []


def test_driver_without_dcb_is_named(tmp_path):
    rig = Rig(tmp_path, iface="eno1", unsupported=True)
    with pytest.raises(DcbUnsupported) as info:
        rig.run(interface="eno1", trust="dscp")
    assert "its driver igb has no DCB support" in info.value.msg and info.value.details["driver"] == "igb"
    assert rig.setting() == []


def test_no_tool_and_missing_interface(tmp_path):
    rig = Rig(tmp_path, tools=())
    with pytest.raises(RdmaopsError) as info:
        rig.run(pfc=[3])
    assert "neither dcb" in info.value.msg
    with pytest.raises(InputError):
        rig.run(interface="ens9", pfc=[3])


def test_several_interfaces_plan_into_one_plan(tmp_path):
    rig = Rig(tmp_path)
    module = Module(str(rig.bindir), rig.env, check_mode=True)
    ctx = Context(module, host=HostRoot(str(rig.root)), runner=CommandRunner(module))
    plan = Plan()
    for params in (dict(interface="ens1f0np0", pfc=[3]), dict(interface="ens1f0np0", trust="dscp")):
        execute(NicQos(ctx, params), plan)
    assert [change.key for change in plan] == ["ens1f0np0 pfc", "ens1f0np0 trust"]


# -- the real iproute2 dcb on a netdev without DCB ops ----------------------------------------------
REAL_DCB = shutil.which("dcb", path="/usr/sbin:/sbin:/usr/bin:/bin")


@pytest.fixture
def netns():
    if REAL_DCB is None or shutil.which("ip") is None:
        pytest.skip("iproute2 dcb/ip not installed")
    name = "rdmaops-qos-%s" % uuid.uuid4().hex[:8]
    if subprocess.run(check=False, args=["ip", "netns", "add", name], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here (needs root / CAP_SYS_ADMIN)")
    try:
        made = subprocess.run(check=False, args=["ip", "-n", name, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                              capture_output=True)
        if made.returncode != 0:
            pytest.skip("cannot create a veth pair in a namespace: %s" % made.stderr)
        yield name
    finally:
        subprocess.run(check=False, args=["ip", "netns", "del", name], capture_output=True)


def test_real_dcb_operation_not_supported_names_the_driver(tmp_path, netns):
    # The real dcb, run in the namespace holding v0 (a veth: no DCB ops, like the lab's virtio NICs);
    # the host tree says the netdev's driver is virtio_net.
    root = tmp_path / "host"
    (root / "sys/bus/pci/drivers/virtio_net").mkdir(parents=True)
    (root / "sys/class/net/v0/device").mkdir(parents=True)
    os.symlink(str(root / "sys/bus/pci/drivers/virtio_net"), str(root / "sys/class/net/v0/device/driver"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "dcb"
    wrapper.write_text("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n" % (netns, REAL_DCB))
    wrapper.chmod(0o755)
    module = Module(str(bindir), {})
    ctx = Context(module, host=HostRoot(str(root)), runner=CommandRunner(module))
    with pytest.raises(DcbUnsupported) as info:
        execute(NicQos(ctx, dict(interface="v0", trust="dscp", pfc=[3])), Plan())
    msg = info.value.msg
    assert "its driver virtio_net has no DCB support" in msg
    assert "dcb answered: Attribute read: Operation not supported" in msg
    assert ctx.runner.commands == ["dcb -j pfc show dev v0"]
