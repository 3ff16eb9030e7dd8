# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for iproute2 output (``ip -j ...``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json


def parse_ip_addr_json(text):
    """Parse ``ip -j addr show`` (iproute2): ``{ifname: {"ipv4": [...], "ipv6": [...]}}``.

    Addresses are ``address/prefixlen`` strings normalised through :mod:`ipaddress`.
    Malformed JSON gives ``{}`` so that a broken tool only costs facts, never the run.
    """
    try:
        links = json.loads(text or "[]")
    except ValueError:
        return {}
    result = {}
    if not isinstance(links, list):
        return result
    for link in links:
        name = link.get("ifname") if isinstance(link, dict) else None
        if not name:
            continue
        entry = result.setdefault(name, {"ipv4": [], "ipv6": []})
        for info in link.get("addr_info") or []:
            if not isinstance(info, dict):
                continue
            local, prefix = info.get("local"), info.get("prefixlen")
            if local is None or prefix is None:
                continue
            try:
                iface = ipaddress.ip_interface(u"%s/%s" % (local, prefix))
            except ValueError:
                continue
            entry["ipv4" if iface.version == 4 else "ipv6"].append(str(iface))
    return result


# -- the rails of multi-rail hosts (nic_layer rails, rdma_facts) --------------------------------
RAIL_TABLES = "/etc/iproute2/rt_tables.d/rdmaops.conf"


def _json_list(text):
    try:
        data = json.loads(text or "[]")
    except ValueError:
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def parse_addresses(text):
    """``ip -j address show`` -> ``{ifname: [(family, "addr/prefix", scope)]}``."""
    out = {}
    for link in _json_list(text):
        entries = out.setdefault(link.get("ifname"), [])
        for info in link.get("addr_info") or []:
            if isinstance(info, dict) and info.get("local") is not None and info.get("prefixlen") is not None:
                family = 4 if info.get("family") == "inet" else 6
                entries.append((family, "%s/%s" % (info["local"], info["prefixlen"]), info.get("scope")))
    return out


def parse_routes(text):
    """``ip -N -j route show table all`` -> routes with ``table`` as a number (main: 254)."""
    routes = []
    for route in _json_list(text):
        table = route.get("table", "254")
        try:
            table = int(table)
        except (TypeError, ValueError):
            continue
        routes.append(dict(dst=route.get("dst"), gateway=route.get("gateway"), dev=route.get("dev"), prefsrc=route.get("prefsrc"),
                           table=table, type=route.get("type", "unicast")))
    return routes


def parse_rules(text):
    """``ip -N -j rule show`` -> rules with ``priority``, ``src`` (with its length) and ``table``."""
    rules = []
    for rule in _json_list(text):
        try:
            table = int(rule.get("table"))
        except (TypeError, ValueError):
            table = None
        src = rule.get("src")
        if src and src != "all" and rule.get("srclen") is not None:
            src = "%s/%s" % (src, rule["srclen"])
        rules.append(dict(priority=rule.get("priority"), src=src, table=table, raw=rule))
    return rules


def parse_rt_tables(text):
    """Our rt_tables.d file -> ``{table number: (name, rail)}`` (the rail from the comment above)."""
    out = {}
    rail = None
    for line in (text or "").splitlines():
        words = line.split()
        if len(words) == 3 and words[:2] == ["#", "rail"]:
            rail = words[2]
        elif len(words) == 2 and words[0].isdigit():
            out[int(words[0])] = (words[1], rail)
            rail = None
    return out
