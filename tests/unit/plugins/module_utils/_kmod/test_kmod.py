"""kernel_modules' engine against host trees, with modprobe simulated in the tree (kmodsim)."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._kmod import engine as kmod
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute, failure
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError, Plan

from kmodsim import FakeAnsibleModule

KERNEL = "6.1.0-18-amd64"
LOAD_FILE = "/etc/modules-load.d/rdmaops-roce.conf"
PROBE_FILE = "/etc/modprobe.d/rdmaops-roce.conf"
HEADER = kmod.HEADER.format(owner="rdmaops.roce.kernel_modules")


def make_tree(root, loaded=("ib_core",), builtin_lines=(), builtin_dirs=()):
    """A host whose kernel has ``loaded`` modules live and ``builtin_*`` compiled in."""
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text(KERNEL + "\n")
    for name in loaded:
        (root / "sys/module" / name).mkdir(parents=True)
        (root / "sys/module" / name / "initstate").write_text("live\n")
    for name in builtin_dirs:
        (root / "sys/module" / name / "parameters").mkdir(parents=True)
    (root / "lib/modules" / KERNEL).mkdir(parents=True)
    (root / "lib/modules" / KERNEL / "modules.builtin").write_text("".join(line + "\n" for line in builtin_lines))
    return root


def engine_for(root, check_mode=False, tools=None, **kwargs):
    fake = FakeAnsibleModule(root, check_mode=check_mode, diff=True, **(dict(tools=tools) if tools else {}))
    ctx = Context(fake, host=HostRoot(str(root)), runner=CommandRunner(fake))
    return kmod.KernelModules(ctx, kwargs), fake


def run(root, check_mode=False, **kwargs):
    """One module run: validate -> read -> plan -> apply -> re-read, as run_module does it."""
    engine, fake = engine_for(root, check_mode=check_mode, **kwargs)
    result, _plan = execute(engine)
    result["warnings"] = engine.ctx.warnings
    return result, fake.sim


def run_failing(root, **kwargs):
    """A run that must fail: the failed result run_module would report, and the error."""
    engine, fake = engine_for(root, **kwargs)
    plan = Plan()
    with pytest.raises(RdmaopsError) as caught:
        execute(engine, plan)
    return failure(caught.value, engine, plan), caught.value, fake.sim


def modprobe_calls(sim):
    """The real modprobe runs (loads and removals), without the read-only --dry-run checks."""
    return [call[1:] for call in sim.calls() if call[0].endswith("modprobe") and "--dry-run" not in call]


def host_files(root):
    """Every path of the host tree, without the simulator's own bookkeeping."""
    return sorted(str(p) for p in root.rglob("*") if ".kmodsim" not in p.parts)


def test_first_run_loads_in_order_and_writes_one_file(tmp_path):
    make_tree(tmp_path)
    result, sim = run(tmp_path)
    assert modprobe_calls(sim) == [["rdma_cm"], ["ib_uverbs"], ["ib_umad"]]
    assert result["changed"] is True
    assert result["loaded_now"] == ["rdma_cm", "ib_uverbs", "ib_umad"]
    assert result["already_loaded"] == [] and result["builtin"] == []
    assert result["changes"] == ["load rdma_cm", "load ib_uverbs", "load ib_umad", "write " + LOAD_FILE]
    # loading a module disrupts nothing that runs
    assert result["disruption"] == "online" and result["disruptive_changes"] == []
    assert (tmp_path / LOAD_FILE.lstrip("/")).read_text() == HEADER + "rdma_cm\nib_uverbs\nib_umad\n"
    assert oct(os.stat(str(tmp_path / LOAD_FILE.lstrip("/"))).st_mode & 0o777) == "0o644"
    assert not (tmp_path / PROBE_FILE.lstrip("/")).exists()
    for name in ("rdma_cm", "ib_uverbs", "ib_umad"):
        assert (tmp_path / "sys/module" / name / "initstate").read_text() == "live\n"
    file_diff = [d for d in result["diff"] if d.get("before_header") == LOAD_FILE]
    assert file_diff == [dict(before="", after=HEADER + "rdma_cm\nib_uverbs\nib_umad\n",
                              before_header=LOAD_FILE, after_header=LOAD_FILE)]
    assert result["diff"][0] == dict(
        before={"module rdma_cm": "absent", "module ib_uverbs": "absent", "module ib_umad": "absent"},
        after={"module rdma_cm": "loaded", "module ib_uverbs": "loaded", "module ib_umad": "loaded"},
    )


def test_second_run_changes_nothing(tmp_path):
    make_tree(tmp_path)
    run(tmp_path)
    result, sim = run(tmp_path)
    assert result["changed"] is False
    assert result["changes"] == [] and result["diff"] == []
    assert result["loaded_now"] == []
    assert result["already_loaded"] == ["rdma_cm", "ib_uverbs", "ib_umad"]
    # The second run's only calls are none at all: nothing to load, so not even dmesg.
    assert len(sim.calls()) == 3 * 4  # first run: modprobe --dry-run, dmesg, modprobe, dmesg per module


def test_check_mode_predicts_and_touches_nothing(tmp_path):
    make_tree(tmp_path)
    before = host_files(tmp_path)
    result, sim = run(tmp_path, check_mode=True)
    assert result["changed"] is True
    assert result["loaded_now"] == ["rdma_cm", "ib_uverbs", "ib_umad"]
    assert result["changes"][-1] == "write " + LOAD_FILE
    # Only read-only checks ran: is each module there to load for this kernel?
    assert [call[1:] for call in sim.calls()] == [["--dry-run", n] for n in ("rdma_cm", "ib_uverbs", "ib_umad")]
    assert host_files(tmp_path) == before


def test_module_missing_for_this_kernel_fails_before_anything_changes(tmp_path):
    make_tree(tmp_path)
    sim = FakeAnsibleModule(tmp_path).sim
    sim.configure(missing=["ib_umad"])
    before = host_files(tmp_path)
    for check_mode in (True, False):
        with pytest.raises(RdmaopsError) as caught:
            run(tmp_path, check_mode=check_mode)
        assert "ib_umad cannot be loaded on kernel" in str(caught.value)
        assert "Module ib_umad not found in directory /lib/modules/" in str(caught.value)
    assert modprobe_calls(sim) == []
    assert host_files(tmp_path) == before


def test_failing_modprobe_stops_with_stderr_and_kernel_log(tmp_path):
    make_tree(tmp_path)
    sim = FakeAnsibleModule(tmp_path).sim
    sim.log("[   12.000001] e1000: link up")
    sim.configure(modules={"ib_uverbs": {
        "rc": 1,
        "stderr": "modprobe: ERROR: could not insert 'ib_uverbs': Invalid argument\n",
        "log": ["[  101.312200] ib_uverbs: Unknown symbol ib_register_peer_memory_client (err -22)"],
    }})
    with pytest.raises(ApplyError) as caught:
        run(tmp_path)
    exc = caught.value.cause
    assert isinstance(exc, kmod.LoadFailed)
    assert exc.name == "ib_uverbs"
    assert "modprobe ib_uverbs failed (rc=1)" in str(exc)
    assert "Invalid argument" in str(exc)
    assert exc.kernel_log == ["[  101.312200] ib_uverbs: Unknown symbol ib_register_peer_memory_client (err -22)"]
    assert exc.details["stderr"].startswith("modprobe: ERROR")
    # rdma_cm was loaded before, ib_umad never tried, and the boot list was not written.
    assert modprobe_calls(sim) == [["rdma_cm"], ["ib_uverbs"]]
    assert not (tmp_path / LOAD_FILE.lstrip("/")).exists()


def test_unreadable_kernel_log_is_said_so(tmp_path):
    make_tree(tmp_path)
    sim = FakeAnsibleModule(tmp_path).sim
    sim.configure(dmesg_readable=False, modules={"rdma_cm": {"rc": 1, "stderr": "modprobe: ERROR: could not insert 'rdma_cm': Operation not permitted\n"}})
    with pytest.raises(ApplyError) as caught:
        run(tmp_path)
    assert isinstance(caught.value.cause, kmod.LoadFailed)
    assert "the kernel log is not readable (dmesg: dmesg: read kernel buffer failed: Operation not permitted)" in str(caught.value)


def test_modprobe_success_without_the_module_appearing_fails(tmp_path):
    make_tree(tmp_path)
    FakeAnsibleModule(tmp_path).sim.configure(modules={"rdma_cm": {"silently_absent": True}})
    with pytest.raises(ApplyError) as caught:
        run(tmp_path)
    assert isinstance(caught.value.cause, kmod.LoadFailed)
    assert "modprobe rdma_cm exited 0 but /sys/module/rdma_cm did not appear" in str(caught.value)


def test_builtin_modules_count_as_loaded(tmp_path):
    # ib_umad compiled in (modules.builtin only, with a dash spelling to normalise);
    # ib_uverbs compiled in with parameters (a /sys/module directory without initstate).
    make_tree(tmp_path, builtin_lines=["kernel/drivers/infiniband/core/ib-umad.ko"], builtin_dirs=["ib_uverbs"])
    result, sim = run(tmp_path)
    assert modprobe_calls(sim) == [["rdma_cm"]]
    assert result["builtin"] == ["ib_uverbs", "ib_umad"]
    assert result["loaded_now"] == ["rdma_cm"]
    assert result["modules"] == {"rdma_cm": "absent", "ib_uverbs": "builtin", "ib_umad": "builtin"}
    # Built-ins stay in the boot list: harmless, and right again if the kernel changes.
    assert (tmp_path / LOAD_FILE.lstrip("/")).read_text().endswith("ib_uverbs\nib_umad\n")
    again, _sim = run(tmp_path)
    assert again["changed"] is False


def test_dash_and_underscore_are_one_module(tmp_path):
    make_tree(tmp_path, loaded=("ib_core", "nvidia_peermem"))
    result, sim = run(tmp_path, names=["nvidia-peermem"], persist=False)
    assert result["already_loaded"] == ["nvidia-peermem"] and result["changed"] is False
    assert sim.calls() == []
    with pytest.raises(InputError, match="listed twice"):
        run(tmp_path, names=["rdma_cm", "rdma-cm"])


def test_options_are_written_before_the_load_that_needs_them(tmp_path):
    make_tree(tmp_path)
    result, _sim = run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=64"})
    assert result["changes"] == ["write " + PROBE_FILE, "load rdma_rxe", "write " + LOAD_FILE]
    assert (tmp_path / PROBE_FILE.lstrip("/")).read_text() == HEADER + "options rdma_rxe max_ucontext=64\n"
    # The simulated load took its options from modprobe.d, as the real one does.
    assert (tmp_path / "sys/module/rdma_rxe/parameters/max_ucontext").read_text() == "64\n"
    again, _sim = run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=64"})
    assert again["changed"] is False and again["option_mismatches"] == []


def test_changed_options_are_reported_not_applied_without_consent(tmp_path):
    make_tree(tmp_path)
    run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=64"})
    result, sim = run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=128"})
    assert result["changes"] == ["write " + PROBE_FILE]
    assert result["option_mismatches"] == [dict(module="rdma_rxe", parameter="max_ucontext", wanted="128", running="64")]
    assert any("runs with max_ucontext=64" in w for w in result["warnings"])
    assert (tmp_path / "sys/module/rdma_rxe/parameters/max_ucontext").read_text() == "64\n"
    calls_before = len(sim.calls())
    reloaded, sim = run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=128"}, reload=True)
    assert reloaded["reloaded"] == ["rdma_rxe"] and reloaded["loaded_now"] == []
    assert [c[1:] for c in sim.calls()[calls_before:] if c[0].endswith("modprobe")] == [["-r", "rdma_rxe"], ["rdma_rxe"]]
    assert (tmp_path / "sys/module/rdma_rxe/parameters/max_ucontext").read_text() == "128\n"


def test_reload_of_a_module_in_use_fails_clearly(tmp_path):
    make_tree(tmp_path)
    run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=64"})
    FakeAnsibleModule(tmp_path).sim.configure(modules={"rdma_rxe": {"in_use": True}})
    with pytest.raises(RdmaopsError, match="cannot reload rdma_rxe.*Module rdma_rxe is in use"):
        run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=128"}, reload=True)


def test_boolean_parameters_compare_as_the_kernel_prints_them():
    assert kmod.same_value("Y", "1") and kmod.same_value("N", "off") and kmod.same_value("Y", None)
    assert kmod.same_value("16", "0x10") and not kmod.same_value("16", "17")
    assert not kmod.same_value("fast", "slow")


def test_builtin_options_warn(tmp_path):
    make_tree(tmp_path, builtin_dirs=["ib_core"], loaded=())
    result, _sim = run(tmp_path, names=["ib_core"], options={"ib_core": "recv_queue_size=1024"}, persist=False)
    assert any("built into the kernel" in w and "ib_core.<parameter>" in w for w in result["warnings"])


def test_absent_removes_our_entries_and_keeps_modules_loaded(tmp_path):
    make_tree(tmp_path)
    run(tmp_path, names=["rdma_cm", "ib_uverbs"], options={"ib_uverbs": "x=1"})
    result, sim = run(tmp_path, names=["ib_uverbs"], state="absent")
    assert result["changes"] == ["remove " + PROBE_FILE, "write " + LOAD_FILE]
    assert (tmp_path / LOAD_FILE.lstrip("/")).read_text() == HEADER + "rdma_cm\n"
    assert (tmp_path / "sys/module/ib_uverbs").is_dir()
    result, sim = run(tmp_path, names=["rdma_cm", "ib_uverbs"], state="absent", unload=True)
    assert result["unloaded"] == ["ib_uverbs", "rdma_cm"]
    # unloading the RDMA core takes every RDMA user down with it
    assert result["disruption"] == "driver_restart"
    assert "driver_restart: unload rdma_cm" in result["disruptive_changes"]
    assert not (tmp_path / LOAD_FILE.lstrip("/")).exists()
    assert not (tmp_path / "sys/module/rdma_cm").exists()
    again, _sim = run(tmp_path, names=["rdma_cm", "ib_uverbs"], state="absent", unload=True)
    assert again["changed"] is False


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(names=["../evil"]), "names: '../evil' is not a kernel module name"),
        (dict(names=["rdma_cm.ko"]), "not a kernel module name"),
        (dict(names=[]), "names is empty"),
        (dict(options={"rdma_cm": "b@d=1"}), "options.rdma_cm: 'b@d=1' is not a module parameter"),
        (dict(options={"rdma_cm": "a=1\nb=2"}), "one line"),
        (dict(options={"rdma_cm": "a='1"}), "cannot parse"),
        (dict(modules_load_file="/etc/rdma.conf"), "modules_load_file: '/etc/rdma.conf' must be a .conf file directly in /etc/modules-load.d/"),
        (dict(modprobe_file="/etc/modprobe.d/x.txt"), "modprobe_file"),
        (dict(modprobe_file="/etc/modprobe.d/sub/x.conf"), "modprobe_file"),
    ],
)
def test_bad_input_fails_before_anything_is_touched(tmp_path, kwargs, message):
    make_tree(tmp_path)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(InputError) as caught:
        run(tmp_path, **kwargs)
    assert message in str(caught.value)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_foreign_edits_to_our_file_are_put_back(tmp_path):
    make_tree(tmp_path)
    run(tmp_path)
    target = tmp_path / LOAD_FILE.lstrip("/")
    target.write_text(target.read_text() + "evil_extra\n")
    result, _sim = run(tmp_path)
    assert result["changes"] == ["write " + LOAD_FILE]
    assert "evil_extra" not in target.read_text()


def test_kernel_log_lines_since_the_snapshot():
    before = ["[1.0] a", "[2.0] b"]
    assert kmod.lines_after(before, before + ["[3.0] c"]) == ["[3.0] c"]
    assert kmod.lines_after([], ["x"]) == ["x"]
    # The ring buffer rotated past the marker: everything is new.
    assert kmod.lines_after(before, ["[9.0] z"]) == ["[9.0] z"]
    assert kmod.mentioning(["nvidia-peermem x", "nvidia_peermem y", "other"], "nvidia_peermem") == [
        "nvidia-peermem x", "nvidia_peermem y"]


def test_older_kernel_log_lines_are_shown_apart(tmp_path):
    make_tree(tmp_path)
    sim = FakeAnsibleModule(tmp_path).sim
    sim.log("[   50.000000] rdma_cm: Unknown symbol from an attempt an hour ago (err -22)")
    sim.configure(modules={"rdma_cm": {"rc": 1, "stderr": "modprobe: ERROR: could not insert 'rdma_cm': Invalid argument\n"}})
    with pytest.raises(ApplyError) as caught:
        run(tmp_path)
    exc = caught.value.cause
    assert exc.kernel_log == []
    assert exc.earlier_log == ["[   50.000000] rdma_cm: Unknown symbol from an attempt an hour ago (err -22)"]
    assert "the kernel logged nothing while it ran (earlier lines about rdma_cm:" in str(exc)


def test_missing_modprobe_is_named(tmp_path):
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import ToolNotFound

    make_tree(tmp_path)
    engine, _fake = engine_for(tmp_path, check_mode=True, tools=("dmesg",))
    # Planning already asks modprobe whether the modules exist, so check mode says so too.
    with pytest.raises(ToolNotFound, match="modprobe was not found on PATH"):
        execute(engine)


# -- failures tell the truth ---------------------------------------------------------------------
def test_a_load_failing_after_others_loaded_reports_changed_and_what_stayed(tmp_path):
    # rdma_cm loads (with its options from the file this run writes), ib_uverbs fails.  The file
    # is put back; rdma_cm stays loaded (unloading under a workload is not safe), so the run
    # failed with changed: true and names what is applied and what was never done.
    make_tree(tmp_path)
    FakeAnsibleModule(tmp_path).sim.configure(modules={"ib_uverbs": {
        "rc": 1, "stderr": "modprobe: ERROR: could not insert 'ib_uverbs': Invalid argument\n"}})
    result, exc, sim = run_failing(tmp_path, options={"rdma_cm": "x=1"})
    assert isinstance(exc, ApplyError) and isinstance(exc.cause, kmod.LoadFailed)
    assert result["changed"] is True
    assert result["applied"] == ["load rdma_cm"]
    assert result["rolled_back"] == ["write " + PROBE_FILE]
    assert result["not_applied"] == ["load ib_uverbs", "load ib_umad", "write " + LOAD_FILE]
    assert result["loaded_now"] == ["rdma_cm"]
    assert result["msg"].startswith("modprobe ib_uverbs failed (rc=1)")
    assert result["module"] == "ib_uverbs" and result["stderr"].startswith("modprobe: ERROR")
    assert (tmp_path / "sys/module/rdma_cm/initstate").read_text() == "live\n"
    assert not (tmp_path / PROBE_FILE.lstrip("/")).exists()
    assert not (tmp_path / LOAD_FILE.lstrip("/")).exists()
    assert modprobe_calls(sim) == [["rdma_cm"], ["ib_uverbs"]]


def test_a_first_load_failing_puts_the_options_file_back_and_reports_unchanged(tmp_path):
    make_tree(tmp_path)
    probe = tmp_path / PROBE_FILE.lstrip("/")
    probe.parent.mkdir(parents=True)
    probe.write_text(HEADER + "options rdma_cm x=0\n")
    FakeAnsibleModule(tmp_path).sim.configure(modules={"rdma_cm": {"rc": 1, "stderr": "boom\n"}})
    result, _exc, _sim = run_failing(tmp_path, options={"rdma_cm": "x=1"})
    assert result["changed"] is False and result["applied"] == []
    assert result["rolled_back"] == ["write " + PROBE_FILE]
    assert probe.read_text() == HEADER + "options rdma_cm x=0\n"


def test_a_reload_whose_load_fails_says_the_module_is_now_unloaded(tmp_path):
    make_tree(tmp_path)
    run(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=64"})
    FakeAnsibleModule(tmp_path).sim.configure(modules={"rdma_rxe": {"rc": 1, "stderr": "bad\n"}})
    result, _exc, _sim = run_failing(tmp_path, names=["rdma_rxe"], options={"rdma_rxe": "max_ucontext=128"},
                                     reload=True)
    assert result["changed"] is True
    assert result["applied"] == ["unload rdma_rxe to reload it with its options"]
    assert "rdma_rxe was unloaded to apply its options and is not loaded now" in result["msg"]


# -- input refused before any modprobe runs ---------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    (dict(names=["-r"]), "names: '-r' starts with '-', which modprobe would read as an option"),
    (dict(names=["rdma_cm", "--help"]), "names: '--help' starts with '-'"),
    (dict(names=["rdma_cm\n"]), "names: 'rdma_cm\\n' is not a kernel module name"),
    (dict(names=["a" * 56]), "is not a kernel module name"),
    (dict(names=["rdma cm"]), "is not a kernel module name"),
    (dict(options={"-r": "x=1"}), "options: key: '-r' starts with '-'"),
    (dict(options={"rdma_cm\n": "x=1"}), "is not a kernel module name"),
    (dict(options={"rdma_cm": "x=1\x00"}), "control character"),
    (dict(options={"rdma_cm": "x\n=1"}), "one line"),
    (dict(options={"rdma_cm": "x=1", "rdma-cm": "x=2"}), "options: rdma-cm is given twice"),
    (dict(modprobe_file="/etc/modprobe.d/../modules-load.d/x.conf"), "without '.' or '..' components"),
    (dict(modprobe_file="/etc/modprobe.d/..conf"), "must be a .conf file directly in /etc/modprobe.d/"),
    (dict(modprobe_file="/etc/modprobe.d/.hidden.conf"), "must be a .conf file directly in"),
    (dict(modprobe_file="/etc/modprobe.d/x.conf\n"), "modprobe_file"),
    (dict(modprobe_file="modprobe.d/x.conf"), "absolute file path"),
    (dict(modules_load_file="/etc/modules-load.d/-x.conf"), "must be a .conf file directly in /etc/modules-load.d/"),
    (dict(modules_load_file="/etc/modules-load.d/.."), "modules_load_file"),
])
def test_option_like_and_odd_values_are_refused_before_modprobe_runs(tmp_path, kwargs, message):
    make_tree(tmp_path)
    before = host_files(tmp_path)
    engine, fake = engine_for(tmp_path, **kwargs)
    with pytest.raises(InputError) as caught:
        execute(engine)
    assert message in caught.value.msg
    assert fake.sim.calls() == []
    assert host_files(tmp_path) == before


def test_the_kernel_module_name_rule():
    for name in ("rdma_cm", "nvidia-peermem", "8021q", "a" * 55, "_x"):
        assert kmod.check_module_name("names", name) == name


# -- files we do not own ------------------------------------------------------------------------------
def foreign(root, path, text):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def test_a_foreign_modprobe_file_is_refused_unless_adopted(tmp_path):
    make_tree(tmp_path)
    probe = foreign(tmp_path, PROBE_FILE, "options rdma_cm x=0\n")
    result, exc, sim = run_failing(tmp_path, options={"rdma_cm": "x=1"})
    assert isinstance(exc, RefusedError)
    assert result["changed"] is False and result["path"] == PROBE_FILE
    assert "was not written by rdmaops.roce" in result["msg"] and "adopt: true" in result["msg"]
    assert probe.read_text() == "options rdma_cm x=0\n"
    assert sim.calls() == []  # refused before even the dry-run checks
    adopted, _sim = run(tmp_path, options={"rdma_cm": "x=1"}, adopt=True)
    assert adopted["changed"] is True
    assert probe.read_text() == HEADER + "options rdma_cm x=1\n"


def test_a_foreign_modules_load_file_is_refused_before_any_load(tmp_path):
    make_tree(tmp_path)
    conf = foreign(tmp_path, LOAD_FILE, "ib_ipoib\n")
    result, exc, sim = run_failing(tmp_path)
    assert isinstance(exc, RefusedError)
    assert result["changed"] is False and result["path"] == LOAD_FILE
    assert modprobe_calls(sim) == []
    assert conf.read_text() == "ib_ipoib\n"
    again, _sim = run(tmp_path, adopt=True)
    assert conf.read_text() == HEADER + "rdma_cm\nib_uverbs\nib_umad\n"


def test_absent_refuses_to_edit_or_remove_foreign_files(tmp_path):
    make_tree(tmp_path)
    conf = foreign(tmp_path, LOAD_FILE, "rdma_cm\n")
    probe = foreign(tmp_path, PROBE_FILE, "options rdma_cm x=1\n")
    for state_kwargs in (dict(), dict(unload=True)):
        result, exc, sim = run_failing(tmp_path, names=["rdma_cm"], state="absent", **state_kwargs)
        assert isinstance(exc, RefusedError) and result["changed"] is False
    assert conf.read_text() == "rdma_cm\n" and probe.read_text() == "options rdma_cm x=1\n"
    result, _sim = run(tmp_path, names=["rdma_cm"], state="absent", adopt=True)
    assert result["changes"] == ["remove " + PROBE_FILE, "remove " + LOAD_FILE]
    assert not conf.exists() and not probe.exists()


def test_absent_leaves_a_foreign_file_without_our_entries_alone(tmp_path):
    make_tree(tmp_path)
    conf = foreign(tmp_path, LOAD_FILE, "ib_ipoib\n")
    result, _sim = run(tmp_path, names=["rdma_cm"], state="absent")
    assert result["changed"] is False
    assert conf.read_text() == "ib_ipoib\n"
