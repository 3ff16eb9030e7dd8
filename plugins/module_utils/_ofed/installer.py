# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``mlnx_ofed_install``: the legacy MLNX_OFED tarball, checksum first, installer exit codes explained.

The install is one change of the plan (before: the version ``ofed_info -s`` reports, after:
the wanted one), so check mode predicts it and diff mode shows it.  It cannot be undone (the
installer replaces the driver stack), so a failure says what happened instead: an exit status
the manual documents as a pre-flight refusal (invalid parameter, not applicable, prerequisites
missing) left the host as it was; any other failure may have left it part-way, which the
result says (``changed: true`` with the installer's output).

Every path the module is given (the tarball, the work directory) is a host path, resolved
through the host root like ``/proc/sys/kernel/osrelease``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import tarfile
import tempfile

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import DRIVER_RESTART
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import absolute_path, require
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import kernel_release
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.versions import installed_ofed_version, version_matches

# mlnxofedinstall return codes, as the MLNX_OFED user manual lists them.
MLNX_INSTALLER_RCS = {
    0: ("ok", "installation finished"),
    1: ("failed", "the installation failed; the installer's log directory (named in its output) says why"),
    2: ("ok_no_firmware", "installed, but no firmware was found for the device, so firmware was not updated"),
    22: ("failed", "invalid parameter: check ofed_mlnx_ofed_install_flags against "
                   "'./mlnxofedinstall --help' of this MLNX_OFED version"),
    28: ("failed", "not enough free space (the installer unpacks and builds under /tmp and the "
                   "work directory; free space or set ofed_mlnx_ofed_work_dir elsewhere)"),
    171: ("failed", "not applicable to this system configuration: the tarball does not match this "
                    "distribution or kernel (use the tarball built for this OS, or let the role add "
                    "--add-kernel-support)"),
    172: ("failed", "prerequisites are not met: packages the installer needs are missing (its output "
                    "names them; install them and run again)"),
    173: ("failed", "failed to start the mst driver (the installer's firmware tools); add "
                    "--without-fw-update or check the mst service"),
}
# Exit statuses of checks the installer makes before it touches a package: the host is as it was.
PREFLIGHT_RCS = (22, 171, 172)
SHA256 = re.compile(r"[0-9a-f]{64}")
INSTALLER = "mlnxofedinstall"


def explain_installer_rc(rc):
    """``(ok, meaning)`` for an mlnxofedinstall exit status."""
    kind, meaning = MLNX_INSTALLER_RCS.get(rc, ("failed", "unknown exit status %s" % rc))
    return kind != "failed", "mlnxofedinstall exited %s: %s" % (rc, meaning)


def installer_logs_dir(output):
    """The ``Logs dir: /tmp/MLNX_OFED_LINUX.<pid>.logs`` path the installer prints, or None."""
    match = re.search(r"Logs dir:\s*(\S+)", output or "")
    return match.group(1) if match else None


def normalize_sha256(value):
    text = (value or "").strip().lower()
    if text.startswith("sha256:"):
        text = text[len("sha256:"):]
    if not SHA256.fullmatch(text):
        raise InputError(
            "ofed_mlnx_ofed_sha256 must be the 64-hex-digit SHA-256 of the tarball (as "
            "'sha256sum MLNX_OFED_LINUX-*.tgz' prints it), got %r" % (value,),
            option="sha256",
        )
    return text


def safe_members(archive, dest):
    """Members of ``archive`` that stay inside ``dest`` (a real path); raise on anything that escapes."""
    dest = os.path.realpath(dest)
    members = []
    for member in archive.getmembers():
        target = os.path.realpath(os.path.join(dest, member.name))
        if not (target == dest or target.startswith(dest + os.sep)):
            raise RefusedError("the tarball member %r would be written outside %s" % (member.name, dest))
        if member.issym() or member.islnk():
            link = member.linkname
            base = os.path.dirname(target) if member.issym() else dest
            resolved = os.path.realpath(os.path.join(base, link))
            if os.path.isabs(link) or not (resolved == dest or resolved.startswith(dest + os.sep)):
                raise RefusedError("the tarball link %r -> %r points outside the archive" % (member.name, link))
        elif not (member.isfile() or member.isdir()):
            continue  # devices and fifos have no business in an installer tarball
        members.append(member)
    return members


def extract_tarball(host, path, dest):
    """Extract the (gzip/bzip2/xz) tarball at host path ``path`` into host directory ``dest``
    safely; return the installer directory (a host path)."""
    real_dest = host.path(dest)
    with tarfile.open(host.path(path), "r:*") as archive:
        members = safe_members(archive, real_dest)
        if hasattr(tarfile, "tar_filter"):
            # Python 3.12+ (and security updates of older ones) check members again themselves.
            archive.extractall(real_dest, members=members, filter="tar")  # nosec - members checked above
        else:
            archive.extractall(real_dest, members=members)  # nosec - members checked above
    return find_installer_dir(host, dest)


def find_installer_dir(host, dest):
    """The directory holding ``mlnxofedinstall`` (the tarball's top directory, usually)."""
    for candidate in [dest] + ["%s/%s" % (dest, name) for name in host.listdir(dest)]:
        if os.path.isfile(host.path("%s/%s" % (candidate, INSTALLER))):
            return candidate
    raise RdmaopsError("no mlnxofedinstall found in the tarball (looked in its top directory)")


def tarball_kernels(host, installer_dir):
    """Kernels the tarball ships prebuilt packages for (``.supported_kernels``), or None."""
    text = files.read_text(host, "%s/.supported_kernels" % installer_dir)
    return None if text is None else [word for word in text.split() if word]


def needs_kernel_support(host, mode, installer_dir, running_kernel):
    """``(bool, reason)``: whether to pass ``--add-kernel-support``."""
    if mode == "always":
        return True, "ofed_mlnx_ofed_add_kernel_support is always"
    if mode == "never":
        return False, "ofed_mlnx_ofed_add_kernel_support is never"
    kernels = tarball_kernels(host, installer_dir)
    if kernels is None:
        return False, "the tarball lists no supported kernels (.supported_kernels); installing as shipped"
    if running_kernel in kernels:
        return False, "the tarball has prebuilt packages for the running kernel %s" % running_kernel
    return True, "the tarball was built for %s, not the running kernel %s" % (
        ", ".join(kernels), running_kernel)


def installer_argv(host, installer_dir, flags, add_kernel_support):
    """The installer's command line (its real path, under the host root)."""
    argv = [host.path("%s/%s" % (installer_dir, INSTALLER))] + list(flags)
    if add_kernel_support and "--add-kernel-support" not in argv:
        argv.append("--add-kernel-support")
    return argv


class InstallEngine(Engine):
    """validate -> read (installed version, tarball checksum) -> plan (one install) -> re-read."""

    commands_key = None  # the installer's command line is reported as ``cmd``

    def __init__(self, ctx, params):
        super(InstallEngine, self).__init__(ctx, params)
        self.out = dict(installed_before=None, installed_after=None)
        self.wanted_sha = None
        self.needed = False
        self.running = None
        self.failure = None

    def validate(self):
        params = self.params
        self.wanted_sha = normalize_sha256(params["sha256"])
        absolute_path("tarball", params["tarball"])
        absolute_path("work_dir", params["work_dir"])
        require("version", params["version"], r"[A-Za-z0-9][A-Za-z0-9._+~-]*",
                "an MLNX_OFED version as 'ofed_info -s' prints it (24.10-1.1.4.0)")
        for flag in params["flags"]:
            require("flags", flag, r"[^\n\x00]+", "an installer flag on one line")
        if params["output_lines"] < 0:
            raise InputError("output_lines must be 0 or more", option="output_lines")

    def read(self):
        params = self.params
        before = installed_ofed_version(self.runner)
        self.out.update(installed_before=before, installed_after=before)
        self.needed = params["force"] or not version_matches(before, params["version"])
        if not self.needed:
            return  # the tarball is not even read
        tarball = params["tarball"]
        if not os.path.isfile(self.host.path(tarball)):
            raise RdmaopsError("the MLNX_OFED tarball %s does not exist on the host" % tarball)
        actual = files.sha256(self.host, tarball)
        self.out["sha256"] = actual
        if actual != self.wanted_sha:
            raise RdmaopsError(
                "the SHA-256 of %s is %s, but %s was expected: nothing was extracted or installed. "
                "Fetch the tarball again or correct ofed_mlnx_ofed_sha256." % (tarball, actual, self.wanted_sha))
        self.running = kernel_release(self.host)

    def plan(self, plan):
        if not self.needed:
            return
        params = self.params
        before, version = self.out["installed_before"], params["version"]
        after = version if before != version else "%s (reinstalled: force)" % version
        verb = "reinstall" if version_matches(before, version) else "install"
        # The installer replaces the running driver's modules: they take effect when the stack
        # restarts (openibd), which the ofed role does, or at a reboot.
        plan.add("mlnx_ofed", before, after, self.install,
                 "%s MLNX_OFED %s from %s" % (verb, version, params["tarball"]), disruption=DRIVER_RESTART)
        self.out["cmd"] = ["<work_dir>/MLNX_OFED_LINUX-*/%s" % INSTALLER] + list(params["flags"])

    def install(self):
        params = self.params
        work_real = self.host.path(params["work_dir"])
        if not os.path.isdir(work_real):
            os.makedirs(work_real, 0o700)
        extract_real = tempfile.mkdtemp(prefix="extract.", dir=work_real)
        try:
            try:
                installer_dir = extract_tarball(self.host, params["tarball"], self.host.to_host(extract_real))
            except (RdmaopsError, tarfile.TarError) as exc:
                raise RdmaopsError("cannot use the tarball %s: %s" % (params["tarball"], getattr(exc, "msg", exc)))
            add, why = needs_kernel_support(self.host, params["add_kernel_support"], installer_dir, self.running)
            argv = installer_argv(self.host, installer_dir, params["flags"], add)
            self.out.update(cmd=argv, add_kernel_support=add, add_kernel_support_reason=why)
            run = self.runner.run(argv, check=False)
            output = (run.stdout or "") + (run.stderr or "")
            ok, meaning = explain_installer_rc(run.rc)
            self.out.update(
                rc=run.rc,
                rc_meaning=meaning,
                logs_dir=installer_logs_dir(output),
                output_tail="\n".join(output.splitlines()[-params["output_lines"]:]),
            )
            failure = "%s (installer: %s)" % (meaning, " ".join(argv))
            if not ok and run.rc in PREFLIGHT_RCS:
                raise RdmaopsError(failure + "; the installer stopped before changing packages")
            if not ok:
                self.failure = failure + "; the installer may have changed packages before it stopped"
            elif run.rc != 0:
                self.ctx.warn(meaning)
        finally:
            if not params["keep_extracted"]:
                shutil.rmtree(extract_real, ignore_errors=True)

    def verify(self):
        # The runner looked tools up before the install; the installer has just added ofed_info.
        fresh = CommandRunner(self.ctx.module)
        after = installed_ofed_version(fresh)
        self.runner.commands.extend(fresh.commands)
        self.out["installed_after"] = after
        if self.failure:
            return [self.failure + " (ofed_info -s now reports %s)" % after]
        if not version_matches(after, self.params["version"]):
            return ["mlnxofedinstall succeeded but ofed_info -s reports %s, not %s: the tarball is another "
                    "version than ofed_mlnx_ofed_version says" % (after, self.params["version"])]
        return []

    def result(self):
        return dict(self.out)
