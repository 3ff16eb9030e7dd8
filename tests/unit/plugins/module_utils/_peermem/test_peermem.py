"""peermem decisions and diagnoses on recorded module lists, kernel log lines and driver versions."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._peermem import decide as peermem

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "peermem")
KERNEL = "5.15.0-119-generic"


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def lines(*parts):
    return fixture(*parts).splitlines()


def observation(**overrides):
    """A GPU host with DOCA-OFED loaded and a working driver 535 (the common production case)."""
    obs = dict(
        kernel=KERNEL,
        gpus=["0000:3e:00.0", "0000:ba:00.0"],
        nvidia=dict(loaded=True, version="535.104.05", flavor="proprietary", source="/sys/module/nvidia"),
        modules=dict(nvidia_peermem="absent", nv_peer_mem="absent", ib_core="loaded", ib_uverbs="loaded",
                     mlx5_core="loaded", nvidia="loaded"),
        mlx5_core_version="25.10-1.7.1",
        peer_memory_api=True,
        rdma_stack=dict(flavor="doca_ofed", version="25.10-1.7.1"),
        module_files=dict(nvidia_peermem=dict(peermem.parse_modinfo(fixture("modinfo", "nvidia-peermem-535-ofed.txt")), found=True)),
    )
    obs.update(overrides)
    return obs


def inbox_open_host(**overrides):
    """Debian 12 kernel, inbox rdma-core 44, open driver 565: peermem cannot work, DMA-BUF can."""
    values = dict(
        kernel="6.1.0-18-amd64",
        nvidia=dict(loaded=True, version="565.57.01", flavor="open", source="/sys/module/nvidia"),
        mlx5_core_version=None,
        peer_memory_api=False,
        rdma_stack=dict(flavor="inbox", version="44.0-2"),
    )
    values.update(overrides)
    return observation(**values)


# -- parsing recorded output ------------------------------------------------------------------------
@pytest.mark.parametrize("name, version, flavor", [
    ("proprietary-515.76.txt", "515.76", "proprietary"),
    ("proprietary-580.159.04.txt", "580.159.04", "proprietary"),
    ("open-575.57.08.txt", "575.57.08", "open"),
    ("open-aarch64-580.65.06.txt", "580.65.06", "open"),
])
def test_proc_driver_version(name, version, flavor):
    assert peermem.parse_proc_driver_version(fixture("proc_driver_nvidia_version", name)) == (version, flavor)


def test_proc_driver_version_absent():
    assert peermem.parse_proc_driver_version(None) == (None, None)


def test_modinfo_of_the_legacy_module():
    info = peermem.parse_modinfo(fixture("modinfo", "nv_peer_mem-1.0-8.txt"))
    assert info["depends"] == ["ib_core"]
    assert info["version"] == "1.0-8"
    assert info["filename"] == "/lib/modules/4.15.0-46-generic/updates/dkms/nv_peer_mem.ko"
    assert info["signer"] == ""


def test_modinfo_of_the_stub_build_has_no_dependencies():
    assert peermem.parse_modinfo(fixture("modinfo", "nvidia-peermem-535-stub.txt"))["depends"] == []
    assert peermem.parse_modinfo(fixture("modinfo", "nvidia-peermem-535-ofed.txt"))["depends"] == ["ib_core", "nvidia"]


def test_license_tells_the_flavour():
    assert peermem.license_flavor(peermem.parse_modinfo(fixture("modinfo", "nvidia-565-open.txt"))["license"]) == "open"
    assert peermem.license_flavor(peermem.parse_modinfo(fixture("modinfo", "nvidia-535-proprietary.txt"))["license"]) == "proprietary"
    assert peermem.license_flavor(None) is None


def test_versions():
    assert peermem.parse_version("535.104.05") == (535, 104, 5)
    assert peermem.parse_version("5.15.0-119-generic") == (5, 15, 0)
    assert peermem.parse_version("44.0-2") == (44, 0)
    assert peermem.parse_version("unknown") is None


def test_kallsyms_peer_api():
    assert peermem.kallsyms_has_peer_api("0000000000000000 T ib_register_peer_memory_client\t[ib_core]\n")
    assert not peermem.kallsyms_has_peer_api("0000000000000000 T ib_register_client\t[ib_core]\n")


def test_bad_kernel_log_lines_skip_the_harmless_ones():
    assert peermem.bad_log_lines(lines("dmesg", "nvidia-peermem-invalid-context.txt")) == []
    assert peermem.bad_log_lines(lines("dmesg", "nvidia_peermem-taint.txt")) == []
    assert len(peermem.bad_log_lines(lines("dmesg", "nvidia_peermem-abi-mismatch.txt"))) == 4
    assert peermem.bad_log_lines(lines("dmesg", "nvidia-peermem-invalid-param.txt"))


# -- which module, or none ----------------------------------------------------------------------------
def test_no_gpu_is_skipped_with_the_reason():
    obs = observation(gpus=[], nvidia=dict(loaded=False, version=None, flavor=None, source=None))
    decision = peermem.decide(obs)
    assert decision["action"] == "skip"
    assert "no NVIDIA GPU on this host" in decision["reason"]
    assert decision["module"] is None


def test_no_gpu_fails_when_required():
    obs = observation(gpus=[], nvidia=dict(loaded=False, version=None, flavor=None, source=None))
    decision = peermem.decide(obs, required=True)
    assert decision["action"] == "fail"
    assert decision["reason"].startswith("peermem_required is true but no NVIDIA GPU on this host")


def test_gpu_without_driver_says_install_the_driver_after_ofed():
    obs = observation(nvidia=dict(loaded=False, version=None, flavor=None, source=None))
    decision = peermem.decide(obs)
    assert decision["action"] == "skip"
    assert "2 NVIDIA GPU(s) found (0000:3e:00.0, 0000:ba:00.0) but no NVIDIA driver for kernel 5.15.0-119-generic" in decision["reason"]
    assert peermem.decide(obs, mode="peermem", required=True)["action"] == "fail"


def test_ofed_host_with_driver_470_or_later_loads_nvidia_peermem():
    decision = peermem.decide(observation())
    assert decision["action"] == "load"
    assert decision["module"] == "nvidia_peermem"
    assert "ib_register_peer_memory_client is in /proc/kallsyms" in decision["reason"]
    assert decision["warnings"] == []
    # DMA-BUF is assessed all the same: the proprietary flavour rules it out.
    assert decision["dmabuf"]["usable"] is False


def test_driver_before_470_wants_the_legacy_module():
    obs = observation(
        nvidia=dict(loaded=True, version="460.106.00", flavor="proprietary", source="/sys/module/nvidia"),
        module_files=dict(nv_peer_mem=dict(peermem.parse_modinfo(fixture("modinfo", "nv_peer_mem-1.0-8.txt")), found=True)),
    )
    decision = peermem.decide(obs)
    assert (decision["action"], decision["module"]) == ("load", "nv_peer_mem")


def test_legacy_module_not_installed():
    obs = observation(
        nvidia=dict(loaded=True, version="460.106.00", flavor="proprietary", source="/sys/module/nvidia"),
        module_files=dict(nv_peer_mem=dict(found=False, error="modinfo: ERROR: Module nv_peer_mem not found.")),
    )
    auto = peermem.decide(obs)
    assert auto["action"] == "skip"
    assert "predates nvidia-peermem (R470)" in auto["reason"] and "nvidia-peer-memory-dkms" in auto["reason"]
    assert peermem.decide(obs, mode="peermem")["action"] == "fail"


def test_nvidia_peermem_missing_for_this_kernel_fails_with_dkms_steps():
    obs = observation(module_files=dict(nvidia_peermem=dict(found=False, error="modinfo: ERROR: Module nvidia-peermem not found.")))
    decision = peermem.decide(obs)
    assert decision["action"] == "fail"
    assert "dkms install nvidia/535.104.05 -k 5.15.0-119-generic --force" in decision["reason"]


def test_legacy_module_loaded_next_to_a_new_driver_is_refused_with_the_fix():
    modules = dict(observation()["modules"], nv_peer_mem="loaded")
    decision = peermem.decide(observation(modules=modules))
    assert decision["action"] == "fail"
    assert "only one peer-memory client may be loaded" in decision["reason"]
    assert "modprobe -r nv_peer_mem" in decision["reason"]
    assert "systemctl disable --now nv_peer_mem" in decision["reason"]


def test_already_loaded_is_kept():
    modules = dict(observation()["modules"], nvidia_peermem="loaded")
    decision = peermem.decide(observation(modules=modules, module_files={}))
    assert (decision["action"], decision["module"]) == ("load", "nvidia_peermem")
    assert decision["reason"] == "nvidia_peermem is loaded (NVIDIA driver 535.104.05)"


def test_stub_build_is_warned_about_before_loading():
    stub = dict(peermem.parse_modinfo(fixture("modinfo", "nvidia-peermem-535-stub.txt")), found=True)
    decision = peermem.decide(observation(module_files=dict(nvidia_peermem=stub)))
    assert decision["action"] == "load"
    assert any("built without the OFED peer-memory symbols" in w for w in decision["warnings"])


def test_unknown_peer_api_loads_with_a_warning():
    obs = observation(peer_memory_api=None, mlx5_core_version=None,
                      modules=dict(observation()["modules"], ib_core="absent"))
    decision = peermem.decide(obs, mode="peermem")
    assert decision["action"] == "load"
    assert any("could not confirm" in w and "ib_core is not loaded yet" in w for w in decision["warnings"])


# -- DMA-BUF ------------------------------------------------------------------------------------------
def test_inbox_host_with_open_driver_uses_dmabuf_in_auto():
    decision = peermem.decide(inbox_open_host())
    assert decision["action"] == "dmabuf"
    assert decision["module"] is None
    assert decision["dmabuf"]["usable"] is True
    assert "it is the kernel's own (inbox) RDMA core" in decision["reason"]
    assert "DMA-BUF is usable instead" in decision["reason"]


def test_inbox_host_refuses_peermem_mode_with_the_ofed_fix():
    decision = peermem.decide(inbox_open_host(), mode="peermem")
    assert decision["action"] == "fail"
    assert "Install OFED (rdmaops.roce.ofed)" in decision["reason"]
    assert "dkms install nvidia/565.57.01 -k 6.1.0-18-amd64 --force" in decision["reason"]


def test_inbox_host_with_proprietary_driver_skips_unless_required():
    obs = inbox_open_host(nvidia=dict(loaded=True, version="535.104.05", flavor="proprietary", source="x"))
    decision = peermem.decide(obs)
    assert decision["action"] == "skip"
    assert "NVIDIA open kernel modules (the proprietary flavour exports no dma-buf): no" in decision["reason"]
    assert "NVIDIA driver >= 515" not in decision["reason"]  # 535 meets that one
    assert peermem.decide(obs, required=True)["action"] == "fail"


def test_dmabuf_mode_names_each_missing_requirement():
    obs = inbox_open_host(kernel="5.4.0-150-generic", rdma_stack=dict(flavor="inbox", version="28.0-1ubuntu1"))
    decision = peermem.decide(obs, mode="dmabuf")
    assert decision["action"] == "fail"
    assert "Linux kernel >= 5.12 (RDMA dma-buf memory registration): no (kernel 5.4.0-150-generic)" in decision["reason"]
    assert "rdma-core >= 34" in decision["reason"] and "inbox 28.0-1ubuntu1" in decision["reason"]


def test_dmabuf_mode_with_unknown_stack_goes_ahead_with_a_warning():
    decision = peermem.decide(inbox_open_host(rdma_stack=None), mode="dmabuf")
    assert decision["action"] == "dmabuf"
    assert any("not confirmed" in w and "no rdma facts" in w for w in decision["warnings"])


def test_auto_never_picks_dmabuf_on_unknowns():
    decision = peermem.decide(inbox_open_host(rdma_stack=None))
    assert decision["dmabuf"]["usable"] is None
    assert decision["action"] == "skip"


@pytest.mark.parametrize("stack, ok", [
    (dict(flavor="doca_ofed", version="25.10-1.7.1"), True),
    (dict(flavor="mlnx_ofed", version="5.8-3.0.7"), True),
    (dict(flavor="mlnx_ofed", version="4.9-7.1.0"), False),
    (dict(flavor="inbox", version="34.0-1"), True),
    (dict(flavor="inbox", version="33.1-1"), False),
    (dict(flavor="none", version=None), False),
    ({}, None),
])
def test_verbs_library_check(stack, ok):
    assert peermem.dmabuf_assessment(inbox_open_host(rdma_stack=stack))["checks"][3]["ok"] is ok


def test_bad_mode_is_an_error():
    with pytest.raises(ValueError):
        peermem.decide(observation(), mode="gdr")


# -- failures, explained ----------------------------------------------------------------------------
def test_invalid_argument_with_a_silent_log_means_built_before_ofed():
    stub = dict(peermem.parse_modinfo(fixture("modinfo", "nvidia-peermem-535-stub.txt")), found=True)
    result = peermem.diagnose("nvidia_peermem", fixture("modprobe", "nvidia_peermem-invalid-argument.txt"), [],
                              observation(), stub)
    assert result["category"] == "built_without_peer_symbols"
    text = result["explanation"]
    assert "the NVIDIA driver was built before OFED was installed" in text
    assert "modinfo shows depends: (none), no ib_core" in text
    assert "dkms install nvidia/535.104.05 -k 5.15.0-119-generic --force" in text


def test_invalid_argument_on_an_inbox_host_says_install_ofed_first():
    result = peermem.diagnose("nvidia_peermem", fixture("modprobe", "nvidia_peermem-invalid-argument.txt"), [],
                              inbox_open_host())
    assert result["category"] == "built_without_peer_symbols"
    assert "install OFED first" in result["explanation"]


def test_symbol_versions_that_disagree_mean_another_ofed():
    result = peermem.diagnose("nvidia_peermem", fixture("modprobe", "nvidia_peermem-invalid-argument.txt"),
                              lines("dmesg", "nvidia_peermem-abi-mismatch.txt"), observation())
    assert result["category"] == "abi_mismatch"
    assert "OFED was upgraded or reinstalled after the NVIDIA driver was built" in result["explanation"]


def test_unknown_peer_symbol_means_the_inbox_ib_core_is_loaded():
    result = peermem.diagnose("nv_peer_mem", fixture("modprobe", "nv_peer_mem-unknown-symbol.txt"),
                              lines("dmesg", "nv_peer_mem-unknown-symbol-err0.txt"), observation(peer_memory_api=False))
    assert result["category"] == "no_peer_api"
    assert "reinstall nvidia-peer-memory-dkms" in result["explanation"]


def test_legacy_module_built_against_another_driver():
    result = peermem.diagnose("nv_peer_mem", fixture("modprobe", "nv_peer_mem-invalid-argument.txt"),
                              lines("dmesg", "nv_peer_mem-nvidia-p2p-disagrees.txt"), observation())
    # Both symbol sets disagree; the ib_core mismatch is named first, the fix is the same rebuild.
    assert result["category"] == "abi_mismatch"


def test_module_not_installed_for_the_kernel():
    result = peermem.diagnose("nvidia_peermem", fixture("modprobe", "nvidia-peermem-not-found.txt"), [], observation())
    assert result["category"] == "missing"
    assert "dkms status" in result["explanation"]


def test_bad_option():
    result = peermem.diagnose("nvidia_peermem", fixture("modprobe", "nvidia_peermem-invalid-argument.txt"),
                              lines("dmesg", "nvidia-peermem-invalid-param.txt"), observation())
    assert result["category"] == "bad_option"
    assert "peerdirect_support=0" in result["explanation"]


def test_secure_boot():
    result = peermem.diagnose("nvidia_peermem", "modprobe: ERROR: could not insert 'nvidia_peermem': Key was rejected by service\n",
                              [], observation())
    assert result["category"] == "secure_boot"
    assert "mokutil" in result["explanation"]
