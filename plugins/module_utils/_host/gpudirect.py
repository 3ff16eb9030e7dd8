# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect RDMA prerequisites, read only: IOMMU mode, PCIe ACS on the GPU/NIC paths, peer memory.

What NVIDIA documents (nic-ground-truth.md section 5.3):

* IOMMU translation must be off or in pass-through for the GPU and the NIC (``iommu=pt``):
  the kernel shows each IOMMU group's default domain in ``/sys/kernel/iommu_groups/N/type``
  (``identity`` is pass-through, ``DMA``/``DMA-FQ`` translate); no groups means no IOMMU.
* PCIe ACS request/completion redirection on the bridges between a GPU and a NIC sends their
  peer-to-peer traffic up to the root complex (``lspci -vvv``: ``ACSCtl: ... ReqRedir+
  CmpltRedir+``). Only ``lspci`` run as root shows it; without it the state is reported unknown.
* ``nvidia_peermem`` must be loaded (not the legacy ``nv_peer_mem`` next to it), unless the
  application uses DMA-BUF.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import (
    GPU_CLASSES,
    IOMMU_CLASS,
    IOMMU_GROUPS,
    MELLANOX_VENDOR,
    MODULES,
    NVIDIA_VENDOR,
    PCI_DEVICES,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.pci import (
    parse_cmdline,
    parse_lspci_acs,
    pci_chain,
)

PASSTHROUGH_TYPES = ("identity",)
TRANSLATED_TYPES = ("DMA", "DMA-FQ", "unmanaged", "blocked")
ACS_REDIRECT_BITS = ("ReqRedir", "CmpltRedir", "EgressCtrl")


class GpuDirectReport:
    """Read the host and say whether GPUDirect RDMA can work, and what stands in the way."""

    def __init__(self, host, runner=None, use_lspci=True):
        self.host = host
        self.runner = runner
        self.use_lspci = use_lspci
        # kept for gpudirect_config, which acts on what this read found
        self.endpoints = ([], [])
        self.lspci_devices = {}

    def gather(self):
        gpus, nics = self.endpoints = self._endpoints()
        iommu = self._iommu(gpus + nics)
        acs = self._acs(gpus, nics)
        peermem = self._peermem()
        problems = []
        if gpus:
            if iommu["mode"] == "translated":
                problems.append(
                    "IOMMU translates DMA for %s: GPUDirect RDMA needs it off or in pass-through; add iommu=pt "
                    "to the kernel command line (intel_iommu=on iommu=pt where SR-IOV VFs are needed)"
                    % ", ".join(sorted(d for d, t in iommu["device_domains"].items() if t not in PASSTHROUGH_TYPES) or ["the GPUs and NICs"])
                )
            if acs["status"] == "unknown":
                problems.append("PCIe ACS state unknown: %s" % acs["reason"])
            elif acs["redirecting_on_gpu_paths"]:
                problems.append(
                    "PCIe ACS redirects peer-to-peer traffic on bridges between GPUs and NICs (%s): disable it "
                    "(kernel parameter config_acs= from rdma-core's rdma_topo, or setpci after every boot)"
                    % ", ".join(acs["redirecting_on_gpu_paths"])
                )
            if peermem["nv_peer_mem"] and peermem["nvidia_peermem"]:
                problems.append("the legacy nv_peer_mem module is loaded next to nvidia_peermem: remove nv_peer_mem")
            elif not peermem["nvidia_peermem"]:
                problems.append(
                    "nvidia_peermem is not loaded: modprobe nvidia-peermem and list it in /etc/modules-load.d "
                    "(not needed when the application registers GPU memory through DMA-BUF)"
                )
        return dict(
            applicable=bool(gpus),
            ready=bool(gpus) and not problems,
            gpus=[bdf for bdf, _chain in gpus],
            rdma_nics=[bdf for bdf, _chain in nics],
            iommu=iommu,
            acs=acs,
            peermem=peermem,
            problems=problems,
        )

    # -- PCI endpoints ------------------------------------------------------------------------
    def _endpoints(self):
        gpus, nics = [], []
        for bdf in self.host.listdir(PCI_DEVICES):
            base = "%s/%s" % (PCI_DEVICES, bdf)
            vendor = self.host.read(base + "/vendor")
            pci_class = self.host.read(base + "/class") or ""
            chain = pci_chain(self.host.realpath(base))
            if vendor == NVIDIA_VENDOR and pci_class.startswith(GPU_CLASSES):
                gpus.append((bdf, chain))
            elif self.host.listdir(base + "/infiniband") or (vendor == MELLANOX_VENDOR and pci_class.startswith(("0x02", "0x0c06"))):
                nics.append((bdf, chain))
        return gpus, nics

    # -- IOMMU --------------------------------------------------------------------------------
    def _iommu(self, endpoints):
        cmdline = parse_cmdline(self.host.read("/proc/cmdline", ""))
        groups = self.host.listdir(IOMMU_GROUPS)
        types = {}
        for group in groups:
            kind = self.host.read("%s/%s/type" % (IOMMU_GROUPS, group))
            if kind is not None:
                types[kind] = types.get(kind, 0) + 1
        device_domains = {}
        for bdf, _chain in endpoints:
            group = self.host.readlink_name("%s/%s/iommu_group" % (PCI_DEVICES, bdf))
            if group is not None:
                device_domains[bdf] = self.host.read("%s/%s/type" % (IOMMU_GROUPS, group), "unknown")
        relevant = list(device_domains.values()) if device_domains else []
        if not relevant:
            relevant = [kind for kind, count in types.items() for _i in range(count)]
        if not groups:
            mode, source = "off", "no IOMMU groups in %s" % IOMMU_GROUPS
        elif relevant and all(kind in PASSTHROUGH_TYPES for kind in relevant):
            mode, source = "passthrough", "IOMMU group default domains"
        elif any(kind in TRANSLATED_TYPES for kind in relevant):
            mode, source = "translated", "IOMMU group default domains"
        elif cmdline.get("iommu") == "pt" or cmdline.get("iommu.passthrough") in ("1", "on", "y"):
            mode, source = "passthrough", "kernel command line (groups do not show their domain type)"
        else:
            mode, source = "translated", "IOMMU groups exist and the command line does not ask for pass-through"
        return dict(
            mode=mode,
            source=source,
            cmdline=cmdline,
            hardware_units=self.host.listdir(IOMMU_CLASS),
            groups=len(groups),
            domain_types=types,
            device_domains=device_domains,
        )

    # -- ACS ----------------------------------------------------------------------------------
    def _acs(self, gpus, nics):
        result = dict(status="unknown", reason=None, source=None, redirecting=[], redirecting_on_gpu_paths=[], devices={})
        if not self.use_lspci:
            result["reason"] = "lspci was not used (use_lspci=false)"
            return result
        if self.runner is None or not self.runner.has("lspci"):
            result["reason"] = "lspci is not installed (package pciutils)"
            return result
        answer = self.runner.run(["lspci", "-D", "-vvv"], check=False)
        if answer.rc != 0:
            result["reason"] = "lspci -D -vvv failed with rc=%d: %s" % (answer.rc, answer.stderr.strip())
            return result
        devices = self.lspci_devices = parse_lspci_acs(answer.stdout)
        result["source"] = "lspci -D -vvv"
        if any(d["access_denied"] for d in devices.values()):
            result["reason"] = "lspci could not read PCI capabilities (run as root)"
            return result
        with_acs = dict((bdf, d["acs_ctl"]) for bdf, d in devices.items() if d["acs_ctl"] is not None)
        result["devices"] = with_acs
        result["redirecting"] = sorted(bdf for bdf, flags in with_acs.items() if any(flags.get(bit) for bit in ACS_REDIRECT_BITS))
        on_paths = set()
        for _bdf, chain in gpus + nics:
            on_paths.update(part for part in chain if part in result["redirecting"])
        result["redirecting_on_gpu_paths"] = sorted(on_paths) if gpus else []
        result["status"] = "redirecting" if result["redirecting"] else "not_redirecting"
        return result

    # -- peer memory --------------------------------------------------------------------------
    def _peermem(self):
        return dict(
            nvidia_peermem=self.host.isdir(MODULES + "/nvidia_peermem"),
            nv_peer_mem=self.host.isdir(MODULES + "/nv_peer_mem"),
        )


def gather(ctx, params):
    """The gpudirect_facts module's result: ``ansible_facts.gpudirect`` (for ``run_facts``)."""
    report = GpuDirectReport(ctx.host, ctx.runner, use_lspci=params.get("use_lspci", True))
    return dict(changed=False, ansible_facts=dict(gpudirect=report.gather()))
