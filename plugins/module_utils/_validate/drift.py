# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's fleet drift: the driver stack, firmware and kernel that most hosts run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import Counter

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import finding, not_checked


def _drift_values(rdma):
    stack = rdma.get("stack") or {}
    firmware = sorted(set(dev["fw_ver"] for dev in (rdma.get("devices") or {}).values() if dev and dev.get("fw_ver")))
    return dict(stack_version="%s %s" % (stack.get("flavor"), stack.get("version")) if stack.get("flavor") and stack.get("version")
                else stack.get("flavor"),
                firmware=", ".join(firmware) or None,
                kernel=stack.get("kernel"))


def drift_findings(hosts):
    """Hosts that differ from the fleet's majority in stack version, firmware or kernel. A host
    whose value is unknown (Soft-RoCE has no firmware) is not checked for that field; with no
    majority (a tie), every host is named so the reader sees the split."""
    values = {}
    for host in sorted(hosts):
        rdma = (hosts[host] or {}).get("rdma")
        if rdma and "devices" in rdma:
            values[host] = _drift_values(rdma)
    out = []
    hints = dict(stack_version="install the same driver stack everywhere (rdmaops.roce.ofed, ofed_version)",
                 firmware="update the NIC firmware to the fleet's version (mlxfwmanager / the vendor's bundle)",
                 kernel="boot the fleet's kernel (the driver stack is built per kernel)")
    for field in ("stack_version", "firmware", "kernel"):
        known = dict((host, v[field]) for host, v in values.items() if v[field] is not None)
        counts = Counter(known.values()).most_common()
        majority = counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else None
        for host in sorted(values):
            if host not in known:
                out.append(not_checked("drift", host, field, "%s unknown on this host" % field.replace("_", " ")))
            elif majority is None:
                split = "; ".join("%s on %d host(s)" % (value, count) for value, count in counts)
                out.append(finding("drift", host, field, "one value across the fleet", known[host],
                                   "no majority (%s): %s" % (split, hints[field]), False))
            else:
                out.append(finding("drift", host, field, majority, known[host],
                                   "differs from the fleet's majority: %s" % hints[field], known[host] == majority))
    return out
