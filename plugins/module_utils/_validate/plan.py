# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the validate role measures: which host pairs it tests, and what each host runs.

The role runs the commands; these functions decide them (the filters roce_validate_pairs and
roce_validate_plan call them on the controller).

* :func:`choose_pairs`: the path pings cover every pair (``all``), each host with the next
  (``ring``) or the ring plus a sample of the other pairs (``sample``, the same sample for the same
  hosts); the RDMA tests always run on the ring, so that each host is client once and server once
  and no link carries two tests at a time.  A rollout's gate adds each host of its batch paired
  with one partner outside the batch, in turn.  Only hosts with an RDMA address (the first address
  of their first active RoCE port, ``validate_ports``) are paired: a host that was unreachable or
  failed before the pairs were chosen has none, and neither has a partner whose RDMA state could
  not be read.
* :func:`measure_plan`: whether a host runs perftest and nccl-tests, and why not.
* :func:`active_ports`: a host's active RoCE ports from its RDMA facts (``validate_ports``), read on
  the controller for a gate's partners (the filter roce_validate_ports) and on the host by
  rdmaops.roce.validate_probe, which reads their counters in the same call as the facts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random
import re

PAIR_MODES = ("all", "ring", "sample")
PERFTEST_TOOLS = ("ib_write_bw", "ib_write_lat")


def has_rdma_address(host_vars):
    """True when ``host_vars`` (one host's variables) hold ``validate_ports`` whose first port has an
    IPv4 address: a host the pairs can test from and to."""
    try:
        host_vars["validate_ports"][0]["ipv4"][0]
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _whole(value):
    """``value`` as a whole number the way Jinja's ``int`` filter reads it (0 for what is not one)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def _ring(hosts):
    if len(hosts) == 2:
        return [list(hosts)]
    if len(hosts) > 2:
        return [[host, hosts[(index + 1) % len(hosts)]] for index, host in enumerate(hosts)]
    return []


def _sample(hosts, every, ring, size):
    """Up to ``size`` pairs of ``every`` that are not (in that order) in ``ring``, in an order seeded
    by the hosts' names: the same hosts get the same sample."""
    rest = [pair for pair in every if pair not in ring]
    seed = ",".join(hosts)
    if seed:
        random.Random(seed).shuffle(rest)
    else:  # no hosts: nothing to sample
        random.shuffle(rest)
    return rest[:max(size, 0)]


def choose_pairs(hostvars, batch, mode="all", sample_size=16, partners=()):
    """``{"paths": [[client, server], ...], "rdma": [[client, server], ...]}``.

    ``hostvars`` maps each host name to its variables; ``batch`` is the play's batch, in order;
    ``partners`` names hosts outside the batch to pair it with (those in the batch are not
    partners, nor are those without an RDMA address).  ``paths`` are the pairs the path pings
    cover (``mode``: all, ring or sample), ``rdma`` the pairs perftest runs on (the ring); each
    ends with the batch paired with its partners.
    """
    hosts = [name for name in batch if has_rdma_address(hostvars[name])]
    ready = [name for name in partners if name not in batch and has_rdma_address(hostvars[name])]
    every = [[a, b] for index, a in enumerate(hosts) for b in hosts[index + 1:]]
    ring = _ring(hosts)
    partner_pairs = [[host, ready[index % len(ready)]] for index, host in enumerate(hosts)] if ready else []
    if mode == "all":
        paths = every
    elif mode == "sample":
        paths = ring + _sample(hosts, every, ring, _whole(sample_size))
    else:
        paths = ring
    return {"paths": paths + partner_pairs, "rdma": ring + partner_pairs}


def tools_of(counter_lines):
    """The test tools the counter read found installed (its ``== tool NAME PATH`` lines)."""
    return [line.split()[2] for line in counter_lines or [] if line.startswith("== tool ") and len(line.split()) > 2]


def measure_plan(tools, ports, gpus, check_mode=False, rdma=True, nccl=True, nccl_command="all_reduce_perf"):
    """What one host measures: ``rdma_run`` (perftest as client and server), ``nccl_ready``
    (nccl-tests), and for each the reason it does not run (``rdma_why``, ``nccl_why``).

    ``tools`` are the tools installed on the host, ``ports`` its active RoCE ports, ``gpus`` its
    GPUs; ``rdma`` and ``nccl`` are validate_rdma and validate_nccl.
    """
    ports = ports or []
    gpus = gpus or []
    rdma_run = rdma and not check_mode and len(ports) > 0 and all(tool in tools for tool in PERFTEST_TOOLS)
    if not rdma:
        rdma_why = "validate_rdma is false"
    elif check_mode:
        rdma_why = "check mode: perftest loads the fabric, skipped"
    elif not ports:
        rdma_why = "no active RoCE port"
    else:
        rdma_why = "perftest (%s) is not installed" % ", ".join(PERFTEST_TOOLS)
    nccl_ready = nccl and not check_mode and len(gpus) > 0 and nccl_command in tools
    if not nccl:
        nccl_why = "validate_nccl is false"
    elif not gpus:
        nccl_why = "no GPU on this host"
    elif check_mode:
        nccl_why = "check mode: nccl-tests skipped"
    else:
        nccl_why = "%s (nccl-tests) is not installed" % nccl_command
    return {"rdma_run": rdma_run, "rdma_why": rdma_why, "nccl_ready": nccl_ready, "nccl_why": nccl_why}


def _key(item):
    key = item[0]
    return key.lower() if isinstance(key, str) else key


def active_ports(rdma):
    """The active RoCE ports of one host's ``ansible_facts.rdma``, in device then port order (as Jinja's
    dictsort orders them): each ``device``, ``port``, ``netdev``, ``gid_index`` (the lowest RoCE v2
    IPv4 GID index) and ``ipv4`` (the netdev's addresses without their prefix length)."""
    rows = []
    rdma = rdma if isinstance(rdma, dict) else {}
    netdevs = rdma.get("netdevs") if isinstance(rdma.get("netdevs"), dict) else {}
    devices = rdma.get("devices") if isinstance(rdma.get("devices"), dict) else {}
    for name, device in sorted(devices.items(), key=_key):
        ports = device.get("ports") if isinstance(device, dict) and isinstance(device.get("ports"), dict) else {}
        for number, port in sorted(ports.items(), key=_key):
            if not (isinstance(port, dict) and port.get("link_layer") == "Ethernet" and port.get("state") == "ACTIVE" and port.get("netdev")):
                continue
            netdev = netdevs.get(port["netdev"]) if isinstance(netdevs.get(port["netdev"]), dict) else {}
            addresses = netdev.get("ipv4") if isinstance(netdev.get("ipv4"), list) else []
            rows.append(dict(device=name, port=number, netdev=port["netdev"], gid_index=port.get("roce_v2_ipv4_gid_index"),
                             ipv4=[re.sub(r"/.*$", "", str(address)) for address in addresses]))
    return rows


def port_netdevs(ports):
    """The netdevs of ``ports`` (:func:`active_ports`), each once, in order: what the counter reads take."""
    out = []
    for port in ports:
        if port["netdev"] not in out:
            out.append(port["netdev"])
    return out
