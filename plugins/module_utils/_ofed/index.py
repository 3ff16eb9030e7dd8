# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ofed_repo_check``: what a DOCA-Host repository offers, read from one host before anything changes.

A rollout drains hosts before it installs a new driver stack. A version the repository does not
have, or a repository key that is not the one written down, would only show once a host is
drained and its stack half-changed. This reads, from one host and changing nothing:

* the key (``key_url``), whose fingerprints must all be expected (the check of ``ofed_repo``);
* the package index: apt's ``Packages.gz``/``Packages`` under the suite (a flat repository, ``./``,
  or ``dists/<suite>/<component>/binary-<arch>/``), or dnf's ``repodata/repomd.xml`` and the
  ``primary`` metadata it names;

and says which versions of the profile package it lists and whether the wanted version (a DOCA
release, an exact package version or a glob, as ``ofed_status`` matches them) is one of them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import io
import re
from xml.etree import ElementTree

from ansible.module_utils.urls import fetch_url

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.redact import redact_text
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import require
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.openpgp import check_keys, normalize_fingerprint
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.repo import URL, WORD
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.versions import version_matches

PACKAGE = r"[a-z0-9][a-z0-9+.-]{0,127}"
RPM_NS = "{http://linux.duke.edu/metadata/common}"
REPO_NS = "{http://linux.duke.edu/metadata/repo}"
MAX_INDEX = 64 * 1024 * 1024


def parse_apt_packages(text):
    """``{package: [version, ...]}`` from an apt ``Packages`` index (deb822 stanzas)."""
    found = {}
    for stanza in re.split(r"\n\s*\n", text or ""):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, _sep, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if fields.get("package") and fields.get("version"):
            found.setdefault(fields["package"], []).append(fields["version"])
    return found


def parse_apt_exact_depends(text):
    """``{(package, version): [(dependency, version), ...]}``: the dependencies an apt ``Packages`` index
    pins to one version (``Depends: ofed-scripts (= 25.10...)``), as DOCA's profile packages do."""
    found = {}
    for stanza in re.split(r"\n\s*\n", text or ""):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
                continue
            if ":" not in line:
                continue
            key, _sep, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if not (fields.get("package") and fields.get("version")):
            continue
        exact = []
        for item in (fields.get("depends") or "").split(","):
            if "|" in item:
                continue
            match = re.fullmatch(r"\s*([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9]+)?\s*\(\s*=\s*([^)\s]+)\s*\)\s*", item)
            if match:
                exact.append((match.group(1), match.group(2)))
        found[(fields["package"], fields["version"])] = exact
    return found


def exact_closure(depends, package, version):
    """``package=version`` and every dependency it pins, transitively, as apt takes them: installing all
    of them at once installs (or downgrades to) that one release even when the repository holds newer
    ones, where ``apt-get install package=version`` alone would pick the newest dependencies and fail."""
    pins, todo = [], [(package, version)]
    while todo:
        item = todo.pop(0)
        text = "%s=%s" % item
        if text in pins:
            continue
        pins.append(text)
        todo.extend(depends.get(item, []))
    return pins


def newest(versions):
    """The newest of ``versions`` by their numbers (the matching builds of one release)."""
    return max(versions, key=lambda text: tuple(int(part) for part in re.findall(r"[0-9]+", text)))


def parse_dnf_primary(data):
    """``{package: [version-release, ...]}`` from dnf's ``primary.xml``."""
    found = {}
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise RdmaopsError("the repository's primary metadata is not XML: %s" % exc)
    for package in root.iter(RPM_NS + "package"):
        name = package.findtext(RPM_NS + "name")
        version = package.find(RPM_NS + "version")
        if name and version is not None and version.get("ver"):
            text = version.get("ver") + ("-" + version.get("rel") if version.get("rel") else "")
            found.setdefault(name, []).append(text)
    return found


def primary_location(data):
    """The ``primary`` metadata's path from ``repomd.xml``."""
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise RdmaopsError("the repository's repomd.xml is not XML: %s" % exc)
    for entry in root.iter(REPO_NS + "data"):
        if entry.get("type") == "primary":
            location = entry.find(REPO_NS + "location")
            if location is not None and location.get("href"):
                return location.get("href")
    raise RdmaopsError("the repository's repomd.xml names no primary metadata")


def _gunzip(data, name):
    if not name.endswith(".gz"):
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            return handle.read(MAX_INDEX)
    except (IOError, OSError, EOFError) as exc:
        raise RdmaopsError("%s is not a gzip file: %s" % (name, exc))


def _join(url, path):
    return url.rstrip("/") + "/" + path.lstrip("/")


def apt_index_paths(suite, components, arch):
    """Where apt finds the ``Packages`` index of ``suite``: flat, or under ``dists/``."""
    if suite.endswith("/"):
        base = "" if suite in ("./", "/") else suite
        return [base + "Packages.gz", base + "Packages"]
    paths = []
    for component in components or ["main"]:
        for name in ("Packages.gz", "Packages"):
            paths.append("dists/%s/%s/binary-%s/%s" % (suite, component, arch, name))
    return paths


def validate(params):
    """Refuse parameters that cannot name a repository, before anything is fetched."""
    require("url", params.get("url") or "", URL, "an http(s)://, ftp:// or file:// URL (without spaces)")
    require("key_url", params.get("key_url") or "", URL, "an http(s)://, ftp:// or file:// URL")
    require("suite", params.get("suite") or "", WORD, "an apt suite without spaces (./ for a flat repository)")
    require("package", params.get("package") or "", PACKAGE, "a package name such as doca-ofed")
    require("version", params.get("version") or "", WORD, "a version, a DOCA release (3.2.1) or a glob (3.2.1*)")
    if not params.get("key_fingerprints"):
        raise InputError("key_fingerprints is empty: give the fingerprint(s) the repository key must have",
                         option="key_fingerprints")
    for fingerprint in params["key_fingerprints"]:
        try:
            normalize_fingerprint(fingerprint)
        except RdmaopsError as exc:
            raise InputError("key_fingerprints: %s" % exc.msg, option="key_fingerprints")


class Fetcher:
    """GET through Ansible's fetch_url (certificates, proxies and the login of the module's options)."""

    def __init__(self, ctx, timeout):
        self.ctx = ctx
        self.timeout = timeout
        self.fetched = []

    def get(self, url, required=True):
        response, info = fetch_url(self.ctx.module, url, timeout=self.timeout)
        self.fetched.append("%s %s" % (redact_text(url), info.get("status")))
        if response is None or info.get("status") != 200:
            if not required:
                return None
            raise RdmaopsError("cannot download %s: %s" % (redact_text(url), redact_text(info.get("msg"), self.ctx.secrets)),
                               status=info.get("status"))
        return response.read(MAX_INDEX)


def gather(ctx, params):
    """The repository's key check and the versions of ``package`` it lists (never fails on them:
    ``problems`` says what is wrong, so that each host of a rollout can fail with it)."""
    validate(params)
    ctx.secret(params.get("url_password"))
    fetch = Fetcher(ctx, params.get("timeout") or 30)
    url = params["url"]
    family = params.get("family") or "apt"
    problems = []
    result = dict(url=redact_text(url), package=params["package"], version=params["version"], family=family)
    try:
        result["trusted_keys"] = check_keys(fetch.get(params["key_url"]), params["key_fingerprints"])
    except RdmaopsError as exc:
        problems.append("the repository key from %s is not trusted: %s" % (redact_text(params["key_url"]), exc.msg))
    packages, depends = {}, {}
    try:
        if family == "apt":
            for path in apt_index_paths(params["suite"], params.get("components"), params.get("arch") or "amd64"):
                data = fetch.get(_join(url, path), required=False)
                if data is not None:
                    text = _gunzip(data, path).decode("utf-8", "replace")
                    packages = parse_apt_packages(text)
                    depends = parse_apt_exact_depends(text)
                    result["index"] = redact_text(_join(url, path))
                    break
            else:
                raise RdmaopsError("no Packages index under %s for suite %s" % (redact_text(url), params["suite"]))
        else:
            location = primary_location(fetch.get(_join(url, "repodata/repomd.xml")))
            packages = parse_dnf_primary(_gunzip(fetch.get(_join(url, location)), location))
            result["index"] = redact_text(_join(url, location))
    except RdmaopsError as exc:
        problems.append("cannot read the repository's package list: %s" % exc.msg)
    versions = sorted(set(packages.get(params["package"], [])))
    matching = [version for version in versions if version_matches(version, params["version"])]
    result.update(versions=versions, matching=matching, found=bool(matching), fetched=fetch.fetched)
    # apt: the release's exact package versions, to install together (dnf's solver needs none)
    result["pins"] = exact_closure(depends, params["package"], newest(matching)) if matching and family == "apt" else []
    if not problems and not matching:
        problems.append("%s %s is not in the repository %s, which has %s: check ofed_doca_version (or "
                        "ofed_doca_package_version) against it; no host was changed" % (
                            params["package"], params["version"], redact_text(url),
                            ", ".join(versions) if versions else "no %s at all" % params["package"]))
    result["problems"] = problems
    return result
