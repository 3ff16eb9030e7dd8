"""NIC knobs: ethtool output parsing (ethtool 6.1 captures), planning, applying, persisting."""

import os

import pytest

import hosttree
from ethtoolsim import FakeNic, cx7
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import ethtool
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(hosttree.__file__)), "fixtures", "tools", "ethtool")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# -- parsers against captured output ---------------------------------------------------------
def test_rings_virtio_net_capture():
    assert ethtool.parse_rings(fixture("virtio_net-ethtool6.1-g.txt")) == {"max": {"rx": 256, "tx": 256}, "current": {"rx": 256, "tx": 256}}


def test_coalesce_virtio_net_capture_has_no_adaptive_tx():
    assert ethtool.parse_coalesce(fixture("virtio_net-ethtool6.1-c.txt")) == {"adaptive_rx": False, "adaptive_tx": None}


def test_mlx5_layout():
    assert ethtool.parse_rings(fixture("mlx5-composed-g.txt")) == {"max": {"rx": 8192, "tx": 8192}, "current": {"rx": 1024, "tx": 1024}}
    assert ethtool.parse_coalesce(fixture("mlx5-composed-c.txt")) == {"adaptive_rx": True, "adaptive_tx": True}
    assert ethtool.parse_pause(fixture("mlx5-composed-a.txt")) == {"autoneg": False, "rx": True, "tx": True}


def test_unrecognised_output_is_none():
    assert ethtool.parse_rings("netlink error: Operation not supported\n") is None
    assert ethtool.parse_coalesce("") is None
    assert ethtool.parse_pause("Pause parameters for eth0:\n") is None


@pytest.fixture
def host(tmp_path):
    for name in ("ens1f0np0", "ens1f1np1", "eth0"):
        (tmp_path / "sys/class/net" / name).mkdir(parents=True)
    return HostRoot(str(tmp_path))


RULES = "/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"
WANT = dict(global_pause=False, rings={"rx": "max", "tx": 4096}, adaptive_rx=True, adaptive_tx=True)


def run(host, runner, check_mode=False, **want):
    knobs = ethtool.NicKnobs(host, runner, ["ens1f0np0", "ens1f1np1"], **(want or WANT))
    plan = Plan()
    knobs.plan(plan)
    plan.apply(check_mode)
    return knobs, plan


def test_plan_apply_persist_then_nothing_to_do(host, tmp_path):
    nics = {"ens1f0np0": cx7(), "ens1f1np1": cx7()}
    runner = FakeNic(nics)
    knobs, plan = run(host, runner, check_mode=True)
    assert plan.descriptions() == [
        "ens1f0np0: set global pause from {'autoneg': False, 'rx': True, 'tx': True} to {'autoneg': False, 'rx': False, 'tx': False}",
        "ens1f0np0: set rx ring from 1024 to 8192",
        "ens1f0np0: set tx ring from 1024 to 4096",
        "ens1f0np0: set adaptive-tx from False to True",
        "ens1f1np1: set global pause from {'autoneg': False, 'rx': True, 'tx': True} to {'autoneg': False, 'rx': False, 'tx': False}",
        "ens1f1np1: set rx ring from 1024 to 8192",
        "ens1f1np1: set tx ring from 1024 to 4096",
        "ens1f1np1: set adaptive-tx from False to True",
        "write " + RULES,
    ]
    assert [call[1] for call in runner.calls] == ["-a", "-g", "-c", "-a", "-g", "-c"]  # check mode only reads
    assert nics["ens1f0np0"]["rx"] == 1024 and not (tmp_path / RULES.lstrip("/")).exists()

    knobs, plan = run(host, runner)
    assert knobs.verify() == {} and knobs.unsupported == {}
    assert nics["ens1f0np0"]["pause"] == {"autoneg": False, "rx": False, "tx": False}
    assert (nics["ens1f1np1"]["rx"], nics["ens1f1np1"]["tx"], nics["ens1f1np1"]["adaptive"]) == (8192, 4096, {"rx": True, "tx": True})
    assert (tmp_path / RULES.lstrip("/")).read_text() == (
        "# Managed by rdmaops.roce.nic_ethtool. Changes here are overwritten on the next run.\n"
        "# Re-applies the NIC settings whenever the netdev appears (boot, driver reload, hot plug).\n"
        'ACTION=="add", SUBSYSTEM=="net", NAME=="ens1f0np0", RUN+="/usr/sbin/ethtool -A $name autoneg off rx off tx off", '
        'RUN+="/usr/sbin/ethtool -G $name rx 8192 tx 4096", RUN+="/usr/sbin/ethtool -C $name adaptive-rx on adaptive-tx on"\n'
        'ACTION=="add", SUBSYSTEM=="net", NAME=="ens1f1np1", RUN+="/usr/sbin/ethtool -A $name autoneg off rx off tx off", '
        'RUN+="/usr/sbin/ethtool -G $name rx 8192 tx 4096", RUN+="/usr/sbin/ethtool -C $name adaptive-rx on adaptive-tx on"\n'
    )
    _knobs, plan = run(host, runner)
    assert len(plan) == 0


def test_unsupported_knobs_are_reported_and_left_out_of_the_rule(host, tmp_path):
    veth = dict(cx7(), unsupported=("-a", "-g", "-c"))
    virtio = dict(cx7(), unsupported=("-a",), max=256, rx=256, tx=256, adaptive=dict(rx=False, tx=None))
    runner = FakeNic({"ens1f0np0": veth, "ens1f1np1": virtio})
    knobs, plan = run(host, runner)
    assert knobs.unsupported == {
        "ens1f0np0": {
            "global pause": "ethtool -a failed (rc=1): netlink error: Operation not supported",
            "rx ring": "ethtool -g failed (rc=1): netlink error: Operation not supported",
            "tx ring": "ethtool -g failed (rc=1): netlink error: Operation not supported",
            "adaptive-rx": "ethtool -c failed (rc=1): netlink error: Operation not supported",
            "adaptive-tx": "ethtool -c failed (rc=1): netlink error: Operation not supported",
        },
        "ens1f1np1": {
            "global pause": "ethtool -a failed (rc=1): netlink error: Operation not supported",
            "tx ring": "4096 descriptors asked, the driver's maximum is 256",
            "adaptive-tx": "the driver reports adaptive-tx as n/a",
        },
    }
    assert plan.descriptions() == ["ens1f1np1: set adaptive-rx from False to True", "write " + RULES]
    rules = (tmp_path / RULES.lstrip("/")).read_text().splitlines()[2:]
    # rx ring "max" is already 256 (nothing to change, but it is kept at boot too).
    assert rules == ['ACTION=="add", SUBSYSTEM=="net", NAME=="ens1f1np1", RUN+="/usr/sbin/ethtool -G $name rx 256", '
                     'RUN+="/usr/sbin/ethtool -C $name adaptive-rx on"']


def test_rule_removed_when_nothing_supported_is_left(host, tmp_path):
    (tmp_path / "etc/udev/rules.d").mkdir(parents=True)
    (tmp_path / RULES.lstrip("/")).write_text("old\n")
    runner = FakeNic({"ens1f0np0": dict(cx7(), unsupported=("-a", "-g", "-c")), "ens1f1np1": dict(cx7(), unsupported=("-a", "-g", "-c"))})
    _knobs, plan = run(host, runner, adopt=True, **WANT)  # "old" has no marker: taken over with adopt
    assert plan.descriptions() == ["remove %s (no supported knob left)" % RULES]
    assert not (tmp_path / RULES.lstrip("/")).exists()


def test_refused_setting_is_reported_not_counted_and_not_persisted(host, tmp_path):
    nics = {"ens1f0np0": dict(cx7(), refuse=("-A",)), "ens1f1np1": cx7()}
    knobs, _plan = run(host, FakeNic(nics), global_pause=False)
    assert knobs.failed == {("ens1f0np0", "global pause")}
    assert knobs.unsupported["ens1f0np0"]["global pause"].startswith("ethtool -A ens1f0np0 autoneg off rx off tx off refused: netlink error: Invalid argument")
    assert knobs.verify() == {}
    rules = (tmp_path / RULES.lstrip("/")).read_text()
    assert 'NAME=="ens1f0np0"' not in rules and 'NAME=="ens1f1np1"' in rules


def test_unset_options_are_not_touched(host):
    runner = FakeNic({"ens1f0np0": cx7(), "ens1f1np1": cx7()})
    knobs, plan = run(host, runner, adaptive_tx=True, persist=False)
    # Only coalescing is read and set, and only adaptive-tx is written.
    assert runner.calls == [
        ["ethtool", "-c", "ens1f0np0"],
        ["ethtool", "-c", "ens1f1np1"],
        ["ethtool", "-C", "ens1f0np0", "adaptive-tx", "on"],
        ["ethtool", "-C", "ens1f1np1", "adaptive-tx", "on"],
    ]
    assert knobs.unsupported == {}
    assert plan.descriptions() == ["ens1f0np0: set adaptive-tx from False to True", "ens1f1np1: set adaptive-tx from False to True"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(interfaces=[]), "interfaces is empty"),
        (dict(interfaces=["ens9"]), "interface ens9 does not exist"),
        (dict(interfaces=["a b"]), "invalid interface name 'a b'"),
        (dict(interfaces=["eth0"], rings={"rx": 0}), "rings.rx=0"),
        (dict(interfaces=["eth0"], rings={"rx-mini": 64}), "rings.rx-mini"),
    ],
)
def test_bad_input_is_refused_before_reading(host, kwargs, message):
    runner = FakeNic({})
    with pytest.raises(InputError) as err:
        ethtool.NicKnobs(host, runner, **kwargs)
    assert message in str(err.value)
    assert runner.calls == []


@pytest.mark.parametrize("name", ["..", ".", "eth0:1", "-a", "eth0/x", "a" * 16, "eth*"])
def test_interface_names_follow_the_kernel_rule(host, name):
    # The old rule accepted '..' and 'eth0:1' (and a leading '-', which ethtool reads as an option).
    runner = FakeNic({})
    with pytest.raises(InputError) as err:
        ethtool.NicKnobs(host, runner, [name], global_pause=False)
    assert str(err.value).startswith("invalid interface name %r" % name)
    assert err.value.details["option"] == "interfaces"
    assert runner.calls == []


# -- one rule line per interface, kept across calls -------------------------------------------
def rules_by_name(tmp_path):
    return ethtool.parse_rules((tmp_path / RULES.lstrip("/")).read_text())


def test_two_calls_for_two_interfaces_keep_both_rules(host, tmp_path):
    # The file used to hold only the interfaces of the last call: a second call (another NIC, another play)
    # dropped the first one's persistence.
    nics = {"ens1f0np0": cx7(), "ens1f1np1": cx7()}
    runner = FakeNic(nics)
    for name, size in (("ens1f1np1", 2048), ("ens1f0np0", 4096)):
        plan = Plan()
        ethtool.NicKnobs(host, runner, [name], rings={"rx": size}).plan(plan)
        plan.apply()
    rules = rules_by_name(tmp_path)
    assert sorted(rules) == ["ens1f0np0", "ens1f1np1"]
    assert rules["ens1f1np1"].endswith('RUN+="/usr/sbin/ethtool -G $name rx 2048"')
    assert rules["ens1f0np0"].endswith('RUN+="/usr/sbin/ethtool -G $name rx 4096"')
    text = (tmp_path / RULES.lstrip("/")).read_text()
    assert text.startswith("# Managed by rdmaops.roce.nic_ethtool.") and text.index("ens1f0np0") < text.index("ens1f1np1")

    # a call for one interface changes only its line; nothing left to do afterwards for either
    plan = Plan()
    ethtool.NicKnobs(host, runner, ["ens1f1np1"], rings={"rx": 1024}).plan(plan)
    plan.apply()
    rules = rules_by_name(tmp_path)
    assert rules["ens1f1np1"].endswith("rx 1024\"") and rules["ens1f0np0"].endswith("rx 4096\"")
    for name, size in (("ens1f1np1", 1024), ("ens1f0np0", 4096)):
        plan = Plan()
        ethtool.NicKnobs(host, runner, [name], rings={"rx": size}).plan(plan)
        assert len(plan) == 0

    # the interface whose knobs are all unsupported now loses its line, the other keeps its own
    nics["ens1f1np1"]["unsupported"] = ("-g",)
    plan = Plan()
    ethtool.NicKnobs(host, runner, ["ens1f1np1"], rings={"rx": 1024}).plan(plan)
    plan.apply()
    assert sorted(rules_by_name(tmp_path)) == ["ens1f0np0"]


def test_rules_file_without_our_marker_is_refused_unless_adopted(host, tmp_path):
    (tmp_path / "etc/udev/rules.d").mkdir(parents=True)
    theirs = 'ACTION=="add", SUBSYSTEM=="net", NAME=="eth0", RUN+="/sbin/site-script"\n'
    (tmp_path / RULES.lstrip("/")).write_text(theirs)
    runner = FakeNic({"ens1f0np0": cx7(), "ens1f1np1": cx7()})
    with pytest.raises(RefusedError, match="adopt"):
        run(host, runner, **WANT)
    assert (tmp_path / RULES.lstrip("/")).read_text() == theirs
    assert [call[1] for call in runner.calls] == ["-a", "-g", "-c", "-a", "-g", "-c"]  # nothing was set
    run(host, runner, adopt=True, **WANT)
    assert (tmp_path / RULES.lstrip("/")).read_text().startswith("# Managed by rdmaops.roce.nic_ethtool.")


# -- the engine: refused settings are reported by the engine, not counted -------------------------
class Exit(Exception):
    pass


class FakeModule:
    def __init__(self, params, check_mode=False):
        self.params = dict(interfaces=None, global_pause=None, rings=None, adaptive_rx=None, adaptive_tx=None,
                           persist=True, unsupported="warn", adopt=False)
        self.params.update(params)
        self.check_mode = check_mode
        self._diff = False
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)

    def exit_json(self, **result):
        raise Exit(dict(result, failed=False))

    def fail_json(self, **result):
        raise Exit(dict(result, failed=True))


def module_run(host, runner, check_mode=False, **params):
    module = FakeModule(params, check_mode=check_mode)
    with pytest.raises(Exit) as done:
        run_module(module, ethtool.NicEthtoolEngine, ctx=Context(module, host=host, runner=runner))
    return done.value.args[0], module.warnings


def test_engine_reports_a_refused_setting_without_counting_it(host, tmp_path):
    nics = {"ens1f0np0": dict(cx7(), refuse=("-A",))}
    result, warnings = module_run(host, FakeNic(nics), interfaces=["ens1f0np0"], global_pause=False)
    assert not result["failed"] and result["changed"] is False and result["changes"] == []
    assert result["unsupported"]["ens1f0np0"]["global pause"].startswith("ethtool -A ens1f0np0 autoneg off rx off tx off refused")
    assert warnings == ["ens1f0np0: global pause not applied: " + result["unsupported"]["ens1f0np0"]["global pause"]]
    assert not (tmp_path / RULES.lstrip("/")).exists()
    assert result["rules_path"] == RULES

    result, _warnings = module_run(host, FakeNic(nics), interfaces=["ens1f0np0"], global_pause=False, unsupported="fail")
    assert result["failed"] and result["changed"] is False and result["msg"].startswith("unsupported NIC settings: ")
    assert result["applied"] == []


def test_engine_rings_as_text_and_bad_rings(host):
    runner = FakeNic({"ens1f0np0": cx7()})
    result, _warnings = module_run(host, runner, interfaces=["ens1f0np0"], rings={"rx": "2048"}, persist=False)
    assert result["changes"] == ["ens1f0np0: set rx ring from 1024 to 2048"] and result["commands"] == []
    result, _warnings = module_run(host, FakeNic({}), interfaces=["ens1f0np0"], rings={"rx": "lots"})
    assert result["failed"] and result["msg"] == "rings.rx='lots': use a positive number of descriptors or 'max'"


def test_a_failed_rules_write_puts_the_knobs_back(host, tmp_path, monkeypatch):
    nics = {"ens1f0np0": cx7(), "ens1f1np1": cx7()}

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ethtool.files, "write_atomic", broken)
    result, _warnings = module_run(host, FakeNic(nics), interfaces=["ens1f0np0", "ens1f1np1"], rings={"rx": 4096})
    assert result["failed"] and result["changed"] is False
    assert result["rolled_back"] == ["ens1f1np1: set rx ring from 1024 to 4096", "ens1f0np0: set rx ring from 1024 to 4096"]
    assert nics["ens1f0np0"]["rx"] == 1024 and nics["ens1f1np1"]["rx"] == 1024
