#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: fabric_check
short_description: Check a RoCE fabric's hosts, switches and measurements against the fabric intent
version_added: 1.0.0
description:
  - An action plugin that runs on the controller and changes nothing. It takes the resolved fabric intent,
    every host's state, the switches' gathered state and what the role C(rdmaops.roce.validate) measured, and returns
    one finding per check, with C(check), C(host), C(peer) (pair checks), C(device), C(field),
    C(expected), C(actual), C(hint) and C(passed).
  - C(passed) is V(true) or V(false) for a part that was checked and V(null) for a part with no data
    (not gathered, not exposed by the driver, not installed); such a part is reported as not checked,
    never as passed.
  - Every value it reads from O(hosts) and O(switches) is checked for type and shape first. One that is not
    what its producer writes is a finding C(check=input) with C(passed=null) naming the host or switch and
    the key, and nothing is compared with it. Numbers and booleans count only as what they are or as the
    text Ansible documents for them, matched whole (V("9216") is 9216, V("off") is false).
  - "The verdict C(passed) is V(true) only when at least one check ran, none failed and nothing given was
    left wholly unchecked: a host or switch of which nothing could be checked, data that could not be
    read, a perftest run marked C(requested) that gave no result. Each such part is named in
    C(summary.unproven)."
  - "Host checks: C(modules) (rdma_cm, ib_uverbs loaded), C(ports) (an ACTIVE RoCE port), C(mtu)
    (netdev MTU = C(host_mtu), RoCE C(active_mtu) as the kernel derives it), C(gid) (a RoCE v2 IPv4 GID),
    C(qos) (trust, PFC priorities, the intent's DSCP to priority entries), C(ecn) (notification and reaction
    point priorities, CNP DSCP and priority), C(tos) (rdma_cm's default ToS and RoCE mode), C(peermem)
    (on hosts with GPUs)."
  - "Rail checks (multi-rail hosts, C(roce_fabric.rails)): C(rails) compares each rail's address, the rule
    C(from <address> lookup <table>), the table's subnet and default routes, and C(arp_ignore),
    C(arp_announce), C(rp_filter) of the rail netdevs, read by M(rdmaops.roce.nic_layer) in check mode (the
    host state's C(rails), C({links, read, pings})), with the plan, and each C(ping -I) from a rail's address
    to the same rail of a peer (C(rail <name> path))."
  - "Fleet checks: C(drift) flags hosts that differ from the majority in driver stack and version,
    NIC firmware or kernel."
  - "Switch checks: C(switch) compares each switch's gathered C(fabric) (C(roce_dscp), C(roce_priority),
    C(cnp_dscp), C(cnp_priority), C(pfc_priorities), C(ecn_priorities), C(trust), C(switch_mtu),
    C(ecn) thresholds, C(pfc_watchdog)) and C(interfaces) (C(mtu), C(pfc_priorities)) with the intent;
    a key that is missing is not checked."
  - "Measurement checks: C(path) (field C(reachability): small pings and ARP on the fabric netdev, with what both
    ends saw when they fail; field C(mtu_path): C(ping -M do) at the intent's MTU, on a reachable pair only),
    C(rdma_bw) (ib_write_bw at least
    O(min_bw_fraction) of the slower end's link rate), C(rdma_lat) (ib_write_lat recorded; both not checked
    between a pair that is not reachable), C(nccl)
    (NET/IB and GPUDirect RDMA in NCCL's log). Counters read before and after the tests become C(counter)
    measurements (deltas; not available where the driver does not expose them)."
  - With O(report_dir), writes C(report.md), C(report.json) and C(junit.xml) into
    C(<report_dir>/<UTC timestamp>/) on the controller and points C(<report_dir>/latest) at it.
author:
  - rdmaops developers (@rdmaops)
options:
  intent:
    description: The resolved fabric intent, C(roce_fabric | rdmaops.roce.roce_intent).
    type: dict
    required: true
  hosts:
    description:
      - Per host name, what the host read and measured (the validate role collects it as C(validate_state))
        C(rdma) (C(ansible_facts.rdma) from M(rdmaops.roce.rdma_facts)); C(nic) (the C(ports) of
        M(rdmaops.roce.nic_layer) run in check mode, whose C(before) is each port's QoS state; V(null) when not
        gathered); C(pings) (each C(host), C(peer), C(address), C(size), C(rc), C(stdout) (a plain ping's output, or
        the role's path check, its parts after C(== small rc=N), C(== jumbo), C(== neigh), C(== link), C(== kernel) lines),
        C(stderr), C(source), C(netdev) and C(peer_netdev) (the two ends' address and fabric netdevs),
        C(peer_evidence) (the far end's C(neigh), C(link) and C(kernel) parts), or C(skipped) with C(why));
        C(rdma_runs) (each C(test) V(ib_write_bw) or V(ib_write_lat), C(host) the client, C(peer) the server,
        C(device) and C(peer_device) as V(dev/port), C(gid_index), C(tos), C(rc),
        C(stdout), C(stderr), or C(skipped) with C(why), and C(requested) when the test was asked for);
        C(counters) (C(ports) as pairs of V(dev/port) and
        netdev, C(before) and C(after), the output of the role's counter read); C(nccl) (each C(host),
        C(rc), C(stdout), or C(skipped) with C(why)).
    type: dict
    required: true
  switches:
    description:
      - Per switch name, its gathered state C({fabric, interfaces}) (the C(gathered) shape of
        rdmaops.roce.switch_roce). Omitted or empty, the switches are reported as not checked.
    type: dict
  min_bw_fraction:
    description: The fraction of the link rate ib_write_bw must reach (above 0, at most 1).
    type: float
    default: 0.8
  report_dir:
    description: Where to write the report on the controller. Omitted, no file is written.
    type: path
attributes:
  check_mode:
    support: full
    description: Reads only what it is given; the report on the controller is written in check mode too.
  diff_mode:
    support: none
    description: Changes nothing on any host.
  action:
    support: full
    description: Runs on the controller as an action plugin.
notes:
  - Reports C(changed=false) - it checks; the report it writes is its output on the controller.
seealso:
  - name: The validate role
    description: Gathers what this plugin checks, measures, and fails the play on findings.
    link: https://github.com/rdmaops/roce/tree/main/roles/validate
"""

EXAMPLES = r"""
- name: Check the fabric and write the report
  rdmaops.roce.fabric_check:
    intent: "{{ roce_fabric | rdmaops.roce.roce_intent }}"
    hosts: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'validate_state'))) }}"
    switches: "{{ validate_switch_state }}"
    report_dir: ./rdmaops-reports
  run_once: true
  register: fabric

- name: Show what failed
  ansible.builtin.debug:
    msg: "{{ fabric.findings | selectattr('passed', 'false') | list }}"
"""

RETURN = r"""
passed:
  description: True when something was checked, no finding failed and nothing given was left wholly unchecked
    (C(summary.unproven) is empty). Not-checked parts alone do not fail.
  returned: success
  type: bool
findings:
  description: One per check, host, device and field.
  returned: success
  type: list
  elements: dict
  sample:
    - {check: tos, host: vm2, peer: null, device: rxe0/1, field: tos, expected: 106, actual: 0,
       hint: "RDMA-CM traffic of rxe0/1 must carry ToS 106 ...", passed: false}
measurements:
  description: Each C(kind), C(host), C(peer), C(device), C(name), C(value), C(unit), C(detail).
  returned: success
  type: list
  elements: dict
summary:
  description: C(checked), C(failed), C(not_checked) counts, C(failed_hosts), and C(unproven) (what keeps C(passed)
    false without a failed finding).
  returned: success
  type: dict
report_path:
  description: The run's report directory, when O(report_dir) was given.
  returned: when report_dir is given
  type: str
"""
