# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate role's results matched to the pairs they belong to, on the controller.

The role runs the commands (:mod:`.commands`) and registers their results; these functions read
them back for the next steps and for fabric_check.  ``vars_of`` maps each host name to its
variables (``validate_ports``, ``validate_pings``, ``validate_peer_evidence``, ``validate_state``);
a host without one of them ran no such step.  The filters roce_validate_failed_senders,
roce_validate_unreachable_pairs, roce_validate_ping_records, roce_validate_rdma_records,
roce_validate_hosts and roce_validate_summary call them.

* :func:`failed_senders` and :func:`unreachable_pairs`: the path checks whose small pings were not
  answered (the script prints ``== NONCE small rc=0`` for those that were).
* :func:`ping_records` and :func:`rdma_records`: one host's path checks and perftest clients, as
  fabric_check reads them.
* :func:`collected` and :func:`summary`: every host's state for fabric_check, and its verdict in
  one line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._validate.commands import PING_HEADERS, first_port, host_vars, peer_address, ports
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.plan import PERFTEST_TOOLS


def _answered(nonce):
    return "== %s small rc=0" % nonce


def _failed(vars_of, batch, nonce):
    """``(sender, peer)`` for each path check of ``batch`` whose small pings were not answered, in order."""
    for sender in batch:
        for result in host_vars(vars_of, sender).get("validate_pings") or []:
            if "item" in result and "stdout" in result and _answered(nonce) not in result["stdout"].splitlines():
                yield sender, result["item"][1]


def failed_senders(vars_of, batch, host, nonce):
    """The hosts of ``batch`` whose small pings to ``host`` were not answered, once per path check."""
    return [sender for sender, peer in _failed(vars_of, batch, nonce) if peer == host]


def unreachable_pairs(vars_of, batch, nonce):
    """The pairs (each sorted, each once) whose path check's small pings were not answered."""
    pairs = []
    for sender, peer in _failed(vars_of, batch, nonce):
        pair = sorted([sender, peer])
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def _port_name(port):
    return "%s/%s" % (port["device"], port["port"])


def ping_records(host, vars_of, host_mtu, nonce):
    """``host``'s path checks (its ``validate_pings``), each with what fabric_check reads beside it:
    the addresses and netdevs of both ends, the ping size, and the far end's evidence (its
    ``validate_peer_evidence`` read for ``host``)."""
    own = first_port(vars_of, host)
    records = []
    for result in host_vars(vars_of, host).get("validate_pings") or []:
        peer = result["item"][1]
        evidence = (host_vars(vars_of, peer).get("validate_peer_evidence") or {}).get("results") or []
        far = [read["stdout"] for read in evidence if read.get("item") == host and "stdout" in read]
        records.append({"host": host, "peer": peer, "address": peer_address(vars_of, peer), "size": host_mtu - PING_HEADERS,
                        "rc": result.get("rc"), "stdout": result.get("stdout", ""), "stderr": result.get("stderr", ""),
                        "skipped": result.get("skipped", False), "why": "no RDMA address on %s" % host,
                        "source": (own.get("ipv4") or [None])[0], "netdev": own.get("netdev"),
                        "peer_netdev": first_port(vars_of, peer).get("netdev"),
                        "peer_evidence": far[0] if far else None, "nonce": nonce})
    return records


def rdma_records(pairs, host, vars_of, unreachable, roce_tos, run, why, requested):
    """One record per perftest (ib_write_bw, then ib_write_lat) and pair of ``pairs`` (the RDMA pairs)
    ``host`` is the client of: its client's result (``validate_clients``, the loop's results, each
    ``item`` ``[test, pair index]``), the devices of both ends, and whether and why it was skipped
    (``run`` and ``why``: the host's measurement plan; a pair in ``unreachable`` is not tested)."""
    own = ports(vars_of, host)
    clients = (host_vars(vars_of, host).get("validate_clients") or {}).get("results") or []
    records = []
    for test in PERFTEST_TOOLS:
        for index, pair in enumerate(pairs):
            if pair[0] != host:
                continue
            found = [client for client in clients if client["item"][0] == test and client["item"][1] == index]
            result = found[0] if found else {}
            server = ports(vars_of, pair[1])
            records.append({"test": test, "host": pair[0], "peer": pair[1],
                            "device": _port_name(own[0]) if own else None,
                            "peer_device": _port_name(server[0]) if server else None,
                            "gid_index": own[0]["gid_index"] if own else None, "tos": roce_tos,
                            "rc": result.get("rc"), "stdout": result.get("stdout", ""), "stderr": result.get("stderr", ""),
                            "attempts": result.get("attempts"),
                            "skipped": not run or sorted(pair) in unreachable,
                            "why": why if not run else "the pair does not reach each other",
                            "requested": requested})
    return records


def collected(vars_of, names):
    """``{name: its validate_state}`` for each of ``names``; None for a host that has none (it was
    unreachable or failed before the role collected it)."""
    return dict((name, host_vars(vars_of, name).get("validate_state")) for name in names)


def _text(value):
    """``value`` as a template writes it: None as nothing."""
    return "" if value is None else "%s" % (value,)


def summary(result):
    """fabric_check's ``result`` in one line: the verdict, the counts, what is not proven, each
    perftest measurement and the report's path."""
    counts = result["summary"]
    if result["passed"]:
        verdict = "PASSED"
    else:
        verdict = "FAILED" if counts["failed"] else "NOT PROVEN"
    hosts = " (%s)" % ", ".join(counts["failed_hosts"]) if counts["failed"] else ""
    unproven = "not proven: %s; " % "; ".join(counts["unproven"]) if counts["unproven"] else ""
    measured = "".join("%s %s -> %s %s %s; " % tuple(_text(m[key]) for key in ("kind", "host", "peer", "value", "unit"))
                       for m in result["measurements"] if m["kind"] in PERFTEST_TOOLS)
    return "fabric %s: %s checks passed, %s failed%s, %s not checked; %s %sreport %s" % (
        verdict, counts["checked"] - counts["failed"], counts["failed"], hosts, counts["not_checked"], unproven, measured,
        result["report_path"])
