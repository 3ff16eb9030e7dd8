# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ofed_repo``: a DOCA-Host repository with a verified key, a version pin and guardrails.

The files (all planned through :meth:`Plan.file`, so written only when they differ, only when
they are ours or adopted, and put back when a later change fails):

* apt: the key ``/etc/apt/keyrings/rdmaops-<name>.asc``, a deb822 source with ``Signed-By``, the
  preferences that pin the profile, and, for a repository that needs a login, the credentials in
  ``/etc/apt/auth.conf.d/rdmaops-<name>.conf`` (0600) with a credential-free URL in the source,
  which is how apt wants them (apt_auth.conf(5));
* dnf: the key ``/etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-<name>`` and the ``.repo`` file, with
  ``username=``/``password=`` and mode 0600 when the repository needs a login.

Credentials never reach a result: the password is a secret of the run (masked in every
message, diff and warning), and URLs are shown without their ``user:token@`` part.

The key file carries no marker (it is the key exactly as published); it counts as ours when
our own source file names it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from functools import partial

from ansible.module_utils.six.moves.urllib.parse import unquote, urlsplit, urlunsplit
from ansible.module_utils.urls import fetch_url

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.redact import redact_text
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import (
    absolute_path,
    file_name,
    not_option_like,
    require,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.openpgp import (
    as_armored_text,
    check_keys,
    normalize_fingerprint,
)

HEADER = "# Managed by rdmaops.roce (role ofed): local changes are overwritten.\n"
URL = r"(?i:https?|ftp|file)://[^\s]+"
# What may stand in one line of an apt/dnf file: no whitespace, no line breaks.
WORD = r"[^\s]+"
PRIVATE = 0o600


# -- URLs and credentials ---------------------------------------------------------------------
def url_host(url):
    """The host (without port) of a URL: what apt's ``Pin: origin`` compares with."""
    try:
        host = urlsplit(url or "").hostname
    except ValueError:
        return None
    return host or None


def split_credentials(url, username=None, password=None):
    """``(url without user:password@, username, password)``.

    ``username``/``password`` given as options win over those in the URL; the URL's are
    percent-decoded (``%40`` is ``@``).
    """
    parts = urlsplit(url)
    netloc = parts.netloc
    url_user = url_pass = None
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        url_user, _sep, url_pass = userinfo.partition(":")
        url_user, url_pass = unquote(url_user) or None, unquote(url_pass) if _sep else None
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, username or url_user, password or url_pass


def auth_machine(url):
    """The ``machine`` of apt_auth.conf(5) for a credential-free URL.

    apt matches ``host[:port][/path]`` entries without a scheme against https only, so an
    http (or ftp) repository keeps its scheme.
    """
    parts = urlsplit(url)
    where = parts.netloc + parts.path.rstrip("/")
    return where if parts.scheme.lower() == "https" else "%s://%s" % (parts.scheme.lower(), where)


# -- renderers --------------------------------------------------------------------------------
def render_apt_source(url, suite, keyring):
    """A deb822 ``.sources`` file.  A flat repository (suite ending in ``/``) has no components."""
    lines = [HEADER.rstrip("\n"), "Types: deb", "URIs: %s" % url, "Suites: %s" % suite]
    if not suite.endswith("/"):
        lines.append("Components: main")
    lines.append("Signed-By: %s" % keyring)
    return "\n".join(lines) + "\n"


def render_apt_auth(url, username, password):
    """``/etc/apt/auth.conf.d/<name>.conf``: the login for the repository at ``url``."""
    return "%smachine %s login %s password %s\n" % (HEADER, auth_machine(url), username, password or "")


def render_apt_preferences(url, pin_packages, pin_version, origin_priority, distro_packages):
    """apt preferences: the profile pinned to its version, the repository above the distro.

    * ``pin_packages`` at ``pin_version`` with priority 1001: ``apt-get install`` and
      ``apt upgrade`` move them to that version and nowhere else (a downgrade included).
    * every package from the repository's origin at ``origin_priority`` (> 500): the
      packages DOCA shadows (rdma-core, libibverbs1, ibverbs-providers ...) keep DOCA's build
      even when the distribution publishes a higher version.
    * ``distro_packages`` from the repository at -1: never taken from it.
    """
    host = url_host(url)
    blocks = [HEADER.rstrip("\n")]
    if pin_packages and pin_version:
        blocks.append("Explanation: the DOCA profile stays at the version the inventory asks for\n"
                      "Package: %s\nPin: version %s\nPin-Priority: 1001" % (" ".join(pin_packages), pin_version))
    if host:
        blocks.append("Explanation: packages DOCA ships win over the distribution's, even newer ones\n"
                      "Package: *\nPin: origin \"%s\"\nPin-Priority: %d" % (host, origin_priority))
        if distro_packages:
            blocks.append("Explanation: taken from the distribution, never from the DOCA repository\n"
                          "Package: %s\nPin: origin \"%s\"\nPin-Priority: -1" % (" ".join(distro_packages), host))
    return "\n\n".join(blocks) + "\n"


def render_dnf_repo(name, url, keyfile, priority, exclude, username=None, password=None):
    """A ``.repo`` file: gpgcheck on, the repository's priority above the distribution's.

    dnf prefers packages from a repository with a lower ``priority`` value even when another
    repository has a higher version, so ``dnf update`` cannot replace what DOCA shadows
    (rdma-core, libibverbs ...) with BaseOS/AppStream builds (default priority 99).
    A login is written as ``username=``/``password=`` (the file is then 0600).
    """
    lines = [
        HEADER.rstrip("\n"),
        "[%s]" % name,
        "name=DOCA-Host (%s)" % name,
        "baseurl=%s" % url,
        "enabled=1",
        "gpgcheck=1",
        "repo_gpgcheck=0",
        "gpgkey=file://%s" % keyfile,
        "priority=%d" % priority,
    ]
    if exclude:
        lines.append("excludepkgs=%s" % " ".join(exclude))
    if username:
        lines.extend(["username=%s" % username, "password=%s" % (password or "")])
    return "\n".join(lines) + "\n"


# -- the files of one repository ----------------------------------------------------------------
def repo_paths(family, name):
    """The files ``ofed_repo`` owns for repository ``name``, in the order they are written."""
    if family == "apt":
        return dict(
            key="/etc/apt/keyrings/rdmaops-%s.asc" % name,
            source="/etc/apt/sources.list.d/rdmaops-%s.sources" % name,
            preferences="/etc/apt/preferences.d/rdmaops-%s.pref" % name,
            auth="/etc/apt/auth.conf.d/rdmaops-%s.conf" % name,
        )
    return dict(
        key="/etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-%s" % name,
        source="/etc/yum.repos.d/rdmaops-%s.repo" % name,
        preferences=None,
        auth=None,
    )


def desired_repo_files(family, name, params, key_text):
    """``{path: text}`` of every file the repository consists of (None: the file must not exist).

    ``params`` may carry ``url_username``/``url_password``; credentials in ``url`` are moved out
    of it (into the apt auth file, or the dnf ``username=``/``password=`` lines).
    """
    paths = repo_paths(family, name)
    url, username, password = split_credentials(params["url"], params.get("url_username"),
                                                params.get("url_password"))
    desired = {paths["key"]: key_text}
    if family == "apt":
        desired[paths["source"]] = render_apt_source(url, params["suite"], paths["key"])
        desired[paths["preferences"]] = render_apt_preferences(
            url, params["pin_packages"], params["pin_version"], params["origin_priority"],
            params["distro_packages"])
        desired[paths["auth"]] = render_apt_auth(url, username, password) if username else None
    else:
        desired[paths["source"]] = render_dnf_repo(
            "rdmaops-%s" % name, url, paths["key"], params["dnf_priority"], params["exclude"], username, password)
    return desired


def private_paths(family, name, params):
    """The files that hold credentials and must be readable by root only."""
    paths = repo_paths(family, name)
    _url, username, _password = split_credentials(params.get("url") or "", params.get("url_username"),
                                                  params.get("url_password"))
    if family == "apt":
        return [paths["auth"]]
    return [paths["source"]] if username else []


def plan_repo(host, plan, family, name, state, desired, adopt=False, private=()):
    """Add a change to ``plan`` for every owned file that differs from ``desired`` (``{}`` for absent).

    Files in ``private`` are written 0600; an existing one that is readable by others is
    narrowed to 0600 before its new content (the credentials) is written.  Return the paths.
    """
    paths = repo_paths(family, name)
    source_text = files.read_text(host, paths["source"])
    # The key is the published key byte for byte, so it has no marker: our source file vouches for it.
    key_is_ours = files.is_ours(source_text) and paths["key"] in source_text
    owned = [path for path in paths.values() if path]
    for path in owned:
        after = desired.get(path) if state == "present" else None
        mode = PRIVATE if path in private else 0o644
        current_mode = files.file_mode(host, path)
        if after is not None and path in private and current_mode is not None and current_mode & 0o077:
            files.check_owned(host, path, adopt=adopt, option="name")
            plan.add(path + ":mode", "%04o" % current_mode, "%04o" % PRIVATE,
                     partial(files.set_mode, host, path, PRIVATE),
                     "restrict %s to mode 0600 (it holds credentials)" % path,
                     undo=partial(files.set_mode, host, path, current_mode))
        plan.file(host, path, after, mode=mode, adopt=adopt or (path == paths["key"] and key_is_ours),
                  option="name")
    return owned


# -- the engine ---------------------------------------------------------------------------------
class RepoEngine(Engine):
    """validate -> read (family, key, fingerprints) -> plan (files, apt-get update) -> re-read."""

    def __init__(self, ctx, params):
        super(RepoEngine, self).__init__(ctx, params)
        self.family = params.get("family")
        self.files = []
        self.desired = {}
        self.keys = None
        self.cache_updated = False

    def validate(self):
        params = self.params
        file_name("name", params["name"])
        password = params.get("url_password")
        self.ctx.secret(password)
        for key in ("url", "key_url"):
            userinfo = urlsplit(params.get(key) or "").netloc.rpartition("@")[0]
            if ":" in userinfo:  # the password as written in the URL and percent-decoded
                raw = userinfo.partition(":")[2]
                self.ctx.secret(raw)
                self.ctx.secret(unquote(raw))
        if params.get("url"):
            require("url", params["url"], URL, "an http(s)://, ftp:// or file:// URL (without spaces)")
        if params.get("url_username"):
            require("url_username", params["url_username"], WORD, "a user name without spaces")
        if password is not None and (not password or any(ch.isspace() for ch in password)):
            raise InputError("url_password must be a non-empty password without spaces or line breaks "
                             "(apt's auth.conf and dnf's .repo files cannot hold them)", option="url_password")
        if params["state"] != "present":
            return
        require("suite", params["suite"], WORD, "an apt suite without spaces (./ for a flat repository)")
        if params.get("pin_version"):
            require("pin_version", params["pin_version"], WORD, "a version pattern without spaces")
        for key in ("pin_packages", "distro_packages", "exclude"):
            for item in params.get(key) or []:
                require(key, item, WORD, "a package name (pattern) without spaces")
                not_option_like(key, item)
        key_url = params["key_url"]
        if key_url.startswith("/"):
            absolute_path("key_url", key_url)
        else:
            require("key_url", key_url, URL, "an http(s)://, ftp:// or file:// URL, or an absolute path on the host")
        for fingerprint in params.get("key_fingerprints") or []:
            try:
                normalize_fingerprint(fingerprint)
            except RdmaopsError as exc:
                raise InputError("key_fingerprints: %s" % exc.msg, option="key_fingerprints")
        if not params.get("key_fingerprints"):
            raise InputError("key_fingerprints is empty: give the fingerprint(s) the repository key must have",
                             option="key_fingerprints")

    def read(self):
        params = self.params
        if self.family in (None, "auto"):
            self.family = "apt" if self.runner.has("apt-get") else "dnf"
        if params["state"] != "present":
            return
        data = self.read_key(params["key_url"])
        try:
            self.keys = check_keys(data, params["key_fingerprints"])
        except RdmaopsError as exc:
            raise RefusedError("the key from %s is not trusted, nothing was changed: %s" % (
                redact_text(params["key_url"]), exc.msg), key_url=redact_text(params["key_url"]))
        self.desired = desired_repo_files(self.family, params["name"], params, as_armored_text(data))

    def read_key(self, key_url):
        """The key file's bytes from a URL or a host path."""
        if key_url.startswith("/") or key_url.startswith("file://"):
            path = key_url[len("file://"):] if key_url.startswith("file://") else key_url
            absolute_path("key_url", path)
            data = files.read_bytes(self.host, path)
            if data is None:
                raise RdmaopsError("cannot read the repository key %s on the host" % path, key_url=key_url)
            return data
        response, info = fetch_url(self.ctx.module, key_url, timeout=self.params["timeout"])
        if response is None or info.get("status") != 200:
            raise RdmaopsError("cannot download the repository key from %s: %s" % (
                redact_text(key_url), redact_text(info.get("msg"), self.ctx.secrets)), status=info.get("status"))
        return response.read()

    def plan(self, plan):
        params = self.params
        self.files = plan_repo(self.host, plan, self.family, params["name"], params["state"], self.desired,
                               adopt=params.get("adopt", False),
                               private=private_paths(self.family, params["name"], params))
        if self.family == "apt" and params["update_cache"]:
            plan.then("apt-get update", self.update_cache)

    def update_cache(self):
        self.runner.run(["apt-get", "update"])
        self.cache_updated = True

    def verify(self):
        problems = []
        for path in self.files:
            want = self.desired.get(path) if self.params["state"] == "present" else None
            if files.read_text(self.host, path) != want:
                problems.append("%s does not hold what was written (a concurrent change?)" % path)
        return problems

    def result(self):
        result = dict(family=self.family, files=list(self.files), cache_updated=self.cache_updated)
        if self.keys is not None:
            result["trusted_keys"] = self.keys
        return result
