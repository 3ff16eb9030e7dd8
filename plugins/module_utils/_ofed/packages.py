# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is installed: packages, DKMS builds and the OFED modules of every installed kernel.

Formats handled here, each tested against captured output in tests/unit:

* ``dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` and
  ``rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'``;
* ``dkms status`` (dkms 2.x ``module, version, kernel, arch: state`` and dkms 3.x
  ``module/version, kernel, arch: state``, plus ``module/version: added`` lines);
* the kernel's module tree (``/lib/modules/<release>/{kernel,updates,extra,weak-updates}``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

MODULES_ROOT = "/lib/modules"
DKMS_TREE = "/var/lib/dkms"
# Where OFED puts its kernel modules (MLNX_OFED user manual, "Installation Results"):
# updates/dkms (DKMS), extra/mlnx-ofa_kernel (RHEL kmod), updates (SLES), weak-updates (kABI).
OFED_MODULE_DIRS = ("updates", "extra", "weak-updates")
OFED_KERNEL_MODULES = ("mlx5_core", "mlx5_ib")
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
INBOX_MLX5_IB = "kernel/drivers/infiniband/hw/mlx5"
# The DOCA-Host removal recipe (DOCA docs, "Uninstalling Software from Host") removes every
# package whose name matches this before running ofed_uninstall.sh.
DOCA_PACKAGE_PATTERN = re.compile(r"doca|flexio|dpa-gdbserver|dpa-stats|dpaeumgmt")


# -- packages ---------------------------------------------------------------------------------
def parse_dpkg_query(text):
    """``${Package}\\t${Version}\\t${db:Status-Abbrev}`` lines -> ``{name: version}`` (installed only).

    ``db:Status-Abbrev`` is three letters: desired, status, error.  Only a status of ``i``
    (installed) counts; ``rc`` (removed, config files left) does not.
    """
    packages = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0]:
            continue
        status = parts[2]
        if len(status) >= 2 and status[1] == "i":
            # Multi-arch packages are listed once per architecture with the same version.
            packages[parts[0].split(":", 1)[0]] = parts[1]
    return packages


def parse_rpm_qa(text):
    """``%{NAME}\\t%{VERSION}-%{RELEASE}`` lines -> ``{name: version-release}``."""
    packages = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0] and parts[0] != "gpg-pubkey":
            packages[parts[0]] = parts[1]
    return packages


def read_packages(runner):
    """Installed packages and the family (``apt``/``dnf``) from one package-database query."""
    if runner.has("dpkg-query"):
        result = runner.run(
            ["dpkg-query", "-W", "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n"], check=False
        )
        return "apt", parse_dpkg_query(result.stdout)
    if runner.has("rpm"):
        result = runner.run(["rpm", "-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n"], check=False)
        return "dnf", parse_rpm_qa(result.stdout)
    return None, {}


# The distribution's inbox RDMA stack, by package family: what the ofed role installs when
# ofed_inbox_packages is empty (Debian and Ubuntu name the tools ibverbs-utils and rdmacm-utils, the
# RHEL family libibverbs-utils and librdmacm-utils).
INBOX_PACKAGES = {
    "apt": ("rdma-core", "ibverbs-providers", "ibverbs-utils", "rdmacm-utils", "infiniband-diags", "perftest"),
    "dnf": ("rdma-core", "libibverbs-utils", "librdmacm-utils", "infiniband-diags", "perftest"),
}


def wanted_inbox_packages(family, named=(), extra=()):
    """The inbox stack's packages: ``named`` or, when none are, the distribution's for the package
    ``family`` (none for an unknown one), then ``extra``; each once, in that order."""
    out = []
    for name in list(named or INBOX_PACKAGES.get(family, ())) + list(extra or ()):
        if name not in out:
            out.append(name)
    return out


def doca_named_packages(packages):
    return sorted(name for name in packages if DOCA_PACKAGE_PATTERN.search(name))


# -- DKMS -------------------------------------------------------------------------------------
_DKMS3 = re.compile(r"(?P<module>[^/,\s]+)/(?P<version>[^,:\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>.+)")
_DKMS2 = re.compile(r"(?P<module>[^/,\s]+), (?P<version>[^,\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>.+)")


def parse_dkms_status(text):
    """Parse ``dkms status`` into ``[{module, version, kernel, arch, state, detail}]``.

    dkms 3.x: ``mlnx-ofed-kernel/25.10.OFED.25.10.1.7.1, 6.8.0-45-generic, x86_64: installed``;
    dkms 2.x: ``mlnx-ofed-kernel, 5.8-OFED.5.8.1.1.2.1, 5.15.0-25-generic, x86_64: installed``;
    either: ``iser/25.10.OFED.25.10.1.7.1: added`` (registered, built for no kernel).
    ``state`` is the first word (added, built, installed, broken); ``detail`` the rest, e.g.
    ``(WARNING! Diff between built and installed module!)``.  Warnings dkms prints
    between entries are skipped.
    """
    entries = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        match = _DKMS3.fullmatch(line) or _DKMS2.fullmatch(line)
        if not match:
            continue
        state, _sep, detail = match.group("state").strip().partition(" ")
        entries.append(
            dict(
                module=match.group("module"),
                version=match.group("version"),
                kernel=match.group("kernel"),
                arch=match.group("arch"),
                state=state.rstrip(","),
                detail=detail.strip() or None,
            )
        )
    return entries


_MAKE_LOG_HEADER = re.compile(r"^DKMS make\.log for \S+ for kernel (\S+) \(")


def make_log_tail(host, module, version, kernel, arch, lines=30):
    """Last lines of the DKMS make.log of a module build for ``kernel``, with its path.

    dkms keeps one ``build/make.log`` per module version (dkms 3 also one per kernel under
    ``<kernel>/<arch>/log/``); its first line names the kernel it was written for
    (``DKMS make.log for mlnx-ofed-kernel-<version> for kernel <release> (<arch>)``).  A log
    written for another kernel is not this kernel's failure: ``(None, None)`` then.
    """
    candidates = []
    if kernel and arch:
        candidates.append("%s/%s/%s/%s/%s/log/make.log" % (DKMS_TREE, module, version, kernel, arch))
    candidates.append("%s/%s/%s/build/make.log" % (DKMS_TREE, module, version))
    for path in candidates:
        text = host.read(path)
        if text is None:
            continue
        header = _MAKE_LOG_HEADER.match(text)
        if header and kernel and header.group(1) != kernel:
            continue
        return path, "\n".join(text.splitlines()[-lines:])
    return None, None


# -- kernels ----------------------------------------------------------------------------------
def installed_kernels(host):
    """Kernel releases installed on the host: ``/lib/modules/<release>`` holding a kernel's own tree.

    A directory with only ``updates/`` (left behind by DKMS after the kernel package was
    removed) is not an installed kernel.
    """
    releases = []
    for name in host.listdir(MODULES_ROOT):
        base = "%s/%s" % (MODULES_ROOT, name)
        if host.exists(base + "/modules.builtin") or host.isdir(base + "/kernel"):
            releases.append(name)
    return releases


def _find_modules(host, base, names):
    """``{name: host path}`` for kernel modules ``names`` under ``base`` (recursively)."""
    found = {}
    real_base = host.path(base)
    if not os.path.isdir(real_base):
        return found
    for dirpath, _dirs, files in os.walk(real_base):
        for filename in files:
            for suffix in MODULE_SUFFIXES:
                if filename.endswith(suffix):
                    name = filename[:-len(suffix)].replace("-", "_")
                    if name in names and name not in found:
                        found[name] = host.to_host(os.path.join(dirpath, filename))
                    break
    return found


def headers_installed(host, build_link):
    """Whether ``/lib/modules/<release>/build`` leads to a header tree.

    The link is absolute on real hosts (``/usr/src/linux-headers-<release>``), so it is
    resolved under the host root, not against the machine running the module's tests.
    """
    real = host.path(build_link)
    try:
        target = os.readlink(real)
    except OSError:
        return os.path.isdir(real)
    if target.startswith("/"):
        return os.path.isdir(host.path(target))
    return os.path.isdir(os.path.join(os.path.dirname(real), target))


def kernel_coverage(host, releases, running):
    """Per installed kernel: are the OFED mlx5 modules there, the inbox ones, the headers?"""
    kernels = []
    for release in releases:
        base = "%s/%s" % (MODULES_ROOT, release)
        found = {}
        for sub in OFED_MODULE_DIRS:
            for name, path in _find_modules(host, "%s/%s" % (base, sub), OFED_KERNEL_MODULES).items():
                found.setdefault(name, path)
        inbox = _find_modules(host, "%s/%s" % (base, INBOX_MLX5_IB), ("mlx5_ib",))
        kernels.append(
            dict(
                release=release,
                running=release == running,
                ofed_modules=dict((name, found.get(name)) for name in OFED_KERNEL_MODULES),
                ofed=all(found.get(name) for name in OFED_KERNEL_MODULES),
                inbox_mlx5=bool(inbox),
                headers=headers_installed(host, base + "/build"),
                dkms={},
            )
        )
    return kernels


def dkms_coverage(entries, kernels, modules):
    """Fill ``kernel['dkms']`` and list ``(module, version, kernel, state)`` gaps.

    Only modules registered with DKMS are checked (a module of ``modules`` that DKMS does
    not know is simply not a DKMS build on this host).  Each registered module must be
    ``installed`` for every installed kernel.
    """
    gaps = []
    registered = {}
    for entry in entries:
        if entry["module"] in modules:
            registered.setdefault(entry["module"], set()).add(entry["version"])
    for module in sorted(registered):
        versions = sorted(registered[module])
        for kernel in kernels:
            states = [
                entry for entry in entries
                if entry["module"] == module and entry["kernel"] == kernel["release"]
            ]
            installed = [entry for entry in states if entry["state"] == "installed"]
            if installed:
                kernel["dkms"][module] = "installed"
                continue
            state = states[0]["state"] if states else "absent"
            kernel["dkms"][module] = state
            version = states[0]["version"] if states else versions[-1]
            arch = states[0]["arch"] if states else None
            gaps.append((module, version, kernel["release"], state, arch))
    return gaps
