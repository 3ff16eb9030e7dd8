#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: scheduler
short_description: Query, drain, wait for, resume and reboot cluster nodes through their scheduler (Slurm or the site's commands)
version_added: 1.1.0
description:
  - The one place where a rollout talks to the cluster's scheduler, so changes that would break running jobs
    are made only on nodes that run none. Runs on a host whose scheduler client works (for Slurm, any host
    with C(scontrol) and C(squeue) configured for the cluster).
  - O(action=query) reads each node's state, drain reason and the jobs that hold it; O(action=wait_idle)
    waits until the nodes run no job or O(timeout) passes and says which jobs held them; both only read.
  - O(action=drain) drains the nodes with the reason O(reason) prefixed by C(rdmaops.roce:), at most O(max_unavailable)
    of the O(pool) out of service at once (nodes already drained or down for any reason count); nodes beyond
    that are returned in C(deferred), untouched.
  - O(action=resume) resumes only nodes drained with a C(rdmaops.roce:) reason. O(action=set_reason) rewrites our
    reason on nodes that stay drained (a failed validation gate names its finding there). O(action=reboot) asks the
    scheduler to reboot each node once it runs no job and to put it back in service afterwards (Slurm
    C(scontrol reboot ASAP nextstate=RESUME)).
  - A node out of service for someone else (drained with a reason that does not start with C(rdmaops.roce:), or
    down with such a reason, Slurm's own C(Not responding) included) is left exactly as it is by every action and
    returned in C(foreign) - its reason is never overwritten and it is never resumed. O(action=reboot) refuses it
    too - C(nextstate=RESUME) would put it back in service after the reboot, and the reboot itself could come in
    the middle of their work - and says in a warning that the node still needs a reboot for O(reason); the
    module does not fail for it.
  - Every command (C(scontrol), C(squeue), each of the site's O(commands)) runs under a time bound,
    O(command_timeout); one that runs longer is killed with its process group and the module fails naming the
    command and the bound. While waiting (O(action=wait_idle)), each read is also bounded by what is left of
    O(timeout) (at least 5 s).
  - Output is read defensively - text that is not UTF-8 (a reason someone typed) is decoded with U+FFFD in place of
    the bad bytes; a node the scheduler lists twice is never idle; a node state or flag this module does not know
    is never idle (an unknown state also counts as out of service); a job state it does not know holds the node.
  - Nothing is changed in the scheduler in check mode; the result predicts what would be.
  - A scheduler that does not answer fails the module before anything is drained, with what it said; a node
    the scheduler does not know fails it naming C(rdmaops_slurm_node_name).
author:
  - rdmaops developers (@rdmaops)
options:
  action:
    description: What to do.
    type: str
    required: true
    choices: [query, wait_idle, drain, resume, set_reason, reboot]
  nodes:
    description: The scheduler's names of the nodes to act on (host names; no lists or ranges).
    type: list
    elements: str
    required: true
  pool:
    description:
      - Every node of the rollout, for O(max_unavailable) (default O(nodes)). Also read by O(action=query).
    type: list
    elements: str
  max_unavailable:
    description:
      - How many nodes of O(pool) may be out of service at once, as a count (V(2)) or a percentage of the pool
        (V(25%), rounded down, at least one). Used by O(action=drain); reported by O(action=query).
    type: raw
  reason:
    description:
      - What the rollout will change on the nodes (O(action=drain), O(action=set_reason), O(action=reboot)). The
        module prefixes C(rdmaops.roce:) and keeps it on one line of at most 200 characters.
    type: str
  backend:
    description:
      - V(slurm) runs C(scontrol) and C(squeue). V(command) runs the site's own O(commands).
    type: str
    choices: [slurm, command]
    default: slurm
  commands:
    description:
      - With O(backend=command), shell command lines for C(busy) (prints nothing when the node runs no job, the
        jobs otherwise), C(drain), C(resume) and, optionally, C(state) (prints C(available), C(drained) or
        C(down), then the drain reason) and C(reboot). The node and the reason reach them as the environment
        variables E(RDMAOPS_NODE) and E(RDMAOPS_REASON), never pasted into the line.
    type: dict
  timeout:
    description: Seconds O(action=wait_idle) waits for the jobs to end.
    type: int
    default: 3600
  command_timeout:
    description:
      - Seconds any one scheduler command may run before it is killed with its process group (the role's
        C(rdmaops_scheduler_timeout)). At least 1.
    type: int
    default: 60
  poll_interval:
    description: Seconds between two reads while waiting.
    type: int
    default: 10
extends_documentation_fragment:
  - rdmaops.roce.attributes
attributes:
  check_mode:
    support: full
    description: Reads the scheduler and predicts; drains, resumes and reboots nothing, and does not wait.
  diff_mode:
    support: full
    description: Before and after of each node's drain reason.
seealso:
  - name: Slurm scontrol
    description: The node states and the update, reboot and show commands this module runs.
    link: https://slurm.schedmd.com/scontrol.html
"""

EXAMPLES = r"""
- name: Drain a host that needs a link reset, at most two nodes out of service at once
  rdmaops.roce.scheduler:
    action: drain
    nodes: [gpu017]
    pool: "{{ ansible_play_hosts_all }}"
    max_unavailable: 2
    reason: "nic_layer: ens1f0np0 set pfc from [] to [3]"
  delegate_to: slurm-head

- name: Wait until it runs no job (at most an hour)
  rdmaops.roce.scheduler:
    action: wait_idle
    nodes: [gpu017]
    timeout: 3600
  delegate_to: slurm-head
  register: idle

- name: Another scheduler, through the site's commands
  rdmaops.roce.scheduler:
    action: query
    nodes: [gpu017]
    backend: command
    commands:
      busy: 'mysched jobs --node "$RDMAOPS_NODE" --running'
      drain: 'mysched drain "$RDMAOPS_NODE" --reason "$RDMAOPS_REASON"'
      resume: 'mysched resume "$RDMAOPS_NODE"'
"""

RETURN = r"""
nodes:
  description:
    - Per node, as the scheduler reports it (after the change, unless in check mode) - C(state), C(flags),
      C(reason), C(drained), C(out_of_service), C(busy), C(ours) (drained with a C(rdmaops.roce:) reason),
      C(foreign) (out of service for someone else's reason) and C(jobs) (C(id), C(state), C(user), C(name)).
  returned: always
  type: dict
acted:
  description: The nodes drained, resumed, relabelled or handed to the scheduler for a reboot (or that would be).
  returned: with drain, resume, set_reason and reboot
  type: list
  elements: str
deferred:
  description: Nodes not drained because O(max_unavailable) nodes of the pool are out of service already.
  returned: with drain, resume, set_reason and reboot
  type: list
  elements: str
foreign:
  description:
    - Nodes out of service for someone else (drained or down with a reason not ours), left exactly as they are
      (with O(action=reboot), not handed to the scheduler - a warning says they still need the reboot).
  returned: with drain, resume, set_reason and reboot
  type: list
  elements: str
busy:
  description: With O(action=wait_idle), the nodes still running jobs when it stopped waiting.
  returned: with wait_idle
  type: list
  elements: str
holding:
  description: With O(action=wait_idle), per busy node, the jobs that held it (C(id name (state, user))).
  returned: with wait_idle
  type: dict
timed_out:
  description: With O(action=wait_idle), true when O(timeout) passed with a node still busy.
  returned: with wait_idle
  type: bool
max_unavailable:
  description: The number of nodes O(max_unavailable) allows for this pool.
  returned: when max_unavailable is given
  type: int
unavailable:
  description: The nodes of the pool out of service before the change (drained, down, rebooting).
  returned: when max_unavailable is given
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_facts, run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.engine import SchedulerChange, gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", required=True, choices=["query", "wait_idle", "drain", "resume", "set_reason", "reboot"]),
            nodes=dict(type="list", elements="str", required=True),
            pool=dict(type="list", elements="str"),
            max_unavailable=dict(type="raw"),
            reason=dict(type="str"),
            backend=dict(type="str", default="slurm", choices=["slurm", "command"]),
            commands=dict(type="dict"),
            timeout=dict(type="int", default=3600),
            command_timeout=dict(type="int", default=60),
            poll_interval=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    if module.params["action"] in ("query", "wait_idle"):
        run_facts(module, gather)
    else:
        run_module(module, SchedulerChange)


if __name__ == "__main__":
    main()
