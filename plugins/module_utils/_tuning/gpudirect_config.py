# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect RDMA prerequisites, changed only when asked: PCIe ACS redirection and IOMMU pass-through.

Both are host-wide settings with consequences beyond RDMA, so nothing here happens unless the
caller asks for it by name (``acs: disable``, ``iommu: passthrough``); the read side is
:mod:`gpudirect`.

* **ACS**: with an IOMMU on, the kernel's PCI core turns on ACS P2P Request Redirect,
  Completion Redirect and Egress Control on every capable bridge at each boot, which sends a
  GPU's peer-to-peer traffic to a NIC up to the root complex (or drops it).  The three bits
  (2, 3 and 5 of the ACS Control register, ``ECAP_ACS+0x6``) are cleared with
  ``setpci -s BDF ECAP_ACS+0x6.w=0000:002c``: value:mask, so Source Validation, Translation
  Blocking and Upstream Forwarding stay as they are.  Because the kernel sets them again at
  boot, a oneshot unit of ours clears the same bridges after every boot.  The bridges are the
  ones with an ACS capability that can redirect, upstream of a GPU or an RDMA NIC
  (``scope: gpu_paths``) or everywhere (``scope: all``); the unit lists all of them whether or
  not they redirect right now, so a run after a reboot finds nothing to change.
* **IOMMU**: pass-through (``iommu=pt``) is a kernel command line argument, in force from the
  next boot: with ``grubby`` (RHEL family) ``grubby --update-kernel=ALL --args=...``; with
  ``/etc/default/grub`` (Debian family) a drop-in ``/etc/default/grub.d/90-rdmaops-gpudirect.cfg``
  that appends to ``GRUB_CMDLINE_LINUX_DEFAULT``, then ``update-grub`` (or ``grub-mkconfig``).
  Arguments already there (the files are evaluated as grub-mkconfig does) are not added again.
  ``reboot_required`` says whether the running kernel lacks them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex

from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import read_text, write_atomic
from ansible_collections.rdmaops.roce.plugins.module_utils._host.gpudirect import ACS_REDIRECT_BITS, PCI_DEVICES, GpuDirectReport
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import BootUnit, valid_unit_name

ACS_CONTROL = "ECAP_ACS+0x6.w"
ACS_CLEAR = "0000:002c"  # value:mask - ReqRedir (0x04), CmpltRedir (0x08), EgressCtrl (0x20) to 0
BRIDGE_CLASS = "0x0604"
DEFAULT_UNIT = "rdmaops-gpudirect-acs.service"
GRUB_DEFAULT = "/etc/default/grub"
GRUB_DROPIN_DIR = "/etc/default/grub.d"
GRUB_DROPIN = GRUB_DROPIN_DIR + "/90-rdmaops-gpudirect.cfg"
ACS_MODES = ("keep", "disable")
ACS_SCOPES = ("gpu_paths", "all")
IOMMU_MODES = ("keep", "passthrough")
_KERNEL_ARG = re.compile(r"^[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/+-]+)?$")

UNIT_TEMPLATE = """# Managed by rdmaops.roce (gpudirect_config): this whole file is rewritten on every run.
# The kernel turns PCIe ACS redirection on again at every boot; this clears it on the bridges
# below (ReqRedir, CmpltRedir, EgressCtrl only) so GPUDirect RDMA traffic stays peer to peer.
[Unit]
Description=Clear PCIe ACS peer-to-peer redirection on GPU and RDMA NIC paths (GPUDirect RDMA)
Documentation=https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs

[Service]
Type=oneshot
RemainAfterExit=yes
{exec_lines}

[Install]
WantedBy=multi-user.target
"""

GRUB_TEMPLATE = """# Managed by rdmaops.roce (gpudirect_config): kernel arguments for GPUDirect RDMA.
# Read by update-grub / grub-mkconfig after /etc/default/grub; remove this file and run
# update-grub to drop them.
GRUB_CMDLINE_LINUX_DEFAULT="${{GRUB_CMDLINE_LINUX_DEFAULT}} {args}"
"""

# Evaluates the GRUB defaults the way grub-mkconfig does (/etc/default/grub, then grub.d/*.cfg
# in order) and prints the command line they give. $1 is the main file, the rest the drop-ins.
GRUB_EVAL = 'set -e; . "$1"; shift; for f in "$@"; do . "$f"; done; printf "%s %s\\n" "${GRUB_CMDLINE_LINUX:-}" "${GRUB_CMDLINE_LINUX_DEFAULT:-}"'


class GpuDirectConfigError(Exception):
    def __init__(self, msg, **details):
        super(GpuDirectConfigError, self).__init__(msg)
        self.details = details


def validate(acs, acs_scope, iommu, kernel_args, unit):
    """Raise GpuDirectConfigError for arguments that make no sense, before the host is read."""
    if acs not in ACS_MODES:
        raise GpuDirectConfigError("acs must be one of %s, got %r" % (", ".join(ACS_MODES), acs))
    if acs_scope not in ACS_SCOPES:
        raise GpuDirectConfigError("acs_scope must be one of %s, got %r" % (", ".join(ACS_SCOPES), acs_scope))
    if iommu not in IOMMU_MODES:
        raise GpuDirectConfigError("iommu must be one of %s, got %r" % (", ".join(IOMMU_MODES), iommu))
    if iommu == "passthrough" and not kernel_args:
        raise GpuDirectConfigError("kernel_args is empty: give the arguments that put the IOMMU in pass-through, e.g. [iommu=pt]")
    bad = [arg for arg in kernel_args or [] if not _KERNEL_ARG.match(str(arg))]
    if bad:
        raise GpuDirectConfigError(
            "kernel_args: %s: each must be one kernel parameter, NAME or NAME=VALUE, without spaces or quotes (e.g. iommu=pt)"
            % ", ".join(repr(arg) for arg in bad)
        )
    if not valid_unit_name(unit):
        raise GpuDirectConfigError("acs_unit: %r must be a unit file name ending in .service, e.g. %s" % (unit, DEFAULT_UNIT))


def redirecting_bits(flags):
    return [bit for bit in ACS_REDIRECT_BITS if (flags or {}).get(bit)]


class GpuDirectConfig:
    """Plan and apply what was asked; ``run`` returns the module result or raises GpuDirectConfigError."""

    def __init__(self, host, runner, acs="keep", acs_scope="gpu_paths", acs_persist=True, iommu="keep",
                 kernel_args=("iommu=pt",), acs_unit=DEFAULT_UNIT):
        validate(acs, acs_scope, iommu, list(kernel_args or []), acs_unit)
        self.host = host
        self.runner = runner
        self.acs = acs
        self.acs_scope = acs_scope
        self.acs_persist = acs_persist
        self.iommu = iommu
        self.kernel_args = [str(arg) for arg in kernel_args]
        self.unit = BootUnit(host, runner, acs_unit)
        self.result = dict(acs=None, iommu=None)

    # -- the whole job -------------------------------------------------------------------------
    def run(self, plan, check_mode):
        reader = GpuDirectReport(self.host, self.runner)
        before = reader.gather()
        acs_targets = self._plan_acs(plan, reader, before) if self.acs == "disable" else None
        iommu_method = self._plan_iommu(plan) if self.iommu == "passthrough" else None
        unit_changed = any(change.key == "unit_file" for change in plan)
        plan.apply(check_mode)
        after = before
        if not check_mode and plan.changed:
            if unit_changed:
                self.unit.daemon_reload()
            reader = GpuDirectReport(self.host, self.runner)
            after = reader.gather()
            self._verify(reader, acs_targets, iommu_method)
        return dict(gpudirect=after, **self.result)

    # -- ACS -----------------------------------------------------------------------------------
    def _bridges_in_scope(self, reader):
        gpus, nics = reader.endpoints
        if self.acs_scope == "all":
            candidates = set(reader.lspci_devices)
        else:
            candidates = set()
            for _bdf, chain in gpus + nics:
                candidates.update(part for part in chain[:-1] if not part.startswith("pci"))
        return sorted(bdf for bdf in candidates if (self.host.read("%s/%s/class" % (PCI_DEVICES, bdf)) or "").startswith(BRIDGE_CLASS))

    def _acs_targets(self, reader):
        targets = []
        for bdf in self._bridges_in_scope(reader):
            device = reader.lspci_devices.get(bdf) or {}
            if redirecting_bits(device.get("acs_cap")):
                targets.append(bdf)
        return targets

    def _plan_acs(self, plan, reader, report):
        acs = report["acs"]
        if acs["status"] == "unknown":
            raise GpuDirectConfigError(
                "acs: disable needs the ACS state, which could not be read: %s" % acs["reason"], gpudirect=report
            )
        if not report["gpus"] and self.acs_scope == "gpu_paths":
            note = "no NVIDIA GPU on this host: no GPU/NIC path to change (acs_scope: all changes every bridge)"
        else:
            note = None
        targets = self._acs_targets(reader)
        setpci = self.runner.find("setpci")
        if targets and setpci is None:
            raise GpuDirectConfigError("setpci is not installed (package pciutils): it is needed to clear ACS on %s" % ", ".join(targets))
        redirecting = {}
        for bdf in targets:
            bits = redirecting_bits(reader.lspci_devices[bdf].get("acs_ctl"))
            if bits:
                redirecting[bdf] = bits
                plan.add("acs:%s" % bdf, bits, [], self._clear_action(bdf),
                         "clear ACS %s on %s (setpci -s %s %s=%s)" % ("/".join(bits), bdf, bdf, ACS_CONTROL, ACS_CLEAR))
        if self.acs_persist:
            text = None
            if targets:
                exec_lines = "\n".join("ExecStart=%s -s %s %s=%s" % (setpci, bdf, ACS_CONTROL, ACS_CLEAR) for bdf in targets)
                text = UNIT_TEMPLATE.format(exec_lines=exec_lines)
            self.unit.plan(plan, text)
        self.result["acs"] = dict(
            scope=self.acs_scope, targets=targets, redirecting_before=redirecting,
            boot_unit=self.unit.path if (self.acs_persist and targets) else None, note=note,
        )
        return targets

    def _clear_action(self, bdf):
        def clear():
            self.runner.run(["setpci", "-s", bdf, "%s=%s" % (ACS_CONTROL, ACS_CLEAR)])
        return clear

    # -- IOMMU ---------------------------------------------------------------------------------
    def _plan_iommu(self, plan):
        running = (self.host.read("/proc/cmdline") or "").split()
        if self.runner.has("grubby"):
            method = self._plan_grubby(plan)
        elif self.host.exists(GRUB_DEFAULT):
            method = self._plan_grub_dropin(plan)
        else:
            raise GpuDirectConfigError(
                "iommu: passthrough: this host has neither grubby nor %s, so this module cannot tell how its kernel "
                "command line is set. Add %s there yourself (systemd-boot: /etc/kernel/cmdline)" % (GRUB_DEFAULT, " ".join(self.kernel_args))
            )
        running_has_args = all(arg in running for arg in self.kernel_args)
        self.result["iommu"] = dict(
            method=method["method"], kernel_args=self.kernel_args, boot_config_before=method["before"],
            missing_before=method["missing"], running_cmdline_has_args=running_has_args,
            reboot_required=not running_has_args,
        )
        return method["method"]

    def _grubby_entries(self):
        """``{kernel: args}`` of every boot entry grubby knows."""
        out = self.runner.run(["grubby", "--info=ALL"]).stdout
        entries, kernel = {}, None
        for line in out.splitlines():
            key, _sep, value = line.partition("=")
            value = value.strip().strip('"')
            if key == "kernel":
                kernel = value
            elif key == "args" and kernel is not None:
                entries[kernel] = value
        return entries

    def _plan_grubby(self, plan):
        entries = self._grubby_entries()
        if not entries:
            raise GpuDirectConfigError("grubby --info=ALL lists no boot entry: cannot add %s" % " ".join(self.kernel_args))
        missing = sorted(set(arg for args in entries.values() for arg in self.kernel_args if arg not in args.split()))
        if missing:
            wanted = " ".join(missing)
            after = dict((kernel, " ".join(args.split() + [a for a in missing if a not in args.split()])) for kernel, args in entries.items())
            plan.add("kernel_args", entries, after,
                     lambda: self.runner.run(["grubby", "--update-kernel=ALL", "--args=%s" % wanted]),
                     "grubby --update-kernel=ALL --args=%s" % shlex.quote(wanted))
        return dict(method="grubby", before=entries, missing=missing)

    def _grub_cmdline(self, without_ours):
        dropins = sorted(self.host.path(p) for p in self._grub_dropins() if not (without_ours and p == GRUB_DROPIN))
        result = self.runner.run(["sh", "-c", GRUB_EVAL, "sh", self.host.path(GRUB_DEFAULT)] + dropins, check=False)
        if result.rc != 0:
            raise GpuDirectConfigError("reading %s failed (sh rc=%d): %s" % (GRUB_DEFAULT, result.rc, (result.stderr or "").strip()))
        return result.stdout.split()

    def _grub_dropins(self):
        return ["%s/%s" % (GRUB_DROPIN_DIR, name) for name in sorted(self.host.listdir(GRUB_DROPIN_DIR)) if name.endswith(".cfg")]

    def _plan_grub_dropin(self, plan):
        generator = "update-grub" if self.runner.has("update-grub") else ("grub-mkconfig" if self.runner.has("grub-mkconfig") else None)
        theirs = self._grub_cmdline(without_ours=True)
        missing = [arg for arg in self.kernel_args if arg not in theirs]
        text = GRUB_TEMPLATE.format(args=" ".join(missing)) if missing else None
        before = read_text(self.host, GRUB_DROPIN)
        if before != text and generator is None:
            raise GpuDirectConfigError("neither update-grub nor grub-mkconfig is installed: %s would not reach the boot loader" % GRUB_DROPIN)

        def write():
            if text is None:
                os.unlink(self.host.path(GRUB_DROPIN))
            else:
                write_atomic(self.host, GRUB_DROPIN, text, mode=0o644, makedirs=True)
            argv = ["update-grub"] if generator == "update-grub" else ["grub-mkconfig", "-o", "/boot/grub/grub.cfg"]
            self.runner.run(argv)

        plan.add("grub_dropin", before, text, write,
                 "%s %s, then %s" % ("write" if text else "remove", GRUB_DROPIN, generator), header=GRUB_DROPIN)
        return dict(method="grub", before=" ".join(theirs), missing=missing)

    # -- re-read -------------------------------------------------------------------------------
    def _verify(self, reader, acs_targets, iommu_method):
        problems = []
        if acs_targets:
            still = dict((bdf, redirecting_bits((reader.lspci_devices.get(bdf) or {}).get("acs_ctl"))) for bdf in acs_targets)
            still = dict((bdf, bits) for bdf, bits in still.items() if bits)
            if still:
                problems.append("ACS still redirects after setpci on %s" % ", ".join("%s (%s)" % (b, "/".join(v)) for b, v in sorted(still.items())))
            self.result["acs"]["redirecting_after"] = still
        if iommu_method == "grubby":
            entries = self._grubby_entries()
            lacking = sorted(k for k, args in entries.items() if not all(a in args.split() for a in self.kernel_args))
            if lacking:
                problems.append("grubby still lists boot entries without %s: %s" % (" ".join(self.kernel_args), ", ".join(lacking)))
            self.result["iommu"]["boot_config_after"] = entries
        elif iommu_method == "grub":
            cmdline = self._grub_cmdline(without_ours=False)
            if not all(arg in cmdline for arg in self.kernel_args):
                problems.append("the GRUB defaults still lack %s after writing %s" % (" ".join(self.kernel_args), GRUB_DROPIN))
            self.result["iommu"]["boot_config_after"] = " ".join(cmdline)
        if problems:
            raise GpuDirectConfigError("after applying: " + "; ".join(problems), **self.result)
