# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric's address plan (``roce_fabric.rails``) on the controller: every host's plan, and one
host's plan resolved to its netdevs (see roce_rail_plan.yml and roce_rail_links.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import kind
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import IntentError, _is_list
from ansible_collections.rdmaops.roce.plugins.module_utils._rails import IFNAME, check_plan_entry, plan_rails


def roce_rail_plan(roce_fabric, hosts, only=None):
    """``{host: [one entry per rail]}`` for every host of ``hosts`` (hostvars) with rail variables,
    or for the hosts in ``only``; every problem of the plan refused in one error."""
    if roce_fabric is None:
        return {}
    if not isinstance(roce_fabric, Mapping):
        raise AnsibleFilterError("roce_rail_plan expects roce_fabric, a mapping, not %s" % kind(roce_fabric))
    try:
        return plan_rails(roce_fabric.get("rails"), hosts, only=only)
    except IntentError as exc:
        raise AnsibleFilterError(str(exc).replace("roce_fabric is not valid", "the rail plan (roce_fabric.rails) is not valid", 1))


def _resolve(entry, netdevs):
    """The netdev of this host that ``entry`` (one rail of its plan) selects, or ``(None, why)``."""
    if entry.get("netdev") is not None:
        name = entry["netdev"]
        return (name, None) if name in netdevs else (None, "netdev %s is not an RDMA netdev here" % name)
    if entry.get("netdevs") is not None:
        for name in entry["netdevs"]:
            if name in netdevs:
                return name, None
        return None, "none of netdevs %s is an RDMA netdev here" % ", ".join(entry["netdevs"])
    if entry.get("pci") is not None:
        key, value, what = "pci_address", entry["pci"], "PCI function %s" % entry["pci"]
    else:
        key, value, what = "ibdev", entry.get("rdma_device"), "RDMA device %s" % entry.get("rdma_device")
    found = sorted(name for name, info in netdevs.items() if isinstance(info, Mapping) and info.get(key) == value)
    if len(found) == 1:
        return found[0], None
    if not found:
        return None, "%s has no RDMA netdev here" % what
    return None, "%s has several netdevs (%s): name one with netdev" % (what, ", ".join(found))


def roce_rail_links(host_plan, rdma, host=None):
    """One host's plan (a value of roce_rail_plan) with each rail's ``interface`` resolved from
    ``ansible_facts.rdma``: the ``rails`` option of rdmaops.roce.nic_layer."""
    if host_plan is None:
        return []
    if not _is_list(host_plan):
        raise AnsibleFilterError("roce_rail_links expects one host's rail plan (a list, from roce_rail_plan), not %s" % kind(host_plan))
    if not isinstance(rdma, Mapping) or not isinstance(rdma.get("netdevs"), Mapping):
        raise AnsibleFilterError("roce_rail_links expects ansible_facts.rdma (run rdmaops.roce.rdma_facts first)")
    netdevs = dict((name, info) for name, info in rdma["netdevs"].items() if isinstance(name, str))
    problems = []
    links = []
    used = {}
    for position, entry in enumerate(host_plan):
        entry_problems = check_plan_entry(entry, "%sthe rail plan's entry %d" % ("host %s: " % host if host else "", position))
        if entry_problems:
            problems.extend(entry_problems)
            continue
        name, why = _resolve(entry, netdevs)
        where = "%srail %s" % ("host %s, " % host if host else "", entry.get("rail"))
        if not why and not (isinstance(name, str) and IFNAME.fullmatch(name)):
            why = "the netdev %r it selects is not an interface name" % (name[:20] if isinstance(name, str) else name,)
        if why:
            problems.append("%s: %s (RDMA netdevs: %s)" % (where, why, ", ".join(sorted(netdevs)) or "none"))
            continue
        if name in used:
            problems.append("%s: %s is also on rail %s; each rail needs a NIC of its own" % (where, name, used[name]))
            continue
        used[name] = entry.get("rail")
        link = dict((key, entry[key]) for key in ("rail", "address", "prefix", "network", "gateway", "table", "rule_priority"))
        link["interface"] = name
        links.append(link)
    if problems:
        raise AnsibleFilterError("the rail plan does not fit this host:\n" + "\n".join("  - " + problem for problem in problems))
    return links


class FilterModule:
    def filters(self):
        return {"roce_rail_plan": roce_rail_plan, "roce_rail_links": roce_rail_links}
