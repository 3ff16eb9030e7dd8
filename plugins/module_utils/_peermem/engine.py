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

The engine follows the protocol of ``_core.engine``: ``validate`` refuses bad options before
anything is read, ``read`` observes and decides, ``plan`` adds the kernel_modules changes and the
unit, ``verify`` proves, ``result`` reports (also after a failure).  A unit or modprobe.d file at
the configured path that rdmaops.roce did not write is refused unless ``adopt``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import BootUnit, MODULES_LOAD_DIR, unit_name
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import GPU_CLASSES, MODULES, NVIDIA_VENDOR, PCI_DEVICES, kernel_release
from ansible_collections.rdmaops.roce.plugins.module_utils._kmod.engine import (
    MODPROBE_DIRS,
    KernelModules,
    builtin_modules,
    check_conf_path,
    module_state,
    parse_options,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._peermem import decide as peermem

DEFAULT_UNIT = "rdmaops-peermem.service"
DEFAULT_MODPROBE_FILE = "/etc/modprobe.d/rdmaops-peermem.conf"
OWNER = "rdmaops.roce.peermem"
OBSERVED_MODULES = (peermem.PEERMEM, peermem.LEGACY, "ib_core", "ib_uverbs", "mlx5_core", "nvidia")
MODULE_FILE_NAMES = {peermem.PEERMEM: peermem.PEERMEM_FILE, peermem.LEGACY: peermem.LEGACY}
KALLSYMS = "/proc/kallsyms"

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
        mlx5_core_version=(host.read(MODULES + "/mlx5_core/version") or "").strip() or None,
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
    """Look for the peer-memory API in /proc/kallsyms (megabytes: only the lines around the
    symbol's name are decoded); None when it cannot be read."""
    data = files.read_bytes(host, KALLSYMS)
    if data is None:
        return None
    needle = (" " + peermem.PEER_API_SYMBOL).encode("ascii")
    found = data.find(needle)
    while found >= 0:
        start = data.rfind(b"\n", 0, found) + 1
        end = data.find(b"\n", found)
        line = data[start:end if end >= 0 else len(data)]
        if peermem.kallsyms_has_peer_api(line.decode("ascii", "replace")):
            return True
        found = data.find(needle, found + 1)
    return False


def _modules_load_entries(host):
    """/etc/modules-load.d files that list nvidia-peermem or nv_peer_mem (the early-boot way)."""
    found = []
    for name in host.listdir(MODULES_LOAD_DIR):
        path = "%s/%s" % (MODULES_LOAD_DIR, name)
        if not name.endswith(".conf"):
            continue
        listed = [line.strip().replace("-", "_") for line in (host.read(path) or "").splitlines()]
        if peermem.PEERMEM in listed or peermem.LEGACY in listed:
            found.append(path)
    return found


def _gpus(host):
    gpus = []
    for address in host.listdir(PCI_DEVICES):
        base = "%s/%s" % (PCI_DEVICES, address)
        if host.read(base + "/vendor") == NVIDIA_VENDOR and (host.read(base + "/class") or "").startswith(GPU_CLASSES):
            gpus.append(address)
    return gpus


def _nvidia(host, runner, state, evidence):
    info = dict(loaded=state != "absent", version=None, flavor=None, source=None)
    if info["loaded"]:
        version, flavor = peermem.parse_proc_driver_version(host.read("/proc/driver/nvidia/version"))
        info["version"] = (host.read(MODULES + "/nvidia/version") or "").strip() or version
        info["flavor"] = flavor
        info["source"] = MODULES + "/nvidia" if info["version"] else None
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


# -- the engine: decide, load, persist, prove -------------------------------------------------------
class Peermem(Engine):
    """One decision made so: the module loaded through :class:`KernelModules`, the boot unit, the proof."""

    def __init__(self, ctx, params):
        super(Peermem, self).__init__(ctx, params)
        self.mode = params.get("mode") or "auto"
        self.required = bool(params.get("required"))
        self.options = (params.get("options") or "").strip()
        self.persist = params.get("persist", True)
        self.reload = bool(params.get("reload"))
        self.unit_file_name = params.get("unit") or DEFAULT_UNIT
        self.modprobe_file = params.get("modprobe_file") or DEFAULT_MODPROBE_FILE
        self.rdma_stack = params.get("rdma_stack")
        self.adopt = bool(params.get("adopt"))
        self.unit = None
        self.unit_path = None
        self.engine = None
        self.obs = None
        self.decision = None

    # -- validate -------------------------------------------------------------------------------
    def validate(self):
        if self.mode not in peermem.MODES:
            raise InputError("mode must be one of %s, got %r" % (", ".join(peermem.MODES), self.mode), option="mode")
        try:
            unit_name("unit", self.unit_file_name)
        except InputError:
            raise InputError(
                "unit: %r must be a unit file name ending in .service (a plain file name in /etc/systemd/system, "
                "not starting with '.' or '-'), e.g. %s" % (self.unit_file_name, DEFAULT_UNIT), option="unit")
        check_conf_path("modprobe_file", self.modprobe_file, MODPROBE_DIRS)
        # Which module the options are for is known only after reading; their form is known now.
        parse_options(self.options, "options.%s/%s" % (peermem.PEERMEM, peermem.LEGACY))
        self.unit = BootUnit(self.host, self.runner, self.unit_file_name, adopt=self.adopt)
        self.unit_path = self.unit.path

    # -- read -----------------------------------------------------------------------------------
    def read(self):
        self.obs = observe(self.host, self.runner, self.rdma_stack)
        self.decision = peermem.decide(self.obs, self.mode, self.required)

    # -- plan -----------------------------------------------------------------------------------
    def plan(self, plan):
        decision = self.decision
        if decision["action"] == "fail":
            raise RdmaopsError(decision["reason"])
        if decision["action"] == "skip":
            return
        if decision["action"] == "dmabuf":
            self.unit.plan(plan, None)
        else:
            module = decision["module"]
            self.engine = KernelModules(
                self.ctx,
                dict(names=[module], options={module: self.options} if self.options else {}, persist=False,
                     modprobe_file=self.modprobe_file, reload=self.reload, adopt=self.adopt),
                owner=OWNER, explain_load_failure=self._explain,
            )
            self.engine.validate()
            self.engine.read()
            self.engine.plan(plan)
            if self.persist:
                self.unit.plan(plan, render_unit(module))
        if any(change.key == "unit_file" for change in plan):
            plan.then("systemctl daemon-reload", self.unit.daemon_reload)

    def _explain(self, failed):
        """peermem's diagnosis of a failed load, added to modprobe's own message."""
        module = self.decision["module"]
        diagnosis = peermem.diagnose(module, failed.result.stderr, failed.kernel_log, self.obs,
                                     self.obs["module_files"].get(module))
        self.decision["diagnosis"] = diagnosis
        return diagnosis["explanation"]

    # -- prove ----------------------------------------------------------------------------------
    def verify(self):
        decision = self.decision
        problems = []
        if self.engine is not None:
            problems.extend(self.engine.verify())
            module = decision["module"]
            since = self.engine.kernel_log_since.get(module)
            bad = peermem.bad_log_lines(since)
            if bad:
                diagnosis = peermem.diagnose(module, "", bad, self.obs, self.obs["module_files"].get(module))
                decision["diagnosis"] = diagnosis
                problems.append("the kernel log written while %s loaded has errors: %s. %s"
                                % (module, " | ".join(bad), diagnosis["explanation"]))
        expected_unit = render_unit(decision["module"]) if decision["action"] == "load" and self.persist else None
        if (self.persist or decision["action"] == "dmabuf") and files.read_text(self.host, self.unit_path) != expected_unit:
            problems.append("%s does not hold what was written" % self.unit_path)
        return problems

    # -- result ---------------------------------------------------------------------------------
    def result(self):
        if self.decision is None:
            return {}
        report = self.report()
        for warning in report["warnings"]:
            self.ctx.warn(warning)
        result = dict(msg=self.decision["reason"], peermem=report)
        if self.decision["action"] == "skip":
            result["skipped"] = True
        return result

    def report(self):
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
                engine_report = self.engine.result()
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
