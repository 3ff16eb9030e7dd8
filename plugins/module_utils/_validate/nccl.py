# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's NCCL check: nccl-tests used the RDMA NICs (NET/IB) and GPUDirect RDMA."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import finding, not_checked


def nccl_findings(runs):
    """nccl-tests all_reduce_perf: NCCL's log must show the IB/RoCE transport and GPUDirect RDMA.
    ``runs`` are ``(host, run)``."""
    out = []
    for host, run in runs:
        if run.get("skipped"):
            out.append(not_checked("nccl", host, "all_reduce_perf", run.get("why") or "not run"))
            continue
        if run.get("rc") is None:
            out.append(not_checked("nccl", host, "all_reduce_perf", "the run's result was not recorded"))
            continue
        log = run.get("stdout") or ""
        out.append(finding("nccl", host, "transport", "NET/IB", "NET/IB" if "NET/IB" in log else "no NET/IB in NCCL's log",
                           "NCCL did not use the RDMA NICs: check NCCL_IB_HCA and NCCL_IB_GID_INDEX (/etc/nccl.conf)",
                           run["rc"] == 0 and "NET/IB" in log))
        gdr = "GDRDMA" in log or "GPU Direct RDMA Enabled" in log
        out.append(finding("nccl", host, "gpudirect", "GPUDirect RDMA", "enabled" if gdr else "not in NCCL's log",
                           "load nvidia_peermem (rdmaops.roce.peermem) and keep GPU and NIC under one PCIe switch", gdr))
    return out
