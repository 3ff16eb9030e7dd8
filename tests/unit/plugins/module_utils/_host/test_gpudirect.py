"""GPUDirect RDMA prerequisites read from the CX-7 GPU server tree plus IOMMU groups and lspci."""

import hosttree
from ansible_collections.rdmaops.roce.plugins.module_utils._host import gpudirect
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandResult
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from gputree import gpudirect_tree as tree
from gputree import lspci_text


class FakeRunner:
    """Answers ``lspci -D -vvv`` from a fixture; ``None`` means lspci is not installed."""

    def __init__(self, stdout=None, rc=0, stderr=""):
        self.stdout, self.rc, self.stderr = stdout, rc, stderr
        self.calls = []

    def has(self, tool):
        return tool == "lspci" and self.stdout is not None

    def run(self, argv, check=True):
        self.calls.append(argv)
        return CommandResult(argv, self.rc, self.stdout, self.stderr)


def test_ready_host(tmp_path):
    acs_off = lspci_text("cx7-gpu-server-acs-on.txt").replace(
        "ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-", "ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
    )
    report = gpudirect.GpuDirectReport(tree(tmp_path), FakeRunner(acs_off)).gather()
    assert report["problems"] == []
    assert report["applicable"] and report["ready"]
    assert report["gpus"] == ["0000:3e:00.0", "0000:ba:00.0"]
    assert report["rdma_nics"] == ["0000:3d:00.0", "0000:3d:00.1"]
    iommu = report["iommu"]
    assert iommu["mode"] == "passthrough"
    assert iommu["cmdline"] == {"intel_iommu": "on", "iommu": "pt"}
    assert iommu["hardware_units"] == ["dmar0"]
    assert iommu["groups"] == 5 and iommu["domain_types"] == {"identity": 5}
    assert iommu["device_domains"]["0000:3e:00.0"] == "identity"
    assert report["acs"]["status"] == "not_redirecting"
    # Every function with an ACS capability, the ConnectX-7 functions included.
    assert sorted(report["acs"]["devices"]) == ["0000:00:1c.0", "0000:3a:00.0", "0000:3c:00.0", "0000:3c:01.0", "0000:3d:00.0", "0000:3d:00.1", "0000:b9:00.0"]


def test_acs_redirect_on_gpu_paths_is_a_problem_and_other_bridges_are_not(tmp_path):
    report = gpudirect.GpuDirectReport(tree(tmp_path), FakeRunner(lspci_text("cx7-gpu-server-acs-on.txt"))).gather()
    acs = report["acs"]
    assert acs["status"] == "redirecting"
    assert acs["redirecting"] == ["0000:00:1c.0", "0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"]
    # 00:1c.0 only leads to the management NIC.
    assert acs["redirecting_on_gpu_paths"] == ["0000:3c:00.0", "0000:3c:01.0", "0000:b9:00.0"]
    assert acs["devices"]["0000:3c:01.0"] == {
        "SrcValid": True, "TransBlk": False, "ReqRedir": True, "CmpltRedir": True,
        "UpstreamFwd": True, "EgressCtrl": False, "DirectTrans": False,
    }
    assert not report["ready"]
    assert len(report["problems"]) == 1 and "0000:3c:00.0, 0000:3c:01.0, 0000:b9:00.0" in report["problems"][0]


def test_translated_iommu_names_the_devices(tmp_path):
    host = tree(tmp_path, overrides={"0000:3e:00.0": "DMA-FQ", "0000:3d:00.0": "DMA"}, cmdline="ro intel_iommu=on")
    report = gpudirect.GpuDirectReport(host, FakeRunner(lspci_text("cx7-gpu-server-acs-on.txt").replace("+", "-"))).gather()
    assert report["iommu"]["mode"] == "translated"
    assert report["iommu"]["domain_types"] == {"identity": 3, "DMA-FQ": 1, "DMA": 1}
    assert report["problems"] == [
        "IOMMU translates DMA for 0000:3d:00.0, 0000:3e:00.0: GPUDirect RDMA needs it off or in pass-through; "
        "add iommu=pt to the kernel command line (intel_iommu=on iommu=pt where SR-IOV VFs are needed)"
    ]


def test_no_iommu_groups_means_off(tmp_path):
    acs_off = FakeRunner(lspci_text("cx7-gpu-server-acs-on.txt").replace("+", "-"))
    report = gpudirect.GpuDirectReport(tree(tmp_path, groups=False, cmdline="ro"), acs_off).gather()
    assert report["iommu"]["mode"] == "off"
    assert report["iommu"]["groups"] == 0
    assert report["ready"]


def test_missing_lspci_and_peermem_are_reported_not_skipped(tmp_path):
    report = gpudirect.GpuDirectReport(tree(tmp_path, peermem=False), FakeRunner(None)).gather()
    assert report["acs"]["status"] == "unknown"
    assert report["acs"]["reason"] == "lspci is not installed (package pciutils)"
    assert report["problems"] == [
        "PCIe ACS state unknown: lspci is not installed (package pciutils)",
        "nvidia_peermem is not loaded: modprobe nvidia-peermem and list it in /etc/modules-load.d "
        "(not needed when the application registers GPU memory through DMA-BUF)",
    ]


def test_lspci_without_root_is_unknown(tmp_path):
    report = gpudirect.GpuDirectReport(tree(tmp_path), FakeRunner(lspci_text("nonroot-access-denied.txt"))).gather()
    assert report["acs"]["status"] == "unknown"
    assert "run as root" in report["acs"]["reason"]


def test_lspci_failure_is_unknown(tmp_path):
    report = gpudirect.GpuDirectReport(tree(tmp_path), FakeRunner("", rc=1, stderr="pcilib: Cannot open /proc/bus/pci")).gather()
    assert report["acs"]["reason"] == "lspci -D -vvv failed with rc=1: pcilib: Cannot open /proc/bus/pci"


def test_no_gpu_means_not_applicable_and_no_problems(tmp_path):
    manifest = hosttree.load("nordma_debian12_container.json")
    hosttree.materialize(manifest, tmp_path)
    runner = FakeRunner(None)
    report = gpudirect.GpuDirectReport(HostRoot(str(tmp_path)), runner).gather()
    assert report["applicable"] is False and report["ready"] is False
    assert report["problems"] == [] and report["gpus"] == []


# test_cmdline moved to tests/unit/plugins/module_utils/_parsers/test_pci.py with parse_cmdline
