# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver stack's status and the decisions ``ofed_status`` returns (it changes nothing).

What is installed (packages, ``ofed_info``, DKMS, the OFED modules of every kernel), what the
wanted provider needs (install, upgrade, switch, remove), which netdevs carry the management
connection (the one detector of ``_host/management.py``), and how a new driver gets loaded
(openibd restart, reboot, or pending).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import DRIVER_RESTART, ONLINE, REBOOT, highest_disruption
from ansible_collections.rdmaops.roce.plugins.module_utils._host.management import ManagementPath, plain_ip
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import MELLANOX_VENDOR, MODULES, NET_CLASS, PCI_DEVICES
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.packages import (
    DKMS_TREE,
    OFED_MODULE_DIRS,
    dkms_coverage,
    doca_named_packages,
    installed_kernels,
    kernel_coverage,
    make_log_tail,
    parse_dkms_status,
    read_packages,
    wanted_inbox_packages,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.versions import is_downgrade, version_matches, versions_agree

PROVIDERS = ("auto", "doca", "mlnx_ofed", "inbox")
FLAVOR_OF_PROVIDER = {"doca": "doca_ofed", "mlnx_ofed": "mlnx_ofed", "inbox": "inbox"}
PROVIDER_OF_FLAVOR = {"doca_ofed": "doca", "mlnx_ofed": "mlnx_ofed"}
OFED_FLAVORS = ("doca_ofed", "mlnx_ofed")
UNINSTALL_SCRIPT = "/usr/sbin/ofed_uninstall.sh"
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


def argument_spec():
    """``ofed_status``'s options, also checked where another module runs its read
    (rdmaops.roce.rdma_facts' ``plans``)."""
    return dict(
        provider=dict(type="str", default="auto", choices=list(PROVIDERS)),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        doca_profile=dict(type="str", default="doca-ofed", choices=["doca-ofed", "doca-roce"]),
        doca_version=dict(type="str", default=""),
        mlnx_ofed_version=dict(type="str", default=""),
        allow_downgrade=dict(type="bool", default=False),
        inbox_packages=dict(type="list", elements="str", default=[]),
        inbox_extra_packages=dict(type="list", elements="str", default=[]),
        dkms_modules=dict(type="list", elements="str", default=["mlnx-ofed-kernel"]),
        kernel_coverage=dict(type="str", default="fail", choices=["fail", "warn"]),
        management_interface=dict(type="str", default=""),
        management_address=dict(type="str", default=""),
        reboot=dict(type="str", default="when_required", choices=["never", "when_required", "always"]),
        allow_driver_restart=dict(type="bool", default=False),
        stack_changed=dict(type="bool", default=False),
        fail_on_problems=dict(type="bool", default=False),
        log_lines=dict(type="int", default=30),
    )


# -- hardware and the management connection ---------------------------------------------------
def has_mellanox_nic(host):
    """A ConnectX (PCI vendor 0x15b3) function on the PCI bus, bound to a driver or not."""
    for address in host.listdir(PCI_DEVICES):
        if host.read("%s/%s/vendor" % (PCI_DEVICES, address)) == MELLANOX_VENDOR:
            return True
    return False


def management_path(host, runner, address=None, interface=None, environ=None):
    """Which drivers carry the Ansible connection: the management netdevs and every netdev below them.

    The netdevs come from the collection's one detector (:class:`ManagementPath`): the one the
    user names (``interface``) or that holds ``address``, the SSH connection's and the default
    routes'; below each, VLAN parents (``lower_*`` links and ``/proc/net/vlan/config``), bond
    members and bridge ports, breadth first.
    """
    detector = ManagementPath(host, runner, environ=environ)
    found = detector.detect(interfaces=[interface] if interface else (), address=address or None)
    result = dict(address=address or None, interface=interface or None, source=None,
                  devices=[], drivers=[], on_ofed_driver=False, reasons=found["interfaces"])
    if interface:
        result["source"] = "management_interface"
    elif address:
        result["interface"] = detector.addresses().get(plain_ip(address))
        result["source"] = "address %s" % address
    elif found["interfaces"]:
        result["interface"] = sorted(found["interfaces"])[0]
        result["source"] = "; ".join(found["interfaces"][result["interface"]])
    roots = ([result["interface"]] if result["interface"] else []) + sorted(found["interfaces"])
    seen = []
    todo = list(roots)
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.append(name)
        todo.extend(detector.links.lowers(name))
    for name in seen:
        driver = host.readlink_name("%s/%s/device/driver" % (NET_CLASS, name))
        result["devices"].append(dict(name=name, driver=driver))
        if driver and driver not in result["drivers"]:
            result["drivers"].append(driver)
    result["on_ofed_driver"] = any(driver in OFED_NETDEV_DRIVERS for driver in result["drivers"])
    return result


def restart_risks(host):
    """Loaded modules that use the RDMA core and make a driver restart unsafe."""
    return [name for name in RESTART_RISK_MODULES if host.isdir("%s/%s" % (MODULES, name))]


def openibd_present(host):
    return any(host.exists(path) for path in OPENIBD_PATHS)


def version_gap(target, stack, packages, wants):
    """Why the installed ``target`` stack is not the wanted version, or None when it is."""
    if target == "doca_ofed":
        profile = wants["doca_profile"]
        if not version_matches(packages.get(profile), wants.get("doca_version")):
            return "%s %s is installed, %s is wanted" % (profile, packages.get(profile), wants.get("doca_version"))
    elif target == "mlnx_ofed" and not version_matches(stack.get("version"), wants.get("mlnx_ofed_version")):
        return "MLNX_OFED %s is installed, %s is wanted" % (stack.get("version"), wants.get("mlnx_ofed_version"))
    return None


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

    action: ``none`` | ``install`` | ``upgrade`` | ``downgrade`` (an older release than the
    installed one) | ``switch`` (remove ``remove_flavor``, then install) | ``remove`` (back to inbox).  ``wants`` carries ``doca_profile``,
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
    gap = version_gap(wanted_flavor, stack, packages, wants)
    if provider == "doca":
        profile = wants["doca_profile"]
        if packages.get(profile) is None:
            return "install", None, "%s is not installed" % profile
        if gap:
            return _change(packages.get(profile), wants.get("doca_version")), None, gap
        return "none", None, "%s %s matches %s (%s %s)" % (
            profile, packages.get(profile), wants.get("doca_version"), flavor, stack.get("version"))
    # mlnx_ofed
    if installed_ofed != "mlnx_ofed":
        return "install", None, "MLNX_OFED is not installed (installed stack: %s)" % flavor
    if gap:
        return _change(stack.get("version"), wants.get("mlnx_ofed_version")), None, gap
    return "none", None, "MLNX_OFED %s matches %s" % (stack.get("version"), wants.get("mlnx_ofed_version") or "(any version)")


def _change(installed, wanted):
    """``upgrade``, or ``downgrade`` when ``wanted`` is an older release than ``installed``."""
    return "downgrade" if is_downgrade(installed, wanted) else "upgrade"


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


def predict_disruption(needed, target, activation, reboot_policy, can_restart, blockers_consented):
    """How disruptive the ofed layer's run would be to a workload (``_core.plan`` classes).

    Installing the inbox userspace packages is ``online``.  Installing, upgrading, switching or
    removing an OFED stack is only done when the new driver gets loaded: by an openibd restart
    (``driver_restart``) where one is possible and allowed, else by the reboot the policy allows.
    ``activation`` is today's decision (the loaded driver against the installed one), which is
    what a run with nothing to install does.
    """
    classes = {"restart": DRIVER_RESTART, "reboot": REBOOT, "pending": DRIVER_RESTART}
    found = [classes[activation]] if activation in classes else []
    if needed != "none":
        if target not in OFED_FLAVORS and needed == "install":
            found.append(ONLINE)
        elif reboot_policy == "always" or not (can_restart and blockers_consented):
            found.append(REBOOT if reboot_policy in ("always", "when_required") else DRIVER_RESTART)
        else:
            found.append(DRIVER_RESTART)
    return highest_disruption(found)


# -- the whole status in one pass --------------------------------------------------------------
def named(keys, values):
    """``(value, reason)`` tuples of the decisions above as result keys: ``named(("a", "a_reason"), f())``."""
    return dict(zip(keys, values))


def coverage_problems(host, params, kernels, gaps, registered_dkms):
    """Problems and warnings of OFED kernel coverage, and the kernels DKMS can build for."""
    problems, warnings, kernels_to_build = [], [], []
    for kernel in kernels:
        if kernel["ofed"]:
            continue
        release = kernel["release"]
        missing = [name for name, path in kernel["ofed_modules"].items() if not path]
        if kernel["headers"] and registered_dkms:
            kernels_to_build.append(release)
            hint = "its headers are installed: 'dkms autoinstall -k %s' builds them" % release
        else:
            hint = ("its headers are missing: install linux-headers-%s (Debian/Ubuntu) or "
                    "kernel-devel-%s (RHEL), then run 'dkms autoinstall -k %s'" % (release, release, release))
        text = "kernel %s%s has no OFED %s module (looked in %s under /lib/modules/%s); booting it " \
               "gives the inbox driver; %s" % (
                   release, " (running)" if kernel["running"] else "", " and ".join(missing),
                   ", ".join(OFED_MODULE_DIRS), release, hint)
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
            text += "; there is no make.log of a build for this kernel under %s/%s/%s" % (DKMS_TREE, module, version)
        problems.append(text)
    return problems, warnings, kernels_to_build


def gather_status(host, runner, params, stack):
    """Everything ``ofed_status`` returns; ``stack`` is rdma_facts' ``stack``.

    ``params``: provider, state, doca_profile, doca_version, mlnx_ofed_version, allow_downgrade,
    inbox_packages, dkms_modules, kernel_coverage (fail|warn), management_interface,
    management_address, reboot, allow_driver_restart, stack_changed, log_lines.
    Returns ``(result, problems, warnings)``.
    """
    family, packages = read_packages(runner)
    mellanox = has_mellanox_nic(host)
    result = named(("provider", "provider_reason"), resolve_provider(params["provider"], stack, mellanox))
    provider = result["provider"]
    if params["state"] == "present" and provider == "doca" and not params.get("doca_version"):
        raise InputError("ofed_doca_version is empty: the DOCA provider installs a pinned DOCA-Host "
                         "release (for example 3.2.1); set ofed_doca_version", option="doca_version")
    wants = dict(
        doca_profile=params["doca_profile"],
        doca_version=params.get("doca_version") or "",
        mlnx_ofed_version=params.get("mlnx_ofed_version") or "",
        inbox_packages=wanted_inbox_packages(family, params.get("inbox_packages"), params.get("inbox_extra_packages")),
    )
    target = "inbox" if params["state"] == "absent" or provider == "inbox" else FLAVOR_OF_PROVIDER[provider]
    result.update(named(("needed", "remove_flavor", "needed_reason"),
                        plan_action(params["state"], provider, stack, packages, wants)))
    if result["needed"] == "downgrade":
        option = "ofed_doca_version" if target == "doca_ofed" else "ofed_mlnx_ofed_version"
        if not params.get("allow_downgrade"):
            raise InputError(
                "%s: going back to an older release is a downgrade, refused unless asked for: set "
                "ofed_allow_downgrade: true (module option allow_downgrade) to install it, or set %s to the "
                "installed release; nothing was changed" % (result["needed_reason"], option),
                option="allow_downgrade", needed="downgrade", needed_reason=result["needed_reason"])
        result["needed_reason"] += " (a downgrade, allowed by ofed_allow_downgrade)"

    running = stack.get("kernel")
    releases = installed_kernels(host)
    kernels = kernel_coverage(host, releases, running)
    dkms_result = runner.run_optional(["dkms", "status"]) if runner.has("dkms") else None
    dkms_entries = parse_dkms_status(dkms_result.stdout) if dkms_result else []
    gaps = dkms_coverage(dkms_entries, kernels, params.get("dkms_modules") or [])
    management = management_path(host, runner, params.get("management_address"), params.get("management_interface"))
    result.update(named(("restart_required", "restart_reason"), restart_need(stack, target)))
    risks = restart_risks(host)
    can_restart = target in OFED_FLAVORS and openibd_present(host)
    result.update(named(("activation", "activation_reason"), decide_activation(
        result["restart_required"], result["restart_reason"], params["reboot"], params["allow_driver_restart"],
        management, risks, params.get("stack_changed", False), can_restart)))
    unblocked = params["allow_driver_restart"] or not (management.get("on_ofed_driver") or risks)
    result["disruption"] = predict_disruption(result["needed"], target, result["activation"], params["reboot"],
                                              can_restart, unblocked)

    problems, warnings, kernels_to_build = [], [], []
    inbox_missing = [name for name in wants["inbox_packages"] if name not in packages]
    doca_named = doca_named_packages(packages)
    if target in OFED_FLAVORS:
        if stack.get("flavor") != target:
            problems.append("%s is wanted but the installed stack is %s %s" % (
                target, stack.get("flavor"), stack.get("version") or ""))
        else:
            problems.extend(filter(None, [version_gap(target, stack, packages, wants)]))
        coverage, warnings, kernels_to_build = coverage_problems(
            host, params, kernels, gaps, set(entry["module"] for entry in dkms_entries))
        problems.extend(coverage)
        if running and releases and running not in releases:
            warnings.append("the running kernel %s is not among the installed kernels (%s): this is a "
                            "container, or the running kernel's package was removed" % (
                                running, ", ".join(releases)))
    else:
        if stack.get("flavor") in OFED_FLAVORS:
            problems.append("%s %s is still installed" % (stack.get("flavor"), stack.get("version")))
        if inbox_missing:
            problems.append("inbox packages are not installed: %s" % ", ".join(inbox_missing))
    if result["activation"] == "pending":
        warnings.append(result["activation_reason"])

    result.update(
        stack=stack,
        target_flavor=target,
        package_family=family,
        inbox_packages=wants["inbox_packages"],
        packages=dict(
            doca_profile=dict(name=wants["doca_profile"], version=packages.get(wants["doca_profile"])),
            doca_named=doca_named,
            inbox_missing=inbox_missing,
        ),
        removal=dict(packages=doca_named, uninstall_script=UNINSTALL_SCRIPT if host.exists(UNINSTALL_SCRIPT) else None),
        mellanox_nic=mellanox,
        kernels=kernels,
        kernels_missing=[kernel["release"] for kernel in kernels if not kernel["ofed"]] if target in OFED_FLAVORS else [],
        kernels_to_build=kernels_to_build,
        dkms=dkms_entries,
        management=management,
        restart_risks=risks,
        restart_possible=can_restart,
    )
    return result, problems, warnings


def validate_params(params):
    """Refuse a management interface or address that cannot be one, before anything is read."""
    if params.get("management_interface"):
        check_ifname("management_interface", params["management_interface"])
    address = params.get("management_address")
    if address:
        try:
            ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            raise InputError("management_address=%r is not an IPv4 or IPv6 address" % (address,),
                             option="management_address")


def gather(ctx, params, stack=None):
    """``ofed_status``: the status, its warnings, and a failure listing the problems when asked.
    ``stack`` is rdma_facts' ``stack`` where the caller has just read it (rdma_facts' ``plans``)."""
    validate_params(params)
    if stack is None:
        stack = RdmaFacts(ctx.host, ctx.runner, gpu_topology=False).gather()["stack"]
    result, problems, warnings = gather_status(ctx.host, ctx.runner, params, stack)
    for warning in warnings:
        ctx.warn(warning)
    result["problems"] = problems
    result["check_mode"] = ctx.check_mode
    if problems and params.get("fail_on_problems"):
        raise RdmaopsError("the %s stack is not complete:\n- %s" % (result["target_flavor"], "\n- ".join(problems)),
                           **result)
    return result
