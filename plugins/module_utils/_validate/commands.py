# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands the validate role runs on one host, from the pairs it tests (:mod:`.plan`).

Each function returns the commands of one step as ``rdmaops.roce.validate_probe`` takes them:
``{"argv": [...], "item": ...}``, in the order they run; ``item`` says which pair (and rail) a
result belongs to.  ``vars_of`` maps each host name to its variables (``validate_ports``, the
host's active RoCE ports, and on multi-rail hosts ``validate_rail_links``, its rails' links); a
host without them is a host without ports or rails.  The filters roce_validate_rail_pings,
roce_validate_path_checks and roce_validate_arp_probes call them on the controller.

* :func:`rail_pings`: from each of this host's rail addresses to the address of the same rail on
  each peer of the batch it is the client of (a partner outside the batch has no rail counters
  read around the pings, so it gets none).
* :func:`path_checks`: the path check script per peer, from this host's RDMA address (the first
  address of its first active RoCE port) to the peer's, at the largest unfragmented ping the MTU
  allows; none from a host without an RDMA address.
* :func:`arp_probes`: from this host's NIC of its first rail, an ARP request for each of a peer's
  addresses on its other rails (only for a peer with more than one rail).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.six.moves.collections_abc import Mapping

# ICMP (8) and IPv4 (20) headers: the largest ping payload a frame of the MTU carries unfragmented
PING_HEADERS = 28


class MissingAddress(Exception):
    """A host the pairs name has no RDMA address (the pairs were chosen from other variables)."""

    def __init__(self, host):
        super(MissingAddress, self).__init__(host)
        self.host = host


def host_vars(vars_of, host):
    """``host``'s variables in ``vars_of``, ``{}`` for a host it does not hold."""
    found = vars_of.get(host)
    return found if isinstance(found, Mapping) else {}


def rail_links(vars_of, host):
    """``host``'s rail links (``validate_rail_links``), none when it has no rails."""
    return host_vars(vars_of, host).get("validate_rail_links") or []


def ports(vars_of, host):
    """``host``'s active RoCE ports (``validate_ports``), none when it has not read them."""
    return host_vars(vars_of, host).get("validate_ports") or []


def first_port(vars_of, host):
    """The first of ``host``'s active RoCE ports, or ``{}``."""
    found = ports(vars_of, host)
    return found[0] if found and isinstance(found[0], Mapping) else {}


def rdma_address(vars_of, host):
    """``host``'s RDMA address (the first IPv4 address of its first active RoCE port), or None."""
    addresses = first_port(vars_of, host).get("ipv4") or []
    return addresses[0] if addresses else None


def peer_address(vars_of, host):
    """The RDMA address of ``host``, a peer the pairs name: :class:`MissingAddress` without one."""
    address = rdma_address(vars_of, host)
    if address is None:
        raise MissingAddress(host)
    return address


def _client_pairs(pairs, host):
    return [pair for pair in pairs if pair[0] == host]


def rail_pings(pairs, host, batch, vars_of):
    """``ping -c 2 -W 3 -I <address> <peer's address>`` from each of ``host``'s rail links to the first
    link of the same rail on each peer of ``batch`` that ``host`` is the client of in ``pairs``;
    ``item`` is ``[pair, link]``."""
    commands = []
    for pair in _client_pairs(pairs, host):
        if pair[1] not in batch:
            continue
        for link in rail_links(vars_of, host):
            same_rail = [peer_link for peer_link in rail_links(vars_of, pair[1]) if peer_link["rail"] == link["rail"]]
            if same_rail:
                commands.append({"argv": ["ping", "-c", "2", "-W", "3", "-I", link["address"], same_rail[0]["address"]],
                                 "item": [pair, link]})
    return commands


def path_checks(pairs, host, vars_of, nonce, host_mtu, script):
    """The path check ``script`` (``sh -c``) to each peer ``host`` is the client of: its operands the
    ``nonce``, this host's RDMA address and netdev, the peer's RDMA address and the largest ping
    payload of ``host_mtu``; ``item`` is the pair.  None from a host without an RDMA address."""
    source = rdma_address(vars_of, host)
    if source is None:
        return []
    netdev = first_port(vars_of, host).get("netdev")
    size = str(host_mtu - PING_HEADERS)
    return [{"item": pair, "argv": ["sh", "-c", script, "sh", nonce, source, netdev, peer_address(vars_of, pair[1]), size]}
            for pair in _client_pairs(pairs, host)]


def arp_probes(pairs, host, vars_of, script):
    """The ARP probe ``script`` (``sh -c``) from ``host``'s NIC of its first rail to each peer it is
    the client of that has more than one rail: its operands the netdev, then the peer's addresses
    on the rails other than that one; ``item`` is the pair."""
    links = rail_links(vars_of, host)
    if not links:
        return []
    commands = []
    for pair in _client_pairs(pairs, host):
        peer_links = rail_links(vars_of, pair[1])
        if len(peer_links) > 1:
            others = [peer_link["address"] for peer_link in peer_links if peer_link["rail"] != links[0]["rail"]]
            commands.append({"item": pair, "argv": ["sh", "-c", script, "sh", links[0]["interface"]] + others})
    return commands
