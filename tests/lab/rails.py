"""Prove the lab's two rails (issue 24, docs/multirail.md) on the wire, against a running two-rail lab.

    python3 tests/lab/rails.py flux                      # a fresh lab, before site.yml
    python3 tests/lab/rails.py check                     # after site.yml (both rails in one subnet)
    python3 tests/lab/rails.py check --subnet-per-rail   # after tests/lab/rails-subnet-per-rail.yml
    python3 tests/lab/rails.py management -i INVENTORY   # any lab, even one VM of one rail (a few seconds)

Every VM has rail 1 (its fabric NIC, rxe0, leaf bridge br-fabric) and rail 2 (a second NIC, rxe1,
leaf br-rail2) in the lab's network namespace; tcpdump runs there, on each VM's switch port (its
tap) of each rail, so what a VM sent through which NIC is seen from outside the VM.

``flux``: the lab's provisioning leaves rail 2 in rail 1's subnet with no rule or table (as an
installer does). A ping from vm1's rail-2 address to vm2's rail-2 address leaves through vm1's
rail-1 NIC (the main table's first route for the subnet), and vm1 answers ARP for its rail-2
address on rail 1 (arp_ignore=0). Exit 0 when both are seen: the lab shows the fault the rails fix.

``check``: after the nic layer configured ``roce_fabric.rails`` (inventories/lab): on every VM
``ip rule`` has ``from <rail address> lookup rdmaops_<netdev>`` at priority 1000 for both rails,
each table holds the rail's subnet route (src the rail address) and its default route, and the
rail netdevs have arp_ignore=1, arp_announce=2, rp_filter=2. vm1's rail-2 ping leaves vm1's rail-2
NIC and arrives on vm2's rail-2 NIC (seen on both rail-2 switch ports, none on rail 1's; vm2's
rail-2 netdev's rx_packets moved); ARP for vm1's rail-2 address asked on rail 1 gets no answer
(one-subnet scenario); RoCE v2 over RDMA-CM from vm1's rail-2 address reaches vm2's rxe1 (the
packets on the rail-2 leaf, rxe1's counters moved on both VMs, rxe0's did not). Exit 0 when all
hold, 1 with what did not.

``management``: nic_layer with a rail on a VM's management NIC (the one holding the default route
and the SSH connection's address) and ``exclusive: true`` is refused before anything is touched:
the management address, the default route and SSH are intact, the rail's address and rule were
never added. Exit 0 when so, 1 with what was not.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = [sys.executable, os.path.join(HERE, "lab.py")]
RULE_PRIORITY = 1000
RAIL2_SUBNET_PER_RAIL = "198.18.1.0/24"  # tests/lab/rails-subnet-per-rail.yml
SYSCTLS = {"arp_ignore": "1", "arp_announce": "2", "rp_filter": "2"}
# tcpdump -nn -e -l: "... 52:54:00:18:00:21 > 52:54:00:18:00:22, ethertype IPv4 (0x0800), length 98: 198.18.0.21 > 198.18.0.22: ICMP echo request, ..."
ECHO = re.compile(r"(\d+\.\d+\.\d+\.\d+) > (\d+\.\d+\.\d+\.\d+): ICMP echo (request|reply)")
# "... ethertype ARP (0x0806), length 42: Reply 198.18.0.21 is-at 52:54:00:18:00:11, length 28"
ARP_REPLY = re.compile(r"Reply (\d+\.\d+\.\d+\.\d+) is-at ([0-9a-f:]{17})")
ROCE = re.compile(r"(\d+\.\d+\.\d+\.\d+)\.\d+ > (\d+\.\d+\.\d+\.\d+)\.4791:")


class Lab:
    """The running lab as `lab.py status --json` describes it, and commands in its VMs."""

    def __init__(self, two_rails=True):
        status = json.loads(subprocess.run(LAB + ["status", "--json", "--no-fabric"], check=True,
                                           capture_output=True, text=True).stdout)
        if status["state"] == "down":
            raise SystemExit("the lab is down (lab.py up)")
        self.netns = status["netns"]
        self.vms = status["vms"]
        missing = [name for name, vm in self.vms.items() if "rail2_tap" not in vm]
        if two_rails and (missing or len(self.vms) < 2):
            raise SystemExit("needs a two-rail lab of two VMs or more (lab.py up --rails 2); %s has one rail"
                             % ", ".join(missing or ["the lab"]))

    def ssh(self, vm, command, timeout=120):
        return subprocess.run(LAB + ["ssh", vm, command], capture_output=True, text=True, timeout=timeout, check=False)

    def out(self, vm, command, timeout=120):
        return self.ssh(vm, command, timeout).stdout

    def tap(self, vm, rail):
        return self.vms[vm]["tap" if rail == 1 else "rail2_tap"]


def rail_address(vm, rail, subnet_per_rail=False):
    """The planned address of a VM's rail (inventories/lab/group_vars/all.yml: host_offset 9 and 19)."""
    address = ipaddress.ip_interface(vm["fabric_address" if rail == 1 else "rail2_address"])
    if rail == 2 and subnet_per_rail:
        net = ipaddress.ip_network(RAIL2_SUBNET_PER_RAIL)
        return ipaddress.ip_interface("%s/%d" % (net.network_address + int(address.ip) % 256, net.prefixlen))
    return address


class Capture:
    """tcpdump on some switch ports of the lab's namespace while something runs."""

    def __init__(self, lab, taps, bpf, seconds):
        self.procs = {
            tap: subprocess.Popen(["timeout", str(seconds), "ip", "netns", "exec", lab.netns, "tcpdump", "-i", tap, "-nn",
                                   "-e", "-l", bpf],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for tap in taps}
        self.text = {}
        self.threads = [threading.Thread(target=self._read, args=(tap, proc), daemon=True) for tap, proc in self.procs.items()]
        for thread in self.threads:
            thread.start()
        time.sleep(1.5)  # listening before the first packet

    def _read(self, tap, proc):
        self.text[tap] = proc.stdout.read()

    def stop(self, linger=1.0):
        time.sleep(linger)
        for proc in self.procs.values():
            proc.terminate()
        for thread in self.threads:
            thread.join(timeout=10)
        return self.text


def count_echo(text, src, dst, kind="request"):
    return sum(1 for m in ECHO.finditer(text) if (m.group(1), m.group(2), m.group(3)) == (src, dst, kind))


def arp_replies(text, address):
    return [m.group(2) for m in ARP_REPLY.finditer(text) if m.group(1) == address]


def count_roce(text, src=None):
    return sum(1 for m in ROCE.finditer(text) if src is None or m.group(1) == src)


def netdevs(lab, vm):
    """{1: rail-1 netdev, 2: rail-2 netdev} of a VM: the parents of rxe0 and rxe1."""
    words = lab.out(vm, "cat /sys/class/infiniband/rxe0/parent /sys/class/infiniband/rxe1/parent").split()
    if len(words) != 2:
        raise SystemExit("%s: no rxe0 and rxe1 (%r)" % (vm, words))
    return {1: words[0], 2: words[1]}


READ_RAILS = (
    "for i in 1 2; do d=$(cat /sys/class/infiniband/rxe$((i - 1))/parent); echo \"== netdev$i\"; echo \"$d\"; "
    "echo \"== routes$i\"; ip -4 route show table rdmaops_$d 2>&1; echo \"== addrs$i\"; ip -4 -o addr show dev $d; "
    "echo \"== sysctls$i\"; for k in %s; do cat /proc/sys/net/ipv4/conf/$d/$k; done; done; echo '== rules'; ip rule show"
    % " ".join(SYSCTLS))


def read_rails(lab, vm):
    """One SSH round trip: each rail's netdev, its table's routes, addresses and sysctls, and ip rule."""
    sections, current = {}, None
    for line in lab.out(vm, READ_RAILS).splitlines():
        if line.startswith("== "):
            current = sections.setdefault(line[3:].strip(), [])
        elif current is not None and line.strip():
            current.append(line)
    for key in ("netdev1", "netdev2", "rules", "routes1", "routes2", "addrs1", "addrs2", "sysctls1", "sysctls2"):
        sections.setdefault(key, [])
    if not (sections["netdev1"] and sections["netdev2"]):
        raise SystemExit("%s: no rxe0 and rxe1" % vm)
    return sections


def flush_neighbours(lab, vms):
    for vm in vms:
        lab.ssh(vm, "ip neigh flush all")


def rail2_ping(lab, a, b, addr, count=3):
    """Ping b's rail-2 address from a's; tcpdump on a's and b's ports of both rails."""
    taps = {(vm, rail): lab.tap(vm, rail) for vm in (a, b) for rail in (1, 2)}
    flush_neighbours(lab, (a, b))
    cap = Capture(lab, taps.values(), "icmp or arp", 20)
    ping = lab.ssh(a, "ping -n -c %d -i 0.3 -W 2 -I %s %s" % (count, addr[a][2].ip, addr[b][2].ip))
    text = cap.stop()
    seen = {key: count_echo(text.get(tap, ""), str(addr[a][2].ip), str(addr[b][2].ip)) for key, tap in taps.items()}
    return ping, seen, text


def flux(lab):
    a, b = sorted(lab.vms)[:2]
    addr = {vm: {rail: rail_address(lab.vms[vm], rail) for rail in (1, 2)} for vm in (a, b)}
    nd = {vm: netdevs(lab, vm) for vm in (a, b)}
    rules = lab.out(a, "ip rule show")
    print("%s before the fix: ip rule\n%s" % (a, indent(rules)))
    print("%s: ip route show (main)\n%s" % (a, indent(lab.out(a, "ip -4 route show"))))
    ping, seen, _text = rail2_ping(lab, a, b, addr)
    print("ping from %s's rail-2 address %s to %s's %s: %s" % (a, addr[a][2].ip, b, addr[b][2].ip, last_line(ping.stdout)))
    print("  echo requests seen on %s's switch ports: rail 1 (%s) %d, rail 2 (%s) %d" % (
        a, lab.tap(a, 1), seen[(a, 1)], lab.tap(a, 2), seen[(a, 2)]))
    print("  arriving on %s's switch ports: rail 1 (%s) %d, rail 2 (%s) %d" % (
        b, lab.tap(b, 1), seen[(b, 1)], lab.tap(b, 2), seen[(b, 2)]))
    left_rail1 = seen[(a, 1)] > 0 and seen[(a, 2)] == 0
    # ARP for a's rail-2 address, asked by b on rail 1: a's rail-1 NIC answers it (arp_ignore=0)
    flush_neighbours(lab, (a, b))
    cap = Capture(lab, [lab.tap(a, 1), lab.tap(a, 2)], "arp", 15)
    lab.ssh(b, "ping -n -c 2 -W 2 -I %s %s" % (nd[b][1], addr[a][2].ip))
    text = cap.stop()
    macs = arp_replies(text.get(lab.tap(a, 1), ""), str(addr[a][2].ip))
    mac1 = lab.out(a, "cat /sys/class/net/%s/address" % nd[a][1]).strip()
    print("ARP for %s's rail-2 address %s asked by %s on rail 1: %s" % (
        a, addr[a][2].ip, b, "answered on rail 1 with %s (%s's rail-1 NIC %s is %s)" % (", ".join(sorted(set(macs))), a, nd[a][1], mac1)
        if macs else "no answer on rail 1"))
    arp_flux = bool(macs) and set(macs) == {mac1}
    if left_rail1 and arp_flux:
        print("FLUX SHOWN: rail-2 traffic leaves through rail 1, and rail 1 answers ARP for rail 2's address")
        return 0
    print("the flux was not seen (rail-2 ping through rail 1: %s; ARP answered on rail 1: %s)" % (left_rail1, arp_flux))
    return 1


def check(lab, subnet_per_rail=False, only=None):
    problems = []
    names = sorted(vm for vm in lab.vms if not only or vm in only)
    addr = {vm: {rail: rail_address(lab.vms[vm], rail, subnet_per_rail) for rail in (1, 2)} for vm in names}
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        state = dict(zip(names, pool.map(lambda vm: read_rails(lab, vm), names)))
    nd = {vm: {1: state[vm]["netdev1"][0], 2: state[vm]["netdev2"][0]} for vm in names}
    for vm in names:
        rules = "\n".join(state[vm]["rules"])
        print("%s: ip rule\n%s" % (vm, indent(rules)))
        for rail in (1, 2):
            dev, ip = nd[vm][rail], addr[vm][rail]
            table = "rdmaops_%s" % dev
            want_rule = "%d:\tfrom %s lookup %s" % (RULE_PRIORITY, ip.ip, table)
            if want_rule not in rules:
                problems.append("%s rail %d: no rule %r" % (vm, rail, want_rule.replace("\t", " ")))
            routes = "\n".join(state[vm]["routes%d" % rail])
            print("%s: ip route show table %s\n%s" % (vm, table, indent(routes)))
            gateway = ip.network.network_address + 1
            wanted = ("%s dev %s scope link src %s" % (ip.network, dev, ip.ip), "default via %s dev %s" % (gateway, dev))
            # networkd's routes say "proto static", the ip commands' (ifupdown) "proto boot" or nothing
            have = [re.sub(r" proto \S+", "", line.strip()) for line in routes.splitlines() if line.strip()]
            for want in wanted:
                if not any(line.startswith(want) for line in have):
                    problems.append("%s rail %d: table %s has no route %r" % (vm, rail, table, want))
            extra = [line for line in have if not line.startswith(wanted)]
            if extra:
                problems.append("%s rail %d: table %s has routes the plan does not: %s" % (vm, rail, table, "; ".join(extra)))
            addrs = "\n".join(state[vm]["addrs%d" % rail])
            if " %s " % ip.with_prefixlen not in addrs:
                problems.append("%s rail %d: %s lacks %s" % (vm, rail, dev, ip.with_prefixlen))
            got = dict(zip(SYSCTLS, [line.strip() for line in state[vm]["sysctls%d" % rail]]))
            if got != SYSCTLS:
                problems.append("%s rail %d: %s sysctls %s, want %s" % (vm, rail, dev, got, SYSCTLS))
    a, b = names[:2]
    # the rail-2 path, on the wire and in the peer NIC's counters
    rx = "cat /sys/class/net/%s/statistics/rx_packets" % nd[b][2]
    before = int(lab.out(b, rx) or 0)
    ping, seen, _text = rail2_ping(lab, a, b, addr)
    moved = int(lab.out(b, rx) or 0) - before
    print("ping from %s's rail-2 address %s to %s's %s: %s" % (a, addr[a][2].ip, b, addr[b][2].ip, last_line(ping.stdout)))
    print("  echo requests on the switch ports: %s rail 1 %d, %s rail 2 %d; %s rail 1 %d, %s rail 2 %d; %s %s rx_packets +%d" % (
        a, seen[(a, 1)], a, seen[(a, 2)], b, seen[(b, 1)], b, seen[(b, 2)], b, nd[b][2], moved))
    if ping.returncode != 0:
        problems.append("the rail-2 ping %s -> %s failed: %s" % (a, b, last_line(ping.stdout + ping.stderr)))
    if not (seen[(a, 2)] > 0 and seen[(b, 2)] > 0 and seen[(a, 1)] == 0 and seen[(b, 1)] == 0):
        problems.append("the rail-2 ping did not stay on rail 2: %s" % {"%s rail %d" % k: v for k, v in seen.items()})
    if moved < 3:
        problems.append("%s's rail-2 NIC %s received %d packets during the ping (3 echo requests sent)" % (b, nd[b][2], moved))
    if not subnet_per_rail:
        flush_neighbours(lab, (a, b))
        cap = Capture(lab, [lab.tap(a, 1)], "arp", 15)
        lab.ssh(b, "ping -n -c 2 -W 2 -I %s %s" % (nd[b][1], addr[a][2].ip))
        macs = arp_replies(cap.stop().get(lab.tap(a, 1), ""), str(addr[a][2].ip))
        print("ARP for %s's rail-2 address %s asked by %s on rail 1: %s" % (
            a, addr[a][2].ip, b, "ANSWERED by %s" % ", ".join(sorted(set(macs))) if macs else "no answer (arp_ignore)"))
        if macs:
            problems.append("%s answers ARP for its rail-2 address %s on rail 1" % (a, addr[a][2].ip))
    problems += rdma_over_rail2(lab, a, b, addr)
    if problems:
        print("RAILS CHECK FAILED:\n%s" % "\n".join("  - " + p for p in problems))
        return 1
    print("rails as planned on %s; rail 2's ping and RDMA stay on rail 2" % ", ".join(names))
    return 0


MGMT_RAIL = dict(rail="mgmtcheck", address="198.51.100.9", prefix=24, table=4242)  # TEST-NET-2: never the lab's


def management(lab, inventory, vm):
    """A rail with ``exclusive`` on the management NIC: refused, nothing touched, SSH intact."""
    route = json.loads(lab.out(vm, "ip -j -4 route show default") or "[]")
    if not route:
        raise SystemExit("%s: no IPv4 default route" % vm)
    dev = route[0]["dev"]
    read = "ip -4 -o addr show dev %s; echo ==; ip -4 route show default; echo ==; ip -4 rule show" % dev
    before = lab.out(vm, read)
    params = dict(rails=dict(links=[dict(MGMT_RAIL, interface=dev)], exclusive=True, backend="runtime", persist=False))
    t0 = time.monotonic()
    run = subprocess.run(["ansible", vm, "-i", inventory, "-m", "rdmaops.roce.nic_layer", "-a", json.dumps(params)],
                         capture_output=True, text=True, timeout=300, check=False,
                         # ansible.cfg's result format is YAML; the check reads the answer as JSON
                         env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    took = time.monotonic() - t0
    after = lab.out(vm, read)
    answer = run.stdout.split("=>", 1)[-1]
    try:
        msg = json.loads(answer).get("msg", "")
    except ValueError:
        msg = run.stdout[-500:] + run.stderr[-500:]
    print("%s: nic_layer with a rail on the management NIC %s, exclusive (%.1f s): rc %d\n    %s" % (vm, dev, took, run.returncode, msg))
    problems = []
    refusal = (r"refusing to remove .* \(rails\.exclusive, live\) from %s: it is on the path that carries "
               r"the Ansible connection \(%s holds " % (re.escape(dev), re.escape(dev)))
    if run.returncode == 0 or not re.match(refusal, msg):
        problems.append("the rail on %s was not refused as the management path: %s" % (dev, msg or run.stdout[-300:]))
    if after != before:
        problems.append("%s's addresses, default route or rules changed:\n%s\n-- now --\n%s" % (vm, indent(before), indent(after)))
    if MGMT_RAIL["address"] in after or "lookup %d" % MGMT_RAIL["table"] in after:
        problems.append("the rail's address or rule was added on %s" % vm)
    if lab.ssh(vm, "true", timeout=60).returncode != 0:
        problems.append("%s no longer answers SSH" % vm)
    if problems:
        print("MANAGEMENT CHECK FAILED:\n%s" % "\n".join("  - " + p for p in problems))
        return 1
    print("%s: the management address, default route and rules are as they were; SSH answers\n%s" % (vm, indent(after)))
    return 0


COUNTERS = "for d in rxe0 rxe1; do echo $d $(cat /sys/class/infiniband/$d/ports/1/hw_counters/sent_pkts) " \
           "$(cat /sys/class/infiniband/$d/ports/1/hw_counters/rcvd_pkts); done"


def read_counters(lab, vm):
    """{device: (sent_pkts, rcvd_pkts)} of rxe0 and rxe1."""
    out = {}
    for line in lab.out(vm, COUNTERS).splitlines():
        words = line.split()
        if len(words) == 3:
            out[words[0]] = (int(words[1]), int(words[2]))
    return out


def rdma_over_rail2(lab, a, b, addr):
    """RDMA-CM from a's rail-2 address to b's: rping (bound to the source address, -I) resolves the
    path through the rule of a's rail 2, so rxe1 carries it; the packets are counted on each rail's
    switch port of a and in both VMs' rxe counters."""
    src, dst = str(addr[a][2].ip), str(addr[b][2].ip)
    counters = {vm: read_counters(lab, vm) for vm in (a, b)}
    cap = Capture(lab, [lab.tap(a, 1), lab.tap(a, 2)], "udp port 4791", 60)
    server = subprocess.Popen(LAB + ["ssh", b, "timeout 45 rping -s -a %s -C 20 -S 4096" % dst],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = None
    t0 = time.monotonic()
    for _attempt in range(10):
        time.sleep(1.5)
        client = lab.ssh(a, "timeout 40 rping -c -a %s -I %s -C 20 -S 4096" % (dst, src), timeout=60)
        if client.returncode == 0:
            break
    took = time.monotonic() - t0
    server.communicate(timeout=60)
    text = cap.stop()
    after = {vm: read_counters(lab, vm) for vm in (a, b)}
    delta = {vm: {dev: (after[vm][dev][0] - counters[vm][dev][0], after[vm][dev][1] - counters[vm][dev][1])
                  for dev in ("rxe0", "rxe1")} for vm in (a, b)}
    on = {rail: count_roce(text.get(lab.tap(a, rail), "")) for rail in (1, 2)}
    print("RDMA-CM (rping, 20 x 4096 B) from %s's %s to %s's %s: %s (%.1f s)" % (
        a, src, b, dst, "ok" if client and client.returncode == 0 else "FAILED", took))
    print("  RoCEv2 packets on %s's switch ports: rail 1 %d, rail 2 %d" % (a, on[1], on[2]))
    for vm in (a, b):
        print("  %s: rxe0 sent/rcvd +%d/+%d, rxe1 sent/rcvd +%d/+%d" % ((vm,) + delta[vm]["rxe0"] + delta[vm]["rxe1"]))
    problems = []
    if not client or client.returncode != 0:
        problems.append("rping %s -> %s over rail 2 failed: %s" % (a, b, last_line((client.stdout + client.stderr) if client else "")))
    carried = delta[a]["rxe1"][0] > 0 and delta[b]["rxe1"][1] > 0 and on[2] > 0
    if not carried or on[1] or delta[a]["rxe0"][0] or delta[b]["rxe0"][1]:
        problems.append("RDMA from %s's rail-2 address was not carried by rxe1 to %s's rxe1 alone" % (a, b))
    else:
        print("  carried by %s rxe1 -> %s rxe1 (rail 2)" % (a, b))
    return problems


def indent(text):
    return "\n".join("    " + line for line in text.strip().splitlines())


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-2 if len(lines) > 1 and "rtt" in lines[-1] else -1] if lines else "(nothing)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("flux", help="before the fix: rail-2 traffic leaves rail 1, rail 1 answers ARP for rail 2")
    chk = sub.add_parser("check", help="after site.yml: rules, tables, sysctls; rail 2's ping and RDMA stay on rail 2")
    chk.add_argument("--vms", help="only these VMs (comma-separated; default every VM of the lab), e.g. those an overlay was applied to")
    chk.add_argument("--subnet-per-rail", action="store_true", help="rail 2 in %s (tests/lab/rails-subnet-per-rail.yml)"
                     % RAIL2_SUBNET_PER_RAIL)
    mgmt = sub.add_parser("management", help="a rail with exclusive on the management NIC is refused; nothing touched")
    mgmt.add_argument("-i", "--inventory", required=True, help="the inventory that reaches the lab")
    mgmt.add_argument("--vm", default="vm1", help="the VM (default vm1)")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    lab = Lab(two_rails=args.command != "management")  # the management check needs one VM, of any rails
    only = set(args.vms.split(",")) if getattr(args, "vms", None) else None
    if only and (not only <= set(lab.vms) or len(only) < 2):
        raise SystemExit("--vms %s: name two VMs or more of the lab (%s)" % (args.vms, ", ".join(sorted(lab.vms))))
    if args.command == "management":
        rc = management(lab, args.inventory, args.vm)
    else:
        rc = flux(lab) if args.command == "flux" else check(lab, args.subnet_per_rail, only)
    print("rails.py %s: %.1f s" % (args.command, time.monotonic() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
