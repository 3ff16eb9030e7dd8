"""What rdmaops.roce.ofed (inbox) leaves on a Debian host: the distribution's RDMA stack."""

import pytest

PACKAGES = ["rdma-core", "ibverbs-providers", "ibverbs-utils", "rdmacm-utils", "infiniband-diags", "perftest"]


@pytest.mark.parametrize("name", PACKAGES)
def test_inbox_package_installed_from_debian(host, name):
    package = host.package(name)
    assert package.is_installed
    # Debian's own builds (bookworm: rdma-core 44.0-2, perftest 4.5+0.17-1), not OFED ones.
    assert "mlnx" not in package.version and not package.version.startswith("25")
    policy = host.run("apt-cache policy %s" % name).stdout
    assert "deb.debian.org" in policy


def test_verbs_tools_run(host):
    assert host.file("/usr/bin/ibv_devinfo").is_file
    # The tool runs: in a container libibverbs finds no uverbs support in the kernel (sysfs has no
    # infiniband_verbs class there) and says so; on a host without devices it says "No IB devices found".
    out = host.run("ibv_devinfo")
    assert out.stdout + out.stderr in (
        "Failed to get IB devices list: Function not implemented\n",
        "No IB devices found\n",
    )
    assert host.exists("ib_write_bw") and host.exists("ibstat") and host.exists("rping")


def test_no_ofed_and_no_doca_repository(host):
    assert not host.exists("ofed_info")
    assert not host.file("/etc/apt/sources.list.d/rdmaops-doca.sources").exists
    assert not host.file("/etc/apt/preferences.d/rdmaops-doca.pref").exists
