"""The firmware layer: intent-derived NV values on every ConnectX card of a host, run against the
mlxconfig stand-ins (tests/tools/mlxconfig_standins) seeded with the composed ConnectX-7 ``-e q``
output, over the recorded sysfs tree of a DOCA host (tests/unit/fixtures/hosts/cx7_doca.py).

No ConnectX exists on the project's machines or in the VM lab: the stand-ins print what the
tools print (mstflint's formatter) and keep Default/Current/Next Boot in a state file;
``_standin_reboot`` makes Next Boot the Current values, as a firmware reload does."""

import json

import pytest
from hypothesis import given, settings as hsettings, strategies as st

import hosttree
import mlxcfgsim
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._firmware import layer
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.mlxconfig import parse_query
from fixtures.hosts import cx7_doca

SEED, FakeModule = mlxcfgsim.SEED, mlxcfgsim.FakeModule
DEV = "0000:3d:00.0"
INTENT = dict(cnp_dscp=48, cnp_priority=6, ecn_priorities=[3])


def _dual_port_state(path):
    """The composed ConnectX-7 with the _P2 congestion-control rows a dual-port card lists."""
    with open(SEED) as handle:
        parsed = parse_query(handle.read())
    params = []
    for name in parsed["order"]:
        entry = parsed["params"][name]
        params.append([name, entry["default"]["text"], entry["current"]["text"], entry["next_boot"]["text"]])
        if name.endswith("_P1") and name.startswith(("CNP_", "ROCE_CC_PRIO_MASK")):
            params.append([name[:-1] + "2", entry["default"]["text"], entry["current"]["text"], entry["next_boot"]["text"]])
    device = dict(type="ConnectX7", name=None, description=None, device=DEV, params=params)
    path.write_text(json.dumps(device))


@pytest.fixture
def host(tmp_path):
    tree = tmp_path / "host"
    hosttree.materialize(cx7_doca.manifest(), str(tree))
    env = mlxcfgsim.environment(tmp_path)
    boot = tree / "proc" / "sys" / "kernel" / "random"
    boot.mkdir(parents=True)

    def set_boot(boot_id):
        (boot / "boot_id").write_text(boot_id + "\n")

    set_boot("boot-1")

    def run(params, check_mode=False, tools=("mlxconfig", "mstconfig"), root=None):
        params = dict(dict(intent=INTENT, settings={}, extra={}, devices=[], tool="auto", check_active=True), **params)
        module = FakeModule(params, env, tools=tools, check_mode=check_mode)
        ctx = Context(module, host=HostRoot(str(root or tree)))
        result, _plan = execute(layer.FirmwareLayer(ctx, params))
        result["warnings"] = list(ctx.warnings)
        return result

    def sets():
        path = tmp_path / "argv.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [argv for argv in (json.loads(line) for line in lines) if "set" in argv]

    def reboot(boot_id):
        """A reboot that reloads the firmware: Next Boot becomes Current, a new boot id."""
        mlxcfgsim.reboot(env)
        set_boot(boot_id)

    run.sets = sets
    run.reboot = reboot
    run.set_boot = set_boot
    run.tree = tree
    run.state = tmp_path / "state.json"
    return run


# -- validation: nothing runs -----------------------------------------------------------------------
def test_intent_values_are_derived():
    assert layer.check_intent(INTENT) == {"CNP_DSCP": 48, "CNP_802P_PRIO": 6, "ROCE_CC_PRIO_MASK": 8}
    assert layer.check_intent(dict(INTENT, ecn_priorities=[3, 4]))["ROCE_CC_PRIO_MASK"] == 24
    # the whole resolved intent is accepted; only its three keys are used
    assert layer.check_intent(dict(INTENT, roce_dscp=26, host_mtu=9000))["CNP_DSCP"] == 48


@pytest.mark.parametrize("intent", [dict(cnp_dscp=64), dict(cnp_dscp=True), dict(cnp_priority=8), dict(cnp_priority="6"),
                                    dict(ecn_priorities=[]), dict(ecn_priorities=[8]), dict(ecn_priorities="3"), [3]])
def test_bad_intent_is_refused(intent):
    with pytest.raises(InputError) as info:
        layer.check_intent(intent)
    assert info.value.details["option"] == "intent"


def test_a_key_outside_the_allow_list_is_refused_naming_it(host):
    with pytest.raises(InputError) as info:
        host(dict(settings={"ATS_ENABLED": True, "MEMIC_BAR_SIZE": 1}))
    assert "MEMIC_BAR_SIZE" in info.value.msg and "extra" in info.value.msg
    assert info.value.details["key"] == "MEMIC_BAR_SIZE"
    assert host.sets() == []


@pytest.mark.parametrize("option", ["settings", "extra"])
def test_a_derived_key_cannot_be_set_by_hand(host, option):
    with pytest.raises(InputError) as info:
        host({option: {"CNP_DSCP_P2": 24}})
    assert "roce_fabric.cnp_dscp" in info.value.msg and "CNP_DSCP_P2" in info.value.msg


@given(key=st.text(max_size=20), value=st.one_of(st.text(max_size=12), st.integers(), st.booleans(), st.none(), st.floats()))
@hsettings(max_examples=200, deadline=None)
def test_hostile_keys_and_values_never_raise_anything_but_input_errors(key, value):
    for option in ("settings", "extra"):
        try:
            layer.validate_params({option: {key: value}})
        except InputError as exc:
            assert "Traceback" not in exc.msg and "<class" not in exc.msg


# -- against the stand-ins ----------------------------------------------------------------------------
def test_intent_sets_only_what_differs_then_reboot_makes_it_current(host):
    result = host({})
    assert result["changed"] is True and result["no_device"] is False
    assert result["disruption"] == "reboot"
    # CNP DSCP 48 and priority 6 are the firmware's defaults already; the mask goes from 255 to priority 3's bit
    assert host.sets() == [["mlxconfig", "-d", DEV, "-y", "set", "ROCE_CC_PRIO_MASK_P1=8"]]
    assert result["reboot_required"] is True
    assert result["reboot_pending"] == ["%s ROCE_CC_PRIO_MASK_P1" % DEV]
    assert result["devices"][DEV]["after"]["ROCE_CC_PRIO_MASK_P1"] == dict(default="255", current="255", next_boot="8")
    marker = json.loads((host.tree / "var/lib/rdmaops/firmware-next-boot.json").read_text())
    assert marker == {"devices": {DEV: {"boot_id": "boot-1", "values": {"ROCE_CC_PRIO_MASK_P1": "8"}}}}

    again = host({})
    assert again["changed"] is False and host.sets() == [["mlxconfig", "-d", DEV, "-y", "set", "ROCE_CC_PRIO_MASK_P1=8"]]
    assert again["reboot_required"] is True

    host.reboot("boot-2")
    after = host({})
    assert after["changed"] is False and after["reboot_required"] is False and after["reboot_pending"] == []
    assert after["devices"][DEV]["before"]["ROCE_CC_PRIO_MASK_P1"]["current"] == "8"


def test_dual_port_card_gets_both_ports(host):
    _dual_port_state(host.state)
    result = host(dict(intent=dict(cnp_dscp=46, cnp_priority=6, ecn_priorities=[3])))
    assert host.sets() == [["mlxconfig", "-d", DEV, "-y", "set", "CNP_DSCP_P1=46", "CNP_DSCP_P2=46",
                            "ROCE_CC_PRIO_MASK_P1=8", "ROCE_CC_PRIO_MASK_P2=8"]]
    assert sorted(result["devices"][DEV]["after"]) == ["CNP_802P_PRIO_P1", "CNP_802P_PRIO_P2", "CNP_DSCP_P1",
                                                       "CNP_DSCP_P2", "ROCE_CC_PRIO_MASK_P1", "ROCE_CC_PRIO_MASK_P2"]


def test_user_keys_per_port_and_raw(host):
    result = host(dict(settings={"ATS_ENABLED": True, "LINK_TYPE": "ETH", "KEEP_ETH_LINK_UP_P1": False},
                       extra={"MEMIC_BAR_SIZE": 1}))
    assert host.sets() == [["mlxconfig", "-d", DEV, "-y", "set", "ROCE_CC_PRIO_MASK_P1=8", "ATS_ENABLED=1",
                            "KEEP_ETH_LINK_UP_P1=0", "MEMIC_BAR_SIZE=1"]]
    # LINK_TYPE with no suffix: both ports the card lists, already ETH
    assert result["devices"][DEV]["after"]["LINK_TYPE_P2"]["next_boot"] == "ETH(2)"


def test_a_raw_key_the_card_does_not_list_is_refused_before_any_set(host):
    with pytest.raises(InputError) as info:
        host(dict(extra={"PCI_ATOMIC_MODE": 4}))
    assert "PCI_ATOMIC_MODE" in info.value.msg and "nothing was set" in info.value.msg
    assert host.sets() == []


def test_check_mode_predicts_and_sets_nothing(host):
    result = host(dict(settings={"ATS_ENABLED": True}), check_mode=True)
    assert result["changed"] is True and result["disruption"] == "reboot"
    assert host.sets() == []
    assert result["reboot_pending"] == ["%s ATS_ENABLED" % DEV, "%s ROCE_CC_PRIO_MASK_P1" % DEV]
    assert not (host.tree / "var/lib/rdmaops/firmware-next-boot.json").exists()


def test_a_capped_run_holds_the_change_back(host):
    result = host(dict(max_disruption="link_reset"))
    assert result["held_back"] is True and result["changed"] is False
    assert result["disruption"] == "reboot"
    assert host.sets() == []


def test_a_pending_reboot_alone_is_held_back_for_the_rollout(host):
    host({})  # set, no reboot (an interrupted rollout)
    result = host(dict(max_disruption="online"))
    assert result["held_back"] is True and result["changed"] is False
    assert result["disruption"] == "reboot"
    assert result["pending"] == ["reboot: firmware next-boot values not running yet: %s ROCE_CC_PRIO_MASK_P1" % DEV]
    assert result["disruptive_changes"] == result["pending"]
    # the rollout's second pass (cap reboot) has nothing to set but says the reboot is still needed
    second = host(dict(max_disruption="reboot"))
    assert second.get("held_back") is not True and second["changed"] is False and second["reboot_required"] is True


def test_values_not_running_after_a_reboot_fail_the_host(host):
    host({})
    host.set_boot("boot-2")  # booted again, but the firmware was not reloaded
    with pytest.raises(RdmaopsError) as info:
        host({})
    assert "ROCE_CC_PRIO_MASK_P1 runs 255, its next-boot value is 8" in info.value.msg
    assert "mlxfwreset" in info.value.msg
    assert host({"check_active": False})["reboot_required"] is True


def test_derived_keys_the_firmware_lacks_are_warned_not_set(host):
    # a card whose firmware lists no CNP_DSCP_P<n>
    with open(SEED) as handle:
        text = handle.read()
    seed = host.tree.parent / "seed.txt"
    seed.write_text("\n".join(line for line in text.splitlines() if "CNP_DSCP_P1" not in line) + "\n")
    parsed = parse_query(seed.read_text())
    state = dict(type="ConnectX7", name=None, description=None, device=DEV,
                 params=[[n, parsed["params"][n]["default"]["text"], parsed["params"][n]["current"]["text"],
                          parsed["params"][n]["next_boot"]["text"]] for n in parsed["order"]])
    host.state.write_text(json.dumps(state))
    result = host({})
    assert result["devices"][DEV]["unsupported"] == ["CNP_DSCP_P1"]
    assert any("CNP_DSCP_P1" in warning for warning in result["warnings"])
    assert host.sets() == [["mlxconfig", "-d", DEV, "-y", "set", "ROCE_CC_PRIO_MASK_P1=8"]]


def test_no_connectx_means_no_device_and_nothing_runs(host, tmp_path):
    bare = tmp_path / "bare"
    (bare / "sys/bus/pci/devices").mkdir(parents=True)
    result = host({}, root=bare)
    assert result["no_device"] is True and result["changed"] is False
    assert result["msg"].startswith("no device")
    assert result["commands"] == []
    # the recorded tree's GPUs and management NIC are not ConnectX cards; its two ConnectX functions are one card
    assert layer.find_cards(HostRoot(str(host.tree))) == [DEV]


def test_no_tool_on_a_connectx_host_says_what_to_install(host):
    with pytest.raises(RdmaopsError) as info:
        host({}, tools=())
    assert "mstflint" in info.value.msg
