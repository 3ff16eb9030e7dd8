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
