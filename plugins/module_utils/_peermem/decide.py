# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect RDMA peer memory: which module, whether DMA-BUF serves instead, and why loads fail.

Pure functions over plain data (an *observation* of the host, see ``engine.py``), so
every decision is tested on recorded module lists, kernel log lines and driver versions.

The facts the decisions rest on (sources in tests/unit/fixtures/peermem/README.md):

* ``nvidia-peermem`` ships with the NVIDIA driver from R470 on and replaces the separate
  ``nv_peer_mem`` (Mellanox/nv_peer_memory); only one of them may be loaded.
* ``nvidia-peermem`` registers with the *peer-memory API* (``ib_register_peer_memory_client``)
  that only MLNX_OFED / DOCA-OFED's ``ib_core`` exports.  Built without the OFED headers (the
  NVIDIA driver was built before OFED, or against the inbox RDMA stack) its init is a bare
  ``return -EINVAL``: ``modprobe`` says ``Invalid argument`` and the kernel log says nothing.
  Built against another OFED than the loaded one, the kernel logs ``disagrees about version
  of symbol`` / ``Unknown symbol ... (err -22)``.  The fix is always the same order: OFED
  first, then (re)build the NVIDIA kernel modules, then load peermem.
* DMA-BUF (``ibv_reg_dmabuf_mr``) needs no peer-memory module: Linux >= 5.12 (RDMA umem
  dma-buf support), the NVIDIA *open* kernel modules (R515 and later; the proprietary flavour
  does not export GPU memory as dma-buf) and a verbs library with ``ibv_reg_dmabuf_mr``
  (rdma-core >= 34, ``IBVERBS_1.12``; DOCA-OFED; MLNX_OFED from 5.5 assumed).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

PEERMEM = "nvidia_peermem"
LEGACY = "nv_peer_mem"
PEERMEM_FILE = "nvidia-peermem"
PEERMEM_MIN_DRIVER = 470
MODES = ("auto", "peermem", "dmabuf")

DMABUF_MIN_KERNEL = (5, 12)
DMABUF_MIN_DRIVER = 515
DMABUF_MIN_RDMA_CORE = 34
DMABUF_MIN_MLNX_OFED = (5, 5)
OFED_FLAVORS = ("doca_ofed", "mlnx_ofed")
PEER_API_SYMBOL = "ib_register_peer_memory_client"

# Where user space looks for a working peer-memory client (NCCL ncclIbGdrSupport, NVSHMEM, UCC).
GDR_DETECT_PATHS = (
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
    "/sys/module/nv_peer_mem/version",
)

# Kernel log text that means the peer-memory module did not (or will not) work.  The
# "detected invalid context" message of nv_get_p2p_free_callback is a known harmless runtime
# diagnostic (Mellanox/nv_peer_memory#120) and is deliberately not here.
BAD_LOG_PATTERNS = (
    "Unknown symbol",
    "disagrees about version of symbol",
    "invalid peerdirect_support",
    "error while registering",
    "Loading of unsigned module is rejected",
    "Loading of module with unavailable key is rejected",
)

_VERSION_RE = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_NVRM_RE = re.compile(r"NVRM version:.*?Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)")


# -- parsing --------------------------------------------------------------------------------------
def parse_version(text):
    """Leading numbers of a version string: ``"535.104.05"`` -> ``(535, 104, 5)``; None if none."""
    match = _VERSION_RE.search(text or "")
    if not match:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


def parse_proc_driver_version(text):
    """``/proc/driver/nvidia/version`` -> ``(version, flavor)``, flavor ``open`` or ``proprietary``."""
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:"):
            match = _NVRM_RE.search(line)
            flavor = "open" if "Open Kernel Module" in line else "proprietary"
            return (match.group(1) if match else None), flavor
    return None, None


def parse_modinfo(text):
    """``modinfo`` output -> dict; ``depends`` becomes a list, repeated keys keep the first value."""
    info = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep or not key or key != key.strip():
            continue
        key, value = key.strip(), value.strip()
        if key not in info:
            info[key] = value
    info["depends"] = [dep for dep in info.get("depends", "").split(",") if dep]
    return info


def license_flavor(license_text):
    """``modinfo -F license nvidia``: the open modules are ``Dual MIT/GPL``, the proprietary ``NVIDIA``."""
    if not license_text:
        return None
    return "open" if "MIT" in license_text or "GPL" in license_text else "proprietary"


def kallsyms_has_peer_api(text):
    """True when ``/proc/kallsyms`` lists ``ib_register_peer_memory_client`` (OFED ib_core)."""
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == PEER_API_SYMBOL:
            return True
    return False


def bad_log_lines(lines):
    return [line for line in lines or [] if any(pattern in line for pattern in BAD_LOG_PATTERNS)]


# -- DMA-BUF ------------------------------------------------------------------------------------
def dmabuf_assessment(obs):
    """Each DMA-BUF prerequisite as ``{check, ok, detail}``; ``usable`` is True/False/None (unknown)."""
    checks = []
    kernel = parse_version(obs.get("kernel"))
    checks.append(dict(
        check="Linux kernel >= 5.12 (RDMA dma-buf memory registration)",
        ok=None if kernel is None else kernel[:2] >= DMABUF_MIN_KERNEL,
        detail="kernel %s" % obs.get("kernel"),
    ))
    nvidia = obs.get("nvidia") or {}
    flavor = nvidia.get("flavor")
    checks.append(dict(
        check="NVIDIA open kernel modules (the proprietary flavour exports no dma-buf)",
        ok=None if flavor is None else flavor == "open",
        detail="nvidia kernel module flavour: %s" % (flavor or "unknown"),
    ))
    driver = parse_version(nvidia.get("version"))
    checks.append(dict(
        check="NVIDIA driver >= 515",
        ok=None if driver is None else driver[0] >= DMABUF_MIN_DRIVER,
        detail="driver %s" % (nvidia.get("version") or "unknown"),
    ))
    checks.append(_verbs_dmabuf_check(obs.get("rdma_stack") or {}))
    results = [check["ok"] for check in checks]
    usable = False if False in results else (None if None in results else True)
    return dict(usable=usable, checks=checks)


def _verbs_dmabuf_check(stack):
    check = "verbs library with ibv_reg_dmabuf_mr (rdma-core >= 34, DOCA-OFED, MLNX_OFED >= 5.5)"
    flavor, version = stack.get("flavor"), stack.get("version")
    parsed = parse_version(version)
    if flavor == "doca_ofed":
        ok = True
    elif flavor == "mlnx_ofed":
        ok = None if parsed is None else parsed[:2] >= DMABUF_MIN_MLNX_OFED
    elif flavor == "inbox":
        ok = None if parsed is None else parsed[0] >= DMABUF_MIN_RDMA_CORE
    elif flavor == "none":
        ok = False
    else:
        ok = None
    detail = "RDMA stack: %s %s" % (flavor or "unknown (no rdma facts)", version or "")
    return dict(check=check, ok=ok, detail=detail.strip())


def _failed(assessment):
    return [c for c in assessment["checks"] if c["ok"] is False]


def _unknown(assessment):
    return [c for c in assessment["checks"] if c["ok"] is None]


def _describe(checks):
    return "; ".join("%s: no (%s)" % (c["check"], c["detail"]) for c in checks)


# -- the peer-memory API --------------------------------------------------------------------------
def peer_memory_api(obs):
    """Whether the loaded RDMA core can take a peer-memory client: True, False or None (unknown)."""
    api = obs.get("peer_memory_api")
    if api is not None:
        return api
    if obs.get("mlx5_core_version"):
        return True  # an OFED mlx5_core is loaded, so is OFED's ib_core
    return None


def peer_api_evidence(obs):
    if obs.get("peer_memory_api") is True:
        return "%s is in /proc/kallsyms (OFED ib_core)" % PEER_API_SYMBOL
    if obs.get("peer_memory_api") is False:
        return "ib_core is loaded without %s: it is the kernel's own (inbox) RDMA core" % PEER_API_SYMBOL
    if obs.get("mlx5_core_version"):
        return "an OFED mlx5_core %s is loaded" % obs["mlx5_core_version"]
    return "ib_core is not loaded yet, so the peer-memory API could not be checked"


# -- the decision ---------------------------------------------------------------------------------
def decide(obs, mode="auto", required=False):
    """What to do about peer memory on this host.

    Returns ``{action, module, reason, dmabuf, peer_memory_api, warnings}`` where action is
    ``load`` (load or keep ``module``), ``dmabuf`` (no peer-memory module; DMA-BUF serves),
    ``skip`` or ``fail`` (with ``reason`` saying why and how to fix it).
    """
    if mode not in MODES:
        raise ValueError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    nvidia = obs.get("nvidia") or {}
    gpus = obs.get("gpus") or []
    modules = obs.get("modules") or {}
    kernel = obs.get("kernel") or "unknown"
    decision = dict(action=None, module=None, reason=None, dmabuf=None,
                    peer_memory_api=peer_memory_api(obs), warnings=[])

    if not gpus and not nvidia.get("loaded"):
        return _skip_or_fail(decision, required, (
            "no NVIDIA GPU on this host (no PCI device with vendor 0x10de and class 0x0300/0x0302) "
            "and no nvidia kernel module loaded, so there is no GPU memory for RDMA to reach"))
    if not nvidia.get("version"):
        return _skip_or_fail(decision, required, (
            "%d NVIDIA GPU(s) found (%s) but no NVIDIA driver for kernel %s: nvidia is not loaded and "
            "modinfo finds no nvidia module. Install the NVIDIA driver after the RDMA stack (OFED), "
            "then run this again" % (len(gpus), ", ".join(gpus), kernel)))

    driver = parse_version(nvidia["version"])
    module = PEERMEM if driver[0] >= PEERMEM_MIN_DRIVER else LEGACY
    decision["module"] = module
    decision["dmabuf"] = assessment = dmabuf_assessment(obs)
    api = decision["peer_memory_api"]
    files = obs.get("module_files") or {}
    file_info = files.get(module)
    state = modules.get(module, "absent")

    if mode == "dmabuf":
        if assessment["usable"] is False:
            return _fail(decision, "peermem_mode is dmabuf but DMA-BUF cannot work on this host: %s. "
                         "Meet these requirements or use peermem_mode: peermem" % _describe(_failed(assessment)))
        for check in _unknown(assessment):
            decision["warnings"].append("DMA-BUF prerequisite not confirmed: %s (%s)" % (check["check"], check["detail"]))
        return _action(decision, "dmabuf", "DMA-BUF serves GPUDirect RDMA (peermem_mode: dmabuf); no peer-memory "
                       "module is loaded or persisted", module=None)

    if module == PEERMEM and modules.get(LEGACY) in ("loaded", "builtin"):
        return _fail(decision, (
            "the legacy nv_peer_mem module is loaded, but NVIDIA driver %s uses nvidia-peermem and only one "
            "peer-memory client may be loaded. Stop and remove nv_peer_mem first: systemctl disable --now "
            "nv_peer_mem (or /etc/init.d/nv_peer_mem stop), modprobe -r nv_peer_mem, remove the "
            "nvidia-peer-memory / nvidia-peer-memory-dkms package and /etc/modules-load.d/nv_peer_mem.conf, "
            "then run this again" % nvidia["version"]))

    if state in ("loaded", "builtin"):
        return _action(decision, "load", "%s is loaded (NVIDIA driver %s)" % (module, nvidia["version"]))

    missing = file_info is not None and not file_info.get("found")
    if mode == "auto" and (api is False or missing):
        why = _cannot_work(module, nvidia, kernel, api, obs, missing)
        if assessment["usable"]:
            return _action(decision, "dmabuf", "%s; DMA-BUF is usable instead (%s)" % (
                why, "; ".join(c["detail"] for c in assessment["checks"])), module=None)
        dmabuf_why = _describe(_failed(assessment)) or "unconfirmed: " + "; ".join(
            c["check"] for c in _unknown(assessment))
        if module == PEERMEM and missing:
            return _fail(decision, "%s, and DMA-BUF is not usable (%s)" % (why, dmabuf_why))
        return _skip_or_fail(decision, required, "%s, and DMA-BUF is not usable (%s)" % (why, dmabuf_why))

    if missing:
        return _fail(decision, _cannot_work(module, nvidia, kernel, api, obs, missing))
    if api is False:
        return _fail(decision, _cannot_work(module, nvidia, kernel, api, obs, False))

    if api is None:
        decision["warnings"].append(
            "could not confirm that the RDMA core offers the peer-memory API (%s); the load will tell"
            % peer_api_evidence(obs))
    deps = (file_info or {}).get("depends")
    if file_info and file_info.get("found") and deps is not None and not set(deps) & {"ib_core", "ib_uverbs"}:
        decision["warnings"].append(
            "modinfo %s lists depends: %s (no ib_core): it was probably built without the OFED peer-memory "
            "symbols and will fail with 'Invalid argument'; rebuild the NVIDIA driver after OFED"
            % (module, ",".join(deps) or "(none)"))
    return _action(decision, "load", "load %s for NVIDIA driver %s (%s)" % (module, nvidia["version"], peer_api_evidence(obs)))


def _cannot_work(module, nvidia, kernel, api, obs, missing):
    if missing and module == LEGACY:
        return ("NVIDIA driver %s predates nvidia-peermem (R470) and the legacy nv_peer_mem module is not "
                "installed for kernel %s: install nvidia-peer-memory-dkms (Mellanox/nv_peer_memory) or, "
                "better, upgrade the driver to R470 or later" % (nvidia["version"], kernel))
    if missing:
        return ("NVIDIA driver %s should ship nvidia-peermem, but modinfo finds no nvidia-peermem for kernel %s: "
                "the driver's kernel modules were not built or installed for this kernel. Check `dkms status`, "
                "then rebuild them after OFED, e.g. `dkms install nvidia/%s -k %s --force`, or reinstall the "
                "driver package" % (nvidia["version"], kernel, nvidia["version"], kernel))
    return ("%s cannot load here: %s, and nvidia-peermem needs the peer-memory API of MLNX_OFED / DOCA-OFED. "
            "Install OFED (rdmaops.roce.ofed), rebuild the NVIDIA driver after it (e.g. `dkms install nvidia/%s "
            "-k %s --force`), or use DMA-BUF" % (module, peer_api_evidence(obs), nvidia["version"], kernel))


def _action(decision, action, reason, module="keep"):
    decision["action"] = action
    decision["reason"] = reason
    if module != "keep":
        decision["module"] = module
    return decision


def _fail(decision, reason):
    return _action(decision, "fail", reason)


def _skip_or_fail(decision, required, reason):
    if required:
        return _action(decision, "fail", "peermem_required is true but " + reason)
    return _action(decision, "skip", reason)


# -- failures -----------------------------------------------------------------------------------
def diagnose(module, stderr, kernel_log, obs, file_info=None):
    """Explain a failed load of ``module`` from modprobe's stderr and the kernel log.

    Returns ``{category, explanation}``; categories: ``missing``, ``abi_mismatch``,
    ``no_peer_api``, ``nvidia_abi_mismatch``, ``bad_option``, ``secure_boot``,
    ``built_without_peer_symbols``, ``unknown``.
    """
    stderr = stderr or ""
    log = "\n".join(kernel_log or [])
    nvidia = obs.get("nvidia") or {}
    version = nvidia.get("version") or "<version>"
    kernel = obs.get("kernel") or "$(uname -r)"
    rebuild = ("rebuild the NVIDIA kernel modules against the OFED now installed for kernel %s: "
               "`dkms install nvidia/%s -k %s --force` (or reinstall the NVIDIA driver package), then "
               "run this again" % (kernel, version, kernel))
    if module == LEGACY:
        rebuild = ("rebuild nv_peer_mem against the loaded OFED and NVIDIA driver: reinstall "
                   "nvidia-peer-memory-dkms (or `dkms install nv_peer_mem/<version> -k %s --force`)" % kernel)

    if "not found in directory" in stderr or "not found." in stderr:
        return dict(category="missing", explanation=_cannot_work(module, nvidia, kernel, None, obs, True))
    if "disagrees about version of symbol" in log:
        return dict(category="abi_mismatch", explanation=(
            "%s was built against another ib_core than the one loaded (the kernel log says the symbol versions "
            "disagree): OFED was upgraded or reinstalled after the NVIDIA driver was built. Fix: %s" % (module, rebuild)))
    if "Unknown symbol ib_" in log or PEER_API_SYMBOL in log:
        return dict(category="no_peer_api", explanation=(
            "the loaded ib_core does not export the peer-memory API (%s): it is the kernel's own RDMA core, "
            "not OFED's, or OFED was removed. Load the OFED stack (check `ofed_info -s` and "
            "/sys/module/mlx5_core/version; `/etc/init.d/openibd restart` or a reboot into a kernel with "
            "OFED modules), then %s; or use peermem_mode: dmabuf" % (peer_api_evidence(obs), rebuild)))
    if "Unknown symbol nvidia_p2p" in log:
        return dict(category="nvidia_abi_mismatch", explanation=(
            "%s was built against another NVIDIA driver than the loaded one (nvidia_p2p_* symbols). Fix: %s"
            % (module, rebuild)))
    if "invalid peerdirect_support" in log or "unknown parameter" in stderr.lower() or "Unknown parameter" in log:
        return dict(category="bad_option", explanation=(
            "the module rejected its options (peermem_options): nvidia-peermem accepts only "
            "peerdirect_support=0 (default) or 1 (legacy, MLNX_OFED 4.9 LTS)"))
    if "Key was rejected by service" in stderr or "Required key not available" in stderr or "rejected" in log:
        return dict(category="secure_boot", explanation=(
            "Secure Boot refused the unsigned %s: sign the NVIDIA DKMS modules with a key enrolled in MOK "
            "(`mokutil --import` the DKMS signing key and reboot to enroll it), or disable Secure Boot" % module))
    if "Invalid argument" in stderr:
        evidence = []
        deps = (file_info or {}).get("depends")
        if deps is not None and not set(deps) & {"ib_core", "ib_uverbs"}:
            evidence.append("modinfo shows depends: %s, no ib_core" % (",".join(deps) or "(none)"))
        if not log:
            evidence.append("the kernel log has no line about it, which is what the stub init does")
        no_ofed = peer_memory_api(obs) is False or (obs.get("rdma_stack") or {}).get("flavor") == "inbox"
        explanation = (
            "%s was built without the MLNX_OFED / DOCA-OFED peer-memory symbols (the NVIDIA driver was built "
            "before OFED was installed, or against the inbox RDMA stack), so its init returns EINVAL%s. Fix: %s"
            % (module, " (" + "; ".join(evidence) + ")" if evidence else "", rebuild))
        if no_ofed:
            explanation += (". This host runs the inbox RDMA core: install OFED first (rdmaops.roce.ofed), "
                            "or use peermem_mode: dmabuf")
        return dict(category="built_without_peer_symbols", explanation=explanation)
    return dict(category="unknown", explanation=(
        "modprobe %s failed; see stderr and the kernel log. If the NVIDIA driver was installed before OFED, %s"
        % (module, rebuild)))
