"""The tuning layer in one run, against host trees: the recorded Soft-RoCE host (its RDMA netdev
found in sysfs), the kernel's running sysctl values (Debian 12, kernel 6.18) and NICs simulated
behind ethtool in its captured layout. Every part planned together: per-part changes, check mode
that touches nothing, a repeat that plans nothing, bad input refused before any part reads, and a
NIC knob that fails putting every other part back."""

import os

import pytest

import hosttree
from ethtoolsim import FakeNic, cx7
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute, failure
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.layer import TuningLayer

SYSCTL_FILE = "/etc/sysctl.d/90-rdmaops-roce.conf"
LIMITS = "/etc/security/limits.d/90-rdmaops-roce-memlock.conf"
DROPIN = "/etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf"
RULES = "/etc/udev/rules.d/90-rdmaops-roce-ethtool.rules"
# Running values read from a Debian 12 machine (kernel 6.18), tabs as the kernel prints them.
PROC = {"net/core/rmem_max": "212992\n", "net/ipv4/tcp_rmem": "4096\t131072\t33554432\n"}


def params(**parts):
    defaults = dict(
        sysctl=dict(settings={"net.core.rmem_max": 4194304, "net.ipv4.tcp_rmem": "4096 87380 4194304"},
                    path=SYSCTL_FILE, state="present", apply_runtime=True, runtime_errors="fail"),
        memlock=dict(limit="unlimited", domains=["*", "root"], limits_file=LIMITS, systemd_dropin=DROPIN),
        nic=dict(interfaces=[], global_pause=False, rings={"rx": "max", "tx": "max"}, adaptive_rx=True,
                 adaptive_tx=True, persist=True, unsupported="warn"),
        gpudirect=dict(use_lspci=False),
        adopt=False,
    )
    defaults.update(parts)
    return defaults


@pytest.fixture
def root(tmp_path):
    """The recorded Soft-RoCE host (rxe0 on ens4) with the kernel's sysctl values."""
    hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), tmp_path)
    for rel, text in PROC.items():
        path = tmp_path / "proc/sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def run(root, runner, check_mode=False, **parts):
    module = hosttree.ReplayModule({}, str(root))
    module.check_mode = check_mode
    module._diff = True
    ctx = Context(module, host=HostRoot(str(root)), runner=runner)
    engine = TuningLayer(ctx, params(**parts))
    plan = Plan()
    try:
        result, _plan = execute(engine, plan)
    except RdmaopsError as exc:
        return dict(failure(exc, engine, plan), failed=True), ctx
    return result, ctx


def exists(root, path):
    return os.path.exists(os.path.join(str(root), path.lstrip("/")))


def test_one_run_plans_every_part_then_a_repeat_plans_nothing(root):
    nics = {"ens4": cx7()}
    runner = FakeNic(nics)
    result, _ctx = run(root, runner)
    assert result["changed"]
    assert result["sysctl"]["changes"] == [
        "write " + SYSCTL_FILE,
        "set net.core.rmem_max from '212992' to '4194304' at runtime",
        "set net.ipv4.tcp_rmem from '4096 131072 33554432' to '4096 87380 4194304' at runtime",
    ]
    assert result["memlock"]["changes"] == ["write " + LIMITS, "write " + DROPIN]
    # the RDMA netdev comes from sysfs (rxe0's port 1 is ens4), not from the caller
    assert result["nic"]["changed"] and result["nic"]["changes"][-1] == "write " + RULES
    assert set(result["nic"]["state"]) == {"ens4"}
    assert result["changes"] == result["sysctl"]["changes"] + result["memlock"]["changes"] + result["nic"]["changes"]
    assert (root / "proc/sys/net/core/rmem_max").read_text() == "4194304\n"
    assert nics["ens4"]["rx"] == 8192 and nics["ens4"]["pause"]["rx"] is False
    # the report is read after applying, as gpudirect_facts would
    assert result["ansible_facts"]["gpudirect"]["applicable"] is False
    again, _ctx = run(root, FakeNic(nics))
    assert again["changed"] is False and again["changes"] == []
    assert [again[part]["changed"] for part in ("sysctl", "memlock", "nic")] == [False, False, False]


def test_check_mode_predicts_every_part_and_touches_nothing(root):
    nics = {"ens4": cx7()}
    runner = FakeNic(nics)
    result, _ctx = run(root, runner, check_mode=True)
    assert result["changed"] and len(result["changes"]) == len(result["sysctl"]["changes"]) + 2 + len(result["nic"]["changes"])
    assert not any(exists(root, path) for path in (SYSCTL_FILE, LIMITS, DROPIN, RULES))
    assert (root / "proc/sys/net/core/rmem_max").read_text() == "212992\n"
    assert set(call[1] for call in runner.calls) == {"-a", "-g", "-c"}  # ethtool only read
    headers = set(entry.get("after_header") for entry in result["diff"])
    assert {SYSCTL_FILE, LIMITS, DROPIN, RULES} <= headers


def test_named_interfaces_win_over_sysfs_and_omitted_parts_are_left_alone(root):
    nics = {"ens3": cx7()}
    result, _ctx = run(root, FakeNic(nics), sysctl=None, memlock=None, gpudirect=None,
                       nic=dict(params()["nic"], interfaces=["ens3"]))
    assert set(result) >= {"nic"} and "sysctl" not in result and "memlock" not in result
    assert "ansible_facts" not in result and set(result["nic"]["state"]) == {"ens3"}
    assert not exists(root, SYSCTL_FILE) and not exists(root, LIMITS)


def test_a_host_without_rdma_netdevs_skips_the_nic_part_only(tmp_path):
    for rel, text in PROC.items():
        (tmp_path / "proc/sys" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "proc/sys" / rel).write_text(text)
    runner = FakeNic({})
    result, _ctx = run(tmp_path, runner, gpudirect=None)
    assert result["nic"]["skipped"] is True and "no RDMA netdev" in result["nic"]["msg"]
    assert result["sysctl"]["changed"] and result["memlock"]["changed"] and runner.calls == []


def test_bad_input_in_one_part_is_refused_before_any_part_reads(root):
    runner = FakeNic({"ens4": cx7()})
    result, _ctx = run(root, runner, memlock=dict(params()["memlock"], domains=["bad domain"]))
    assert result["failed"] and result["changed"] is False
    assert result["msg"].startswith("memlock: domains:") and result["option"] == "memlock.domains"
    assert runner.calls == [] and not exists(root, SYSCTL_FILE)


def test_nothing_asked_is_an_error_naming_the_options(root):
    module = hosttree.ReplayModule({}, str(root))
    ctx = Context(module, host=HostRoot(str(root)), runner=FakeNic({}))
    with pytest.raises(InputError, match="sysctl, memlock, nic and gpudirect"):
        TuningLayer(ctx, dict(sysctl=None, memlock=None, nic=None, gpudirect=None)).validate()


def test_a_part_that_fails_to_apply_puts_every_part_back(root):
    # /etc/security/limits.d is a file here, so the memlock file cannot be written: the sysctl
    # file and values (applied first) are put back, and the NIC is never touched.
    (root / "etc/security").mkdir(parents=True)
    (root / "etc/security/limits.d").write_text("")
    nic = cx7()
    runner = FakeNic({"ens4": nic})
    result, _ctx = run(root, runner)
    assert result["failed"] and result["changed"] is False, result
    assert "write " + SYSCTL_FILE in result["rolled_back"] and "write " + DROPIN in result["not_applied"]
    assert not exists(root, SYSCTL_FILE) and (root / "proc/sys/net/core/rmem_max").read_text() == "212992\n"
    assert set(call[1] for call in runner.calls) == {"-a", "-g", "-c"} and nic["rx"] == 1024
    # each part says what is still applied (nothing), not what it planned; no report on a failure
    assert [result[part]["changed"] for part in ("sysctl", "memlock", "nic")] == [False, False, False]
    assert result["sysctl"]["changes"][0] == "write " + SYSCTL_FILE and "ansible_facts" not in result


def test_unsupported_fail_refuses_before_any_part_applies(root):
    # A knob ethtool cannot even read is known before applying: with unsupported=fail and nothing
    # else for the NIC part to set, nothing is touched, whatever the other parts would change
    # (they are in the same plan; nic_ethtool alone fails the same way).
    nic = dict(cx7(), pause=dict(autoneg=False, rx=False, tx=False), adaptive=dict(rx=True, tx=True))
    nic["unsupported"] = ("-g",)
    result, _ctx = run(root, FakeNic({"ens4": nic}), nic=dict(params()["nic"], unsupported="fail", persist=False))
    assert result["failed"] and result["changed"] is False and "unsupported NIC settings" in result["msg"]
    assert not exists(root, SYSCTL_FILE) and not exists(root, LIMITS)
    assert (root / "proc/sys/net/core/rmem_max").read_text() == "212992\n"


def test_unsupported_fail_reports_what_stayed_applied(root):
    # A knob the driver refuses is only known when it is set: with unsupported=fail the task fails
    # after applying, changed, and says what was applied (nic_ethtool's contract, for the whole layer).
    nic = cx7()
    nic["refuse"] = ("-G",)
    result, _ctx = run(root, FakeNic({"ens4": nic}), nic=dict(params()["nic"], unsupported="fail"))
    assert result["failed"] and result["changed"] is True
    assert "write " + SYSCTL_FILE in result["applied"] and "unsupported NIC settings" in result["msg"]
    assert result["sysctl"]["changed"] is True and result["memlock"]["changed"] is True
    assert result["nic"]["unsupported"]["ens4"]["rx ring"].startswith("ethtool -G ens4")


def test_disruption_per_part_and_for_the_host(root):
    """Rings and global pause reset the link; sysctl, memlock and the udev rule change in place."""
    nics = {"ens4": cx7()}
    result, _ctx = run(root, FakeNic(nics), check_mode=True)
    assert result["disruption"] == "link_reset"
    assert (result["sysctl"]["disruption"], result["memlock"]["disruption"], result["nic"]["disruption"]) == (
        "online", "online", "link_reset")
    assert "link_reset: ens4: set rx ring from 1024 to 8192" in result["disruptive_changes"]
    assert not any(line.startswith("online") for line in result["disruptive_changes"])
    # coalescing alone is an online change
    result, _ctx = run(root, FakeNic(nics), check_mode=True,
                       nic=dict(params()["nic"], global_pause=None, rings={"rx": None, "tx": None}))
    assert result["nic"]["disruption"] == "online" and result["disruption"] == "online"
    # applied for real, a repeat run disrupts nothing
    run(root, FakeNic(nics))
    again, _ctx = run(root, FakeNic(nics))
    assert again["disruption"] == "none" and again["disruptive_changes"] == []


def test_max_disruption_online_holds_a_ring_change_back_and_touches_nothing(root):
    nics = {"ens4": cx7()}
    result, _ctx = run(root, FakeNic(nics), max_disruption="online")
    assert result["changed"] is False and result["held_back"] is True and result["disruption"] == "link_reset"
    assert not any(exists(root, path) for path in (SYSCTL_FILE, LIMITS, DROPIN, RULES))
    assert nics["ens4"]["rx"] != 8192
    assert "write " + SYSCTL_FILE in result["pending"]
