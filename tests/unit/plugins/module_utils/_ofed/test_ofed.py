"""module_utils/_ofed (versions, packages, status, repo, installer): parsers on captured output, decisions, host trees for kernels and DKMS."""

import io
import os
import tarfile

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import installer, repo, status, versions
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import packages as pkg
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools")


def tool_output(*parts):
    with open(os.path.join(TOOLS, *parts)) as handle:
        return handle.read()


class Result:
    def __init__(self, rc, stdout, stderr=""):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr

    @property
    def ok(self):
        return self.rc == 0


class FakeRunner(CommandRunner):
    """The CommandRunner interface, answering from recorded output keyed by argv (run_optional
    and run_json_list are the real ones, over this run())."""

    def __init__(self, records):
        self.records = records
        self.calls = []

    def has(self, tool):
        return any(key.split(" ", 1)[0] == tool for key in self.records)

    def run(self, argv, check=True, ok_rcs=(0,), data=None):
        key = " ".join(argv)
        self.calls.append(key)
        # Like the host-tree stubs: a command with no record fails (the management-path
        # detector also asks ip for routes, which these tests do not record).
        rc, out = self.records.get(key, (127, ""))
        return Result(rc, out)


def write(root, path, content=""):
    real = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, "w") as handle:
        handle.write(content)
    return real


def link(root, path, target):
    real = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(real), exist_ok=True)
    os.symlink(target, real)


# -- versions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("installed,wanted,ok", [
    ("3.2.1-044000", "3.2.1", True),
    ("3.2.1-044000-25.10-ubuntu2404", "3.2.1", True),
    ("3.2.1", "3.2.1", True),
    ("3.2.10-010000", "3.2.1", False),
    ("3.3.0-000100", "3.2.1", False),
    ("3.2.1-044000", "3.2.1*", True),
    ("3.2.10", "3.2.1*", True),  # a glob is what the user asked for
    ("24.10-1.1.4.0", "24.10-1.1.4.0", True),
    ("24.10-1.1.4.0", "24.10-1.1.4", False),
    ("5.8-1.1.2.1", "", True),
    (None, "", False),
    (None, "3.2.1", False),
])
def test_version_matches(installed, wanted, ok):
    assert versions.version_matches(installed, wanted) is ok


def test_loaded_module_version_agrees_with_ofed_info_by_prefix():
    assert versions.versions_agree("25.10-1.7.1", "25.10-1.7.1")
    assert versions.versions_agree("5.8-1.1.2", "5.8-1.1.2.1")
    assert not versions.versions_agree("24.10-1.1.4", "25.10-1.7.1")
    assert not versions.versions_agree(None, "25.10-1.7.1")


# -- packages -----------------------------------------------------------------------------------
def test_dpkg_query_of_the_lab_vm():
    packages = pkg.parse_dpkg_query(tool_output("dpkg-query", "bookworm-lab-vm-inbox.txt"))
    assert packages["rdma-core"] == "44.0-2"
    assert packages["perftest"] == "4.5+0.17-1"
    assert packages["bsdutils"] == "1:2.38.1-5+deb12u3"
    assert len(packages) == 166
    assert pkg.doca_named_packages(packages) == []


def test_dpkg_query_skips_removed_and_half_installed():
    text = "doca-ofed\t3.2.1-044000\trc \nrdma-core\t2510.0.11-1\tii \nofed-scripts\t25.10\tiU \nlibibverbs1:amd64\t44.0-2\thi \n"
    assert pkg.parse_dpkg_query(text) == {"rdma-core": "2510.0.11-1", "libibverbs1": "44.0-2"}


def test_rpm_qa():
    text = "rdma-core\t2510.0.11-1.el9\ngpg-pubkey\tdeadbeef-5f1e\ndoca-ofed\t3.2.1-044000.el9\n"
    assert pkg.parse_rpm_qa(text) == {"rdma-core": "2510.0.11-1.el9", "doca-ofed": "3.2.1-044000.el9"}


def test_doca_removal_pattern_matches_the_documented_recipe():
    names = ["doca-ofed", "libdoca-common", "flexio", "dpa-gdbserver", "dpaeumgmt", "rdma-core", "ofed-scripts"]
    assert pkg.doca_named_packages(dict.fromkeys(names, "1")) == [
        "doca-ofed", "dpa-gdbserver", "dpaeumgmt", "flexio", "libdoca-common"]


# -- dkms status --------------------------------------------------------------------------------
def test_dkms2_status_from_a_real_host():
    entries = pkg.parse_dkms_status(tool_output("dkms", "dkms2-ubuntu-forum-2018.txt"))
    assert len(entries) == 18
    assert entries[0] == dict(module="8812au", version="4.2.2", kernel=None, arch=None, state="added", detail=None)
    assert entries[1] == dict(module="bbswitch", version="0.8", kernel="4.13.0-32-generic", arch="x86_64",
                              state="installed", detail=None)
    warned = entries[9]
    assert (warned["module"], warned["version"], warned["state"]) == ("rtl8812au", "4.2.2", "installed")
    assert warned["detail"] == "(WARNING! Diff between built and installed module!)"
    assert entries[10]["version"] == "4.3.8.12175.20140902+dfsg"


def test_dkms3_status_lines():
    entries = pkg.parse_dkms_status(tool_output("dkms", "dkms3-noble-fwts.txt"))
    assert entries == [
        dict(module="fwts-efi-runtime-dkms", version="24.07.00", kernel=None, arch=None, state="added", detail=None),
        dict(module="nvidia", version="550.107.02", kernel="6.8.0-44-generic", arch="x86_64", state="installed",
             detail=None),
    ]
    (warned,) = pkg.parse_dkms_status(tool_output("dkms", "dkms3-noble-nvidia-warning.txt"))
    assert warned["state"] == "installed" and warned["detail"].count("WARNING") == 5
    mofed = pkg.parse_dkms_status(tool_output("dkms", "dkms3-mofed-24.01.txt"))
    assert mofed[0]["module"] == "mlnx-ofed-kernel" and mofed[0]["version"] == "24.01.OFED.24.01.0.3.3.1"


def test_dkms_status_ignores_warnings_between_entries():
    text = ("Error! Could not locate dkms.conf file.\nFile: /var/lib/dkms/foo/1.0/source/dkms.conf does not exist.\n"
            "mlnx-ofed-kernel/25.10.OFED.25.10.1.7.1, 6.8.0-45-generic, x86_64: installed\n")
    assert [e["module"] for e in pkg.parse_dkms_status(text)] == ["mlnx-ofed-kernel"]


# -- kernels and DKMS coverage ----------------------------------------------------------------------
OFED_V = "25.10.OFED.25.10.1.7.1"


def kernel_tree(root, release, ofed_modules=True, headers=True, inbox=True):
    base = "/lib/modules/" + release
    write(root, base + "/modules.builtin", "kernel/fs/ext4/ext4.ko\n")
    if inbox:
        write(root, base + "/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko.xz")
    if ofed_modules:
        write(root, base + "/updates/dkms/mlx5_core.ko")
        write(root, base + "/updates/dkms/mlx5_ib.ko")
    if headers:
        os.makedirs(os.path.join(str(root), "usr/src/linux-headers-" + release), exist_ok=True)
        link(root, base + "/build", "/usr/src/linux-headers-" + release)


def test_kernel_coverage_finds_ofed_inbox_and_headers(tmp_path):
    kernel_tree(tmp_path, "6.1.0-26-amd64")
    kernel_tree(tmp_path, "6.1.0-28-amd64", ofed_modules=False, headers=False)
    # RHEL kmod layout plus a weak-updates link for an errata kernel.
    write(tmp_path, "/lib/modules/5.14.0-427.el9.x86_64/modules.builtin")
    write(tmp_path, "/lib/modules/5.14.0-427.el9.x86_64/extra/mlnx-ofa_kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko")
    write(tmp_path, "/lib/modules/5.14.0-427.el9.x86_64/extra/mlnx-ofa_kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko")
    # A directory DKMS left behind after its kernel package was removed: not a kernel.
    write(tmp_path, "/lib/modules/6.1.0-20-amd64/updates/dkms/mlx5_ib.ko")
    host = HostRoot(str(tmp_path))
    releases = pkg.installed_kernels(host)
    assert releases == ["5.14.0-427.el9.x86_64", "6.1.0-26-amd64", "6.1.0-28-amd64"]
    kernels = {k["release"]: k for k in pkg.kernel_coverage(host, releases, "6.1.0-26-amd64")}
    assert kernels["6.1.0-26-amd64"]["ofed"] and kernels["6.1.0-26-amd64"]["running"]
    assert kernels["6.1.0-26-amd64"]["ofed_modules"]["mlx5_ib"] == "/lib/modules/6.1.0-26-amd64/updates/dkms/mlx5_ib.ko"
    assert kernels["6.1.0-26-amd64"]["headers"] and kernels["6.1.0-26-amd64"]["inbox_mlx5"]
    assert not kernels["6.1.0-28-amd64"]["ofed"] and not kernels["6.1.0-28-amd64"]["headers"]
    assert kernels["5.14.0-427.el9.x86_64"]["ofed"] and not kernels["5.14.0-427.el9.x86_64"]["headers"]


def test_dkms_coverage_names_the_kernel_and_the_make_log(tmp_path):
    kernel_tree(tmp_path, "6.8.0-45-generic")
    kernel_tree(tmp_path, "6.8.0-48-generic", ofed_modules=False)
    log = "/var/lib/dkms/mlnx-ofed-kernel/%s/build/make.log" % OFED_V
    write(tmp_path, log, "".join("line %d\n" % i for i in range(100)) + "error: implicit declaration of 'dpll_x'\n")
    status = ("mlnx-ofed-kernel/%s, 6.8.0-45-generic, x86_64: installed\n"
              "mlnx-ofed-kernel/%s: added\n"
              "nvidia/550.107.02, 6.8.0-45-generic, x86_64: installed\n" % (OFED_V, OFED_V))
    host = HostRoot(str(tmp_path))
    kernels = pkg.kernel_coverage(host, pkg.installed_kernels(host), "6.8.0-45-generic")
    gaps = pkg.dkms_coverage(pkg.parse_dkms_status(status), kernels, ["mlnx-ofed-kernel", "iser"])
    assert gaps == [("mlnx-ofed-kernel", OFED_V, "6.8.0-48-generic", "absent", None)]
    assert kernels[0]["dkms"] == {"mlnx-ofed-kernel": "installed"}
    path, tail = pkg.make_log_tail(host, "mlnx-ofed-kernel", OFED_V, "6.8.0-48-generic", None, lines=3)
    assert path == log
    assert tail.splitlines() == ["line 98", "line 99", "error: implicit declaration of 'dpll_x'"]


def test_dkms_built_but_not_installed_is_a_gap():
    kernels = [dict(release="5.15.0-25-generic", dkms={})]
    status = "mlnx-ofed-kernel, 5.8-OFED.5.8.1.1.2.1, 5.15.0-25-generic, x86_64: built\n"
    gaps = pkg.dkms_coverage(pkg.parse_dkms_status(status), kernels, ["mlnx-ofed-kernel"])
    assert gaps == [("mlnx-ofed-kernel", "5.8-OFED.5.8.1.1.2.1", "5.15.0-25-generic", "built", "x86_64")]


# -- management connection ------------------------------------------------------------------------
def test_management_over_a_bond_of_connectx_ports(tmp_path):
    write(tmp_path, "/sys/class/net/bond0/bonding/slaves", "ens1f0np0 ens1f1np1\n")
    link(tmp_path, "/sys/class/net/bond0/lower_ens1f0np0", "../ens1f0np0")
    for port in ("ens1f0np0", "ens1f1np1"):
        os.makedirs(os.path.join(str(tmp_path), "sys/bus/pci/drivers/mlx5_core"), exist_ok=True)
        link(tmp_path, "/sys/class/net/%s/device/driver" % port, "/sys/bus/pci/drivers/mlx5_core")
    link(tmp_path, "/sys/class/net/bond0.100/lower_bond0", "../bond0")
    ip_json = ('[{"ifname":"bond0.100","addr_info":[{"family":"inet","local":"10.0.0.5","prefixlen":24}]},'
               '{"ifname":"eth9","addr_info":[{"family":"inet","local":"10.9.9.9","prefixlen":24}]}]')
    runner = FakeRunner({"ip -j addr show": (0, ip_json)})
    result = status.management_path(HostRoot(str(tmp_path)), runner, address="10.0.0.5")
    assert result["interface"] == "bond0.100"
    assert [d["name"] for d in result["devices"]] == ["bond0.100", "bond0", "ens1f0np0", "ens1f1np1"]
    assert result["drivers"] == ["mlx5_core"] and result["on_ofed_driver"] is True


def test_management_on_another_nic_or_unknown(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), "sys/bus/pci/drivers/igb"))
    link(tmp_path, "/sys/class/net/eno1/device/driver", "/sys/bus/pci/drivers/igb")
    host = HostRoot(str(tmp_path))
    result = status.management_path(host, FakeRunner({}), interface="eno1")
    assert result["drivers"] == ["igb"] and result["on_ofed_driver"] is False
    unknown = status.management_path(host, FakeRunner({}), address="192.0.2.1")
    assert unknown["interface"] is None and unknown["on_ofed_driver"] is False


def test_management_over_a_vlan_known_only_from_proc_net_vlan_config(tmp_path):
    """A VLAN on a ConnectX port whose parent only /proc/net/vlan/config names (no lower_ link):
    the port's mlx5_core carries the management connection too."""
    os.makedirs(os.path.join(str(tmp_path), "sys/class/net/mgmt100"))
    os.makedirs(os.path.join(str(tmp_path), "sys/bus/pci/drivers/mlx5_core"))
    link(tmp_path, "/sys/class/net/ens1f0np0/device/driver", "/sys/bus/pci/drivers/mlx5_core")
    write(tmp_path, "/proc/net/vlan/config",
          "VLAN Dev name    | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\nmgmt100        | 100  | ens1f0np0\n")
    ip_json = '[{"ifname":"mgmt100","addr_info":[{"family":"inet","local":"10.0.0.5","prefixlen":24}]}]'
    result = status.management_path(HostRoot(str(tmp_path)), FakeRunner({"ip -j addr show": (0, ip_json)}),
                                    address="10.0.0.5", environ={})
    assert result["interface"] == "mgmt100"
    assert [d["name"] for d in result["devices"]] == ["mgmt100", "ens1f0np0"]
    assert result["drivers"] == ["mlx5_core"] and result["on_ofed_driver"] is True


# -- decisions -------------------------------------------------------------------------------------
DOCA_STACK = dict(flavor="doca_ofed", version="25.10-1.7.1", loaded_driver="ofed", mlx5_core_version="25.10-1.7.1")
WANTS = dict(doca_profile="doca-ofed", doca_version="3.2.1", mlnx_ofed_version="24.10-1.1.4.0",
             inbox_packages=["rdma-core", "ibverbs-utils"])


def test_resolve_provider():
    assert status.resolve_provider("auto", DOCA_STACK, False)[0] == "doca"
    assert status.resolve_provider("auto", dict(flavor="mlnx_ofed", version="5.8"), True)[0] == "mlnx_ofed"
    assert status.resolve_provider("auto", dict(flavor="inbox"), True)[0] == "doca"
    assert status.resolve_provider("auto", dict(flavor="none"), False)[0] == "inbox"
    assert status.resolve_provider("inbox", DOCA_STACK, True) == ("inbox", "ofed_provider is inbox")


@pytest.mark.parametrize("state,provider,stack,packages,expected", [
    ("present", "doca", DOCA_STACK, {"doca-ofed": "3.2.1-044000"}, ("none", None)),
    ("present", "doca", DOCA_STACK, {"doca-ofed": "3.2.1-044000"}, ("none", None)),
    ("present", "doca", dict(flavor="inbox"), {"rdma-core": "44.0-2"}, ("install", None)),
    ("present", "doca", DOCA_STACK, {"doca-ofed": "3.1.0-091000"}, ("upgrade", None)),
    ("present", "doca", dict(flavor="mlnx_ofed", version="5.8-1.1.2.1"), {}, ("switch", "mlnx_ofed")),
    ("present", "mlnx_ofed", dict(flavor="mlnx_ofed", version="24.10-1.1.4.0"), {}, ("none", None)),
    ("present", "mlnx_ofed", dict(flavor="mlnx_ofed", version="23.10-1.1.9.0"), {}, ("upgrade", None)),
    ("present", "mlnx_ofed", dict(flavor="none"), {}, ("install", None)),
    ("present", "mlnx_ofed", DOCA_STACK, {"doca-ofed": "3.2.1"}, ("switch", "doca_ofed")),
    ("present", "inbox", dict(flavor="inbox"), {"rdma-core": "1", "ibverbs-utils": "1"}, ("none", None)),
    ("present", "inbox", dict(flavor="inbox"), {"rdma-core": "1"}, ("install", None)),
    ("present", "inbox", DOCA_STACK, {"doca-ofed": "3.2.1"}, ("switch", "doca_ofed")),
    ("absent", "doca", DOCA_STACK, {"doca-ofed": "3.2.1"}, ("remove", "doca_ofed")),
    ("absent", "doca", dict(flavor="inbox"), {"libdoca-common": "3.2.1"}, ("remove", "doca_ofed")),
    ("absent", "doca", dict(flavor="inbox"), {"rdma-core": "1", "ibverbs-utils": "1"}, ("none", None)),
])
def test_plan_action(state, provider, stack, packages, expected):
    action, remove_flavor, reason = status.plan_action(state, provider, stack, packages, WANTS)
    assert (action, remove_flavor) == expected
    assert reason


def test_restart_need():
    assert status.restart_need(dict(DOCA_STACK, loaded_driver=None), "doca_ofed")[0] is False
    assert status.restart_need(DOCA_STACK, "doca_ofed")[0] is False
    required, reason = status.restart_need(dict(DOCA_STACK, loaded_driver="inbox", mlx5_core_version=None), "doca_ofed")
    assert required and "kernel's own mlx5_core" in reason
    required, reason = status.restart_need(dict(DOCA_STACK, mlx5_core_version="24.10-1.1.4"), "doca_ofed")
    assert required and "24.10-1.1.4" in reason
    assert status.restart_need(dict(flavor="inbox", loaded_driver="ofed", mlx5_core_version="25.10-1.7.1"), "inbox")[0]


MGMT_MLX5 = dict(interface="bond0", drivers=["mlx5_core"], on_ofed_driver=True)
MGMT_OTHER = dict(interface="eno1", drivers=["igb"], on_ofed_driver=False)


@pytest.mark.parametrize("required,policy,consent,mgmt,risks,changed,can,expected", [
    (False, "when_required", False, MGMT_OTHER, [], False, True, "none"),
    (False, "always", False, MGMT_OTHER, [], True, True, "reboot"),
    (False, "always", False, MGMT_OTHER, [], False, True, "none"),
    (True, "never", False, MGMT_OTHER, [], True, True, "restart"),
    (True, "never", False, MGMT_MLX5, [], True, True, "pending"),
    (True, "when_required", False, MGMT_MLX5, [], True, True, "reboot"),
    (True, "never", True, MGMT_MLX5, [], True, True, "restart"),
    (True, "never", False, MGMT_OTHER, ["nvme_rdma"], True, True, "pending"),
    (True, "when_required", False, MGMT_OTHER, [], True, False, "reboot"),
    (True, "never", True, MGMT_OTHER, [], True, False, "pending"),
])
def test_decide_activation(required, policy, consent, mgmt, risks, changed, can, expected):
    activation, reason = status.decide_activation(required, "the loaded driver is old", policy, consent, mgmt, risks,
                                                  changed, can)
    assert activation == expected
    if expected == "pending":
        assert "reboot the host" in reason
    if expected == "restart" and mgmt["on_ofed_driver"]:
        assert "consented" in reason and "bond0" in reason


# -- mlnxofedinstall ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rc,ok,words", [
    (0, True, "finished"), (2, True, "no firmware"), (1, False, "failed"), (22, False, "--help"),
    (28, False, "free space"), (171, False, "not applicable"), (172, False, "prerequisites"),
    (173, False, "mst driver"), (99, False, "unknown exit status 99"),
])
def test_installer_return_codes(rc, ok, words):
    result_ok, meaning = installer.explain_installer_rc(rc)
    assert result_ok is ok and words in meaning and meaning.startswith("mlnxofedinstall exited %d" % rc)


def test_installer_logs_dir():
    out = "Logs dir: /tmp/MLNX_OFED_LINUX.2145.logs\nGeneral log file: /tmp/MLNX_OFED_LINUX.2145.logs/general.log\n"
    assert installer.installer_logs_dir(out) == "/tmp/MLNX_OFED_LINUX.2145.logs"
    assert installer.installer_logs_dir("nothing") is None


def test_sha256_normalization():
    digest = "a" * 64
    assert installer.normalize_sha256("SHA256:" + digest.upper()) == digest
    for bad in ("", "abc", "g" * 64, "md5:" + "a" * 32):
        with pytest.raises(InputError, match="ofed_mlnx_ofed_sha256"):
            installer.normalize_sha256(bad)


def make_tarball(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name, data, kind, target in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                info.mode = 0o755
                archive.addfile(info, io.BytesIO(data))
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.type = tarfile.SYMTYPE
                info.linkname = target
                archive.addfile(info)


def test_extract_and_kernel_support(tmp_path):
    tgz = str(tmp_path / "MLNX_OFED_LINUX-24.10-1.1.4.0-debian12.5-x86_64.tgz")
    top = "MLNX_OFED_LINUX-24.10-1.1.4.0-debian12.5-x86_64"
    make_tarball(tgz, [
        (top, None, "dir", None),
        (top + "/mlnxofedinstall", b"#!/bin/sh\n", "file", None),
        (top + "/.supported_kernels", b"6.1.0-21-amd64\n", "file", None),
        (top + "/DEBS/latest", None, "link", "."),
    ])
    dest = tmp_path / "x"
    dest.mkdir()
    host = HostRoot(str(tmp_path))
    installer_dir = installer.extract_tarball(host, "/" + os.path.basename(tgz), "/x")
    assert host.path(installer_dir) == str(dest / top)
    assert installer.needs_kernel_support(host, "auto", installer_dir, "6.1.0-21-amd64")[0] is False
    add, why = installer.needs_kernel_support(host, "auto", installer_dir, "6.1.0-26-amd64")
    assert add and "6.1.0-21-amd64" in why
    assert installer.needs_kernel_support(host, "never", installer_dir, "6.1.0-26-amd64")[0] is False
    argv = installer.installer_argv(host, installer_dir, ["--without-fw-update", "--force"], True)
    assert argv[0] == str(dest / top / "mlnxofedinstall")
    assert argv[1:] == ["--without-fw-update", "--force", "--add-kernel-support"]
    os.unlink(os.path.join(host.path(installer_dir), ".supported_kernels"))
    assert installer.needs_kernel_support(host, "auto", installer_dir, "6.1.0-26-amd64")[0] is False


@pytest.mark.parametrize("members", [
    [("../evil", b"x", "file", None)],
    [("/etc/evil", b"x", "file", None)],
    [("top/link", None, "link", "/etc/shadow")],
    [("top/link", None, "link", "../../outside")],
])
def test_extract_refuses_escaping_members(tmp_path, members):
    tgz = str(tmp_path / "bad.tgz")
    make_tarball(tgz, members)
    dest = tmp_path / "x"
    dest.mkdir()
    with pytest.raises(RefusedError, match="outside"):
        installer.extract_tarball(HostRoot(str(tmp_path)), "/bad.tgz", "/x")
    assert os.listdir(str(dest)) == []


# -- repository files --------------------------------------------------------------------------------
def test_apt_files_for_a_flat_doca_repository():
    url = "https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/x86_64/"
    source = repo.render_apt_source(url, "./", "/etc/apt/keyrings/rdmaops-doca.asc")
    assert "URIs: %s\nSuites: ./\nSigned-By: /etc/apt/keyrings/rdmaops-doca.asc\n" % url in source
    assert "Components" not in source
    prefs = repo.render_apt_preferences(url, ["doca-ofed"], "3.2.1*", 600, ["dkms"])
    assert "Package: doca-ofed\nPin: version 3.2.1*\nPin-Priority: 1001" in prefs
    assert 'Package: *\nPin: origin "linux.mellanox.com"\nPin-Priority: 600' in prefs
    assert 'Package: dkms\nPin: origin "linux.mellanox.com"\nPin-Priority: -1' in prefs
    assert repo.url_host("http://127.0.0.1:8765/doca/") == "127.0.0.1"
    assert repo.url_host("http://[::1]:8765/doca/") == "::1"


def test_dnf_repo_file():
    text = repo.render_dnf_repo("rdmaops-doca", "https://linux.mellanox.com/public/repo/doca/3.2.1/rhel9/x86_64/",
                                "/etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-doca", 10, [])
    assert "[rdmaops-doca]\n" in text and "gpgcheck=1\n" in text and "priority=10\n" in text
    assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-doca\n" in text
    assert "excludepkgs" not in text


def test_plan_repo_writes_then_is_idempotent_then_removes(tmp_path):
    host = HostRoot(str(tmp_path))
    params = dict(url="http://127.0.0.1:8765/doca/", suite="./", pin_packages=["doca-ofed"], pin_version="3.2.1*",
                  origin_priority=600, distro_packages=[], dnf_priority=10, exclude=[])
    desired = repo.desired_repo_files("apt", "doca", params, "-----BEGIN PGP PUBLIC KEY BLOCK-----\n...\n")

    plan = Plan()
    repo.plan_repo(host, plan, "apt", "doca", "present", desired)
    assert plan.descriptions() == ["write /etc/apt/keyrings/rdmaops-doca.asc",
                                   "write /etc/apt/sources.list.d/rdmaops-doca.sources",
                                   "write /etc/apt/preferences.d/rdmaops-doca.pref"]
    plan.apply(check_mode=False)
    again = Plan()
    repo.plan_repo(host, again, "apt", "doca", "present", desired)
    assert not again.changed
    gone = Plan()
    repo.plan_repo(host, gone, "apt", "doca", "absent", {})
    assert len(gone) == 3
    gone.apply(check_mode=False)
    assert not os.path.exists(host.path("/etc/apt/sources.list.d/rdmaops-doca.sources"))


def test_plan_repo_owns_the_key_through_its_source_and_refuses_foreign_files(tmp_path):
    host = HostRoot(str(tmp_path))
    params = dict(url="http://127.0.0.1:8765/doca/", suite="./", pin_packages=[], pin_version="",
                  origin_priority=600, distro_packages=[], dnf_priority=10, exclude=[])
    desired = repo.desired_repo_files("apt", "doca", params, "-----BEGIN PGP PUBLIC KEY BLOCK-----\nnew\n")
    # A key file nobody vouches for (no source of ours names it): refused, nothing planned.
    write(tmp_path, "/etc/apt/keyrings/rdmaops-doca.asc", "someone else's key\n")
    with pytest.raises(RefusedError, match="adopt"):
        repo.plan_repo(host, Plan(), "apt", "doca", "present", desired)
    adopted = Plan()
    repo.plan_repo(host, adopted, "apt", "doca", "present", desired, adopt=True)
    adopted.apply()
    # Now our source names the key: a new key replaces it without adopt.
    newer = repo.desired_repo_files("apt", "doca", params, "-----BEGIN PGP PUBLIC KEY BLOCK-----\nnewer\n")
    plan = Plan()
    repo.plan_repo(host, plan, "apt", "doca", "present", newer)
    assert plan.descriptions() == ["update /etc/apt/keyrings/rdmaops-doca.asc"]


def test_repo_credentials_leave_the_url():
    clean, user, password = repo.split_credentials("https://alice:t%40ken@repo.example:8443/doca/")
    assert (clean, user, password) == ("https://repo.example:8443/doca/", "alice", "t@ken")
    assert repo.split_credentials("https://repo.example/doca/", "bob", "pw") == ("https://repo.example/doca/", "bob", "pw")
    assert repo.auth_machine("https://repo.example:8443/doca/") == "repo.example:8443/doca"
    assert repo.auth_machine("http://127.0.0.1:8765/doca/") == "http://127.0.0.1:8765/doca"
    params = dict(url="https://alice:t%40ken@repo.example/doca/", suite="./", pin_packages=[], pin_version="",
                  origin_priority=600, distro_packages=[], dnf_priority=10, exclude=[])
    apt = repo.desired_repo_files("apt", "doca", params, "key")
    assert "t@ken" not in apt["/etc/apt/sources.list.d/rdmaops-doca.sources"]
    assert "alice" not in apt["/etc/apt/sources.list.d/rdmaops-doca.sources"]
    assert apt["/etc/apt/auth.conf.d/rdmaops-doca.conf"].endswith("machine repo.example/doca login alice password t@ken\n")
    assert repo.private_paths("dnf", "doca", params) == ["/etc/yum.repos.d/rdmaops-doca.repo"]
    assert repo.private_paths("dnf", "doca", dict(params, url="https://repo.example/doca/")) == []


# -- gather_status end to end on a tree ----------------------------------------------------------------
def doca_host(tmp_path, running="6.8.0-45-generic"):
    write(tmp_path, "/proc/sys/kernel/osrelease", running + "\n")
    write(tmp_path, "/sys/bus/pci/devices/0000:3d:00.0/vendor", "0x15b3\n")
    kernel_tree(tmp_path, "6.8.0-45-generic")
    write(tmp_path, "/usr/sbin/ofed_uninstall.sh", "#!/bin/sh\n")
    write(tmp_path, "/etc/init.d/openibd", "#!/bin/sh\n")


PARAMS = dict(provider="auto", state="present", doca_profile="doca-ofed", doca_version="3.2.1",
              mlnx_ofed_version="", inbox_packages=["rdma-core"], dkms_modules=["mlnx-ofed-kernel"],
              kernel_coverage="fail", management_interface="", management_address="", reboot="when_required",
              allow_driver_restart=False, stack_changed=False, log_lines=5)
DPKG_DOCA = "doca-ofed\t3.2.1-044000\tii \nrdma-core\t2510.0.11-1\tii \nofed-scripts\t25.10.OFED.25.10.1.7.1-1\tii \n"
DPKG_KEY = "dpkg-query -W -f=${Package}\t${Version}\t${db:Status-Abbrev}\n"


def test_gather_status_steady_doca_host(tmp_path):
    doca_host(tmp_path)
    runner = FakeRunner({
        DPKG_KEY: (0, DPKG_DOCA),
        "dkms status": (0, "mlnx-ofed-kernel/%s, 6.8.0-45-generic, x86_64: installed\n" % OFED_V),
    })
    result, problems, warnings = status.gather_status(HostRoot(str(tmp_path)), runner, PARAMS, DOCA_STACK)
    assert (result["provider"], result["needed"]) == ("doca", "none")
    assert problems == [] and warnings == []
    assert result["activation"] == "none"
    assert result["disruption"] == "none"
    assert result["removal"] == dict(packages=["doca-ofed"], uninstall_script="/usr/sbin/ofed_uninstall.sh")
    assert result["kernels"][0]["dkms"] == {"mlnx-ofed-kernel": "installed"}


def test_gather_status_after_a_kernel_update_without_and_with_headers(tmp_path):
    doca_host(tmp_path)
    kernel_tree(tmp_path, "6.8.0-48-generic", ofed_modules=False, headers=False)
    kernel_tree(tmp_path, "6.8.0-49-generic", ofed_modules=False, headers=True)
    write(tmp_path, "/var/lib/dkms/mlnx-ofed-kernel/%s/build/make.log" % OFED_V, "cc1: error: bad\n")
    runner = FakeRunner({
        DPKG_KEY: (0, DPKG_DOCA),
        "dkms status": (0, "mlnx-ofed-kernel/%s, 6.8.0-45-generic, x86_64: installed\n" % OFED_V),
    })
    result, problems, warnings = status.gather_status(HostRoot(str(tmp_path)), runner, PARAMS, DOCA_STACK)
    assert result["kernels_missing"] == ["6.8.0-48-generic", "6.8.0-49-generic"]
    assert result["kernels_to_build"] == ["6.8.0-49-generic"]
    text = "\n".join(problems)
    assert "kernel 6.8.0-48-generic has no OFED mlx5_core and mlx5_ib" in text
    assert "install linux-headers-6.8.0-48-generic" in text
    assert "'dkms autoinstall -k 6.8.0-49-generic'" in text
    assert "DKMS module mlnx-ofed-kernel/%s is absent for kernel 6.8.0-48-generic" % OFED_V in text
    assert "cc1: error: bad" in text
    warn_only, problems_warn, warnings_warn = status.gather_status(
        HostRoot(str(tmp_path)), runner, dict(PARAMS, kernel_coverage="warn"), DOCA_STACK)
    assert not any("has no OFED" in p for p in problems_warn)
    assert any("6.8.0-48-generic has no OFED" in w for w in warnings_warn)


def test_gather_status_new_driver_not_loaded_under_management(tmp_path):
    doca_host(tmp_path)
    os.makedirs(os.path.join(str(tmp_path), "sys/bus/pci/drivers/mlx5_core"))
    link(tmp_path, "/sys/class/net/ens1f0np0/device/driver", "/sys/bus/pci/drivers/mlx5_core")
    runner = FakeRunner({
        DPKG_KEY: (0, DPKG_DOCA),
        "dkms status": (0, "mlnx-ofed-kernel/%s, 6.8.0-45-generic, x86_64: installed\n" % OFED_V),
    })
    stack = dict(DOCA_STACK, loaded_driver="inbox", mlx5_core_version=None)
    params = dict(PARAMS, management_interface="ens1f0np0", reboot="never")
    result, problems, warnings = status.gather_status(HostRoot(str(tmp_path)), runner, params, stack)
    assert result["restart_required"] and result["management"]["on_ofed_driver"]
    assert result["activation"] == "pending"
    # the new driver waits for a restart nobody allowed: the rollout must drain before it
    assert result["disruption"] == "driver_restart"
    assert warnings and "ens1f0np0" in warnings[0]
    consent, _p, _w = status.gather_status(HostRoot(str(tmp_path)), runner, dict(params, allow_driver_restart=True), stack)
    assert consent["activation"] == "restart"


def test_gather_status_requires_a_doca_version(tmp_path):
    doca_host(tmp_path)
    runner = FakeRunner({DPKG_KEY: (0, "")})
    with pytest.raises(InputError, match="ofed_doca_version"):
        status.gather_status(HostRoot(str(tmp_path)), runner, dict(PARAMS, provider="doca", doca_version=""),
                             dict(flavor="none"))


def test_make_log_of_another_kernel_is_not_shown(tmp_path):
    log = "/var/lib/dkms/mlnx-ofed-kernel/%s/build/make.log" % OFED_V
    write(tmp_path, log, "DKMS make.log for mlnx-ofed-kernel-%s for kernel 6.8.0-49-generic (x86_64)\n"
                         "error: bad\n" % OFED_V)
    host = HostRoot(str(tmp_path))
    assert pkg.make_log_tail(host, "mlnx-ofed-kernel", OFED_V, "6.8.0-48-generic", "x86_64") == (None, None)
    path, tail = pkg.make_log_tail(host, "mlnx-ofed-kernel", OFED_V, "6.8.0-49-generic", "x86_64")
    assert path == log and tail.endswith("error: bad")


# -- how disruptive the ofed layer's run would be ------------------------------------------------
@pytest.mark.parametrize(
    "needed, target, activation, reboot, can_restart, unblocked, expected",
    [
        # nothing to install and the loaded driver is the installed one
        ("none", "doca_ofed", "none", "when_required", True, True, "none"),
        # the inbox userspace packages: nothing that runs is touched
        ("install", "inbox", "none", "when_required", False, True, "online"),
        # a new OFED stack loaded by an openibd restart, allowed
        ("install", "doca_ofed", "none", "when_required", True, True, "driver_restart"),
        ("upgrade", "mlnx_ofed", "none", "when_required", True, True, "driver_restart"),
        # ... a restart that something blocks (management path, storage) without consent: a reboot
        ("upgrade", "doca_ofed", "none", "when_required", True, False, "reboot"),
        # ... no openibd: a reboot where the policy allows one, else still a driver restart pending
        ("install", "doca_ofed", "none", "when_required", False, True, "reboot"),
        ("install", "doca_ofed", "none", "never", False, True, "driver_restart"),
        ("switch", "inbox", "none", "when_required", False, True, "reboot"),
        # ofed_reboot: always reboots whenever the stack changes
        ("upgrade", "doca_ofed", "none", "always", True, True, "reboot"),
        # installed already, but the loaded driver is the old one: today's activation decides
        ("none", "doca_ofed", "restart", "when_required", True, True, "driver_restart"),
        ("none", "doca_ofed", "reboot", "when_required", False, True, "reboot"),
        ("none", "doca_ofed", "pending", "never", False, True, "driver_restart"),
    ],
)
def test_predict_disruption(needed, target, activation, reboot, can_restart, unblocked, expected):
    assert status.predict_disruption(needed, target, activation, reboot, can_restart, unblocked) == expected
