"""The lab's DOCA stand-in repository: build.py's lab flavour (packages that keep the distribution's
RDMA stack, a broken release whose postinst fails, openibd, dkms without headers) and
``lab.py doca-repo`` (one JSON line, served over HTTP, stopped with the lab). Real dpkg-deb, gpg,
sh and python3 -m http.server; no VM."""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import docarepo  # noqa: E402  pylint: disable=wrong-import-position
import lab  # noqa: E402  pylint: disable=wrong-import-position

BUILD = os.path.join(REPO, "tests", "tools", "ofed_standins", "build.py")

pytestmark = pytest.mark.skipif(not (shutil.which("dpkg-deb") and shutil.which("gpg")), reason="needs dpkg-deb and gpg")


def packages(repo):
    """``{(name, version): {field: value}}`` of a repository's Packages index."""
    found = {}
    with open(os.path.join(repo, "Packages")) as handle:
        for stanza in handle.read().strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line)
            found[(fields["Package"], fields["Version"])] = fields
    return found


def extract(repo, fields, tmp_path):
    target = tmp_path / ("%s_%s" % (fields["Package"], fields["Version"]))
    subprocess.run(["dpkg-deb", "-R", os.path.join(repo, fields["Filename"]), str(target)], check=True)
    return target


@pytest.fixture(scope="module")
def lab_repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab") / "repo"
    proc = subprocess.run([sys.executable, BUILD, "doca-repo", str(out), "--flavour", "lab", "--version", "3.2.1",
                           "--version", "3.3.0", "--broken", "3.4.0", "--gnupghome", str(out.parent / "gnupg")],
                          check=True, capture_output=True, text=True)
    return str(out), json.loads(proc.stdout)


def test_lab_flavour_depends_on_the_distributions_rdma_stack_instead_of_shadowing_it(lab_repo):
    repo, built = lab_repo
    index = packages(repo)
    names = set(name for name, _version in index)
    assert built["flavour"] == "lab" and built["broken"] == ["3.4.0"] and sorted(built["versions"]) == ["3.2.1", "3.3.0"]
    assert "rdma-core" not in names and "ibverbs-utils" not in names
    assert names == {"doca-ofed", "doca-roce", "ofed-scripts", "mlnx-ofed-kernel-dkms", "mlnx-ofed-kernel-utils", "dkms"}
    for version, kernel in (("3.2.1-044000", "25.10.OFED.25.10.1.7.1-1"), ("3.3.0-000400", "26.01.OFED.26.01.1.0.0-1"),
                            ("3.4.0-000100", "26.04.OFED.26.04.1.0.0-1")):
        depends = [item.strip() for item in index[("doca-ofed", version)]["Depends"].split(",")]
        assert depends == ["ofed-scripts (= %s)" % kernel, "mlnx-ofed-kernel-utils (= %s)" % kernel,
                           "mlnx-ofed-kernel-dkms (= %s)" % kernel, "rdma-core", "ibverbs-providers", "ibverbs-utils",
                           "perftest"]


def test_lab_uninstall_script_leaves_the_distributions_packages(lab_repo, tmp_path):
    repo, _built = lab_repo
    tree = extract(repo, packages(repo)[("ofed-scripts", "26.01.OFED.26.01.1.0.0-1")], tmp_path)
    text = (tree / "usr" / "sbin" / "ofed_uninstall.sh").read_text()
    line = next(line for line in text.splitlines() if line.startswith("for p in "))
    assert line.rstrip("; do").split()[3:] == ["doca-ofed", "doca-roce", "mlnx-ofed-kernel-utils", "mlnx-ofed-kernel-dkms", "ofed-scripts"]


def test_broken_release_postinst_fails_and_the_good_ones_do_not_need_headers(lab_repo, tmp_path):
    repo, _built = lab_repo
    index = packages(repo)
    broken = extract(repo, index[("mlnx-ofed-kernel-dkms", "26.04.OFED.26.04.1.0.0-1")], tmp_path)
    proc = subprocess.run(["sh", str(broken / "DEBIAN" / "postinst"), "configure"], capture_output=True, text=True, check=False)
    assert proc.returncode == 10
    assert "Error! Bad return status for module build on kernel: %s" % os.uname().release in proc.stderr
    good = extract(repo, index[("mlnx-ofed-kernel-dkms", "26.01.OFED.26.01.1.0.0-1")], tmp_path)
    text = (good / "DEBIAN" / "postinst").read_text()
    assert "dkms install -m mlnx-ofed-kernel -v 26.01.OFED.26.01.1.0.0" in text and "/build" not in text
    dkms = extract(repo, next(fields for key, fields in index.items() if key[0] == "dkms"), tmp_path)
    assert (dkms / "etc" / "rdmaops-test" / "dkms-lab").is_file()
    assert "LAB_MARKER" in (dkms / "usr" / "sbin" / "dkms").read_text()


def test_lab_openibd_reloads_rdma_rxe_and_recreates_the_devices(lab_repo, tmp_path):
    """Run it with stand-in rdma and modprobe that record their calls, against a fake sysfs."""
    repo, _built = lab_repo
    tree = extract(repo, packages(repo)[("mlnx-ofed-kernel-utils", "25.10.OFED.25.10.1.7.1-1")], tmp_path)
    script = (tree / "etc" / "init.d" / "openibd").read_text()
    assert subprocess.run(["sh", "-n", "-c", script], check=False).returncode == 0
    fake = tmp_path / "root"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for dev, netdev in (("rxe0", "ens4"), ("rxe1", "ens7")):
        (fake / "sys" / "class" / "infiniband" / dev).mkdir(parents=True)
        (fake / "sys" / "class" / "infiniband" / dev / "parent").write_text(netdev + "\n")
    calls = tmp_path / "calls"
    for tool in ("rdma", "modprobe"):
        (bin_dir / tool).write_text('#!/bin/sh\necho "%s $*" >> %s\n' % (tool, calls))
        (bin_dir / tool).chmod(0o755)
    # the script's absolute paths point into the fake root
    script = script.replace("/sys/", "%s/sys/" % fake).replace("/var/log/", "%s/log/" % tmp_path).replace(
        "/run/", "%s/" % tmp_path)
    proc = subprocess.run(["sh", "-c", script, "openibd", "restart"], env=dict(os.environ, PATH="%s:/usr/bin:/bin" % bin_dir),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    # the devices stayed in the fake sysfs, so start finds them present and adds none: delete then
    # the modules; run start again without them to see the re-creation
    assert calls.read_text().splitlines() == ["rdma link delete rxe0", "rdma link delete rxe1", "modprobe -r rdma_rxe",
                                              "modprobe rdma_rxe"]
    shutil.rmtree(fake / "sys" / "class" / "infiniband")
    calls.write_text("")
    proc = subprocess.run(["sh", "-c", script, "openibd", "start"], env=dict(os.environ, PATH="%s:/usr/bin:/bin" % bin_dir),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert calls.read_text().splitlines() == ["modprobe rdma_rxe", "rdma link add rxe0 type rxe netdev ens4",
                                              "rdma link add rxe1 type rxe netdev ens7"]


def test_molecule_flavour_is_unchanged(tmp_path):
    out = tmp_path / "repo"
    proc = subprocess.run([sys.executable, BUILD, "doca-repo", str(out), "--version", "3.2.1"],
                          check=True, capture_output=True, text=True)
    built = json.loads(proc.stdout)
    assert set(built) == {"fingerprint", "versions", "out"}
    index = packages(str(out))
    assert ("rdma-core", "2510.0.11-1") in index and ("ibverbs-utils", "2510.0.11-1") in index
    assert "rdma-core (= 2510.0.11-1)" in index[("doca-ofed", "3.2.1-044000")]["Depends"]


def free_base_port():
    for base in range(30000, 40000, 37):
        if all(not docarepo.answers(number, 0.2) for number in (base, base + docarepo.PORT_OFFSET)):
            return base
    raise AssertionError("no free port")


def test_doca_repo_prints_one_json_line_serves_the_repository_and_stops_with_the_lab(tmp_path, capsys):
    state = tmp_path / "state"
    base = free_base_port()
    assert lab.main(["--state-dir", str(state), "doca-repo"]) == 1
    assert "the lab is down (lab.py up)" in capsys.readouterr().err
    state.mkdir()
    (state / lab.STATE_FILE).write_text(json.dumps({"version": 1, "ssh_base_port": base, "vms": {"vm1": {"index": 1}}}))
    assert lab.main(["--state-dir", str(state), "doca-repo"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    repo = json.loads(lines[0])
    port = base + docarepo.PORT_OFFSET
    assert repo["url"] == "http://10.0.2.2:%d/" % port
    assert repo["key_url"] == repo["url"] + "GPG-KEY-test.pub"
    assert repo["versions"] == ["3.2.1", "3.3.0"] and repo["broken"] == "3.4.0" and repo["missing"] == "3.9.9"
    assert len(repo["fingerprint"]) == 40
    # what a VM reaches at 10.0.2.2 is the host's 127.0.0.1
    local = "http://127.0.0.1:%d/" % port
    with urllib.request.urlopen(local + "GPG-KEY-test.pub", timeout=10) as answer:
        assert answer.read().startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    with urllib.request.urlopen(local + "InRelease", timeout=10) as answer:
        assert b"-----BEGIN PGP SIGNED MESSAGE-----" in answer.read()
    pid = docarepo.server_pid(str(state))
    assert pid
    # a second call reuses the build and the server, same key
    assert lab.main(["--state-dir", str(state), "doca-repo"]) == 0
    assert json.loads(capsys.readouterr().out) == repo and docarepo.server_pid(str(state)) == pid
    assert docarepo.stop(str(state)) == pid
    assert docarepo.server_pid(str(state)) is None and not docarepo.answers(port, 0.5)


def test_a_signing_key_in_a_deep_directory_is_made_and_used(tmp_path):
    # gpg-agent's sockets go in the GnuPG home directory, and a Unix socket's path is at most 107 bytes:
    # the repository's key in a directory as deep as a test's tmp_path under pytest-xdist (the CI run's
    # failure: "No agent running") must still be generated and sign the index
    deep = tmp_path / ("d" * 60) / "state" / "doca-repo"
    gnupghome = deep / "gnupg"
    assert len(str(gnupghome / "S.gpg-agent.browser")) > 107
    proc = subprocess.run([sys.executable, BUILD, "doca-repo", str(deep / "repo"), "--version", "3.2.1",
                           "--gnupghome", str(gnupghome)], check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = json.loads(proc.stdout)
    signed = (deep / "repo" / "InRelease").read_text()
    assert "BEGIN PGP SIGNED MESSAGE" in signed
    listing = subprocess.run(["gpg", "--homedir", str(gnupghome), "--with-colons", "--list-keys"],
                             check=False, capture_output=True, text=True).stdout
    assert built["fingerprint"] in listing
    # the agent removes its sockets as it exits, after gpgconf --kill returns: give it a moment under load
    deadline = time.time() + 15
    while list(gnupghome.glob("S.gpg-agent*")) and time.time() < deadline:
        time.sleep(0.2)
    assert not list(gnupghome.glob("S.gpg-agent*")), "the build's gpg-agent was left running"
