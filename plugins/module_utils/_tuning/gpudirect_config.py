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
  Arguments already there are not added again: the files are read in the order grub-mkconfig
  sources them, by :mod:`grub_defaults`, which reads their assignments as data and never runs
  them (check mode included).  ``reboot_required`` says whether the running kernel lacks them.

Files (the unit, the drop-in) are planned through ``Plan.file``: one without our marker is
refused unless ``adopt``.  When ``update-grub`` fails, the changes are rolled back (the drop-in
first of all), so the next run tries again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import read_text
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import (
    InputError,
    RdmaopsError,
    RefusedError,
    VerifyError,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import BootUnit, valid_unit_name
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import LINK_RESET, REBOOT
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import FILE_NAME, full_match
from ansible_collections.rdmaops.roce.plugins.module_utils._host.gpudirect import ACS_REDIRECT_BITS, GpuDirectReport
from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import PCI_DEVICES
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.grub_defaults import read_defaults

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
# Matched against the whole argument (fullmatch): "$" would also accept one ending in a newline.
_KERNEL_ARG = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*(=[A-Za-z0-9_.,:/+-]+)?")

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


def validate(acs, acs_scope, iommu, kernel_args, unit):
    """Raise InputError for arguments that make no sense, before the host is read."""
    if acs not in ACS_MODES:
        raise InputError("acs must be one of %s, got %r" % (", ".join(ACS_MODES), acs), option="acs")
    if acs_scope not in ACS_SCOPES:
        raise InputError("acs_scope must be one of %s, got %r" % (", ".join(ACS_SCOPES), acs_scope), option="acs_scope")
    if iommu not in IOMMU_MODES:
        raise InputError("iommu must be one of %s, got %r" % (", ".join(IOMMU_MODES), iommu), option="iommu")
    if iommu == "passthrough" and not kernel_args:
        raise InputError("kernel_args is empty: give the arguments that put the IOMMU in pass-through, e.g. [iommu=pt]",
                         option="kernel_args")
    bad = [arg for arg in kernel_args or [] if not full_match(_KERNEL_ARG, str(arg))]
    if bad:
        raise InputError(
            "kernel_args: %s: each must be one kernel parameter, NAME or NAME=VALUE, without spaces or quotes and not "
            "starting with '-' (e.g. iommu=pt)" % ", ".join(repr(arg) for arg in bad),
            option="kernel_args",
        )
    if not valid_unit_name(unit) or not full_match(FILE_NAME, unit):
        raise InputError("acs_unit: %r must be a unit file name ending in .service, e.g. %s" % (unit, DEFAULT_UNIT),
                         option="acs_unit")


def redirecting_bits(flags):
    return [bit for bit in ACS_REDIRECT_BITS if (flags or {}).get(bit)]


class GpuDirectConfig(Engine):
    """``rdmaops.roce.gpudirect_config``: what was asked of ACS and the IOMMU, nothing else."""

    def __init__(self, ctx, params):
        super(GpuDirectConfig, self).__init__(ctx, params)
        self.acs = params.get("acs") or "keep"
        self.acs_scope = params.get("acs_scope") or "gpu_paths"
        self.acs_persist = params.get("acs_persist", True)
        self.iommu = params.get("iommu") or "keep"
        kernel_args = params.get("kernel_args")
        self.kernel_args = [str(arg) for arg in (["iommu=pt"] if kernel_args is None else kernel_args)]
        self.acs_unit = params.get("acs_unit") or DEFAULT_UNIT
        self.adopt = bool(params.get("adopt"))
        self.unit = None
        self.reader = None
        self.before = None
        self.after = None
        self.acs_targets = None
        self.iommu_method = None
        self.outcome = dict(acs=None, iommu=None)

    # -- the engine steps -----------------------------------------------------------------------
    def validate(self):
        validate(self.acs, self.acs_scope, self.iommu, self.kernel_args, self.acs_unit)
        self.unit = BootUnit(self.host, self.runner, self.acs_unit, adopt=self.adopt)

    def read(self):
        self.reader = GpuDirectReport(self.host, self.runner)
        self.before = self.reader.gather()

    def plan(self, plan):
        if self.acs == "disable":
            self.acs_targets = self._plan_acs(plan, self.reader, self.before)
        if self.iommu == "passthrough":
            self.iommu_method = self._plan_iommu(plan)

    def verify(self):
        reader = GpuDirectReport(self.host, self.runner)
        self.after = reader.gather()
        self._verify(reader, self.acs_targets, self.iommu_method)
        return []

    def result(self):
        return dict(gpudirect=self.after if self.after is not None else self.before, **self.outcome)

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
            raise RefusedError("acs: disable needs the ACS state, which could not be read: %s" % acs["reason"], gpudirect=report)
        if not report["gpus"] and self.acs_scope == "gpu_paths":
            note = "no NVIDIA GPU on this host: no GPU/NIC path to change (acs_scope: all changes every bridge)"
        else:
            note = None
        targets = self._acs_targets(reader)
        setpci = self.runner.find("setpci")
        if targets and setpci is None:
            raise RefusedError("setpci is not installed (package pciutils): it is needed to clear ACS on %s" % ", ".join(targets),
                               tool="setpci")
        redirecting = {}
        for bdf in targets:
            bits = redirecting_bits(reader.lspci_devices[bdf].get("acs_ctl"))
            if bits:
                redirecting[bdf] = bits
                # No undo: setting redirection again under a running GPU workload is not a safe step back.
                # Peer-to-peer DMA in flight is routed differently from one TLP to the next: not
                # something to do under a running GPUDirect job, so it is classed with a link reset.
                plan.add("acs:%s" % bdf, bits, [], self._clear_action(bdf),
                         "clear ACS %s on %s (setpci -s %s %s=%s)" % ("/".join(bits), bdf, bdf, ACS_CONTROL, ACS_CLEAR),
                         disruption=LINK_RESET)
        if self.acs_persist:
            text = None
            if targets:
                exec_lines = "\n".join("ExecStart=%s -s %s %s=%s" % (setpci, bdf, ACS_CONTROL, ACS_CLEAR) for bdf in targets)
                text = UNIT_TEMPLATE.format(exec_lines=exec_lines)
            before = len(plan)
            self.unit.plan(plan, text)
            if any(change.key == "unit_file" for change in list(plan)[before:]):
                plan.then("systemctl daemon-reload", self.unit.daemon_reload)
        self.outcome["acs"] = dict(
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
            raise RefusedError(
                "iommu: passthrough: this host has neither grubby nor %s, so this module cannot tell how its kernel "
                "command line is set. Add %s there yourself (systemd-boot: /etc/kernel/cmdline)" % (GRUB_DEFAULT, " ".join(self.kernel_args))
            )
        running_has_args = all(arg in running for arg in self.kernel_args)
        self.outcome["iommu"] = dict(
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
            raise RdmaopsError("grubby --info=ALL lists no boot entry: cannot add %s" % " ".join(self.kernel_args))
        missing = sorted(set(arg for args in entries.values() for arg in self.kernel_args if arg not in args.split()))
        if missing:
            wanted = " ".join(missing)
            after = dict((kernel, " ".join(args.split() + [a for a in missing if a not in args.split()])) for kernel, args in entries.items())
            # No undo: grubby --remove-args could also remove arguments the entries had before.
            plan.add("kernel_args", entries, after,
                     lambda: self.runner.run(["grubby", "--update-kernel=ALL", "--args=%s" % wanted]),
                     "grubby --update-kernel=ALL --args=%s" % shlex.quote(wanted), disruption=REBOOT)
        return dict(method="grubby", before=entries, missing=missing)

    def _grub_cmdline(self, without_ours):
        """The command line the GRUB defaults give, read as data (nothing in them runs)."""
        defaults, _read = read_defaults(self.host, GRUB_DEFAULT, GRUB_DROPIN_DIR, skip=(GRUB_DROPIN,) if without_ours else ())
        for note in defaults.notes():
            self.ctx.warn(note)
        return defaults.cmdline()

    def _plan_grub_dropin(self, plan):
        generator = "update-grub" if self.runner.has("update-grub") else ("grub-mkconfig" if self.runner.has("grub-mkconfig") else None)
        theirs = self._grub_cmdline(without_ours=True)
        missing = [arg for arg in self.kernel_args if arg not in theirs]
        text = GRUB_TEMPLATE.format(args=" ".join(missing)) if missing else None
        before = read_text(self.host, GRUB_DROPIN)
        if before != text and generator is None:
            raise RefusedError("neither update-grub nor grub-mkconfig is installed: %s would not reach the boot loader" % GRUB_DROPIN)
        argv = ["update-grub"] if generator == "update-grub" else ["grub-mkconfig", "-o", "/boot/grub/grub.cfg"]
        # Kernel arguments take effect at the next boot: the change needs one.
        if plan.file(self.host, GRUB_DROPIN, text, mode=0o644, key="grub_dropin", adopt=self.adopt, option=None,
                     description="%s %s" % ("write" if text else "remove", GRUB_DROPIN), disruption=REBOOT):
            # A failing update-grub puts the drop-in back, so the next run tries again.
            plan.then(" ".join(argv), lambda: self.runner.run(argv), validates=True, disruption=REBOOT)
        return dict(method="grub", before=" ".join(theirs), missing=missing)

    # -- re-read -------------------------------------------------------------------------------
    def _verify(self, reader, acs_targets, iommu_method):
        problems = []
        if acs_targets:
            still = dict((bdf, redirecting_bits((reader.lspci_devices.get(bdf) or {}).get("acs_ctl"))) for bdf in acs_targets)
            still = dict((bdf, bits) for bdf, bits in still.items() if bits)
            if still:
                problems.append("ACS still redirects after setpci on %s" % ", ".join("%s (%s)" % (b, "/".join(v)) for b, v in sorted(still.items())))
            self.outcome["acs"]["redirecting_after"] = still
        if iommu_method == "grubby":
            entries = self._grubby_entries()
            lacking = sorted(k for k, args in entries.items() if not all(a in args.split() for a in self.kernel_args))
            if lacking:
                problems.append("grubby still lists boot entries without %s: %s" % (" ".join(self.kernel_args), ", ".join(lacking)))
            self.outcome["iommu"]["boot_config_after"] = entries
        elif iommu_method == "grub":
            cmdline = self._grub_cmdline(without_ours=False)
            if not all(arg in cmdline for arg in self.kernel_args):
                problems.append("the GRUB defaults still lack %s after writing %s" % (" ".join(self.kernel_args), GRUB_DROPIN))
            self.outcome["iommu"]["boot_config_after"] = " ".join(cmdline)
        if problems:
            raise VerifyError("after applying: " + "; ".join(problems), **self.outcome)
