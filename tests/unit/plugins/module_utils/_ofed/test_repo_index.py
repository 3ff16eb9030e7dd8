"""The package indexes ofed_repo_check reads: apt's Packages (deb822 stanzas) and dnf's repomd.xml and
primary.xml, in the layout createrepo_c writes (composed here: no RHEL DOCA repository is reachable)."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import index

PACKAGES = """Package: doca-ofed
Version: 3.2.1-044000
Architecture: all
Depends: ofed-scripts (= 25.10.OFED.25.10.1.7.1-1),
 mlnx-ofed-kernel-dkms (= 25.10.OFED.25.10.1.7.1-1)
Description: stand-in
 Version: 9.9.9 (a continuation line is not a field)

Package: doca-ofed
Version: 3.3.0-000400

Package: rdma-core
Version: 2510.0.11-1
"""

REPOMD = b"""<?xml version="1.0" encoding="UTF-8"?>
<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">
  <revision>1700000000</revision>
  <data type="filelists"><location href="repodata/abc-filelists.xml.gz"/></data>
  <data type="primary"><location href="repodata/def-primary.xml.gz"/></data>
</repomd>
"""

PRIMARY = b"""<?xml version="1.0" encoding="UTF-8"?>
<metadata xmlns="http://linux.duke.edu/metadata/common" xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="2">
<package type="rpm"><name>doca-ofed</name><arch>x86_64</arch>
  <version epoch="0" ver="3.2.1" rel="044000_25.10_rhel9"/></package>
<package type="rpm"><name>doca-ofed</name><arch>x86_64</arch>
  <version epoch="0" ver="3.3.0" rel="000400_26.01_rhel9"/></package>
</metadata>
"""


def test_apt_packages():
    assert index.parse_apt_packages(PACKAGES) == {
        "doca-ofed": ["3.2.1-044000", "3.3.0-000400"], "rdma-core": ["2510.0.11-1"]}


def test_dnf_primary():
    assert index.primary_location(REPOMD) == "repodata/def-primary.xml.gz"
    assert index.parse_dnf_primary(PRIMARY) == {"doca-ofed": ["3.2.1-044000_25.10_rhel9", "3.3.0-000400_26.01_rhel9"]}


@pytest.mark.parametrize("data", [b"<html>not found</html", b"\x00\x01"])
def test_broken_metadata_is_an_error_not_a_traceback(data):
    with pytest.raises(RdmaopsError):
        index.primary_location(data)
    with pytest.raises(RdmaopsError):
        index.parse_dnf_primary(data)


def test_apt_index_paths():
    assert index.apt_index_paths("./", None, "amd64") == ["Packages.gz", "Packages"]
    assert index.apt_index_paths("bookworm", ["main"], "arm64") == [
        "dists/bookworm/main/binary-arm64/Packages.gz", "dists/bookworm/main/binary-arm64/Packages"]


def test_exact_dependencies_and_their_closure():
    depends = index.parse_apt_exact_depends(PACKAGES + "\nPackage: mlnx-ofed-kernel-dkms\nVersion: 25.10.OFED.25.10.1.7.1-1\n"
                                            "Depends: dkms (= 3.0.10-8+doca1), gcc | clang, make\n")
    assert depends[("doca-ofed", "3.2.1-044000")] == [
        ("ofed-scripts", "25.10.OFED.25.10.1.7.1-1"), ("mlnx-ofed-kernel-dkms", "25.10.OFED.25.10.1.7.1-1")]
    assert depends[("doca-ofed", "3.3.0-000400")] == []
    assert index.exact_closure(depends, "doca-ofed", "3.2.1-044000") == [
        "doca-ofed=3.2.1-044000", "ofed-scripts=25.10.OFED.25.10.1.7.1-1", "mlnx-ofed-kernel-dkms=25.10.OFED.25.10.1.7.1-1",
        "dkms=3.0.10-8+doca1"]


def test_newest_build_by_numbers():
    assert index.newest(["3.2.1-9000", "3.2.1-10000"]) == "3.2.1-10000"
