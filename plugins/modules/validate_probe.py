#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: validate_probe
short_description: Run the validate role's reads and pings on a host in one call
version_added: 1.2.0
description:
  - Internal to the role C(rdmaops.roce.validate), which runs several of its steps on a host as one call of this
    module (the RDMA state with the counters, the pings of every peer and rail, the ARP probes) instead of one task
    per command. Its options and results may change with the role.
  - With O(wait_jobs) it first waits for asynchronous jobs to finish (the role's perftest servers), as
    M(ansible.builtin.async_status) with C(until) would.
  - With O(rdma_facts) it reads the host's RDMA state as M(rdmaops.roce.rdma_facts) does and runs O(port_reads)
    on its active RoCE ports, then it runs O(commands) one after another.
  - With O(nic_read) it last runs M(rdmaops.roce.nic_layer) in check mode with those options, whatever the task's
    check mode (the same engine, which reads and plans and never applies), and returns its result as RV(nic).
  - Each command runs as M(ansible.builtin.command) would run it (no shell unless the argv calls one); with
    O(commands[].retries) it runs again, after O(commands[].delay) seconds, until it exits 0, or exits 124 (it hung
    under C(timeout)) after at least O(commands[].attempts) runs, as a task's C(until)/C(retries) would.
  - It changes nothing on the host (C(changed) is always false); it fails only on bad options, when the RDMA state
    cannot be read, or on a read marked O(commands[].check) or O(port_reads[].check) that did not exit 0 (after
    running every command and the O(nic_read)). A job that failed or did not finish, and a O(nic_read) that
    M(rdmaops.roce.nic_layer) would fail, are results (RV(jobs), RV(nic)), not a failure of this module.
author:
  - rdmaops developers (@rdmaops)
options:
  rdma_facts:
    description:
      - Read the host's RDMA state as M(rdmaops.roce.rdma_facts) does with its defaults, and return it as
        C(ansible_facts.rdma), with its active RoCE ports as RV(ports).
    type: bool
    default: false
  port_reads:
    description:
      - With O(rdma_facts), shell scripts run as C(sh -c SCRIPT sh NETDEV...) with the netdevs of the host's active
        RoCE ports (each once, in device and port order); their results come first in RV(results).
    type: list
    elements: dict
    default: []
    suboptions:
      script:
        description: The script.
        type: str
        required: true
      check:
        description: The module fails, after running every command, when this script did not exit 0.
        type: bool
        default: false
  wait_jobs:
    description:
      - Asynchronous jobs of this host to wait for before anything else, each until its results file says it
        finished or for at most O(wait_jobs[].seconds) (its C(async) limit, after which Ansible has killed it).
    type: list
    elements: dict
    default: []
    suboptions:
      jid:
        description: The job's C(ansible_job_id).
        type: str
        required: true
      results_file:
        description: The job's C(results_file), as the task started with C(async) returned it.
        type: str
        required: true
      seconds:
        description: The longest wait, in seconds.
        type: int
        required: true
  nic_read:
    description:
      - The options of M(rdmaops.roce.nic_layer) (the role gives O(rdmaops.roce.nic_layer#module:ports),
        O(rdmaops.roce.nic_layer#module:rails), O(rdmaops.roce.nic_layer#module:boot_reapply) and
        O(rdmaops.roce.nic_layer#module:unsupported)), checked against its argument spec and run in check mode
        after O(commands).
    type: dict
  concurrent:
    description:
      - Run every command of O(commands) at once, each with its retries, and return when the last has finished
        (the role's perftest servers, started as one asynchronous job). The results keep the order of O(commands).
    type: bool
    default: false
  commands:
    description: The commands to run, in order (at once with O(concurrent)).
    type: list
    elements: dict
    default: []
    suboptions:
      argv:
        description: The command and its arguments.
        type: list
        elements: str
        required: true
      item:
        description: Returned as the result's C(item) (what the role's loop would have run over).
        type: raw
      retries:
        description: How many more runs it may get (C(retries) of a task with C(until)); 0 runs it once.
        type: int
        default: 0
      delay:
        description: Seconds between runs.
        type: int
        default: 5
      attempts:
        description: A run that exits 124 (hung) ends the retries once this many runs were made.
        type: int
        default: 1
      check:
        description: The module fails, after running every command, when this one did not exit 0.
        type: bool
        default: false
extends_documentation_fragment:
  - rdmaops.roce.attributes
attributes:
  check_mode:
    support: full
    description: Runs what it is given (the role gives it reads, pings and measurements, and runs it with C(check_mode) false).
  diff_mode:
    support: N/A
    description: Changes nothing.
seealso:
  - module: rdmaops.roce.fabric_check
"""

EXAMPLES = r"""
- name: Ping two peers and read the counters, in one call
  rdmaops.roce.validate_probe:
    commands:
      - {argv: [ping, -c, "2", "198.18.0.12"], item: [vm1, vm2]}
      - {argv: [ping, -c, "2", "198.18.0.13"], item: [vm1, vm3]}
      - {argv: [cat, /sys/class/net/ens4/statistics/rx_packets], check: true}
  register: probe
"""

RETURN = r"""
results:
  description: One per command, in order, with C(item), C(cmd) (the argv), C(rc), C(stdout) and C(stderr) (their
    trailing newlines cut), and C(attempts) (how many runs) for a command with O(commands[].retries).
  returned: always
  type: list
  elements: dict
  sample:
    - {item: [vm1, vm2], cmd: [ping, -c, "2", 198.18.0.12], rc: 0, stdout: "PING ...", stderr: ""}
ports:
  description: With O(rdma_facts), the host's active RoCE ports (C(device), C(port), C(netdev), C(gid_index), C(ipv4)), as
    the filter C(rdmaops.roce.roce_validate_ports) reads them from the facts.
  returned: with O(rdma_facts)
  type: list
  elements: dict
ansible_facts:
  description: With O(rdma_facts), C(rdma) as M(rdmaops.roce.rdma_facts) returns it.
  returned: with O(rdma_facts)
  type: dict
jobs:
  description:
    - One per O(wait_jobs), in order - the job's result as M(ansible.builtin.async_status) returns it once
      C(finished), or C(ansible_job_id) and C(finished) false when it had not finished in time.
  returned: with O(wait_jobs)
  type: list
  elements: dict
nic:
  description:
    - What M(rdmaops.roce.nic_layer) returns in check mode for O(nic_read) (C(ports), C(rails), C(unsupported), ...),
      with C(failed) false; where nic_layer would fail, C(failed) true, its C(msg) and what it read before.
  returned: with O(nic_read)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import plan, probe


def read_facts(module):
    """``{ansible_facts: {rdma}, ports}`` as rdmaops.roce.rdma_facts reads them (failing the module as it
    would); imported only here, so the other steps' calls do not load the facts' readers."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
    from ansible_collections.rdmaops.roce.plugins.module_utils._core.redact import redact
    from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import gather

    ctx = Context(module)
    try:
        result = gather(ctx, dict(use_tools=True, gpu_topology=True))
    except RdmaopsError as exc:
        for warning in ctx.warnings:
            module.warn(redact(warning, ctx.secrets))
        fail = dict(exc.details)
        fail.update(msg=exc.msg, changed=False)
        module.fail_json(**redact(fail, ctx.secrets))
    for warning in ctx.warnings:
        module.warn(redact(warning, ctx.secrets))
    rdma = result["ansible_facts"]["rdma"]
    return dict(ansible_facts=dict(rdma=rdma), ports=plan.active_ports(rdma))


def read_nic(module, options):
    """The nic layer's check-mode read (rdmaops.roce.nic_layer's engine, in this run); imported only
    here, so the other steps' calls do not load the QoS engines."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import check_read

    return check_read(module, options)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            wait_jobs=dict(type="list", elements="dict", default=[], options=dict(
                jid=dict(type="str", required=True),
                results_file=dict(type="str", required=True),
                seconds=dict(type="int", required=True),
            )),
            nic_read=dict(type="dict"),
            rdma_facts=dict(type="bool", default=False),
            concurrent=dict(type="bool", default=False),
            port_reads=dict(type="list", elements="dict", default=[], options=dict(
                script=dict(type="str", required=True),
                check=dict(type="bool", default=False),
            )),
            commands=dict(type="list", elements="dict", default=[], options=dict(
                argv=dict(type="list", elements="str", required=True),
                item=dict(type="raw"),
                retries=dict(type="int", default=0),
                delay=dict(type="int", default=5),
                attempts=dict(type="int", default=1),
                check=dict(type="bool", default=False),
            )),
        ),
        supports_check_mode=True,
    )
    params = module.params
    outcome = dict(changed=False)
    bad = probe.check_jobs(params["wait_jobs"])
    if bad:
        module.fail_json(msg="; ".join(bad), **outcome)
    if params["wait_jobs"]:
        outcome.update(jobs=probe.wait_for_jobs(params["wait_jobs"]))
    commands = list(params["commands"])
    if params["rdma_facts"]:
        outcome.update(read_facts(module))
        netdevs = plan.port_netdevs(outcome["ports"])
        commands = [dict(argv=["sh", "-c", read["script"], "sh"] + netdevs, check=read["check"])
                    for read in params["port_reads"]] + commands
    if params["concurrent"]:
        # a command that cannot start is that command's result, not a fail_json from one of the threads
        results = probe.run_concurrently(lambda argv: module.run_command(argv, handle_exceptions=False), commands)
    else:
        results = probe.run_commands(module.run_command, commands)
    failed = probe.failed_checks(commands, results)
    outcome.update(results=results)
    if params["nic_read"] is not None:
        outcome.update(nic=read_nic(module, params["nic_read"]))
    if failed:
        module.fail_json(msg="a read failed: %s" % "; ".join(failed), **outcome)
    module.exit_json(**outcome)


if __name__ == "__main__":
    main()
