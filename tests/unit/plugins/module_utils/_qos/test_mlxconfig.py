"""The mlxconfig engine: validation, planning on before/after pairs, and runs against the stand-ins
(tests/tools/mlxconfig_standins) seeded with the composed ConnectX-7 ``-e q`` output."""

import json

import pytest

import hosttree
import mlxcfgsim
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError, Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import mlxconfig
from fixtures.hosts import cx7_doca

FakeModule = mlxcfgsim.FakeModule
DEV = "0000:3d:00.0"


@pytest.fixture
def standin(tmp_path):
    tree = tmp_path / "host"
    hosttree.materialize(cx7_doca.manifest(), str(tree))
    env = mlxcfgsim.environment(tmp_path)

    def run(params, check_mode=False, tools=("mlxconfig", "mstconfig"), plan=None):
        params = dict(dict(device=DEV, tool="auto"), **params)
        module = FakeModule(params, env, tools=tools, check_mode=check_mode)
        ctx = Context(module, host=HostRoot(str(tree)))
        engine = mlxconfig.MlxconfigEngine(ctx, params)
        result, _plan = execute(engine, plan)
        return result

    def argv_log():
        path = tmp_path / "argv.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def reboot():
        mlxcfgsim.reboot(env)

    run.argv_log = argv_log
    run.reboot = reboot
    run.tree = tree
    return run


# -- validation: nothing is run --------------------------------------------------------------------
@pytest.mark.parametrize("device", ["3b:00.0\n", "-d", "--help", "0000:3b:00.8", "/dev/mst/../sda", "/dev/sda",
                                    "3b:00.0 q", "", None])
def test_bad_devices_are_refused(device):
    with pytest.raises(InputError) as info:
        mlxconfig.validate_params(dict(device=device, settings={"NUM_OF_VFS": 1}))
    assert info.value.details["option"] == "device"


@pytest.mark.parametrize("device", ["0000:3b:00.0", "3b:00.0", "/dev/mst/mt4129_pciconf0", "/dev/mst/mt4129_pciconf0.1",
                                    "/dev/fwctl/fwctl0"])
def test_good_devices(device):
    assert mlxconfig.validate_params(dict(device=device, settings={"NUM_OF_VFS": 1}))[0] == device


@pytest.mark.parametrize("key", ["num_of_vfs", "NUM_OF_VFS\n", "-y", "A=B", "NUM OF", "X[1]]", ""])
def test_bad_keys_are_refused(key):
    with pytest.raises(InputError):
        mlxconfig.validate_params(dict(device=DEV, settings={key: 1}))


@pytest.mark.parametrize("value", [-1, "-1", "--yes", "1 2", "ETH=2", "a\n", 2 ** 32, 1.5, None, [1]])
def test_bad_values_are_refused(value):
    with pytest.raises(InputError):
        mlxconfig.validate_params(dict(device=DEV, settings={"NUM_OF_VFS": value}))


def test_value_forms():
    wanted = mlxconfig.validate_params(dict(device=DEV, settings={
        "A": True, "B": 8, "C": "16", "D": "0x10", "E": "ETH", "F": "ETH(2)", "G": False}))[2]
    assert wanted == {"A": ("number", 1), "B": ("number", 8), "C": ("number", 16), "D": ("number", 16),
                      "E": ("name", "ETH"), "F": ("number", 2), "G": ("number", 0)}


def test_mstconfig_needs_a_pci_address():
    with pytest.raises(InputError) as info:
        mlxconfig.validate_params(dict(device="/dev/mst/mt4129_pciconf0", tool="mstconfig", settings={"A": 1}))
    assert "PCI address" in info.value.msg


def test_reapply_steps_are_none_and_validated():
    assert mlxconfig.reapply_steps(dict(device=DEV, settings={"CNP_DSCP_P1": 48})) == []
    with pytest.raises(InputError):
        mlxconfig.reapply_commands(dict(device="-x", settings={"CNP_DSCP_P1": 48}))


# -- planning and applying against the stand-in ----------------------------------------------------
def test_only_differences_are_set_in_one_call(standin):
    result = standin(dict(settings={"ROCE_CC_PRIO_MASK_P1": 8, "CNP_DSCP_P1": 48, "SRIOV_EN": True,
                                    "NUM_OF_VFS": 4, "LINK_TYPE_P1": "ETH"}))
    assert result["changed"] is True
    sets = [argv for argv in standin.argv_log() if "set" in argv]
    assert sets == [["mlxconfig", "-d", DEV, "-y", "set", "ROCE_CC_PRIO_MASK_P1=8", "SRIOV_EN=1", "NUM_OF_VFS=4"]]
    assert result["before"]["SRIOV_EN"] == dict(default="False(0)", current="False(0)", next_boot="False(0)")
    assert result["after"]["SRIOV_EN"] == dict(default="False(0)", current="False(0)", next_boot="True(1)")
    assert result["after"]["CNP_DSCP_P1"]["next_boot"] == "48"
    assert result["reboot_required"] is True
    assert result["pending"] == ["NUM_OF_VFS", "ROCE_CC_PRIO_MASK_P1", "SRIOV_EN"]
    assert result["changes"] == ["mlxconfig set on %s for the next boot: ROCE_CC_PRIO_MASK_P1 255 -> 8, "
                                 "SRIOV_EN False(0) -> 1, NUM_OF_VFS 0 -> 4" % DEV]
    assert result["commands"] == ["mlxconfig -d %s -e q" % DEV,
                                  "mlxconfig -d %s -y set ROCE_CC_PRIO_MASK_P1=8 SRIOV_EN=1 NUM_OF_VFS=4" % DEV,
                                  "mlxconfig -d %s -e q" % DEV]

    again = standin(dict(settings={"ROCE_CC_PRIO_MASK_P1": 8, "SRIOV_EN": "True", "NUM_OF_VFS": "4"}))
    assert again["changed"] is False and again["changes"] == []
    assert again["reboot_required"] is True  # set, not active until a reboot
    standin.reboot()
    after_boot = standin(dict(settings={"ROCE_CC_PRIO_MASK_P1": 8, "SRIOV_EN": True, "NUM_OF_VFS": 4}))
    assert after_boot["changed"] is False and after_boot["reboot_required"] is False
    assert after_boot["before"]["SRIOV_EN"]["current"] == "True(1)"


def test_check_mode_runs_no_set_and_predicts(standin):
    result = standin(dict(settings={"LINK_TYPE_P1": "IB"}), check_mode=True)
    assert result["changed"] is True
    assert all("set" not in argv for argv in standin.argv_log())
    assert result["after"]["LINK_TYPE_P1"]["next_boot"] == "IB"
    assert result["reboot_required"] is True
    assert result["disruption"] == "reboot"
    assert result["commands"] == ["mlxconfig -d %s -e q" % DEV]


def test_unknown_key_is_refused_before_anything_is_set(standin):
    with pytest.raises(InputError) as info:
        standin(dict(settings={"NUM_OF_VFS": 4, "LINK_TYPE_P3": "ETH"}))
    assert info.value.details["unknown"] == ["LINK_TYPE_P3"]
    assert "LINK_TYPE_P3" in info.value.msg and "nothing was set" in info.value.msg
    assert all("set" not in argv for argv in standin.argv_log())


def test_array_parameter_itself_is_refused(standin):
    with pytest.raises(InputError) as info:
        standin(dict(settings={"PCI_DOWNSTREAM_PORT_OWNER": 1}))
    assert "PCI_DOWNSTREAM_PORT_OWNER[0]" in info.value.msg


def test_mstconfig_when_mft_is_missing(standin):
    result = standin(dict(device="3d:00.0", settings={"CNP_DSCP_P1": 24}), tools=("mstconfig",))
    assert result["tool"] == "mstconfig"
    assert ["mstconfig", "-d", "3d:00.0", "-y", "set", "CNP_DSCP_P1=24"] in standin.argv_log()


def test_no_tool_at_all(standin):
    with pytest.raises(RdmaopsError) as info:
        standin(dict(settings={"CNP_DSCP_P1": 24}), tools=())
    assert "mstflint" in info.value.msg


def test_a_pci_function_that_is_not_a_nic(standin):
    with pytest.raises(InputError) as info:
        standin(dict(device="0000:3e:00.0", settings={"CNP_DSCP_P1": 24}))  # the H100 of the tree
    assert "0x10de" in info.value.msg
    with pytest.raises(InputError):
        standin(dict(device="0000:99:00.0", settings={"CNP_DSCP_P1": 24}))
    assert standin.argv_log() == []


def test_enum_value_that_the_firmware_rejects_fails_truthfully(standin):
    with pytest.raises(ApplyError) as info:
        standin(dict(settings={"LINK_TYPE_P1": "FOO"}))
    assert info.value.applied == []


def test_undo_sets_the_old_next_boot_values_again(standin):
    """In an aggregate plan, a later failure rolls the firmware values back."""
    def boom():
        raise RdmaopsError("later change failed")

    class Later(Plan):
        def apply(self, check_mode=False):
            self.add("later", 0, 1, boom, "a later change")  # planned by the next engine
            return Plan.apply(self, check_mode)

    plan = Later()
    with pytest.raises(ApplyError) as info:
        standin(dict(settings={"CNP_DSCP_P1": 24, "SRIOV_EN": True}), plan=plan)
    assert info.value.details["rolled_back"] == [
        "mlxconfig set on %s for the next boot: CNP_DSCP_P1 48 -> 24, SRIOV_EN False(0) -> 1" % DEV]
    sets = [argv[5:] for argv in standin.argv_log() if "set" in argv]
    assert sets == [["CNP_DSCP_P1=24", "SRIOV_EN=1"], ["CNP_DSCP_P1=48", "SRIOV_EN=0"]]
