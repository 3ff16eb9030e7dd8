"""Prove the RDMA-CM default ToS on the wire: RoCEv2 packets between two lab VMs, captured on the
lab's switch (the fabric bridge in the lab's network namespace), must carry the intent's ToS in
both directions.

    python3 tests/lab/tos_on_wire.py vm1 vm2 --tos 106

ib_write_bw runs over RDMA-CM (-R) *without* -T, so each side's QP takes the default ToS that
rdmaops.roce.roce_tos / nic_layer wrote to /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos
(or that the boot re-apply wrote again). tcpdump runs on the host, in the lab's namespace, on
UDP port 4791 (RoCEv2). Exit 0 when every captured packet from each VM carries the ToS, 1 when
not (with what was seen), 2 when nothing could be captured.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = [sys.executable, os.path.join(HERE, "lab.py")]
ROCE_V2_PORT = 4791
PERFTEST_PORT = 18515  # perftest's default TCP port, which its RDMA-CM ID listens on
# tcpdump -v (tests/unit/fixtures/tools/tcpdump): "12:56:15.922002 IP (tos 0x6a,ECT(0), ttl 64, ...)"
# and, on the next line, "    198.18.9.1.49152 > 198.18.9.2.4791: "
HEADER = re.compile(r"\bIP \(tos (0x[0-9a-f]+)")
ADDRESSES = re.compile(r"^\s+(\d+\.\d+\.\d+\.\d+)\.\d+ > (\d+\.\d+\.\d+\.\d+)\.(\d+):")


def parse_capture(text):
    """``{source address: {tos: packets}}`` of the RoCEv2 packets in tcpdump -nn -v output."""
    seen = {}
    tos = None
    for line in text.splitlines():
        header = HEADER.search(line)
        if header:
            tos = int(header.group(1), 16)
            continue
        addresses = ADDRESSES.match(line)
        if addresses and tos is not None and int(addresses.group(3)) == ROCE_V2_PORT:
            counts = seen.setdefault(addresses.group(1), {})
            counts[tos] = counts.get(tos, 0) + 1
        tos = None
    return seen


def judge(seen, addresses, tos):
    """``(ok, lines)``: every packet from each address carries ``tos``."""
    lines, ok = [], True
    for name, address in sorted(addresses.items()):
        counts = seen.get(address, {})
        if not counts:
            ok = False
            lines.append("%s (%s): no RoCEv2 packet captured" % (name, address))
            continue
        wrong = dict((value, n) for value, n in counts.items() if value != tos)
        if wrong:
            ok = False
        described = []
        for value, n in sorted(counts.items()):
            note = "" if value == tos else " - expected 0x%02x" % tos
            described.append("%d packet(s) with tos 0x%02x (DSCP %d, ECN %d)%s" % (n, value, value >> 2, value & 3, note))
        lines.append("%s (%s): %s" % (name, address, ", ".join(described)))
    return ok, lines


def listening(cm_ids, device, port):
    """``rdma -j res show cm_id`` output (JSON text): does an RDMA-CM ID listen on ``device`` at ``port``?"""
    try:
        ids = json.loads(cm_ids or "[]")
    except ValueError:
        return False
    if not isinstance(ids, list):
        return False
    return any(isinstance(one, dict) and one.get("ifname") == device and one.get("state") == "LISTEN"
               and str(one.get("src-addr", "")).endswith(":%d" % port) for one in ids)


def wait_listening(vm, device, port, seconds=30):
    """Poll ``vm`` until its perftest server listens; the seconds it took, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if listening(ssh(vm, "rdma -j res show cm_id").stdout, device, port):
            return time.monotonic() - t0
        time.sleep(0.5)
    return None


def intent_tos(path):
    """The ToS the collection derives from the ``roce_fabric`` of a group_vars file."""
    import yaml

    # scripts/lib/bootstrap.sh links this checkout as build/collections/ansible_collections/rdmaops/roce
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "collections"))
    from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent

    with open(path) as handle:
        return resolve_intent((yaml.safe_load(handle) or {}).get("roce_fabric") or {})["roce_tos"]


def lab_status():
    return json.loads(subprocess.run(LAB + ["status", "--json", "--no-fabric"], check=True, capture_output=True, text=True).stdout)


def ssh(vm, command, **kwargs):
    return subprocess.run(LAB + ["ssh", vm, command], check=False, capture_output=True, text=True, **kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("client")
    parser.add_argument("server")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--tos", type=int, help="the ToS byte expected")
    which.add_argument("--intent", help="a group_vars file whose roce_fabric gives the ToS (resolved by the collection)")
    parser.add_argument("--device", default="rxe0")
    args = parser.parse_args(argv)

    if args.intent:
        args.tos = intent_tos(args.intent)
    status = lab_status()
    addresses = dict((vm, status["vms"][vm]["fabric_address"].split("/")[0]) for vm in (args.client, args.server))
    capture = subprocess.Popen(
        ["timeout", "60", "ip", "netns", "exec", status["netns"], "tcpdump", "-i", status["bridge"], "-nn", "-v",
         "-l", "-c", "40", "udp", "port", str(ROCE_V2_PORT)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # tcpdump is listening before the first packet
    bw = ["ib_write_bw", "-d", args.device, "-R", "-D", "2"]  # no -T: the RDMA-CM default ToS applies
    server = subprocess.Popen(LAB + ["ssh", args.server, "timeout 60 " + " ".join(bw)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The client connects only once the server listens: a connection request that finds no
    # listener is answered by the server's kernel with a CM reject that carries ToS 0, whatever
    # default_roce_tos says (captured in the lab: tests/unit/fixtures/tools/tcpdump/udp4791-rej-
    # no-listener.txt), and a VM just rebooted starts its server late.
    if wait_listening(args.server, args.device, PERFTEST_PORT) is None:
        server.kill()
        capture.kill()
        print("ib_write_bw on %s did not listen on %s port %d within 30 s (rdma res show cm_id)" % (args.server, args.device, PERFTEST_PORT))
        return 2
    client = None
    for _attempt in range(10):
        time.sleep(1)
        client = ssh(args.client, " ".join(bw + [addresses[args.server]]), timeout=90)
        if client.returncode == 0:
            break
    server.communicate(timeout=90)
    out, err = capture.communicate(timeout=90)
    if client is None or client.returncode != 0:
        print("ib_write_bw %s -> %s failed: %s" % (args.client, args.server,
                                                   (client.stderr or client.stdout).strip()[-400:] if client else "not run"))
        return 2
    seen = parse_capture(out)
    if not seen:
        print("no RoCEv2 packet captured on %s in %s: %s" % (status["bridge"], status["netns"], err.strip()[-400:]))
        return 2
    ok, lines = judge(seen, addresses, args.tos)
    print("RoCEv2 over RDMA-CM (default ToS), captured on the lab switch:")
    print("\n".join("  " + line for line in lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
