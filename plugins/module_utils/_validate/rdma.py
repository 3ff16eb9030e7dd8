# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's RDMA checks: ib_write_bw against the slower end's link rate, ib_write_lat, and
perftest asked for and not run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import inputs, measure
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import finding, not_checked, tail

_LINK_RATE = re.compile(r"([0-9]{1,6}(?:\.[0-9]{1,6})?) Gb/sec\b")


def _link_gbps(rate):
    """Gb/s from a port's rate as the kernel writes it (``100 Gb/sec (2X HDR)``), or None."""
    match = _LINK_RATE.match(rate or "")
    return float(match.group(1)) if match else None


def _port_rate(hosts, host, device):
    rdma = (hosts.get(host) or {}).get("rdma") or {}
    dev, _sep, num = str(device or "").partition("/")
    port = ((((rdma.get("devices") or {}).get(dev) or {}).get("ports") or {}).get(num or "1")) or {}
    return _link_gbps(port.get("rate"))


def rdma_findings(runs, hosts, intent, min_bw_fraction, unreachable=()):
    """ib_write_bw against ``min_bw_fraction`` of the slower end's link rate; ib_write_lat recorded.
    ``runs`` are ``(host, run)``, the host the client. A pair in ``unreachable`` (its small pings
    failed) is not checked: the reachability finding names the fault. Returns ``(findings,
    measurements, unproven)``: ``unproven`` names each test asked for (``requested``) that gave no
    result on a reachable pair."""
    out = []
    measurements = []
    unproven = []
    for host, run in runs:
        test, peer, device = run.get("test"), run.get("peer"), run.get("device")
        check = "rdma_lat" if test == "ib_write_lat" else "rdma_bw"
        field = "latency_usec" if test == "ib_write_lat" else "bandwidth_gbps"
        why = None
        if frozenset((host, peer)) in unreachable:
            out.append(not_checked(check, host, field, "not measured: %s and %s do not reach each other (see the path's "
                                                       "reachability finding)" % (host, peer), peer=peer, device=device))
            continue
        if test is None:
            why = "the run names no test (ib_write_bw or ib_write_lat)"
        elif run.get("skipped"):
            why = run.get("why") or "not run"
        elif run.get("rc") is None:
            why = "the test's result was not recorded"
        if why is not None:
            out.append(not_checked(check, host, field, why, peer=peer, device=device))
            if run.get("requested"):
                unproven.append("%s %s -> %s asked for (validate_rdma) but not measured: %s" % (test or "perftest", host, peer, why))
            continue
        tos = run.get("tos")
        base = dict(tos=tos, gid_index=run.get("gid_index"), transport="RC over RDMA-CM")
        tries = run.get("attempts")
        tries = tries if isinstance(tries, int) and not isinstance(tries, bool) and tries > 1 else None
        if tries:
            # validate_rdma_attempts: the result took more than one run; its measurement says so
            base["attempts"] = tries
        hint_run = "%s %s -> %s failed (rc %s%s): %s; is rdma_cm loaded on both, and the RoCE v2 GID index right?" % (
            test, host, peer, run.get("rc"), ", after %d attempts" % tries if tries else "", tail(run.get("stderr") or run.get("stdout")))
        unreadable = measure.unreadable_result(run.get("stdout")) if run.get("rc") == 0 else None
        if unreadable is not None:
            # a result row that cannot be read (1.2.3, 400 digits: inf) is no measurement: not checked, never passed
            why = "%s -> %s printed the result row %s" % (test, peer, inputs.describe(unreadable))
            out.append(inputs.unreadable_output(host, "rdma_runs.stdout", inputs.describe(unreadable), why, peer=peer))
            out.append(not_checked(check, host, field, "its result could not be read (see the input finding)", peer=peer, device=device))
            continue
        if test == "ib_write_bw":
            result = measure.parse_write_bw(run.get("stdout")) if run.get("rc") == 0 else None
            rates = [r for r in (_port_rate(hosts, host, device), _port_rate(hosts, peer, run.get("peer_device") or device)) if r]
            link = min(rates) if rates else None
            floor = round(link * min_bw_fraction, 6) if link else None
            if result is None:
                out.append(finding(check, host, "bandwidth_gbps", ">= %s" % floor if floor else "a measurement", "no result", hint_run,
                                   False, peer=peer, device=device))
                continue
            gbps = result["average_gbps"]
            detail = dict(base, link_rate_gbps=link, min_gbps=floor, **result)
            measurements.append(measure.measurement(test, host, "average bandwidth", gbps, "Gb/s", peer=peer, device=device, detail=detail))
            if floor is None:
                out.append(not_checked(check, host, "bandwidth_gbps", "the link rate is unknown: %s Gb/s measured, no threshold" % gbps,
                                       peer=peer, device=device))
            else:
                out.append(finding(check, host, "bandwidth_gbps", ">= %s" % floor, gbps,
                                   "%s Gb/s is below validate_min_bw_fraction %s of the %s Gb/s link: look for PFC pauses, "
                                   "CNPs and out_of_buffer in the counters, and a congested or mis-set switch port" % (
                                       gbps, min_bw_fraction, link), gbps >= floor, peer=peer, device=device))
        else:
            result = measure.parse_write_lat(run.get("stdout")) if run.get("rc") == 0 else None
            if result is None:
                out.append(finding(check, host, "latency_usec", "a measurement", "no result", hint_run, False, peer=peer, device=device))
                continue
            measurements.append(measure.measurement(test, host, "typical latency", result["t_typical"], "usec", peer=peer, device=device,
                                                    detail=dict(base, **result)))
            out.append(finding(check, host, "latency_usec", "a measurement", result["t_typical"], "", True, peer=peer, device=device))
    return out, measurements, unproven
