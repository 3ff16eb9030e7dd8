"""PCI paths, lspci ACS and the kernel command line."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import pci as parsers


@pytest.mark.parametrize(
    "a, b, numa_a, numa_b, expected",
    [
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:00.0/0000:3d:00.0",
         "pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:01.0/0000:3e:00.0", 0, 0, "same_pcie_switch"),
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:3a/0000:3a:02.0/0000:3f:00.0", 0, 0, "same_host_bridge"),
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:5d/0000:5d:00.0/0000:5e:00.0", 0, 0, "same_numa_node"),
        ("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:b9/0000:b9:00.0/0000:ba:00.0", 0, 1, "cross_numa"),
        ("", "pci0000:b9/0000:b9:00.0/0000:ba:00.0", None, 1, None),
    ],
)
def test_pci_relation(a, b, numa_a, numa_b, expected):
    chain_a = parsers.pci_chain("/sys/devices/" + a if a else "/sys/devices/virtual/infiniband/rxe0")
    chain_b = parsers.pci_chain("/sys/devices/" + b)
    assert parsers.pci_relation(chain_a, chain_b, numa_a, numa_b) == expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("0000:3b:00.0", True),
        ("0000:3b:00.7", True),
        ("0000:3b:00.8", False),
        ("pci0000:3a", False),
        ("net", False),
        (None, False),
        # the old ``re.match(r"^...$")`` accepted a trailing newline
        ("0000:3b:00.0\n", False),
    ],
)
def test_is_pci_address_matches_the_whole_name(name, expected):
    assert parsers.is_pci_address(name) is expected


def test_pci_chain_of_a_virtual_device_is_empty():
    assert parsers.pci_chain("/sys/devices/virtual/infiniband/rxe0") == []
    assert parsers.pci_chain(None) == []
    assert parsers.pci_chain("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0") == [
        "pci0000:3a", "0000:3a:00.0", "0000:3b:00.0",
    ]


# moved here from tests/unit/plugins/module_utils/_host/test_gpudirect.py with parse_cmdline
@pytest.mark.parametrize(
    "cmdline, expected",
    [
        ("ro quiet", {}),
        ("intel_iommu=on iommu=pt", {"intel_iommu": "on", "iommu": "pt"}),
        ("amd_iommu=on iommu.passthrough=1 iommu=off iommu=pt", {"amd_iommu": "on", "iommu.passthrough": "1", "iommu": "pt"}),
        ("iommu=pt -- iommu=off", {"iommu": "pt"}),
    ],
)
def test_cmdline(cmdline, expected):
    assert parsers.parse_cmdline(cmdline) == expected


def _lspci(name):
    import os

    here = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools", "lspci", name)
    with open(here) as handle:
        return handle.read()


def test_lspci_acs_of_a_gpu_server():
    devices = parsers.parse_lspci_acs(_lspci("cx7-gpu-server-acs-on.txt"))
    bridge = devices["0000:3c:01.0"]
    assert bridge["name"].startswith("PCI bridge: PLX Technology")
    assert bridge["acs_ctl"]["ReqRedir"] is True and bridge["acs_ctl"]["EgressCtrl"] is False
    assert bridge["acs_cap"] is not None and bridge["access_denied"] is False
    assert all(not device["access_denied"] for device in devices.values())


def test_lspci_without_root_marks_access_denied():
    devices = parsers.parse_lspci_acs(_lspci("nonroot-access-denied.txt"))
    assert devices["0000:3a:00.0"]["access_denied"] is True
    assert devices["0000:3a:00.0"]["acs_ctl"] is None
    assert parsers.parse_lspci_acs("") == {}
