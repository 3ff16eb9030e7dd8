# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA driver stack: what is installed, what is wanted, and whether it is complete.

Used by the modules ``ofed_status`` (read-only: installed stack, planned action, DKMS and
kernel coverage, management connection, restart/reboot decision), ``ofed_repo`` (DOCA-Host
repository, key and package guardrails) and ``mlnx_ofed_install`` (the legacy tarball).

Formats handled here, each tested against captured output in tests/unit:

* ``dkms status`` (dkms 2.x ``module, version, kernel, arch: state`` and dkms 3.x
  ``module/version, kernel, arch: state``, plus ``module/version: added`` lines);
* ``dpkg-query -W -f='${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` and
  ``rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'``;
* ``ofed_info -s`` (through :func:`parsers.parse_ofed_info`, via rdma_facts);
* the kernel's module tree (``/lib/modules/<release>/{kernel,updates,extra,weak-updates}``);
* ``mlnxofedinstall`` return codes (the table of the MLNX_OFED user manual).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import hashlib
import os
import re
import tarfile

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.rdma import parse_ip_addr_json

PROVIDERS = ("auto", "doca", "mlnx_ofed", "inbox")
FLAVOR_OF_PROVIDER = {"doca": "doca_ofed", "mlnx_ofed": "mlnx_ofed", "inbox": "inbox"}
PROVIDER_OF_FLAVOR = {"doca_ofed": "doca", "mlnx_ofed": "mlnx_ofed"}
OFED_FLAVORS = ("doca_ofed", "mlnx_ofed")
MELLANOX_PCI_VENDOR = "0x15b3"
PCI_DEVICES = "/sys/bus/pci/devices"
MODULES_ROOT = "/lib/modules"
DKMS_TREE = "/var/lib/dkms"
UNINSTALL_SCRIPT = "/usr/sbin/ofed_uninstall.sh"
# Where OFED puts its kernel modules (MLNX_OFED user manual, "Installation Results"):
# updates/dkms (DKMS), extra/mlnx-ofa_kernel (RHEL kmod), updates (SLES), weak-updates (kABI).
OFED_MODULE_DIRS = ("updates", "extra", "weak-updates")
OFED_KERNEL_MODULES = ("mlx5_core", "mlx5_ib")
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
INBOX_MLX5_IB = "kernel/drivers/infiniband/hw/mlx5"
# The DOCA-Host removal recipe (DOCA docs, "Uninstalling Software from Host") removes every
# package whose name matches this before running ofed_uninstall.sh.
DOCA_PACKAGE_PATTERN = re.compile(r"doca|flexio|dpa-gdbserver|dpa-stats|dpaeumgmt")
# Netdev drivers that an OFED driver restart (openibd) unloads.
OFED_NETDEV_DRIVERS = ("mlx5_core", "mlx4_core", "mlx4_en")
# Kernel modules that keep using ib_core across a restart: storage over RDMA (unloading it can
# hang or lose a root/NFS filesystem) and peer-memory clients that block the unload.
RESTART_RISK_MODULES = (
    "nvme_rdma", "nvmet_rdma", "rpcrdma", "svcrdma", "xprtrdma", "ib_iser", "ib_isert",
    "ib_srp", "ib_srpt", "nvidia_peermem", "nv_peer_mem",
)
OPENIBD_PATHS = (
    "/etc/init.d/openibd",
    "/etc/systemd/system/openibd.service",
    "/lib/systemd/system/openibd.service",
    "/usr/lib/systemd/system/openibd.service",
)

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


class OfedError(Exception):
    """Bad input or a state the stack cannot be brought from; the message says what to do."""


# -- versions ---------------------------------------------------------------------------------
def version_matches(installed, wanted):
    """Whether an installed version satisfies a wanted one.

    ``wanted`` empty: anything installed matches.  A wanted value with ``*``/``?`` is a glob
    (``3.2.1*``).  Otherwise the installed version must equal it or continue it after a
    ``-``, ``+`` or ``~`` separator: ``3.2.1`` matches ``3.2.1-044000`` and
    ``3.2.1-044000-25.10-ubuntu2404`` but not ``3.2.10``; ``24.10-1.1.4.0`` matches
    ``24.10-1.1.4.0`` only.
    """
    if not wanted:
        return installed is not None
    if installed is None:
        return False
    if "*" in wanted or "?" in wanted:
        return fnmatch.fnmatchcase(installed, wanted)
    if installed == wanted:
        return True
    return installed.startswith(wanted) and installed[len(wanted)] in "-+~"


def versions_agree(module_version, ofed_version):
    """``/sys/module/mlx5_core/version`` against ``ofed_info -s``: one may be the other's prefix."""
    if not module_version or not ofed_version:
        return False
    return module_version.startswith(ofed_version) or ofed_version.startswith(module_version)


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


def doca_named_packages(packages):
    return sorted(name for name in packages if DOCA_PACKAGE_PATTERN.search(name))


# -- DKMS -------------------------------------------------------------------------------------
_DKMS3 = re.compile(r"^(?P<module>[^/,\s]+)/(?P<version>[^,:\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>.+)$")
_DKMS2 = re.compile(r"^(?P<module>[^/,\s]+), (?P<version>[^,\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>.+)$")


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
        match = _DKMS3.match(line) or _DKMS2.match(line)
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


# -- hardware and the management connection ---------------------------------------------------
def has_mellanox_nic(host):
    """A ConnectX (PCI vendor 0x15b3) function on the PCI bus, bound to a driver or not."""
    for address in host.listdir(PCI_DEVICES):
        if host.read("%s/%s/vendor" % (PCI_DEVICES, address)) == MELLANOX_PCI_VENDOR:
            return True
    return False


def netdev_lowers(host, name):
    """Netdevs below ``name``: VLAN parents, bond slaves, bridge ports (``lower_*`` links)."""
    base = "/sys/class/net/%s" % name
    lowers = [entry[len("lower_"):] for entry in host.listdir(base) if entry.startswith("lower_")]
    slaves = (host.read(base + "/bonding/slaves") or "").split()
    return sorted(set(lowers) | set(slaves))


def interface_of_address(runner, address):
    """The netdev that holds ``address`` (from ``ip -j addr show``), or None."""
    if not address or not runner.has("ip"):
        return None
    result = runner.run_optional(["ip", "-j", "addr", "show"])
    if result is None:
        return None
    address = address.split("%", 1)[0]
    for name, entry in sorted(parse_ip_addr_json(result.stdout).items()):
        for cidr in entry.get("ipv4", []) + entry.get("ipv6", []):
            if cidr.split("/", 1)[0] == address:
                return name
    return None


def management_path(host, runner, address=None, interface=None):
    """Which drivers carry the Ansible connection: the interface and every netdev below it."""
    result = dict(address=address or None, interface=interface or None, source=None,
                  devices=[], drivers=[], on_ofed_driver=False)
    if interface:
        result["source"] = "management_interface"
    elif address:
        result["interface"] = interface_of_address(runner, address)
        result["source"] = "address %s" % address
    if not result["interface"]:
        return result
    seen = []
    todo = [result["interface"]]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.append(name)
        todo.extend(netdev_lowers(host, name))
    drivers = []
    for name in seen:
        driver = host.readlink_name("/sys/class/net/%s/device/driver" % name)
        result["devices"].append(dict(name=name, driver=driver))
        if driver and driver not in drivers:
            drivers.append(driver)
    result["drivers"] = drivers
    result["on_ofed_driver"] = any(driver in OFED_NETDEV_DRIVERS for driver in drivers)
    return result


def restart_risks(host):
    """Loaded modules that use the RDMA core and make a driver restart unsafe."""
    return [name for name in RESTART_RISK_MODULES if host.isdir("/sys/module/" + name)]


def openibd_present(host):
    return any(host.exists(path) for path in OPENIBD_PATHS)


# -- decisions --------------------------------------------------------------------------------
def resolve_provider(requested, stack, mellanox_nic):
    """``auto`` -> the installed OFED's provider, else doca on ConnectX hosts, else inbox."""
    if requested != "auto":
        return requested, "ofed_provider is %s" % requested
    flavor = stack.get("flavor")
    if flavor in PROVIDER_OF_FLAVOR:
        return PROVIDER_OF_FLAVOR[flavor], "auto: %s %s is installed; auto keeps it" % (flavor, stack.get("version"))
    if mellanox_nic:
        return "doca", "auto: a ConnectX NIC (PCI vendor 0x15b3) is present and no OFED is installed"
    return "inbox", "auto: no ConnectX NIC and no OFED: the distribution's rdma-core is enough"


def plan_action(state, provider, stack, packages, wants):
    """What the role has to do: ``(action, remove_flavor, reason)``.

    action: ``none`` | ``install`` | ``upgrade`` | ``switch`` (remove ``remove_flavor``, then
    install) | ``remove`` (back to inbox).  ``wants`` carries ``doca_profile``,
    ``doca_version`` (DOCA release or exact package version), ``mlnx_ofed_version`` and
    ``inbox_packages``.
    """
    flavor = stack.get("flavor")
    installed_ofed = flavor if flavor in OFED_FLAVORS else None
    doca_leftovers = doca_named_packages(packages)
    if state == "absent" or provider == "inbox":
        if installed_ofed or doca_leftovers:
            what = installed_ofed or "DOCA packages %s" % ", ".join(doca_leftovers)
            reason = "%s is installed and %s asks for the distribution's stack" % (
                what, "ofed_state=absent" if state == "absent" else "ofed_provider=inbox")
            return ("remove" if state == "absent" else "switch"), installed_ofed or "doca_ofed", reason
        missing = [name for name in wants.get("inbox_packages", []) if name not in packages]
        if missing:
            return "install", None, "inbox packages missing: %s" % ", ".join(missing)
        return "none", None, "inbox stack installed: %s" % ", ".join(wants.get("inbox_packages", []))
    wanted_flavor = FLAVOR_OF_PROVIDER[provider]
    if installed_ofed and installed_ofed != wanted_flavor:
        return "switch", installed_ofed, "%s %s is installed but ofed_provider is %s" % (
            installed_ofed, stack.get("version"), provider)
    if provider == "doca":
        profile = wants["doca_profile"]
        have = packages.get(profile)
        want = wants.get("doca_version")
        if have is None:
            return "install", None, "%s is not installed" % profile
        if not version_matches(have, want):
            return "upgrade", None, "%s %s is installed, %s is wanted" % (profile, have, want)
        return "none", None, "%s %s matches %s (%s %s)" % (
            profile, have, want, flavor, stack.get("version"))
    # mlnx_ofed
    want = wants.get("mlnx_ofed_version")
    if installed_ofed != "mlnx_ofed":
        return "install", None, "MLNX_OFED is not installed (installed stack: %s)" % flavor
    if not version_matches(stack.get("version"), want):
        return "upgrade", None, "MLNX_OFED %s is installed, %s is wanted" % (stack.get("version"), want)
    return "none", None, "MLNX_OFED %s matches %s" % (stack.get("version"), want or "(any version)")


def restart_need(stack, target_flavor):
    """Whether the loaded mlx5 driver differs from the installed stack: ``(required, reason)``."""
    loaded = stack.get("loaded_driver")
    if loaded is None:
        return False, "mlx5_core is not loaded (no ConnectX function, or the driver is not in use)"
    if target_flavor in OFED_FLAVORS:
        if loaded == "inbox":
            return True, "%s %s is installed but the kernel's own mlx5_core is loaded" % (
                target_flavor, stack.get("version"))
        if not versions_agree(stack.get("mlx5_core_version"), stack.get("version")):
            return True, "the loaded mlx5_core is %s but %s %s is installed" % (
                stack.get("mlx5_core_version"), target_flavor, stack.get("version"))
        return False, "the loaded mlx5_core %s is the installed one" % stack.get("mlx5_core_version")
    if loaded == "ofed":
        return True, "the OFED mlx5_core %s is still loaded after going back to the inbox stack" % (
            stack.get("mlx5_core_version"))
    return False, "the kernel's own mlx5_core is loaded"


def decide_activation(required, reason, reboot_policy, allow_restart, management, risks,
                      stack_changed, can_restart):
    """How the new driver gets loaded: ``(activation, reason)``.

    activation: ``none`` | ``restart`` (openibd) | ``reboot`` | ``pending`` (nothing allowed;
    the caller warns).  A restart that would take down the management connection, or that
    storage or a peer-memory client depends on, needs ``allow_restart``; without it the
    reboot policy decides.
    """
    if reboot_policy == "always" and stack_changed:
        return "reboot", "ofed_reboot is always and the driver stack changed in this run"
    if not required:
        return "none", reason
    blockers = []
    if management.get("on_ofed_driver"):
        blockers.append("the management connection runs over %s (%s)" % (
            management.get("interface"), ", ".join(management.get("drivers") or [])))
    blockers.extend("%s is loaded and uses the RDMA core" % name for name in risks)
    if can_restart and (not blockers or allow_restart):
        note = " (restart consented with ofed_allow_driver_restart: %s)" % "; ".join(blockers) if blockers else ""
        return "restart", reason + note
    if not can_restart:
        why = "no openibd service to restart the driver with"
    else:
        why = "; ".join(blockers) + ", and ofed_allow_driver_restart is false"
    if reboot_policy in ("when_required", "always"):
        return "reboot", "%s; no driver restart: %s" % (reason, why)
    return "pending", "%s; no driver restart: %s; ofed_reboot is never: reboot the host to load the new driver" % (
        reason, why)


# -- mlnxofedinstall --------------------------------------------------------------------------
def explain_installer_rc(rc):
    """``(ok, meaning)`` for an mlnxofedinstall exit status."""
    kind, meaning = MLNX_INSTALLER_RCS.get(rc, ("failed", "unknown exit status %s" % rc))
    return kind != "failed", "mlnxofedinstall exited %s: %s" % (rc, meaning)


def installer_logs_dir(output):
    """The ``Logs dir: /tmp/MLNX_OFED_LINUX.<pid>.logs`` path the installer prints, or None."""
    match = re.search(r"Logs dir:\s*(\S+)", output or "")
    return match.group(1) if match else None


def sha256_file(path, chunk=1024 * 1024):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(chunk)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def normalize_sha256(value):
    text = (value or "").strip().lower()
    if text.startswith("sha256:"):
        text = text[len("sha256:"):]
    if not re.match(r"^[0-9a-f]{64}$", text):
        raise OfedError(
            "ofed_mlnx_ofed_sha256 must be the 64-hex-digit SHA-256 of the tarball (as "
            "'sha256sum MLNX_OFED_LINUX-*.tgz' prints it), got %r" % (value,)
        )
    return text


def safe_members(archive, dest):
    """Members of ``archive`` that stay inside ``dest``; raise on anything that escapes."""
    dest = os.path.realpath(dest)
    members = []
    for member in archive.getmembers():
        target = os.path.realpath(os.path.join(dest, member.name))
        if not (target == dest or target.startswith(dest + os.sep)):
            raise OfedError("the tarball member %r would be written outside %s" % (member.name, dest))
        if member.issym() or member.islnk():
            link = member.linkname
            base = os.path.dirname(target) if member.issym() else dest
            resolved = os.path.realpath(os.path.join(base, link))
            if os.path.isabs(link) or not (resolved == dest or resolved.startswith(dest + os.sep)):
                raise OfedError("the tarball link %r -> %r points outside the archive" % (member.name, link))
        elif not (member.isfile() or member.isdir()):
            continue  # devices and fifos have no business in an installer tarball
        members.append(member)
    return members


def extract_tarball(path, dest):
    """Extract a (gzip/bzip2/xz) tarball into ``dest`` safely; return the installer directory."""
    with tarfile.open(path, "r:*") as archive:
        members = safe_members(archive, dest)
        if hasattr(tarfile, "tar_filter"):
            # Python 3.12+ (and security updates of older ones) check members again themselves.
            archive.extractall(dest, members=members, filter="tar")  # nosec - members checked above
        else:
            archive.extractall(dest, members=members)  # nosec - members checked above
    return find_installer_dir(dest)


def find_installer_dir(dest):
    """The directory holding ``mlnxofedinstall`` (the tarball's top directory, usually)."""
    candidates = [dest] + [os.path.join(dest, name) for name in sorted(os.listdir(dest))]
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, "mlnxofedinstall")):
            return candidate
    raise OfedError("no mlnxofedinstall found in the tarball (looked in its top directory)")


def tarball_kernels(installer_dir):
    """Kernels the tarball ships prebuilt packages for (``.supported_kernels``), or None."""
    path = os.path.join(installer_dir, ".supported_kernels")
    try:
        with open(path) as handle:
            return [word for word in handle.read().split() if word]
    except (IOError, OSError):
        return None


def needs_kernel_support(mode, installer_dir, running_kernel):
    """``(bool, reason)``: whether to pass ``--add-kernel-support``."""
    if mode == "always":
        return True, "ofed_mlnx_ofed_add_kernel_support is always"
    if mode == "never":
        return False, "ofed_mlnx_ofed_add_kernel_support is never"
    kernels = tarball_kernels(installer_dir)
    if kernels is None:
        return False, "the tarball lists no supported kernels (.supported_kernels); installing as shipped"
    if running_kernel in kernels:
        return False, "the tarball has prebuilt packages for the running kernel %s" % running_kernel
    return True, "the tarball was built for %s, not the running kernel %s" % (
        ", ".join(kernels), running_kernel)


def installer_argv(installer_dir, flags, add_kernel_support):
    argv = [os.path.join(installer_dir, "mlnxofedinstall")] + list(flags)
    if add_kernel_support and "--add-kernel-support" not in argv:
        argv.append("--add-kernel-support")
    return argv


# -- repository files ---------------------------------------------------------------------------
HEADER = "# Managed by rdmaops.roce (role ofed): local changes are overwritten.\n"


def url_host(url):
    """The host (without port) of a URL: what apt's ``Pin: origin`` compares with."""
    match = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/]*@)?(\[[^\]]+\]|[^:/]+)", url or "")
    return match.group(1).strip("[]") if match else None


def render_apt_source(url, suite, keyring):
    """A deb822 ``.sources`` file.  A flat repository (suite ending in ``/``) has no components."""
    lines = [HEADER.rstrip("\n"), "Types: deb", "URIs: %s" % url, "Suites: %s" % suite]
    if not suite.endswith("/"):
        lines.append("Components: main")
    lines.append("Signed-By: %s" % keyring)
    return "\n".join(lines) + "\n"


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


def render_dnf_repo(name, url, keyfile, priority, exclude):
    """A ``.repo`` file: gpgcheck on, the repository's priority above the distribution's.

    dnf prefers packages from a repository with a lower ``priority`` value even when another
    repository has a higher version, so ``dnf update`` cannot replace what DOCA shadows
    (rdma-core, libibverbs ...) with BaseOS/AppStream builds (default priority 99).
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
    return "\n".join(lines) + "\n"


# -- the whole status in one pass --------------------------------------------------------------
def gather_status(host, runner, params, stack):
    """Everything ``ofed_status`` returns; ``stack`` is rdma_facts' ``stack``.

    ``params``: provider, state, doca_profile, doca_version, mlnx_ofed_version,
    inbox_packages, dkms_modules, kernel_coverage (fail|warn), management_interface,
    management_address, reboot, allow_driver_restart, stack_changed, log_lines.
    Returns ``(result, problems, warnings)``.
    """
    family, packages = read_packages(runner)
    mellanox = has_mellanox_nic(host)
    provider, provider_reason = resolve_provider(params["provider"], stack, mellanox)
    if params["state"] == "present" and provider == "doca" and not params.get("doca_version"):
        raise OfedError("ofed_doca_version is empty: the DOCA provider installs a pinned DOCA-Host "
                        "release (for example 3.2.1); set ofed_doca_version")
    wants = dict(
        doca_profile=params["doca_profile"],
        doca_version=params.get("doca_version") or "",
        mlnx_ofed_version=params.get("mlnx_ofed_version") or "",
        inbox_packages=list(params.get("inbox_packages") or []),
    )
    action, remove_flavor, action_reason = plan_action(params["state"], provider, stack, packages, wants)
    if params["state"] == "absent" or provider == "inbox":
        target = "inbox"
    else:
        target = FLAVOR_OF_PROVIDER[provider]

    running = stack.get("kernel")
    releases = installed_kernels(host)
    kernels = kernel_coverage(host, releases, running)
    dkms_entries = []
    if runner.has("dkms"):
        result = runner.run_optional(["dkms", "status"])
        dkms_entries = parse_dkms_status(result.stdout) if result else []
    gaps = dkms_coverage(dkms_entries, kernels, params.get("dkms_modules") or [])
    management = management_path(host, runner, params.get("management_address"),
                                 params.get("management_interface"))
    required, restart_reason = restart_need(stack, target)
    risks = restart_risks(host)
    can_restart = target in OFED_FLAVORS and openibd_present(host)
    activation, activation_reason = decide_activation(
        required, restart_reason, params["reboot"], params["allow_driver_restart"], management, risks,
        params.get("stack_changed", False), can_restart)

    problems, warnings = [], []
    inbox_missing = [name for name in wants["inbox_packages"] if name not in packages]
    doca_named = doca_named_packages(packages)
    registered_dkms = set(entry["module"] for entry in dkms_entries)
    kernels_to_build = []
    if target in OFED_FLAVORS:
        if stack.get("flavor") != target:
            problems.append("%s is wanted but the installed stack is %s %s" % (
                target, stack.get("flavor"), stack.get("version") or ""))
        elif target == "doca_ofed" and not version_matches(packages.get(wants["doca_profile"]), wants["doca_version"]):
            problems.append("%s %s is installed, %s is wanted" % (
                wants["doca_profile"], packages.get(wants["doca_profile"]), wants["doca_version"]))
        elif target == "mlnx_ofed" and not version_matches(stack.get("version"), wants["mlnx_ofed_version"]):
            problems.append("MLNX_OFED %s is installed, %s is wanted" % (
                stack.get("version"), wants["mlnx_ofed_version"]))
        for kernel in kernels:
            if kernel["ofed"]:
                continue
            missing = [name for name, path in kernel["ofed_modules"].items() if not path]
            if kernel["headers"] and registered_dkms:
                kernels_to_build.append(kernel["release"])
                hint = "its headers are installed: 'dkms autoinstall -k %s' builds them" % kernel["release"]
            else:
                hint = ("its headers are missing: install linux-headers-%s (Debian/Ubuntu) or "
                        "kernel-devel-%s (RHEL), then run 'dkms autoinstall -k %s'" % (
                            kernel["release"], kernel["release"], kernel["release"]))
            text = "kernel %s%s has no OFED %s module (looked in %s under /lib/modules/%s); booting it " \
                   "gives the inbox driver; %s" % (
                       kernel["release"], " (running)" if kernel["running"] else "", " and ".join(missing),
                       ", ".join(OFED_MODULE_DIRS), kernel["release"], hint)
            if kernel["running"] or params.get("kernel_coverage", "fail") == "fail":
                problems.append(text)
            else:
                warnings.append(text)
        for module, version, release, state, arch in gaps:
            path, tail = make_log_tail(host, module, version, release, arch, params.get("log_lines", 30))
            text = "DKMS module %s/%s is %s for kernel %s, not installed" % (module, version, state, release)
            if tail is not None:
                text += "; last lines of %s:\n%s" % (path, tail)
            else:
                text += "; there is no make.log of a build for this kernel under %s/%s/%s" % (
                    DKMS_TREE, module, version)
            problems.append(text)
        if running and releases and running not in releases:
            warnings.append("the running kernel %s is not among the installed kernels (%s): this is a "
                            "container, or the running kernel's package was removed" % (
                                running, ", ".join(releases)))
    else:
        if stack.get("flavor") in OFED_FLAVORS:
            problems.append("%s %s is still installed" % (stack.get("flavor"), stack.get("version")))
        if inbox_missing:
            problems.append("inbox packages are not installed: %s" % ", ".join(inbox_missing))
    if activation == "pending":
        warnings.append(activation_reason)

    result = dict(
        stack=stack,
        provider=provider,
        provider_reason=provider_reason,
        target_flavor=target,
        needed=action,
        needed_reason=action_reason,
        remove_flavor=remove_flavor,
        package_family=family,
        packages=dict(
            doca_profile=dict(name=wants["doca_profile"], version=packages.get(wants["doca_profile"])),
            doca_named=doca_named,
            inbox_missing=inbox_missing,
        ),
        removal=dict(
            packages=doca_named,
            uninstall_script=UNINSTALL_SCRIPT if host.exists(UNINSTALL_SCRIPT) else None,
        ),
        mellanox_nic=mellanox,
        kernels=kernels,
        kernels_missing=[kernel["release"] for kernel in kernels if not kernel["ofed"]] if target in OFED_FLAVORS else [],
        kernels_to_build=kernels_to_build,
        dkms=dkms_entries,
        management=management,
        restart_required=required,
        restart_reason=restart_reason,
        restart_risks=risks,
        restart_possible=can_restart,
        activation=activation,
        activation_reason=activation_reason,
    )
    return result, problems, warnings


# -- the repository module --------------------------------------------------------------------
def repo_paths(family, name):
    """The files ``ofed_repo`` owns for repository ``name``."""
    if family == "apt":
        return dict(
            key="/etc/apt/keyrings/rdmaops-%s.asc" % name,
            source="/etc/apt/sources.list.d/rdmaops-%s.sources" % name,
            preferences="/etc/apt/preferences.d/rdmaops-%s.pref" % name,
        )
    return dict(
        key="/etc/pki/rpm-gpg/RPM-GPG-KEY-rdmaops-%s" % name,
        source="/etc/yum.repos.d/rdmaops-%s.repo" % name,
        preferences=None,
    )


def desired_repo_files(family, name, params, key_text):
    """``{path: text}`` of every file the repository consists of."""
    paths = repo_paths(family, name)
    files = {paths["key"]: key_text}
    if family == "apt":
        files[paths["source"]] = render_apt_source(params["url"], params["suite"], paths["key"])
        files[paths["preferences"]] = render_apt_preferences(
            params["url"], params["pin_packages"], params["pin_version"], params["origin_priority"],
            params["distro_packages"])
    else:
        files[paths["source"]] = render_dnf_repo(
            "rdmaops-%s" % name, params["url"], paths["key"], params["dnf_priority"], params["exclude"])
    return files


def plan_repo(host, plan, family, name, state, desired, write, remove):
    """Add a change to ``plan`` for every file that differs from ``desired`` (``{}`` for absent)."""
    owned = [path for path in repo_paths(family, name).values() if path]
    for path in owned:
        current = read_exact(host, path)
        if state == "present":
            after = desired[path]
            mode = 0o644
            plan.add(path, current, after, _bind(write, path, after, mode),
                     "%s %s" % ("write" if current is None else "update", path), header=path)
        elif current is not None:
            plan.add(path, current, None, _bind(remove, path), "remove %s" % path, header=path)
    return owned


def read_exact(host, path):
    """A file's text exactly as on disk (``host.read`` strips the final newline), or None."""
    try:
        with open(host.path(path), "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def _bind(func, *args):
    return lambda: func(*args)
