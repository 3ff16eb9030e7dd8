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
* :func:`perftest_servers` and :func:`perftest_clients`: every perftest this host serves (run all at
  once, as one asynchronous job) and every one it is the client of (one after another), for the
  pairs' first ports and for each rail, as one call each instead of one module execution per test.

Perftest's settings come as one mapping, ``perftest``: ``timeout`` (seconds a run may take),
``attempts`` (runs of a test that failed or hung), ``port`` (the first TCP port), ``tos``,
``bw_seconds``, ``lat_iterations`` and ``rail_bw_seconds``, all whole numbers.
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


PERFTEST_TOOLS = ("ib_write_bw", "ib_write_lat")


def _pairs_of(pairs, host, end, unreachable):
    """``(index, pair)`` of each pair whose ``end`` (0: client, 1: server) is ``host`` and that is not
    in ``unreachable`` (either way round)."""
    dead = set(tuple(sorted(other)) for other in unreachable)
    return [(index, pair) for index, pair in enumerate(pairs) if pair[end] == host and tuple(sorted(pair)) not in dead]


def _first_port_argv(port, perftest, index, test):
    """``test`` under ``timeout`` on a first port (RC over RDMA-CM, its RoCE v2 GID, the intent's ToS),
    on pair ``index``'s TCP port; a client adds the server's address."""
    return (["timeout", str(perftest["timeout"]), test] + _port_args(port, perftest)
            + ["-p", _tcp_port(perftest, index, test)] + _extra(test, perftest))


def _rail_argv(port, perftest, tcp_port):
    """ib_write_bw under ``timeout`` on a rail's port, on ``tcp_port``; a client adds the server's address."""
    return ["timeout", str(perftest["timeout"]), "ib_write_bw"] + _rail_args(port, perftest) + ["-p", tcp_port]


def _port_args(port, perftest):
    """A first port's perftest options: RC over RDMA-CM (``-R``) on its RoCE v2 GID, the intent's ToS."""
    return ["-d", port["device"], "-i", str(port["port"]), "-R", "-x", str(port["gid_index"]), "-T", str(perftest["tos"])]


def _extra(test, perftest):
    if test == "ib_write_bw":
        return ["-D", str(perftest["bw_seconds"]), "--report_gbits"]
    return ["-n", str(perftest["lat_iterations"])]


def _tcp_port(perftest, index, test):
    """Pair ``index``'s TCP port for ``test`` (two per pair, from ``perftest["port"]``)."""
    return str(perftest["port"] + 2 * index + PERFTEST_TOOLS.index(test))


def _rail_port(vars_of, host, link):
    """``host``'s active RoCE port behind ``link``'s netdev, or None."""
    found = [port for port in ports(vars_of, host) if isinstance(port, Mapping) and port.get("netdev") == link.get("interface")]
    return found[0] if found else None


def _rail_tcp_port(perftest, pairs, index, server_link):
    """The TCP port of pair ``index``'s test on the server's rail link ``server_link`` (its position
    among the server's links), after the pairs' own two each; both ends compute it from the server."""
    return str(perftest["port"] + 2 * len(pairs) + 16 * index + server_link)


def _rail_args(port, perftest):
    """A rail's ib_write_bw options: the rail's device and the GID of the rail's address, the ToS in the
    GRH (``--tclass``); not over RDMA-CM, whose address resolution goes through the main table."""
    return ["-d", port["device"], "-i", str(port["port"]), "-x", str(port["gid_index"]), "--tclass=%s" % perftest["tos"],
            "-D", str(perftest["rail_bw_seconds"]), "--report_gbits"]


def _rail_match(vars_of, host, rail, active):
    """``(position, link)`` of ``host``'s first link of ``rail`` (with ``active``, only one with an active
    RoCE port behind it), or None."""
    for position, link in enumerate(rail_links(vars_of, host)):
        if link.get("rail") == rail and (not active or _rail_port(vars_of, host, link) is not None):
            return position, link
    return None


def perftest_servers(pairs, host, vars_of, unreachable, perftest, client=None):
    """The perftest servers ``host`` runs, all at once: ib_write_bw and ib_write_lat on its first port
    for each pair it is the server of (``item`` ``[test, pair index]``), then ib_write_bw on each of its
    rails whose client has an active port on the same rail (``item`` ``[pair index, link position]``).
    A server serves one client run and exits; one whose run failed or hung listens again, up to
    ``attempts`` runs, so that the client's next attempt has a server.  With ``client``, only the
    first port's servers for the pairs of that client: those of a partner outside the batch, which
    the client starts and runs no rail test against (a partner may still hold rail links from a
    play in which it was of the batch)."""
    served = [(index, pair) for index, pair in _pairs_of(pairs, host, 1, unreachable) if client in (None, pair[0])]
    own = first_port(vars_of, host)
    again = {"retries": perftest["attempts"] - 1, "attempts": perftest["attempts"], "delay": 0}
    commands = []
    if own:
        for test in PERFTEST_TOOLS:
            for index, _pair in served:
                commands.append(dict(again, argv=_first_port_argv(own, perftest, index, test), item=[test, index]))
    for index, pair in served if client is None else []:
        for position, link in enumerate(rail_links(vars_of, host)):
            port = _rail_port(vars_of, host, link)
            # a server listens only for a client that will run (one with an active port on the rail)
            if port is None or _rail_match(vars_of, pair[0], link.get("rail"), active=True) is None:
                continue
            argv = _rail_argv(port, perftest, _rail_tcp_port(perftest, pairs, index, position))
            commands.append(dict(again, argv=argv, item=[index, position]))
    return commands


def perftest_clients(pairs, host, batch, vars_of, unreachable, perftest):
    """The perftest clients ``host`` runs, one after another: ib_write_bw, then ib_write_lat, to each
    server of the pairs it is the client of (``item`` ``[test, pair index]``), then ib_write_bw on each
    of its rails with an active port to a server of the batch on the same rail (``item``
    ``[pair index, link position]``).  A client that starts before its server listens is refused at
    once and one that failed finds its server listening again: it runs again after 5 s, and one that
    hung (its ``timeout``, rc 124) only while ``attempts`` allows."""
    tested = _pairs_of(pairs, host, 0, unreachable)
    own = first_port(vars_of, host)
    again = {"retries": 4 + perftest["attempts"], "attempts": perftest["attempts"], "delay": 5}
    commands = []
    if own:
        for test in PERFTEST_TOOLS:
            for index, pair in tested:
                argv = _first_port_argv(own, perftest, index, test) + [peer_address(vars_of, pair[1])]
                commands.append(dict(again, argv=argv, item=[test, index]))
    for index, pair in tested:
        if pair[1] not in batch:
            continue  # a partner outside the batch runs no rail servers
        for position, link in enumerate(rail_links(vars_of, host)):
            port = _rail_port(vars_of, host, link)
            # a peer with the rail but no active port behind it starts no server: the client runs anyway,
            # and its failure is the finding
            server = _rail_match(vars_of, pair[1], link.get("rail"), active=False)
            if port is None or server is None:
                continue
            argv = _rail_argv(port, perftest, _rail_tcp_port(perftest, pairs, index, server[0])) + [peer_address(vars_of, pair[1])]
            commands.append(dict(again, argv=argv, item=[index, position]))
    return commands
