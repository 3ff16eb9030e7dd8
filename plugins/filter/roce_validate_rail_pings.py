# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate role's runs on the controller: the commands each host runs for the pairs it tests, and
their results matched back to the pairs (see roce_validate_rail_pings.yml and the other roce_validate_*.yml).

Each filter takes ``hostvars`` and reads only the variables it needs of the hosts it names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import describe
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import commands, results

# the variables each filter reads of a host (hostvars computes all of a host's variables on each look-up)
PORTS = ("validate_ports",)
RAILS = ("validate_ports", "validate_rail_links")
PINGS = ("validate_pings",)
RECORDS = ("validate_ports", "validate_pings", "validate_peer_evidence", "validate_clients")
STATE = ("validate_state",)


def _fail(name, what, value, fix):
    raise AnsibleFilterError("%s: %s must be %s, got %s; %s" % (name, what, fix[0], describe(value), fix[1]))


def _names(name, value, what, example):
    if isinstance(value, (string_types, Mapping)) or not isinstance(value, (list, tuple)) \
            or not all(isinstance(item, string_types) for item in value):
        _fail(name, what, value, ("a list of host names", "pass it as %s" % example))
    return [str(item) for item in value]


def _pairs(name, value, what, example):
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(end, string_types) for end in pair) for pair in value):
        _fail(name, what, value, ("a list of [client, server] host name pairs", "pass %s" % example))
    return [list(pair) for pair in value]


def _host(name, value):
    if not isinstance(value, string_types):
        _fail(name, "the host", value, ("a host name", "pass inventory_hostname"))
    return str(value)


def _text(name, value, what, example):
    if not isinstance(value, string_types):
        _fail(name, what, value, ("text", "pass %s" % example))
    return value


def _whole(name, value, what, example):
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(name, what, value, ("a whole number", "pass %s" % example))
    return value


def _vars_of(name, hostvars, hosts, keys):
    """``{host: {key: value}}`` for the ``keys`` each of ``hosts`` has in ``hostvars`` (one look-up per host)."""
    if not isinstance(hostvars, Mapping):
        _fail(name, "its input", hostvars, ("hostvars, the mapping of host name to its variables", "write hostvars | rdmaops.roce.%s(...)" % name))
    out = {}
    for host in hosts:
        if host in out or host not in hostvars:
            continue
        found = hostvars[host]
        out[host] = dict((key, found[key]) for key in keys if isinstance(found, Mapping) and key in found)
    return out


def _ends(pairs, host):
    """``host`` and the servers of the pairs it is the client of: the hosts its commands name (not every
    host of the pairs, which at fleet scale would read every host's variables on every host)."""
    return [host] + [pair[1] for pair in pairs if pair[0] == host]


def _address_of(name, run, *args):
    try:
        return run(*args)
    except commands.MissingAddress as error:
        raise AnsibleFilterError("%s: host %s is in the pairs but has no RDMA address (no IPv4 address on the first port of its validate_ports); "
                                 "choose the pairs with rdmaops.roce.roce_validate_pairs, which leaves such hosts out" % (name, error.host))


def roce_validate_rail_pings(hostvars, pairs, host, batch):
    """The rail pings ``host`` runs (see roce_validate_rail_pings.yml)."""
    name = "roce_validate_rail_pings"
    pairs = _pairs(name, pairs, "the pairs", "validate_pair_list (the paths of roce_validate_pairs)")
    host = _host(name, host)
    batch = _names(name, batch, "the batch", "validate__batch | default(ansible_play_batch)")
    return commands.rail_pings(pairs, host, batch, _vars_of(name, hostvars, _ends(pairs, host), RAILS))


def roce_validate_path_checks(hostvars, pairs, host, nonce, host_mtu, script):
    """The path checks ``host`` runs (see roce_validate_path_checks.yml)."""
    name = "roce_validate_path_checks"
    pairs = _pairs(name, pairs, "the pairs", "validate_pair_list (the paths of roce_validate_pairs)")
    host = _host(name, host)
    nonce = _text(name, nonce, "the nonce", "validate_path_nonce")
    host_mtu = _whole(name, host_mtu, "host_mtu", "the resolved intent's host_mtu (validate_intent['host_mtu'])")
    script = _text(name, script, "the script", "validate_path_script (files/path-check.sh)")
    return _address_of(name, commands.path_checks, pairs, host, _vars_of(name, hostvars, _ends(pairs, host), PORTS), nonce, host_mtu, script)


def roce_validate_arp_probes(hostvars, pairs, host, script):
    """The ARP probes ``host`` runs on its first rail (see roce_validate_arp_probes.yml)."""
    name = "roce_validate_arp_probes"
    pairs = _pairs(name, pairs, "the pairs", "validate_pair_list (the paths of roce_validate_pairs)")
    host = _host(name, host)
    script = _text(name, script, "the script", "validate_rail_arp_script")
    return commands.arp_probes(pairs, host, _vars_of(name, hostvars, _ends(pairs, host), RAILS), script)


PERFTEST_SETTINGS = ("timeout", "attempts", "port", "tos", "bw_seconds", "lat_iterations", "rail_bw_seconds")


def _perftest(name, value):
    """perftest's settings: a mapping of each of PERFTEST_SETTINGS to a whole number (timeout and attempts from 1)."""
    fix = ("a mapping of %s to whole numbers" % ", ".join(PERFTEST_SETTINGS), "pass the role's validate_perftest_settings")
    if not isinstance(value, Mapping) or set(value) != set(PERFTEST_SETTINGS):
        _fail(name, "the perftest settings", value, fix)
    for key in PERFTEST_SETTINGS:
        _whole(name, value[key], "perftest setting %s" % key, "validate_perftest_settings")
    if value["timeout"] < 1 or value["attempts"] < 1:
        _fail(name, "the perftest settings' timeout and attempts", value, ("at least 1", "set validate_rdma_timeout and validate_rdma_attempts from 1"))
    return dict(value)


def _servers_ends(pairs, host):
    """``host`` and the clients of the pairs it is the server of."""
    return [host] + [pair[0] for pair in pairs if pair[1] == host]


def roce_validate_perftest_servers(hostvars, pairs, host, unreachable, perftest, client=None):
    """The perftest servers ``host`` runs, all at once (see roce_validate_perftest_servers.yml)."""
    name = "roce_validate_perftest_servers"
    pairs = _pairs(name, pairs, "the pairs", "validate_rdma_pair_list (the rdma pairs of roce_validate_pairs)")
    host = _host(name, host)
    unreachable = _pairs(name, unreachable, "the unreachable pairs", "validate_unreachable_pairs (from roce_validate_unreachable_pairs)")
    perftest = _perftest(name, perftest)
    if client is not None and not isinstance(client, string_types):
        _fail(name, "the client", client, ("a host name", "pass inventory_hostname, or leave it out"))
    ends = _servers_ends(pairs, host) if client is None else [host, client]
    return commands.perftest_servers(pairs, host, _vars_of(name, hostvars, ends, RAILS), unreachable, perftest, client)


def roce_validate_perftest_clients(hostvars, pairs, host, batch, unreachable, perftest):
    """The perftest clients ``host`` runs, one after another (see roce_validate_perftest_clients.yml)."""
    name = "roce_validate_perftest_clients"
    pairs = _pairs(name, pairs, "the pairs", "validate_rdma_pair_list (the rdma pairs of roce_validate_pairs)")
    host = _host(name, host)
    batch = _names(name, batch, "the batch", "validate__batch | default(ansible_play_batch)")
    unreachable = _pairs(name, unreachable, "the unreachable pairs", "validate_unreachable_pairs (from roce_validate_unreachable_pairs)")
    perftest = _perftest(name, perftest)
    return _address_of(name, commands.perftest_clients, pairs, host, batch, _vars_of(name, hostvars, _ends(pairs, host), RAILS), unreachable, perftest)


def roce_validate_failed_senders(hostvars, batch, host, nonce):
    """The hosts whose small pings to ``host`` were not answered (see roce_validate_failed_senders.yml)."""
    name = "roce_validate_failed_senders"
    batch = _names(name, batch, "the batch", "validate__batch | default(ansible_play_batch)")
    host = _host(name, host)
    nonce = _text(name, nonce, "the nonce", "validate_path_nonce")
    return results.failed_senders(_vars_of(name, hostvars, batch, PINGS), batch, host, nonce)


def roce_validate_unreachable_pairs(hostvars, batch, nonce):
    """The pairs that do not reach each other (see roce_validate_unreachable_pairs.yml)."""
    name = "roce_validate_unreachable_pairs"
    batch = _names(name, batch, "the batch", "validate__batch | default(ansible_play_batch)")
    nonce = _text(name, nonce, "the nonce", "validate_path_nonce")
    return results.unreachable_pairs(_vars_of(name, hostvars, batch, PINGS), batch, nonce)


def _peers(hostvars, host, key, index):
    """The hosts ``host``'s ``key`` results name (their ``item[index]``), ``host`` first."""
    if not isinstance(hostvars, Mapping) or host not in hostvars:
        return [host]
    found = hostvars[host]
    rows = found[key] if isinstance(found, Mapping) and key in found else []
    return [host] + [row["item"][index] for row in rows or [] if isinstance(row, Mapping) and "item" in row]


def roce_validate_ping_records(hostvars, host, host_mtu, nonce):
    """``host``'s path checks as fabric_check reads them (see roce_validate_ping_records.yml)."""
    name = "roce_validate_ping_records"
    host = _host(name, host)
    host_mtu = _whole(name, host_mtu, "host_mtu", "the resolved intent's host_mtu (validate_intent['host_mtu'])")
    nonce = _text(name, nonce, "the nonce", "validate_path_nonce")
    return _address_of(name, results.ping_records, host, _vars_of(name, hostvars, _peers(hostvars, host, "validate_pings", 1), RECORDS),
                       host_mtu, nonce)


def roce_validate_rdma_records(hostvars, pairs, host, unreachable, roce_tos, run, why, requested):
    """``host``'s perftest clients as fabric_check reads them (see roce_validate_rdma_records.yml)."""
    name = "roce_validate_rdma_records"
    pairs = _pairs(name, pairs, "the pairs", "validate_rdma_pair_list (the rdma pairs of roce_validate_pairs)")
    host = _host(name, host)
    unreachable = _pairs(name, unreachable, "the unreachable pairs", "validate_unreachable_pairs (from roce_validate_unreachable_pairs)")
    return results.rdma_records(pairs, host, _vars_of(name, hostvars, _ends(pairs, host), RECORDS), unreachable, roce_tos, run, why, requested)


def roce_validate_hosts(hostvars, names):
    """``{host: its validate_state}`` for fabric_check (see roce_validate_hosts.yml)."""
    name = "roce_validate_hosts"
    names = _names(name, names, "the hosts", "validate_hosts_all | default(ansible_play_hosts_all)")
    return results.collected(_vars_of(name, hostvars, names, STATE), names)


def roce_validate_summary(result):
    """fabric_check's result in one line (see roce_validate_summary.yml)."""
    keys = ("passed", "summary", "measurements", "report_path")
    if not isinstance(result, Mapping) or not all(key in result for key in keys) or not isinstance(result["summary"], Mapping):
        raise AnsibleFilterError("roce_validate_summary: its input must be the result rdmaops.roce.fabric_check registered (with %s), got %s; "
                                 "register the fabric_check task and pass its result" % (", ".join(keys), describe(result)))
    return results.summary(result)


class FilterModule:
    def filters(self):
        return {"roce_validate_rail_pings": roce_validate_rail_pings, "roce_validate_path_checks": roce_validate_path_checks,
                "roce_validate_arp_probes": roce_validate_arp_probes, "roce_validate_failed_senders": roce_validate_failed_senders,
                "roce_validate_unreachable_pairs": roce_validate_unreachable_pairs, "roce_validate_ping_records": roce_validate_ping_records,
                "roce_validate_rdma_records": roce_validate_rdma_records, "roce_validate_hosts": roce_validate_hosts,
                "roce_validate_summary": roce_validate_summary, "roce_validate_perftest_servers": roce_validate_perftest_servers,
                "roce_validate_perftest_clients": roce_validate_perftest_clients}
