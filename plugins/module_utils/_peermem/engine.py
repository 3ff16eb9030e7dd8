# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of peermem: observe, then load, persist and prove (decisions: ``peermem.py``).

One module call does the whole job: it reads what the kernel shows (PCI GPUs, the nvidia
module and its version and flavour, loaded modules, the peer-memory API in /proc/kallsyms,
``modinfo`` of the candidate module), asks :func:`peermem.decide`, loads through the same
engine as ``kernel_modules`` (options in a modprobe.d file of its own), writes the boot unit,
and proves the result: the module is live, the kernel log written while it loaded has no
symbol or parameter errors, and the paths user space uses to detect peer memory exist.

Boot ordering: ``/etc/modules-load.d`` is read by ``systemd-modules-load.service`` early in
boot, before ``openibd.service`` has loaded the OFED stack; a peermem load there either fails
or pulls in an RDMA core before openibd is ready.  So peermem gets a oneshot unit of its own,
ordered ``After=`` the units that bring up the RDMA core (``openibd.service`` for OFED,
``rdma-hw.target`` / ``rdma-load-modules@*.service`` for inbox rdma-core,
``systemd-modules-load.service`` for the modules ``kernel_modules`` persists) and
``PartOf=openibd.service``, so ``systemctl restart openibd`` first unloads peermem (which
otherwise holds ib_core and makes the restart fail) and loads it again afterwards.  ``After=``
and ``PartOf=`` on a unit that does not exist are no-ops, so the same unit serves both stacks.
The unit is enabled the way ``systemctl enable`` does it for ``WantedBy=multi-user.target``: a
symlink in ``multi-user.target.wants``, written through the host root so it is testable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._peermem import decide as peermem
from ansible_collections.rdmaops.roce.plugins.module_utils._kmod.engine import (
    KernelModules,
    KmodError,
    LoadFailed,
    builtin_modules,
    kernel_release,
    module_state,
    read_text,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import GPU_CLASSES, NVIDIA_VENDOR
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import BootUnit, valid_unit_name
DEFAULT_UNIT = "rdmaops-peermem.service"
DEFAULT_MODPROBE_FILE = "/etc/modprobe.d/rdmaops-peermem.conf"
OBSERVED_MODULES = (peermem.PEERMEM, peermem.LEGACY, "ib_core", "ib_uverbs", "mlx5_core", "nvidia")
MODULE_FILE_NAMES = {peermem.PEERMEM: peermem.PEERMEM_FILE, peermem.LEGACY: peermem.LEGACY}

UNIT_TEMPLATE = """# Managed by rdmaops.roce (peermem): this whole file is rewritten on every run.
[Unit]
Description=GPUDirect RDMA peer memory client ({module}), loaded after the RDMA core
Documentation=https://docs.nvidia.com/cuda/gpudirect-rdma/
After=openibd.service rdma-hw.target rdma-load-modules@rdma.service rdma-load-modules@roce.service systemd-modules-load.service
PartOf=openibd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/sbin/modprobe {file_name}
ExecStop=-/sbin/modprobe -r {file_name}

[Install]
WantedBy=multi-user.target
"""


def render_unit(module):
    return UNIT_TEMPLATE.format(module=module, file_name=MODULE_FILE_NAMES.get(module, module))


# -- observe --------------------------------------------------------------------------------------
def observe(host, runner, rdma_stack=None):
    """Everything :func:`peermem.decide` needs, read from the host (sysfs first, tools second)."""
    kernel = kernel_release(host)
    builtins = builtin_modules(host, kernel)
    modules = dict((name, module_state(host, name, builtins)) for name in OBSERVED_MODULES)
    obs = dict(
        kernel=kernel,
        gpus=_gpus(host),
        modules=modules,
        mlx5_core_version=(host.read("/sys/module/mlx5_core/version") or "").strip() or None,
        peer_memory_api=None,
        rdma_stack=rdma_stack or None,
        module_files={},
        evidence=[],
    )
    obs["nvidia"] = _nvidia(host, runner, modules["nvidia"], obs["evidence"])
    obs["modules_load_entries"] = _modules_load_entries(host)
    if modules["ib_core"] != "absent":
        obs["peer_memory_api"] = _kallsyms_has_peer_api(host)
    driver = peermem.parse_version(obs["nvidia"]["version"])
    if driver is not None:
        wanted = peermem.PEERMEM if driver[0] >= peermem.PEERMEM_MIN_DRIVER else peermem.LEGACY
        if modules[wanted] == "absent":
            obs["module_files"][wanted] = _modinfo(runner, MODULE_FILE_NAMES[wanted])
    return obs


def _kallsyms_has_peer_api(host):
    """Scan /proc/kallsyms line by line (it is megabytes); None when it cannot be read."""
    try:
        with open(host.path("/proc/kallsyms"), "rb") as handle:
            needle = (" " + peermem.PEER_API_SYMBOL).encode("ascii")
            for line in handle:
                if needle in line and peermem.kallsyms_has_peer_api(line.decode("ascii", "replace")):
                    return True
    except (IOError, OSError):
        return None
    return False


def _modules_load_entries(host):
    """/etc/modules-load.d files that list nvidia-peermem or nv_peer_mem (the early-boot way)."""
    found = []
    for name in host.listdir("/etc/modules-load.d"):
        path = "/etc/modules-load.d/" + name
        if not name.endswith(".conf"):
            continue
        listed = [line.strip().replace("-", "_") for line in (host.read(path) or "").splitlines()]
        if peermem.PEERMEM in listed or peermem.LEGACY in listed:
            found.append(path)
    return found


def _gpus(host):
    gpus = []
    for address in host.listdir("/sys/bus/pci/devices"):
        base = "/sys/bus/pci/devices/" + address
        if host.read(base + "/vendor") == NVIDIA_VENDOR and (host.read(base + "/class") or "").startswith(GPU_CLASSES):
            gpus.append(address)
    return gpus


def _nvidia(host, runner, state, evidence):
    info = dict(loaded=state != "absent", version=None, flavor=None, source=None)
    if info["loaded"]:
        version, flavor = peermem.parse_proc_driver_version(host.read("/proc/driver/nvidia/version"))
        info["version"] = (host.read("/sys/module/nvidia/version") or "").strip() or version
        info["flavor"] = flavor
        info["source"] = "/sys/module/nvidia" if info["version"] else None
    if not info["version"] or not info["flavor"]:
        found = _modinfo(runner, "nvidia")
        if found and found.get("found"):
            info["version"] = info["version"] or found.get("version") or None
            info["flavor"] = info["flavor"] or peermem.license_flavor(found.get("license"))
            info["source"] = info["source"] or "modinfo nvidia"
    if info["version"]:
        evidence.append("NVIDIA driver %s (%s, from %s)" % (info["version"], info["flavor"] or "flavour unknown", info["source"]))
    return info


def _modinfo(runner, name):
    """``{found: True, filename, version, depends, license, vermagic}``, ``{found: False, error}``,
    or None when ``modinfo`` itself is missing (nothing known)."""
    if runner is None or not runner.has("modinfo"):
        return None
    result = runner.run(["modinfo", name], check=False)
    if result.rc != 0:
        return dict(found=False, error=(result.stderr or "").strip())
    info = peermem.parse_modinfo(result.stdout)
    info["found"] = True
    return info


# -- load, persist, prove -------------------------------------------------------------------------
class PeermemManager:
    """Plan and apply one decision; ``run`` returns the module result or raises PeermemError."""

    def __init__(self, host, runner, mode="auto", required=False, options="", persist=True, reload=False,
                 unit=DEFAULT_UNIT, modprobe_file=DEFAULT_MODPROBE_FILE, rdma_stack=None):
        if not valid_unit_name(unit):
            raise peermem.PeermemError("unit: %r must be a unit file name ending in .service, e.g. %s" % (unit, DEFAULT_UNIT))
        if mode not in peermem.MODES:
            raise peermem.PeermemError("mode must be one of %s, got %r" % (", ".join(peermem.MODES), mode))
        self.host = host
        self.runner = runner
        self.mode = mode
        self.required = required
        self.options = (options or "").strip()
        self.persist = persist
        self.reload = reload
        self.unit = BootUnit(host, runner, unit)
        self.unit_path = self.unit.path
        self.modprobe_file = modprobe_file
        self.rdma_stack = rdma_stack
        self.engine = None

    def run(self, plan, check_mode):
        obs = observe(self.host, self.runner, self.rdma_stack)
        decision = peermem.decide(obs, self.mode, self.required)
        self.obs, self.decision = obs, decision
        if decision["action"] == "fail":
            raise peermem.PeermemError(decision["reason"], peermem=self.report(check_mode))
        if decision["action"] == "skip":
            return dict(skipped=True, msg=decision["reason"], changed=False, peermem=self.report(check_mode))
        if decision["action"] == "dmabuf":
            self._plan_unit(plan, None)
        else:
            try:
                self._plan_load(plan, decision["module"])
            except KmodError as exc:
                raise peermem.PeermemError(str(exc), peermem=self.report(check_mode))
        unit_changed = any(change.key == "unit_file" for change in plan)
        try:
            plan.apply(check_mode)
        except LoadFailed as exc:
            raise self._load_failure(decision["module"], exc)
        except KmodError as exc:
            raise peermem.PeermemError(str(exc), peermem=self.report(check_mode), **exc.details)
        if not check_mode:
            if unit_changed:
                self.unit.daemon_reload()
            self._verify(decision)
        return dict(msg=decision["reason"], peermem=self.report(check_mode))

    # -- plan -----------------------------------------------------------------------------------
    def _plan_load(self, plan, module):
        self.engine = KernelModules(
            self.host, self.runner, names=[module], options={module: self.options} if self.options else {},
            persist=False, modprobe_file=self.modprobe_file, reload=self.reload, owner="rdmaops.roce.peermem",
        )
        self.engine.plan_into(plan)
        if self.persist:
            self._plan_unit(plan, render_unit(module))

    def _plan_unit(self, plan, text):
        self.unit.plan(plan, text)

    # -- prove ----------------------------------------------------------------------------------
    def _load_failure(self, module, exc):
        info = self.obs["module_files"].get(module)
        diagnosis = peermem.diagnose(module, exc.result.stderr, exc.kernel_log, self.obs, info)
        self.decision["diagnosis"] = diagnosis
        return peermem.PeermemError(
            "%s. %s" % (str(exc), diagnosis["explanation"]),
            peermem=self.report(False), **exc.details
        )

    def _verify(self, decision):
        problems = []
        if self.engine is not None:
            try:
                self.engine.verify()
            except KmodError as exc:
                problems.append(str(exc))
            module = decision["module"]
            since = self.engine.kernel_log_since.get(module)
            bad = peermem.bad_log_lines(since)
            if bad:
                diagnosis = peermem.diagnose(module, "", bad, self.obs, self.obs["module_files"].get(module))
                self.decision["diagnosis"] = diagnosis
                problems.append("the kernel log written while %s loaded has errors: %s. %s"
                                % (module, " | ".join(bad), diagnosis["explanation"]))
        expected_unit = render_unit(decision["module"]) if decision["action"] == "load" and self.persist else None
        if (self.persist or decision["action"] == "dmabuf") and read_text(self.host, self.unit_path) != expected_unit:
            problems.append("%s does not hold what was written" % self.unit_path)
        if problems:
            raise peermem.PeermemError("after applying: " + "; ".join(problems), peermem=self.report(False))

    # -- report ---------------------------------------------------------------------------------
    def report(self, check_mode):
        obs, decision = self.obs, self.decision
        report = dict(
            action=decision["action"],
            module=decision["module"],
            reason=decision["reason"],
            mode=self.mode,
            kernel=obs["kernel"],
            gpus=obs["gpus"],
            driver_version=obs["nvidia"]["version"],
            driver_flavor=obs["nvidia"]["flavor"],
            peer_memory_api=decision["peer_memory_api"],
            dmabuf=decision["dmabuf"],
            warnings=list(decision["warnings"]),
            diagnosis=decision.get("diagnosis"),
            loaded=False,
            loaded_now=False,
            kernel_log=None,
            gdr_detect_paths=[p for p in peermem.GDR_DETECT_PATHS if self.host.exists(p)],
            memory_peers_version=(self.host.read("/sys/kernel/mm/memory_peers/nv_mem/version") or "").strip() or None,
            boot_unit=self.unit_path if (decision["action"] == "load" and self.persist) else None,
            modprobe_file=self.modprobe_file if (decision["action"] == "load" and self.options) else None,
            daemon_reload=self.unit.daemon_reload_result,
        )
        module = decision["module"]
        if module and decision["action"] == "load":
            state = module_state(self.host, module, builtin_modules(self.host, obs["kernel"]))
            report["loaded"] = state != "absent"
            if self.engine is not None:
                engine_report = self.engine.report(check_mode)
                report["loaded_now"] = module in engine_report["loaded_now"]
                report["option_mismatches"] = engine_report["option_mismatches"]
                report["kernel_log"] = self.engine.kernel_log_since.get(module)
                report["warnings"] = report["warnings"] + self.engine.warnings
        for path in obs.get("modules_load_entries", []):
            report["warnings"].append(
                "%s also loads a peer-memory module from /etc/modules-load.d, which runs before openibd has "
                "loaded OFED (and fails every boot where the module cannot load); remove that entry and let %s "
                "load it after the RDMA core" % (path, os.path.basename(self.unit_path)))
        if decision["action"] == "load" and report["loaded"] and not report["gdr_detect_paths"]:
            report["warnings"].append(
                "none of %s exists: NCCL and NVSHMEM will report GPU Direct RDMA as disabled"
                % ", ".join(peermem.GDR_DETECT_PATHS))
        return report
