"""peermem on host trees: observe, load, persist the boot unit, prove; modprobe simulated in the tree."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._peermem import engine as peermem_host
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute, failure
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan

import gputree
from kmodsim import FakeAnsibleModule

UNIT = "/etc/systemd/system/rdmaops-peermem.service"
WANTS = "/etc/systemd/system/multi-user.target.wants/rdmaops-peermem.service"
STACK = dict(flavor="doca_ofed", version="25.10-1.7.1")


class PeermemFailed(Exception):
    """The run failed: ``details`` is the failed result run_module reports, ``error`` the raised one."""

    def __init__(self, details, error):
        super(PeermemFailed, self).__init__(details["msg"])
        self.details = details
        self.error = error


def run(root, check_mode=False, **kwargs):
    """One module run as run_module does it; a failure raises PeermemFailed with the failed result."""
    kwargs.setdefault("rdma_stack", STACK)
    fake = FakeAnsibleModule(root, check_mode=check_mode, diff=True)
    ctx = Context(fake, host=HostRoot(str(root)), runner=CommandRunner(fake))
    engine = peermem_host.Peermem(ctx, kwargs)
    plan = Plan()
    try:
        outcome, plan = execute(engine, plan)
    except RdmaopsError as exc:
        raise PeermemFailed(failure(exc, engine, plan), exc)
    return outcome, fake.sim


def tree(root, path):
    return root / path.lstrip("/")


def test_observation_of_the_gpu_host(tmp_path):
    gputree.gpu_host(tmp_path)
    obs = peermem_host.observe(HostRoot(str(tmp_path)), CommandRunner(FakeAnsibleModule(tmp_path)), STACK)
    assert obs["gpus"] == ["0000:3e:00.0", "0000:ba:00.0"]
    assert obs["nvidia"] == dict(loaded=True, version="535.104.05", flavor="proprietary", source="/sys/module/nvidia")
    assert obs["peer_memory_api"] is True
    assert obs["mlx5_core_version"] == "25.10-1.7.1"
    assert obs["modules"]["nvidia_peermem"] == "absent"
    assert obs["module_files"]["nvidia_peermem"]["depends"] == ["ib_core", "nvidia"]


def test_first_run_loads_persists_and_proves(tmp_path):
    gputree.gpu_host(tmp_path)
    outcome, sim = run(tmp_path)
    report = outcome["peermem"]
    assert outcome["changed"] is True
    assert outcome["changes"] == ["load nvidia_peermem", "write " + UNIT, "enable rdmaops-peermem.service"]
    assert report["action"] == "load" and report["module"] == "nvidia_peermem"
    assert report["loaded"] is True and report["loaded_now"] is True
    assert report["memory_peers_version"] == "535.104.05"
    assert report["gdr_detect_paths"] == ["/sys/kernel/mm/memory_peers/nv_mem/version", "/sys/module/nvidia_peermem/version"]
    assert report["kernel_log"] == []
    assert report["warnings"] == []
    assert report["daemon_reload"] == "skipped: the host root is not /"
    unit = tree(tmp_path, UNIT).read_text()
    assert "After=openibd.service rdma-hw.target rdma-load-modules@rdma.service" in unit
    assert "PartOf=openibd.service" in unit
    assert "ExecStart=/sbin/modprobe nvidia-peermem" in unit
    assert "WantedBy=multi-user.target" in unit
    assert os.readlink(str(tree(tmp_path, WANTS))) == UNIT
    assert not tree(tmp_path, "/etc/modprobe.d/rdmaops-peermem.conf").exists()
    assert [c[1:] for c in sim.calls() if c[0].endswith("modprobe")] == [["--dry-run", "nvidia_peermem"], ["nvidia_peermem"]]


def test_second_run_changes_nothing(tmp_path):
    gputree.gpu_host(tmp_path)
    run(tmp_path)
    outcome, sim = run(tmp_path)
    assert outcome["changed"] is False and outcome["changes"] == []
    assert outcome["peermem"]["loaded"] is True and outcome["peermem"]["loaded_now"] is False
    assert outcome["peermem"]["reason"] == "nvidia_peermem is loaded (NVIDIA driver 535.104.05)"


def test_check_mode_predicts_and_touches_nothing(tmp_path):
    gputree.gpu_host(tmp_path)
    before = gputree.tree_files(tmp_path)
    outcome, sim = run(tmp_path, check_mode=True)
    assert outcome["changed"] is True
    assert outcome["peermem"]["loaded_now"] is True and outcome["peermem"]["loaded"] is False
    assert outcome["changes"] == ["load nvidia_peermem", "write " + UNIT, "enable rdmaops-peermem.service"]
    # read-only lookups only: is a driver there, and can this kernel load the module?
    assert sim.calls() == [["/sim/bin/modinfo", "nvidia-peermem"], ["/sim/bin/modprobe", "--dry-run", "nvidia_peermem"]]
    assert gputree.tree_files(tmp_path) == before


def test_options_go_to_their_own_modprobe_file_before_the_load(tmp_path):
    gputree.gpu_host(tmp_path)
    outcome, _sim = run(tmp_path, options="peerdirect_support=1")
    assert outcome["changes"][0] == "write /etc/modprobe.d/rdmaops-peermem.conf"
    assert "options nvidia_peermem peerdirect_support=1\n" in tree(tmp_path, "/etc/modprobe.d/rdmaops-peermem.conf").read_text()
    assert tree(tmp_path, "/sys/module/nvidia_peermem/parameters/peerdirect_support").read_text() == "1\n"


def test_invalid_argument_fails_with_the_rebuild_explanation(tmp_path):
    gputree.gpu_host(
        tmp_path, modinfo="nvidia-peermem-535-stub.txt",
        peermem_behaviour=dict(rc=1, stderr=gputree.fixture("modprobe", "nvidia_peermem-invalid-argument.txt")),
    )
    with pytest.raises(PeermemFailed) as caught:
        run(tmp_path)
    message = str(caught.value)
    assert message.startswith("modprobe nvidia_peermem failed (rc=1): modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument")
    assert "built without the MLNX_OFED / DOCA-OFED peer-memory symbols" in message
    assert "dkms install nvidia/535.104.05 -k 5.15.0-119-generic --force" in message
    details = caught.value.details
    assert details["peermem"]["diagnosis"]["category"] == "built_without_peer_symbols"
    assert details["kernel_log"] == []
    # Nothing persisted for a module that does not load: no boot unit that fails every boot.
    assert not tree(tmp_path, UNIT).exists()


def test_symbol_mismatch_in_the_kernel_log_is_named(tmp_path):
    gputree.gpu_host(tmp_path, peermem_behaviour=dict(
        rc=1, stderr=gputree.fixture("modprobe", "nvidia_peermem-invalid-argument.txt"),
        log=gputree.fixture("dmesg", "nvidia_peermem-abi-mismatch.txt").splitlines()))
    with pytest.raises(PeermemFailed) as caught:
        run(tmp_path)
    assert caught.value.details["peermem"]["diagnosis"]["category"] == "abi_mismatch"
    assert caught.value.details["kernel_log"][0].endswith("disagrees about version of symbol ib_register_peer_memory_client")


def test_errors_logged_during_a_load_that_succeeded_fail_the_proof(tmp_path):
    gputree.gpu_host(tmp_path, peermem_behaviour=dict(
        log=["[  900.000001] nvidia-peermem nv_mem_client_init:260 nv_mem_client_init -- error while registering nc client"]))
    with pytest.raises(PeermemFailed, match="the kernel log written while nvidia_peermem loaded has errors"):
        run(tmp_path)


def test_no_gpu_host_is_skipped_and_untouched(tmp_path):
    gputree.no_gpu_host(tmp_path)
    before = gputree.tree_files(tmp_path)
    outcome, sim = run(tmp_path, rdma_stack=dict(flavor="none", version=None))
    assert outcome["skipped"] is True and outcome["changed"] is False
    assert "no NVIDIA GPU on this host" in outcome["msg"]
    assert outcome["peermem"]["action"] == "skip"
    assert gputree.tree_files(tmp_path) == before
    assert sim.calls() == [["/sim/bin/modinfo", "nvidia"]]  # is a driver installed without a GPU?


def test_no_gpu_host_fails_when_required(tmp_path):
    gputree.no_gpu_host(tmp_path)
    with pytest.raises(PeermemFailed, match="^peermem_required is true but no NVIDIA GPU"):
        run(tmp_path, required=True)


def test_dmabuf_mode_removes_the_unit_this_module_wrote(tmp_path):
    gputree.gpu_host(tmp_path, driver="565.57.01", flavor="open")
    run(tmp_path)
    assert tree(tmp_path, UNIT).exists()
    outcome, _sim = run(tmp_path, mode="dmabuf")
    assert outcome["peermem"]["action"] == "dmabuf"
    assert outcome["changes"] == ["remove " + UNIT, "disable rdmaops-peermem.service"]
    assert not tree(tmp_path, UNIT).exists() and not os.path.lexists(str(tree(tmp_path, WANTS)))
    # The loaded module is left alone: unloading it could break running jobs.
    assert tree(tmp_path, "/sys/module/nvidia_peermem").is_dir()
    again, _sim = run(tmp_path, mode="dmabuf")
    assert again["changed"] is False


def test_inbox_host_in_auto_chooses_dmabuf(tmp_path):
    gputree.gpu_host(tmp_path, driver="565.57.01", flavor="open", peer_api=False)
    os.unlink(str(tree(tmp_path, "/sys/module/mlx5_core/version")))
    outcome, sim = run(tmp_path, rdma_stack=dict(flavor="inbox", version="44.0-2"))
    assert outcome["peermem"]["action"] == "dmabuf"
    assert outcome["changed"] is False
    assert not any(c[0].endswith("modprobe") for c in sim.calls())


def test_bad_unit_name_fails_before_reading(tmp_path):
    gputree.gpu_host(tmp_path)
    with pytest.raises(PeermemFailed, match="unit: '../x.service' must be a unit file name"):
        run(tmp_path, unit="../x.service")
    with pytest.raises(PeermemFailed, match="options.nvidia_peermem"):
        run(tmp_path, options="peerdirect_support=1\nx=2")


def test_an_early_boot_modules_load_entry_is_warned_about(tmp_path):
    gputree.gpu_host(tmp_path)
    conf = tree(tmp_path, "/etc/modules-load.d/nvidia-peermem.conf")
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("# Azure HPC image style\nnvidia-peermem\n")
    outcome, _sim = run(tmp_path)
    assert any(w.startswith("/etc/modules-load.d/nvidia-peermem.conf also loads a peer-memory module")
               for w in outcome["peermem"]["warnings"])
    assert conf.read_text() == "# Azure HPC image style\nnvidia-peermem\n"  # not ours: reported, left alone


def test_stale_kernel_log_lines_do_not_change_the_diagnosis(tmp_path):
    # An ABI error from an attempt before the last rebuild is in the ring buffer; this attempt
    # logs nothing, which is the stub build's signature, so that is what is diagnosed.
    gputree.gpu_host(tmp_path, modinfo="nvidia-peermem-535-stub.txt",
                     peermem_behaviour=dict(rc=1, stderr=gputree.fixture("modprobe", "nvidia_peermem-invalid-argument.txt")))
    FakeAnsibleModule(tmp_path).sim.log(*gputree.fixture("dmesg", "nvidia_peermem-abi-mismatch.txt").splitlines())
    with pytest.raises(PeermemFailed) as caught:
        run(tmp_path)
    assert caught.value.details["peermem"]["diagnosis"]["category"] == "built_without_peer_symbols"
    assert len(caught.value.details["kernel_log_earlier"]) == 4


def test_kallsyms_unreadable_means_unknown(tmp_path):
    gputree.gpu_host(tmp_path)
    os.unlink(str(tree(tmp_path, "/proc/kallsyms")))
    obs = peermem_host.observe(HostRoot(str(tmp_path)), CommandRunner(FakeAnsibleModule(tmp_path)), STACK)
    assert obs["peer_memory_api"] is None


# -- failures tell the truth, input and files refused -------------------------------------------------
PROBE = "/etc/modprobe.d/rdmaops-peermem.conf"


def test_a_failed_load_puts_its_options_file_back(tmp_path):
    gputree.gpu_host(tmp_path, peermem_behaviour=dict(
        rc=1, stderr=gputree.fixture("modprobe", "nvidia_peermem-invalid-argument.txt")))
    with pytest.raises(PeermemFailed) as caught:
        run(tmp_path, options="peerdirect_support=1")
    details = caught.value.details
    assert details["changed"] is False and details["applied"] == []
    assert details["rolled_back"] == ["write " + PROBE]
    assert details["not_applied"] == ["load nvidia_peermem", "write " + UNIT, "enable rdmaops-peermem.service"]
    assert details["peermem"]["loaded_now"] is False
    assert not tree(tmp_path, PROBE).exists() and not tree(tmp_path, UNIT).exists()


@pytest.mark.parametrize("kwargs, message", [
    (dict(unit="-x.service"), "unit: '-x.service' must be a unit file name"),
    (dict(unit="x.service\n"), "must be a unit file name"),
    (dict(unit="sub/x.service"), "must be a unit file name"),
    (dict(modprobe_file="/etc/modprobe.d/../x.conf"), "without '.' or '..' components"),
    (dict(modprobe_file="/etc/rdmaops-peermem.conf"), "must be a .conf file directly in /etc/modprobe.d/"),
    (dict(options="-r"), "is not a module parameter"),
    (dict(mode="gdr"), "mode must be one of auto, peermem, dmabuf"),
])
def test_bad_options_are_refused_before_anything_runs(tmp_path, kwargs, message):
    gputree.gpu_host(tmp_path)
    before = gputree.tree_files(tmp_path)
    with pytest.raises(PeermemFailed) as caught:
        run(tmp_path, **kwargs)
    assert message in str(caught.value)
    assert caught.value.details["changed"] is False
    assert FakeAnsibleModule(tmp_path).sim.calls() == []
    assert gputree.tree_files(tmp_path) == before


def test_a_unit_we_did_not_write_is_refused_unless_adopted(tmp_path):
    gputree.gpu_host(tmp_path)
    unit = tree(tmp_path, UNIT)
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text("[Service]\nExecStart=/usr/local/bin/site-peermem\n")
    with pytest.raises(PeermemFailed) as caught:
        run(tmp_path)
    assert "%s exists and was not written by rdmaops.roce" % UNIT in str(caught.value)
    assert caught.value.details["changed"] is False
    assert unit.read_text() == "[Service]\nExecStart=/usr/local/bin/site-peermem\n"
    assert not tree(tmp_path, "/sys/module/nvidia_peermem").exists()  # refused before the load
    outcome, _sim = run(tmp_path, adopt=True)
    assert outcome["changed"] is True
    assert "ExecStart=/sbin/modprobe nvidia-peermem" in unit.read_text()


def test_dmabuf_does_not_remove_a_unit_we_did_not_write(tmp_path):
    gputree.gpu_host(tmp_path, driver="565.57.01", flavor="open")
    unit = tree(tmp_path, UNIT)
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text("[Service]\nExecStart=/bin/true\n")
    with pytest.raises(PeermemFailed, match="was not written by rdmaops.roce"):
        run(tmp_path, mode="dmabuf")
    assert unit.read_text() == "[Service]\nExecStart=/bin/true\n"
    outcome, _sim = run(tmp_path, mode="dmabuf", adopt=True)
    assert outcome["changes"] == ["remove " + UNIT]
    assert not unit.exists()


def test_a_modprobe_file_we_did_not_write_is_refused(tmp_path):
    gputree.gpu_host(tmp_path)
    probe = tree(tmp_path, PROBE)
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_text("options nvidia_peermem peerdirect_support=0\n")
    with pytest.raises(PeermemFailed, match="was not written by rdmaops.roce"):
        run(tmp_path)  # no options: our file would be removed, but it is not ours
    assert probe.read_text() == "options nvidia_peermem peerdirect_support=0\n"


def test_kallsyms_with_bytes_that_are_not_utf8(tmp_path):
    gputree.gpu_host(tmp_path)
    tree(tmp_path, "/proc/kallsyms").write_bytes(
        b"0000000000000000 T caf\xe9_symbol\t[x]\n0000000000000000 T ib_register_peer_memory_client\t[ib_core]")
    obs = peermem_host.observe(HostRoot(str(tmp_path)), CommandRunner(FakeAnsibleModule(tmp_path)), STACK)
    assert obs["peer_memory_api"] is True
    tree(tmp_path, "/proc/kallsyms").write_bytes(b"0 T ib_register_peer_memory_client_x\t[ib_core]\n")
    obs = peermem_host.observe(HostRoot(str(tmp_path)), CommandRunner(FakeAnsibleModule(tmp_path)), STACK)
    assert obs["peer_memory_api"] is False


def test_no_raw_file_access_in_the_engines():
    import inspect
    from ansible_collections.rdmaops.roce.plugins.module_utils._kmod import engine as kmod_engine

    for source in (inspect.getsource(peermem_host), inspect.getsource(kmod_engine)):
        for raw in ("open(", "os.unlink", "os.rename", "rdma_facts"):
            assert raw not in source
