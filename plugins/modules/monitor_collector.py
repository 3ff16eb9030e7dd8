#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: monitor_collector
short_description: Install the RoCE metrics collector, its systemd timer and the intent snapshot for node_exporter
version_added: 1.1.0
description:
  - Installs, in one call, everything a host needs to export its RoCE state to Prometheus through
    node_exporter's textfile collector, and reports node_exporter's own state without changing it.
  - "C(/usr/local/sbin/rdmaops-roce-collector): the collector, generated from the collection's own code
    (the facts reader, the NIC layer's engines in check mode and fabric_check's host checks), run by
    the Python interpreter Ansible uses on the host. Each run writes
    C(<textfile_dir>/rdmaops_roce.prom) atomically: every RDMA port's C(hw_counters) and C(counters)
    (whatever the driver: mlx5, rxe, others) as C(rdmaops_roce_hw_*_total) and C(rdmaops_roce_port_*_total),
    the netdev's per-priority pause counters where C(ethtool -S) has them, the state the intent sets
    (netdev MTU, RoCE active MTU, trust, PFC and ECN per priority, RDMA-CM ToS) as gauges, and
    C(rdmaops_roce_intent_drift{check=...}): 1 when the host fails fabric_check's host check of that
    name against the intent, 0 when it passes, no series when the check has no data on this host."
  - The collector only reads; a counter the driver lacks gives no series.
  - "C(/etc/rdmaops/monitor-intent.json): the resolved intent O(intent), O(host_name) and O(interval)."
  - "C(rdmaops-roce-monitor.service) and C(rdmaops-roce-monitor.timer) (every O(interval) seconds),
    the timer enabled and, where systemd runs, started; changed units are reloaded and the timer restarted."
  - O(textfile_dir) is created when it is absent.
author:
  - rdmaops developers (@rdmaops)
options:
  state:
    description:
      - V(present) installs and starts; V(absent) stops the timer and removes the files and the metrics file.
    type: str
    choices: [present, absent]
    default: present
  intent:
    description:
      - The resolved fabric intent, C(roce_fabric | rdmaops.roce.roce_intent). Required with O(state=present).
    type: dict
  host_name:
    description:
      - The host's inventory name, used in the drift findings' words (C(inventory_hostname)).
        Required with O(state=present).
    type: str
  interval:
    description: Seconds between two collections (1 to 3600).
    type: int
    default: 15
  textfile_dir:
    description:
      - node_exporter's textfile collector directory (its C(--collector.textfile.directory)); Debian's
        and Ubuntu's C(prometheus-node-exporter) read C(/var/lib/prometheus/node-exporter).
    type: path
    default: /var/lib/prometheus/node-exporter
  node_exporter_service:
    description:
      - The node_exporter systemd service whose state is reported in RV(node_exporter)
        (C(prometheus-node-exporter) on Debian and Ubuntu, C(node_exporter) from EPEL).
    type: str
    default: prometheus-node-exporter.service
extends_documentation_fragment:
  - rdmaops.roce.attributes
  - rdmaops.roce.attributes.action
  - rdmaops.roce.owned_files
notes:
  - The collector's files carry the C(Managed by rdmaops.roce) marker; run the module again after
    upgrading the collection, and the script is regenerated from the new code.
  - The service runs with a read-only file system except O(textfile_dir); it needs no network.
seealso:
  - name: node_exporter's textfile collector
    description: How node_exporter reads C(*.prom) files.
    link: https://github.com/prometheus/node_exporter#textfile-collector
  - module: rdmaops.roce.fabric_check
"""

EXAMPLES = r"""
- name: Export RoCE counters and intent drift every 15 seconds
  rdmaops.roce.monitor_collector:
    intent: "{{ roce_fabric | rdmaops.roce.roce_intent }}"
    host_name: "{{ inventory_hostname }}"

- name: Remove the collector
  rdmaops.roce.monitor_collector:
    state: absent
"""

RETURN = r"""
paths:
  description: The script, snapshot, service, timer and metrics file.
  returned: always
  type: dict
interval:
  description: The collection interval in seconds (null with O(state=absent)).
  returned: always
  type: int
timer:
  description: C(enabled) (the timers.target.wants link is there) and C(active) as read before this run (null without systemd).
  returned: always
  type: dict
node_exporter:
  description:
    - C(service), C(installed) (its unit file exists), C(enabled) (wanted by multi-user.target) and
      C(active) (null without systemd). Read only; the monitor role installs and starts it.
  returned: always
  type: dict
changes:
  description: What changed (or would).
  returned: always
  type: list
  elements: str
commands:
  description: The commands that ran.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.install import MonitorCollector


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            intent=dict(type="dict"),
            host_name=dict(type="str"),
            interval=dict(type="int", default=15),
            textfile_dir=dict(type="path", default="/var/lib/prometheus/node-exporter"),
            node_exporter_service=dict(type="str", default="prometheus-node-exporter.service"),
            adopt=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ["intent", "host_name"])],
        supports_check_mode=True,
    )
    run_module(module, MonitorCollector)


if __name__ == "__main__":
    main()
