"""rdmaops.roce.ofed_repo_check through ``ansible localhost -m``, against a real signed flat apt repository
of DOCA stand-in packages (tests/tools/ofed_standins/build.py: dpkg-deb, gpg) with releases 3.2.1 and
3.3.0, served by Python's http.server on 127.0.0.1."""

import functools
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

import ansiblerun

BUILD = os.path.join(ansiblerun.REPO, "tests", "tools", "ofed_standins", "build.py")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("doca-repo")
    proc = subprocess.run([sys.executable, BUILD, "doca-repo", str(out), "--version", "3.2.1", "--version", "3.3.0"],
                          capture_output=True, text=True, check=True)
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    yield dict(url=url, key_url=url + "GPG-KEY-test.pub", fingerprint=built["fingerprint"])
    server.shutdown()


def check(repo, **args):
    params = dict(url=repo["url"], key_url=repo["key_url"], key_fingerprints=[repo["fingerprint"]], version="3.3.0")
    params.update(args)
    return ansiblerun.adhoc("rdmaops.roce.ofed_repo_check", json.dumps(params), {})


def test_a_version_the_repository_has(repo):
    rc, result = check(repo)
    assert rc == 0 and result["changed"] is False, result
    assert result["found"] is True and result["problems"] == []
    assert result["versions"] == ["3.2.1-044000", "3.3.0-000400"]
    assert result["matching"] == ["3.3.0-000400"]
    assert result["index"] == repo["url"] + "Packages.gz"
    assert result["trusted_keys"][0]["fingerprint"] == repo["fingerprint"]
    # the release's exact versions, to install together (the profile pins its dependencies)
    assert result["pins"] == ["doca-ofed=3.3.0-000400", "ofed-scripts=26.01.OFED.26.01.1.0.0-1",
                              "mlnx-ofed-kernel-utils=26.01.OFED.26.01.1.0.0-1",
                              "mlnx-ofed-kernel-dkms=26.01.OFED.26.01.1.0.0-1", "rdma-core=2601.0.6-1",
                              "ibverbs-utils=2601.0.6-1"]


@pytest.mark.parametrize("version,found", [("3.2.1-044000", True), ("3.2*", True), ("3.2.1", True), ("3.2", False)])
def test_exact_versions_and_globs(repo, version, found):
    rc, result = check(repo, version=version)
    assert rc == 0 and result["found"] is found, result


def test_a_version_the_repository_lacks_is_a_problem_naming_what_it_has(repo):
    rc, result = check(repo, version="3.4.0")
    assert rc == 0 and result["found"] is False
    assert result["problems"] == [
        "doca-ofed 3.4.0 is not in the repository %s, which has 3.2.1-044000, 3.3.0-000400: check ofed_doca_version "
        "(or ofed_doca_package_version) against it; no host was changed" % repo["url"]]


def test_a_key_that_does_not_match_is_a_problem(repo):
    rc, result = check(repo, key_fingerprints=["0123456789ABCDEF0123456789ABCDEF01234567"])
    assert rc == 0 and "trusted_keys" not in result
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith("the repository key from %s is not trusted" % repo["key_url"])
    assert "0123456789ABCDEF0123456789ABCDEF01234567" in result["problems"][0]


def test_an_unreachable_repository_is_a_problem_not_a_traceback(repo):
    rc, result = check(repo, url="http://127.0.0.1:9/")
    assert rc == 0 and result["found"] is False
    assert result["problems"][0].startswith("cannot read the repository's package list: no Packages index")
    assert "Traceback" not in json.dumps(result)


@pytest.mark.parametrize("args,option", [
    (dict(url="http://x/ y"), "url"), (dict(version="3.2 1"), "version"), (dict(package="-rf"), "package"),
    (dict(key_fingerprints=["1234"]), "key_fingerprints"),
])
def test_bad_input_is_refused_before_anything_is_fetched(repo, args, option):
    rc, result = check(repo, **args)
    assert rc != 0 and result["msg"].startswith(option), result
    assert "fetched" not in result
