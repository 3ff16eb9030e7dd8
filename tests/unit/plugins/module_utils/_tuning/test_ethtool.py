"""NIC knobs: ethtool output parsing (ethtool 6.1 captures), planning, applying, persisting."""

import os

import pytest

import hosttree
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import ethtool
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError, CommandResult
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan

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


# -- a NIC simulated behind ethtool, printing the captured layouts ----------------------------
class FakeNic:
    """ethtool for one or more NICs: answers -a/-g/-c in ethtool 6.1's layout, applies -A/-G/-C."""

    def __init__(self, nics):
        self.nics = nics
        self.calls = []

    def find(self, tool):
        return "/usr/sbin/ethtool"

    def has(self, tool):
        return True

    def run(self, argv, check=True):
        self.calls.append(list(argv))
        flag, name, rest = argv[1], argv[2], argv[3:]
        nic = self.nics[name]
        if flag in nic.get("unsupported", ()):
            result = CommandResult(argv, 1, "", "netlink error: Operation not supported\n")
        elif flag == "-a":
            p = nic["pause"]
            onoff = dict((k, "on" if v else "off") for k, v in p.items())
            text = "Pause parameters for %s:\nAutonegotiate:\t%s\nRX:\t\t%s\nTX:\t\t%s\n" % (name, onoff["autoneg"], onoff["rx"], onoff["tx"])
            result = CommandResult(argv, 0, text, "")
        elif flag == "-g":
            text = fixture("mlx5-composed-g.txt").replace("ens1f0np0", name)
            text = text.replace("RX:\t\t8192", "RX:\t\t%d" % nic["max"]).replace("TX:\t\t8192", "TX:\t\t%d" % nic["max"])
            text = text.replace("RX:\t\t1024", "RX:\t\t%d" % nic["rx"]).replace("TX:\t\t1024", "TX:\t\t%d" % nic["tx"])
            result = CommandResult(argv, 0, text, "")
        elif flag == "-c":
            a = nic["adaptive"]
            line = "Adaptive RX: %s  TX: %s" % tuple("n/a" if a[k] is None else ("on" if a[k] else "off") for k in ("rx", "tx"))
            result = CommandResult(argv, 0, fixture("mlx5-composed-c.txt").replace("Adaptive RX: on  TX: on", line), "")
        elif flag in nic.get("refuse", ()):
            result = CommandResult(argv, 1, "", "netlink error: Invalid argument\n")
        elif flag == "-A":
            for key, value in zip(rest[::2], rest[1::2]):
                nic["pause"][key] = value == "on"
            result = CommandResult(argv, 0, "", "")
        elif flag == "-G":
            for key, value in zip(rest[::2], rest[1::2]):
                nic[key] = int(value)
            result = CommandResult(argv, 0, "", "")
        elif flag == "-C":
            for key, value in zip(rest[::2], rest[1::2]):
                nic["adaptive"][key.split("-")[1]] = value == "on"
            result = CommandResult(argv, 0, "", "")
        else:
            raise AssertionError(argv)
        if check and result.rc != 0:
            raise CommandError(result)
        return result


def cx7():
    return dict(pause=dict(autoneg=False, rx=True, tx=True), max=8192, rx=1024, tx=1024, adaptive=dict(rx=True, tx=False))


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
    _knobs, plan = run(host, runner)
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
    with pytest.raises(ethtool.EthtoolError) as err:
        ethtool.NicKnobs(host, runner, **kwargs)
    assert message in str(err.value)
    assert runner.calls == []
