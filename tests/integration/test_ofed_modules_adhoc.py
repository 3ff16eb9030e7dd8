"""ofed_status, ofed_repo and mlnx_ofed_install run by ``ansible localhost -m`` on recorded trees.

Nothing here touches the machine running the tests: every host path goes through
RDMAOPS_HOST_ROOT, tools are stubs (tests/unit/hosttree.py), and the one real path the
mlnx_ofed_install test uses (its work directory) is under tmp_path.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

import hosttree
from fixtures.hosts import cx7_doca

BIN = os.path.dirname(sys.executable)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPG = os.path.join(REPO, "tests", "unit", "fixtures", "tools", "gpg")
BUILD = os.path.join(REPO, "tests", "tools", "ofed_standins", "build.py")
RSA_FPR = "AE277C77B3D1D289C0C4B7A1275360290C6B744F"
OFED_V = "25.10.OFED.25.10.1.7.1"


def adhoc(module, args, env_extra, check=False, diff=False):
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.environ["RDMAOPS_TEST_COLLECTIONS_ROOT"],
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
    )
    env.update(env_extra)
    argv = [os.path.join(BIN, "ansible"), "localhost", "-m", module, "-a", json.dumps(args),
            "-e", "ansible_python_interpreter=" + sys.executable]
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    try:
        result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        raise AssertionError(proc.stdout + proc.stderr)
    return result


def tree_env(root, bindir):
    return dict(RDMAOPS_HOST_ROOT=str(root), PATH=bindir + os.pathsep + os.environ["PATH"])


def files_under(root):
    found = []
    for dirpath, _dirs, files in os.walk(str(root)):
        found.extend(os.path.relpath(os.path.join(dirpath, name), str(root)) for name in files)
    return sorted(found)


# -- ofed_status on the ConnectX-7 DOCA host ------------------------------------------------------
@pytest.fixture
def cx7_with_kernels(tmp_path):
    manifest = cx7_doca.manifest()
    kernel = cx7_doca.KERNEL
    entries = manifest["entries"]
    for release, ofed_modules in ((kernel, True), ("5.15.0-122-generic", False)):
        base = "/lib/modules/" + release
        entries[base + "/modules.builtin"] = {"type": "file", "content": "kernel/fs/ext4/ext4.ko\n"}
        entries[base + "/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko"] = {"type": "file", "content": "inbox\n"}
        if ofed_modules:
            entries[base + "/updates/dkms/mlx5_core.ko"] = {"type": "file", "content": "ofed\n"}
            entries[base + "/updates/dkms/mlx5_ib.ko"] = {"type": "file", "content": "ofed\n"}
    entries["/usr/sbin/ofed_uninstall.sh"] = {"type": "file", "content": "#!/bin/sh\n"}
    entries["/etc/init.d/openibd"] = {"type": "file", "content": "#!/bin/sh\n"}
    entries["/var/lib/dkms/mlnx-ofed-kernel/%s/build/make.log" % OFED_V] = {
        "type": "file", "content": "make -C /lib/modules/5.15.0-122-generic/build\nMakefile:12: *** no headers.  Stop.\n"}
    commands = manifest["commands"]
    commands["dkms status"] = {"rc": 0, "stdout": "mlnx-ofed-kernel/%s, %s, x86_64: installed\n" % (OFED_V, kernel),
                               "stderr": ""}
    commands["dpkg-query -W -f=${Package}\t${Version}\t${db:Status-Abbrev}\n"] = {
        "rc": 0, "stderr": "",
        "stdout": "doca-ofed\t3.2.1-044000\tii \nrdma-core\t2510.0.11-1\tii \nofed-scripts\t%s-1\tii \n" % OFED_V}
    bindir = hosttree.materialize(manifest, tmp_path)
    return tree_env(tmp_path, bindir)


def test_ofed_status_names_the_kernel_without_modules_and_its_make_log(cx7_with_kernels):
    args = dict(provider="auto", doca_version="3.2.1", management_address="192.168.100.12")
    result = adhoc("rdmaops.roce.ofed_status", args, cx7_with_kernels, check=True)
    assert result["changed"] is False
    assert (result["provider"], result["needed"], result["target_flavor"]) == ("doca", "none", "doca_ofed")
    assert result["stack"]["flavor"] == "doca_ofed" and result["stack"]["version"] == "25.10-1.7.1"
    assert result["kernels_missing"] == ["5.15.0-122-generic"]
    assert result["kernels_to_build"] == []  # no headers there
    # The management address sits on the ConnectX port: a restart would need consent.
    assert result["management"]["interface"] == "ens1f0np0" and result["management"]["on_ofed_driver"]
    assert result["restart_required"] is False and result["activation"] == "none"
    assert any("Makefile:12: *** no headers." in p for p in result["problems"])
    failed = adhoc("rdmaops.roce.ofed_status", dict(args, fail_on_problems=True), cx7_with_kernels)
    assert failed["failed"] is True
    assert "kernel 5.15.0-122-generic has no OFED mlx5_core and mlx5_ib module" in failed["msg"]
    assert "linux-headers-5.15.0-122-generic" in failed["msg"]


def test_ofed_status_plans_an_upgrade_and_a_removal(cx7_with_kernels):
    upgrade = adhoc("rdmaops.roce.ofed_status", dict(provider="doca", doca_version="3.3.0"), cx7_with_kernels)
    assert upgrade["needed"] == "upgrade" and "3.2.1-044000 is installed, 3.3.0 is wanted" in upgrade["needed_reason"]
    absent = adhoc("rdmaops.roce.ofed_status", dict(state="absent", inbox_packages=["rdma-core"]), cx7_with_kernels)
    assert (absent["needed"], absent["remove_flavor"]) == ("remove", "doca_ofed")
    assert absent["removal"] == {"packages": ["doca-ofed"], "uninstall_script": "/usr/sbin/ofed_uninstall.sh"}
    # Back on inbox with the OFED mlx5_core still loaded: no openibd restart back to inbox is possible.
    assert absent["restart_required"] is True and absent["restart_possible"] is False


# -- ofed_repo on an empty tree -------------------------------------------------------------------------
@pytest.fixture
def empty_host(tmp_path):
    bindir = hosttree.materialize({"entries": {}, "commands": {}}, tmp_path)
    shutil.copy(os.path.join(GPG, "rsa2048.asc"), str(tmp_path / "key.asc"))
    return tmp_path, tree_env(tmp_path, bindir)


REPO_ARGS = dict(family="apt", url="http://127.0.0.1:8765/doca/", key_url="/key.asc", key_fingerprints=[RSA_FPR],
                 pin_packages=["doca-ofed"], pin_version="3.2.1*", update_cache=False)


def test_ofed_repo_refuses_a_key_with_another_fingerprint_and_writes_nothing(empty_host):
    root, env = empty_host
    before = files_under(root)
    result = adhoc("rdmaops.roce.ofed_repo", dict(REPO_ARGS, key_fingerprints=["A024F6F0E6D6A281"]), env)
    assert result["failed"] is True
    assert "not trusted, nothing was changed" in result["msg"] and RSA_FPR in result["msg"]
    assert files_under(root) == before


def test_ofed_repo_check_mode_then_apply_then_idempotent_then_absent(empty_host):
    root, env = empty_host
    predicted = adhoc("rdmaops.roce.ofed_repo", REPO_ARGS, env, check=True, diff=True)
    assert predicted["changed"] is True and len(predicted["changes"]) == 3
    assert not os.path.exists(str(root / "etc/apt/sources.list.d/rdmaops-doca.sources"))
    applied = adhoc("rdmaops.roce.ofed_repo", REPO_ARGS, env)
    assert applied["changes"] == predicted["changes"]
    assert applied["trusted_keys"][0]["fingerprint"] == RSA_FPR
    with open(str(root / "etc/apt/sources.list.d/rdmaops-doca.sources")) as handle:
        assert "Signed-By: /etc/apt/keyrings/rdmaops-doca.asc\n" in handle.read()
    with open(str(root / "etc/apt/preferences.d/rdmaops-doca.pref")) as handle:
        prefs = handle.read()
    assert "Package: doca-ofed\nPin: version 3.2.1*\nPin-Priority: 1001" in prefs
    assert 'Pin: origin "127.0.0.1"' in prefs
    with open(os.path.join(GPG, "rsa2048.asc")) as src, open(str(root / "etc/apt/keyrings/rdmaops-doca.asc")) as dst:
        assert src.read() == dst.read()
    again = adhoc("rdmaops.roce.ofed_repo", REPO_ARGS, env)
    assert again["changed"] is False and again["changes"] == []
    bumped = adhoc("rdmaops.roce.ofed_repo", dict(REPO_ARGS, pin_version="3.3.0*"), env, diff=True)
    assert bumped["changes"] == ["update /etc/apt/preferences.d/rdmaops-doca.pref"]
    gone = adhoc("rdmaops.roce.ofed_repo", dict(state="absent", family="apt"), env)
    assert gone["changed"] is True and len(gone["changes"]) == 3
    assert not os.path.exists(str(root / "etc/apt/keyrings/rdmaops-doca.asc"))


def test_ofed_repo_dnf_files(empty_host):
    root, env = empty_host
    args = dict(REPO_ARGS, family="dnf", url="https://linux.mellanox.com/public/repo/doca/3.2.1/rhel9/x86_64/")
    adhoc("rdmaops.roce.ofed_repo", args, env)
    with open(str(root / "etc/yum.repos.d/rdmaops-doca.repo")) as handle:
        text = handle.read()
    assert "[rdmaops-doca]\n" in text and "gpgcheck=1\n" in text and "priority=10\n" in text
    assert os.path.exists(str(root / "etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-doca"))


TOKEN = "t0k-3n%40x"  # percent-encoded in the URL: the password is "t0k-3n@x"


def mode_of(path):
    return os.stat(str(path)).st_mode & 0o777


def test_ofed_repo_apt_credentials_go_to_a_private_auth_file_and_nowhere_else(empty_host):
    root, env = empty_host
    args = dict(REPO_ARGS, url="http://alice:%s@127.0.0.1:8765/doca/" % TOKEN)
    predicted = adhoc("rdmaops.roce.ofed_repo", args, env, check=True, diff=True)
    applied = adhoc("rdmaops.roce.ofed_repo", args, env, diff=True)
    for result in (predicted, applied):
        text = json.dumps(result)
        assert "t0k-3n" not in text, text
    assert applied["changed"] is True and "write /etc/apt/auth.conf.d/rdmaops-doca.conf" in applied["changes"]
    with open(str(root / "etc/apt/sources.list.d/rdmaops-doca.sources")) as handle:
        source = handle.read()
    assert "URIs: http://127.0.0.1:8765/doca/\n" in source and "alice" not in source and "t0k" not in source
    auth = root / "etc/apt/auth.conf.d/rdmaops-doca.conf"
    assert mode_of(auth) == 0o600
    with open(str(auth)) as handle:
        assert "machine http://127.0.0.1:8765/doca login alice password t0k-3n@x\n" in handle.read()
    # A failure names the URL without its login.
    bad = adhoc("rdmaops.roce.ofed_repo", dict(args, key_url="http://bob:s3cret-key@127.0.0.1:9/key.asc"), env)
    assert bad["failed"] is True and "cannot download the repository key" in bad["msg"]
    assert "s3cret-key" not in json.dumps(bad) and "t0k-3n" not in json.dumps(bad)


def test_ofed_repo_dnf_credentials_make_the_repo_file_private(empty_host):
    root, env = empty_host
    repo_file = root / "etc/yum.repos.d/rdmaops-doca.repo"
    plain = dict(REPO_ARGS, family="dnf", url="https://linux.mellanox.com/public/repo/doca/3.2.1/rhel9/x86_64/")
    adhoc("rdmaops.roce.ofed_repo", plain, env)
    assert mode_of(repo_file) == 0o644
    args = dict(plain, url_username="alice", url_password="t0k-3n-secret")
    result = adhoc("rdmaops.roce.ofed_repo", args, env, diff=True)
    assert result["changed"] is True
    assert "t0k-3n-secret" not in json.dumps(result)
    # The file that now holds the password was narrowed before the password was written.
    assert result["changes"][0] == "restrict /etc/yum.repos.d/rdmaops-doca.repo to mode 0600 (it holds credentials)"
    assert mode_of(repo_file) == 0o600
    with open(str(repo_file)) as handle:
        text = handle.read()
    assert "username=alice\npassword=t0k-3n-secret\n" in text
    assert "baseurl=https://linux.mellanox.com/public/repo/doca/3.2.1/rhel9/x86_64/\n" in text


def test_ofed_repo_refuses_a_foreign_file_unless_adopted(empty_host):
    root, env = empty_host
    foreign = root / "etc/apt/sources.list.d/rdmaops-doca.sources"
    foreign.parent.mkdir(parents=True)
    foreign.write_text("deb http://example.org/ stable main\n")
    before = files_under(root)
    refused = adhoc("rdmaops.roce.ofed_repo", REPO_ARGS, env)
    assert refused["failed"] is True and refused["changed"] is False
    assert "was not written by rdmaops.roce" in refused["msg"] and "adopt" in refused["msg"]
    assert files_under(root) == before and foreign.read_text() == "deb http://example.org/ stable main\n"
    adopted = adhoc("rdmaops.roce.ofed_repo", dict(REPO_ARGS, adopt=True), env)
    assert adopted["changed"] is True and "Managed by rdmaops.roce" in foreign.read_text()


@pytest.mark.parametrize("name", ["../doca", "doca/x", "-doca", ".doca", "doca\n"])
def test_ofed_repo_name_must_be_a_plain_file_name(empty_host, name):
    root, env = empty_host
    before = files_under(root)
    result = adhoc("rdmaops.roce.ofed_repo", dict(REPO_ARGS, name=name), env)
    assert result["failed"] is True and "name=" in result["msg"] and "plain file name" in result["msg"]
    assert files_under(root) == before


# -- mlnx_ofed_install ------------------------------------------------------------------------------------
# The tarball and the work directory are host paths: they resolve under RDMAOPS_HOST_ROOT like
# /proc/sys/kernel/osrelease, so nothing here reaches the machine running the tests.
@pytest.fixture
def tarball(tmp_path):
    out = subprocess.run([sys.executable, BUILD, "mlnx-tarball", str(tmp_path / "root" / "dl"), "--supported-kernel",
                          "6.1.0-21-amd64"], capture_output=True, text=True, check=True).stdout
    made = json.loads(out)
    made["host_path"] = "/dl/" + os.path.basename(made["tarball"])
    return made


def mlnx_root(tmp_path, entries=None):
    """A host tree with a running kernel; PATH finds the tree's /usr/bin (where the installer puts
    ofed_info) before the stubs, which answer no ofed_info before it."""
    root = tmp_path / "root"
    manifest = {"entries": {"/proc/sys/kernel/osrelease": {"type": "file", "content": "6.1.0-26-amd64\n"},
                            "/lib/modules/6.1.0-26-amd64/modules.builtin": {"type": "file", "content": ""}},
                "commands": {}}
    manifest["entries"].update(entries or {})
    bindir = hosttree.materialize(manifest, root)
    env = tree_env(root, bindir)
    env["PATH"] = str(root / "usr" / "bin") + os.pathsep + env["PATH"]
    return root, env


def test_mlnx_ofed_install_wrong_checksum_fails_before_anything(tmp_path, tarball):
    root, env = mlnx_root(tmp_path)
    work = root / "work"
    result = adhoc("rdmaops.roce.mlnx_ofed_install",
                   dict(tarball=tarball["host_path"], sha256="0" * 64, version=tarball["version"], work_dir="/work"), env)
    assert result["failed"] is True
    assert "nothing was extracted or installed" in result["msg"] and tarball["sha256"] in result["msg"]
    assert not work.exists()  # not even the work directory was created
    assert "rc" not in result and "cmd" not in result
    assert result["changed"] is False


def test_mlnx_ofed_install_does_not_read_the_tarball_when_the_version_is_installed(tmp_path):
    manifest = {"entries": {}, "commands": {"ofed_info -s": {"rc": 0, "stdout": "MLNX_OFED_LINUX-24.10-1.1.4.0:\n"}}}
    bindir = hosttree.materialize(manifest, tmp_path)
    result = adhoc("rdmaops.roce.mlnx_ofed_install",
                   dict(tarball="/nonexistent.tgz", sha256="a" * 64, version="24.10-1.1.4.0"),
                   tree_env(tmp_path, bindir))
    assert result["changed"] is False and result["installed_before"] == "24.10-1.1.4.0"
    assert "sha256" not in result


def test_mlnx_ofed_install_check_mode_verifies_the_checksum_and_predicts(tmp_path, tarball):
    root, env = mlnx_root(tmp_path)
    work = root / "work"
    result = adhoc("rdmaops.roce.mlnx_ofed_install",
                   dict(tarball=tarball["host_path"], sha256=tarball["sha256"], version=tarball["version"],
                        work_dir="/work"), env, check=True, diff=True)
    assert result["changed"] is True and result["sha256"] == tarball["sha256"]
    assert not work.exists()
    assert result["changes"] == ["install MLNX_OFED %s from %s" % (tarball["version"], tarball["host_path"])]
    assert result["diff"][0] == {"before": {"mlnx_ofed": None}, "after": {"mlnx_ofed": tarball["version"]}}


def test_mlnx_ofed_install_reads_the_tarball_under_the_host_root(tmp_path, tarball):
    """The tarball path is a host path: /dl/... is found under RDMAOPS_HOST_ROOT, not on /."""
    root, env = mlnx_root(tmp_path)
    result = adhoc("rdmaops.roce.mlnx_ofed_install",
                   dict(tarball=tarball["host_path"], sha256=tarball["sha256"], version=tarball["version"],
                        work_dir="/work"), env, check=True)
    assert "does not exist" not in result.get("msg", ""), result
    assert result["sha256"] == tarball["sha256"]


def test_mlnx_ofed_install_installs_in_the_tree_and_verifies(tmp_path, tarball):
    root, env = mlnx_root(tmp_path)
    args = dict(tarball=tarball["host_path"], sha256=tarball["sha256"], version=tarball["version"], work_dir="/work")
    result = adhoc("rdmaops.roce.mlnx_ofed_install", args, env)
    assert result.get("failed") is not True, result
    assert result["changed"] is True and result["rc"] == 0
    assert (result["installed_before"], result["installed_after"]) == (None, tarball["version"])
    # The running kernel (read under the host root) is not in .supported_kernels.
    assert result["add_kernel_support"] is True and "6.1.0-26-amd64" in result["add_kernel_support_reason"]
    assert result["cmd"][0].startswith(str(root / "work") + os.sep)
    assert (root / "lib/modules/6.1.0-26-amd64/extra/mlnx-ofa_kernel/mlx5_core.ko").exists()
    assert os.listdir(str(root / "work")) == []  # the extracted tree is removed
    again = adhoc("rdmaops.roce.mlnx_ofed_install", args, env)
    assert again["changed"] is False and again["installed_before"] == tarball["version"]


def test_mlnx_ofed_install_failures_say_whether_the_host_changed(tmp_path, tarball):
    args = dict(tarball=tarball["host_path"], sha256=tarball["sha256"], version=tarball["version"], work_dir="/work")
    rc_file = "/etc/rdmaops-test/mlnxofedinstall-rc"
    root, env = mlnx_root(tmp_path, {rc_file: {"type": "file", "content": "172\n"}})
    refused = adhoc("rdmaops.roce.mlnx_ofed_install", args, env)
    assert refused["failed"] is True and refused["changed"] is False
    assert "prerequisites" in refused["msg"] and refused["rc"] == 172
    assert refused["not_applied"] == ["install MLNX_OFED %s from %s" % (tarball["version"], tarball["host_path"])]
    with open(str(root / rc_file.lstrip("/")), "w") as handle:
        handle.write("1\n")
    broken = adhoc("rdmaops.roce.mlnx_ofed_install", args, env)
    assert broken["failed"] is True and broken["changed"] is True
    assert "may have changed packages" in broken["msg"] and broken["rc"] == 1
    assert broken["logs_dir"].startswith("/tmp/MLNX_OFED_LINUX.")
