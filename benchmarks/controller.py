#!/usr/bin/env python
"""What the controller's own work costs for a large fleet, and how it grows: 1,000 against 10,000 hosts.

    .venv/bin/python benchmarks/controller.py [--hosts 1000,10000] [--repeat 3] [--json FILE] [--markdown]

Three parts of a run that work on the whole fleet at once, in the controller's Python process, each
timed over synthetic input built before the clock starts (the input is not what is measured):

rollout      the rollout's planning, as its tasks call it: the policy from the rollout variables
             (the ``roce_rollout`` filter, pool = every host), phase two's waves over every host
             that held something back (``roce_rollout_waves``: half the fleet, 1 % of them drained by
             an interrupted run, 1 % out of service for another reason, rdmaops_max_unavailable 10 %)
             and each wave's gate partners among the hosts rolled out already
             (``roce_rollout_partners``, as the play calls it: every wave at once);
rail_plan    the rails' address plan (the ``roce_rail_plan`` filter) of every host over 8 rails
             (4 shared /17 subnets, 4 pools of /31 links), hosts placed by ``roce_rail_index``;
fabric_check fabric_check's checks (``_validate.verdict.fabric_check``, what the action plugin runs)
             over every host's state as the validate role gathers it on an 8-NIC GPU server: its
             rdma_facts (8 RoCE ports), nic_layer's check-mode QoS of each port, a ping and
             ib_write_bw/ib_write_lat to the next host, and its 8 rails (plan, kernel read, a ping,
             an ARP probe and ib_write_bw per rail, receive counters), the tools' outputs being
             perftest's and ping's recorded ones (tests/unit/fixtures).

For each part it runs the fleet sizes in turn, round after round (at least ``--repeat`` rounds, and
more until ``--min-seconds`` have passed), and prints for each size the least CPU time of its runs
(this process's CPU time, which other work on a shared machine disturbs less than the wall time;
the least is the run it disturbed least; the median and the wall time are printed too), the peak of
memory the part allocated (tracemalloc, in a run of its own: tracing slows the code down), then the
ratio of the largest fleet's CPU time to the smallest's. Linear work gives 10 at 10x the hosts; the
goal is at most 12, and the script exits 1 when a part is above it. Not a timed test: run it by
hand when the planning, the rail plan or fabric_check changes.
"""

from __future__ import print_function

import argparse
import copy
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts the collection on sys.path)

from ansible_collections.rdmaops.roce.plugins.filter.roce_rail_plan import roce_rail_plan  # noqa: E402
from ansible_collections.rdmaops.roce.plugins.filter.roce_rollout import (  # noqa: E402
    roce_rollout,
    roce_rollout_partners,
    roce_rollout_waves,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent  # noqa: E402
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout import policy as policy_module  # noqa: E402
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.verdict import fabric_check  # noqa: E402

FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures")
RAILS = 8
LIMIT = 12.0
FABRIC = dict(rails=[dict(name="rail%d" % r, subnet="10.%d.0.0/17" % (10 + r), netdev="ens%dnp0" % r) for r in range(4)]
              + [dict(name="rail%d" % r, p2p_pool="10.%d.0.0/16" % (10 + r), netdev="ens%dnp0" % r) for r in range(4, RAILS)])


def _fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read()


def host_names(count):
    return ["gpu%05d" % index for index in range(count)]


# rollout ------------------------------------------------------------------------------------------
def rollout_input(count):
    hosts = host_names(count)
    held = hosts[::2]  # half the fleet held something back for phase two
    entries = [[host, "ours" if index % 100 == 1 else ("out" if index % 100 == 2 else "in")] for index, host in enumerate(held)]
    candidates = hosts[1::2]  # the others finished in phase one and stay in service
    return dict(hosts=hosts, entries=entries, candidates=candidates,
                settings=dict(scheduler="slurm", max_unavailable="10%", drain="auto", gate="validate"))


def rollout_run(data):
    policy = roce_rollout(data["settings"], len(data["hosts"]))
    waves = roce_rollout_waves(data["entries"], policy["max_unavailable"], 0)
    if hasattr(policy_module, "gate_partners_all"):
        # the play asks for every wave's partners in one call
        partners = roce_rollout_partners(waves, data["hosts"], data["candidates"])
    else:
        partners = [roce_rollout_partners(wave, data["hosts"], data["candidates"]) for wave in waves]
    return dict(waves=len(waves), hosts=sum(len(wave) for wave in waves), partners=sum(len(p) for p in partners))


# rail plan ----------------------------------------------------------------------------------------
def rail_input(count):
    return dict(fabric=FABRIC, hostvars=dict((host, dict(roce_rail_index=index)) for index, host in enumerate(host_names(count))))


def rail_run(data):
    plan = roce_rail_plan(data["fabric"], data["hostvars"])
    return dict(hosts=len(plan), entries=sum(len(entries) for entries in plan.values()))


# fabric_check -------------------------------------------------------------------------------------
def _gid(address):
    return "00:00:00:00:00:00:00:00:00:00:255:255:" + ":".join("%02d" % int(part) for part in address.split("."))


def fabric_input(count):
    intent = resolve_intent({})
    names = host_names(count)
    plan = roce_rail_plan(FABRIC, dict((host, dict(roce_rail_index=index)) for index, host in enumerate(names)))
    ping_ok, bw, lat = _fixture("perftest", "ping_ok.txt"), _fixture("perftest", "ib_write_bw.txt"), _fixture("perftest", "ib_write_lat.txt")
    rail_ping = _fixture("rails", "ping_rail2.txt")
    rail_bw = _fixture("rails", "ib_write_bw_rail2_rxe1.txt")
    local_gid, remote_gid = "00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:21", "00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:22"
    netdevs = ["ens%dnp0" % r for r in range(RAILS)]
    rdma = dict(
        devices=dict(("mlx5_%d" % r, dict(fw_ver="28.39.1002", ports={"1": dict(
            state="ACTIVE", link_layer="Ethernet", netdev=netdevs[r], max_mtu=4096, active_mtu=4096, roce_v2_ipv4_gid_index=3,
            rate="400 Gb/sec (4X NDR)")})) for r in range(RAILS)),
        netdevs=dict((name, dict(mtu=intent["host_mtu"])) for name in netdevs),
        modules=dict(rdma_cm=True, ib_uverbs=True, nvidia_peermem=True),
        gpus=[dict(pci="0000:%02x:00.0" % (0x18 + r)) for r in range(RAILS)],
        stack=dict(flavor="doca", version="2.9.1", kernel="6.1.0-28-amd64"))
    nic = [dict(device="mlx5_%d" % r, port=1,
                qos=dict(before=dict(trust=intent["trust"], pfc=list(intent["pfc_priorities"]), dscp2prio={})),
                ecn=dict(supported=True, before=dict(np=dict(enabled=list(intent["ecn_priorities"]), cnp_dscp=intent["cnp_dscp"],
                                                             cnp_802p_prio=intent["cnp_priority"]),
                                                     rp=dict(enabled=list(intent["ecn_priorities"])))),
                tos=dict(before=dict(tos=intent["roce_tos"], roce_mode="v2"))) for r in range(RAILS)]
    hosts = {}
    for index, host in enumerate(names):
        peer = names[(index + 1) % count]
        links = [dict(entry, interface=netdevs[r]) for r, entry in enumerate(plan[host])]
        peer_links = plan[peer]
        for link in links:
            for key in ("family", "kind", "cidr", "netdev"):
                link.pop(key, None)
        read = dict((link["interface"], dict(
            addresses=["%s/%s" % (link["address"], link["prefix"])],
            routes=["%s table %s" % (link["network"], link["table"]), "default via %s table %s" % (link["gateway"], link["table"])],
            rules=["%s from %s lookup %s" % (link["rule_priority"], link["address"], link["table"])],
            sysctls=dict(arp_announce=2, arp_ignore=1, rp_filter=2))) for link in links)
        rails = dict(
            links=links, read=read,
            pings=[dict(item=[[host, peer], link], cmd=["ping", "-c", "2", "-W", "3", "-I", link["address"], peer_links[r]["address"]],
                        rc=0, stdout=rail_ping) for r, link in enumerate(links)],
            rx=dict(before="".join("%s %d\n" % (name, 1000) for name in netdevs),
                    after="".join("%s %d\n" % (name, 1002) for name in netdevs)),
            arp=[dict(item=[host, peer], cmd=["sh", "-c", "script", "sh", netdevs[0]] + [entry["address"] for entry in peer_links[1:]],
                      rc=0, stdout="".join("== %s\n" % entry["address"] for entry in peer_links[1:]))],
            rdma=[dict(item=[0, r], cmd=["timeout", "120", "ib_write_bw", "-d", "mlx5_%d" % r, "-x", "3", "--report_gbits",
                                         peer_links[r]["address"]], rc=0,
                       stdout=rail_bw.replace("rxe1", "mlx5_%d" % r).replace(local_gid, _gid(link["address"]))
                       .replace(remote_gid, _gid(peer_links[r]["address"]))) for r, link in enumerate(links)])
        hosts[host] = dict(
            rdma=copy.deepcopy(rdma), nic=copy.deepcopy(nic),
            pings=[dict(peer=peer, address=peer_links[0]["address"], size=intent["host_mtu"] - 28, rc=0, stdout=ping_ok, stderr="")],
            rdma_runs=[dict(test=test, peer=peer, device="mlx5_0/1", peer_device="mlx5_0/1", gid_index=3, tos=intent["roce_tos"], rc=0,
                            stdout=out, stderr="") for test, out in (("ib_write_bw", bw), ("ib_write_lat", lat))],
            rails=rails)
    return dict(intent=intent, hosts=hosts)


def fabric_run(data):
    result = fabric_check(data["intent"], data["hosts"], switches={}, min_bw_fraction=0.00001)
    return dict(findings=len(result["findings"]), checked=result["summary"]["checked"], failed=result["summary"]["failed"],
                not_checked=result["summary"]["not_checked"])


PARTS = (("rollout", rollout_input, rollout_run), ("rail_plan", rail_input, rail_run), ("fabric_check", fabric_input, fabric_run))


def _timed(run, data):
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    summary = run(data)
    return time.process_time() - start_cpu, time.perf_counter() - start, summary


def measure(part, make, run, counts, repeat, min_seconds, trace=True):
    """Rows for one part: the sizes' runs alternate (a load that comes and goes on a shared machine
    then weighs on each size alike), at least ``repeat`` rounds and ``min_seconds`` of them; the
    least CPU time of each size is kept (the run the machine disturbed least), the median shown too."""
    inputs = dict((count, make(count)) for count in counts)
    cpu = dict((count, []) for count in counts)
    wall = dict((count, []) for count in counts)
    summary = {}
    began = time.perf_counter()
    rounds = 0
    while rounds < repeat or time.perf_counter() - began < min_seconds:
        rounds += 1
        for count in counts:
            used, took, summary[count] = _timed(run, inputs[count])
            cpu[count].append(used)
            wall[count].append(took)
    rows = []
    for count in counts:
        peak = None
        if trace:
            gc.collect()
            tracemalloc.start()
            run(inputs[count])
            _current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        row = dict(part=part, hosts=count, runs=rounds, seconds=round(min(cpu[count]), 4),
                   median_seconds=round(statistics.median(cpu[count]), 4), wall_seconds=round(statistics.median(wall[count]), 4),
                   peak_mib=round(peak / 1048576.0, 1) if peak is not None else None, summary=summary[count])
        print("%-12s %6d hosts  CPU %9.3f s (least of %d; median %.3f)  wall %9.3f s  peak %s MiB  %s" % (
            part, count, row["seconds"], rounds, row["median_seconds"], row["wall_seconds"], row["peak_mib"],
            json.dumps(summary[count])), file=sys.stderr)
        rows.append(row)
    del inputs
    gc.collect()
    return rows


def markdown(rows, counts):
    small, large = counts[0], counts[-1]
    lines = ["| part (CPU time, least of the runs) | %s | ratio %s/%s | peak memory at %s |" % (
        " | ".join("%s hosts" % format(count, ",") for count in counts), format(large, ","), format(small, ","), format(large, ",")),
        "|---|" + "---:|" * (len(counts) + 2)]
    for part, _make, _run in PARTS:
        by = dict((row["hosts"], row) for row in rows if row["part"] == part)
        if not all(count in by for count in counts):
            continue
        lines.append("| %s | %s | %.1f | %s |" % (
            part, " | ".join("%.3f s" % by[count]["seconds"] for count in counts), by[large]["seconds"] / by[small]["seconds"],
            "%.1f MiB" % by[large]["peak_mib"] if by[large]["peak_mib"] is not None else "not traced"))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="1000,10000", help="fleet sizes, comma-separated (default 1000,10000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per part and size, at least (the median is kept)")
    parser.add_argument("--min-seconds", type=float, default=2.0,
                        help="and more runs until this much time has passed, so that a short part is timed often enough")
    parser.add_argument("--part", action="append", choices=[part for part, _make, _run in PARTS], help="only this part (repeatable)")
    parser.add_argument("--no-trace", action="store_true", help="leave out the traced run that measures the peak memory "
                        "(it is slower than the timed runs: a busy machine may not have the time)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args()
    assert os.path.isdir(conftest.COLLECTIONS_ROOT)
    counts = sorted(int(text) for text in args.hosts.split(","))
    rows = []
    for part, make, run in PARTS:
        if args.part and part not in args.part:
            continue
        rows.extend(measure(part, make, run, counts, args.repeat, args.min_seconds, trace=not args.no_trace))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1, sort_keys=True)
    print(markdown(rows, counts) if args.markdown else "\n".join(json.dumps(row, sort_keys=True) for row in rows))
    worst = 0.0
    for part, _make, _run in PARTS:
        by = dict((row["hosts"], row["seconds"]) for row in rows if row["part"] == part)
        if len(counts) > 1 and counts[0] in by and counts[-1] in by and by[counts[0]] > 0:
            ratio = by[counts[-1]] / by[counts[0]] / (counts[-1] / float(counts[0])) * 10.0
            worst = max(worst, ratio)
            if ratio > LIMIT:
                print("%s: %.1fx the time for 10x the hosts (the goal: at most %.0fx)" % (part, ratio, LIMIT), file=sys.stderr)
    return 1 if worst > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
