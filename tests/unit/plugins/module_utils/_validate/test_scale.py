"""fabric_check on a large fleet: the work grows with the number of hosts, not with its square, and
the lookups that replaced whole-fleet scans give exactly what the scans gave (benchmarks/controller.py
measures the time; these tests count the work and compare the answers)."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import rails, verdict

INTENT = resolve_intent({})
BW_CMD = ["timeout", "120", "ib_write_bw", "-d", "mlx5_0", "-x", "3", "--report_gbits"]


def _gid(address):
    return "00:00:00:00:00:00:00:00:00:00:255:255:" + ":".join("%02d" % int(part) for part in address.split("."))


def _perftest(local, remote):
    return (" Dual-port       : OFF\t\tDevice         : mlx5_0\n"
            " GID: %s\n GID: %s\n"
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            " 65536      1000             90.00              89.50   \t\t   0.170000\n" % (_gid(local), _gid(remote)))


def fleet(count):
    """``count`` two-rail hosts, each with an ib_write_bw per rail to the next host's address on that rail."""
    names = ["gpu%04d" % index for index in range(count)]
    address = dict((name, ["10.%d.%d.%d" % (10 + rail, index // 250, index % 250 + 1) for rail in range(2)])
                   for index, name in enumerate(names))
    states = {}
    for index, name in enumerate(names):
        peer = names[(index + 1) % count]
        links = [dict(rail="rail%d" % rail, interface="ens%d" % rail, address=address[name][rail], prefix=16,
                      network="10.%d.0.0/16" % (10 + rail), gateway="10.%d.255.254" % (10 + rail), table=100 + rail,
                      rule_priority=1000) for rail in range(2)]
        runs = [dict(item=[0, rail], cmd=BW_CMD + [address[peer][rail]], rc=0, stdout=_perftest(address[name][rail], address[peer][rail]))
                for rail in range(2)]
        states[name] = dict(rails=dict(links=links, rdma=runs))
    return states


def _counting(monkeypatch):
    calls = [0]
    real = rails._rails_of

    def counted(states, host):
        calls[0] += 1
        return real(states, host)

    monkeypatch.setattr(rails, "_rails_of", counted)
    return calls


def test_fabric_check_reads_each_hosts_rails_a_bounded_number_of_times(monkeypatch):
    """Each rail run's peer was found by scanning every host's plan: twice the hosts, four times the
    reads. Now the reads per host stay the same whatever the fleet's size."""
    calls = _counting(monkeypatch)
    per_host = []
    for count in (20, 80):
        calls[0] = 0
        result = verdict.fabric_check(INTENT, fleet(count), switches={})
        rdma = [f for f in result["findings"] if f["check"] == "rails" and f["field"].endswith("RDMA")]
        assert len(rdma) == 2 * count and all(f["passed"] is True for f in rdma), [f for f in rdma if f["passed"] is not True][:2]
        # each run names the next host as its peer
        assert rdma[0]["host"] == "gpu0000" and rdma[0]["peer"] == "gpu0001"
        per_host.append(calls[0] / float(count))
    assert per_host[1] <= per_host[0] * 1.1, per_host


# the peer lookup answers what the scan of every host answered, on any data ------------------------
TEXTS = st.sampled_from(["rail0", "rail1", "10.0.0.1", "10.0.0.2", ""])
ODD = st.one_of(st.none(), st.integers(0, 2), st.booleans(), st.lists(st.integers(0, 1), max_size=1),
                st.dictionaries(st.just("k"), st.integers(0, 1), max_size=1))
VALUE = st.one_of(TEXTS, ODD)
LINK = st.one_of(st.fixed_dictionaries({}, optional=dict(rail=VALUE, address=VALUE)), ODD)
STATE = st.one_of(st.fixed_dictionaries({}, optional=dict(rails=st.one_of(
    st.fixed_dictionaries({}, optional=dict(links=st.one_of(st.lists(LINK, max_size=4), ODD))), ODD))), ODD)
STATES = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), STATE, max_size=4)


def scan(states, host, rail, remote):
    """The lookup as it was: every host's plan, in host order, for a link of that rail and address."""
    return next((name for name in sorted(states) if isinstance(name, str) and name != host
                 for peer_link in rails._list(rails._rails_of(states, name).get("links"))
                 if isinstance(peer_link, dict) and peer_link.get("rail") == rail and peer_link.get("address") == remote), None)


@settings(max_examples=300, deadline=None)
@given(states=STATES)
def test_the_peer_index_finds_the_peer_the_scan_found(states):
    index = rails.rail_peers(states)
    # a run's rail is text or None and its remote address text or None (parse_rail_perftest)
    for host, rail, remote in itertools.product(["a", "b", "z"], ["rail0", "rail1", "", None], ["10.0.0.1", "10.0.0.2", "", None]):
        found = next((name for name in index.get((rail, remote), ()) if name != host), None)
        assert found == scan(states, host, rail, remote), (host, rail, remote)


# why a host or switch was not checked: the first such hint of each, as the scan gave it -------------
FINDINGS = st.lists(st.fixed_dictionaries(dict(host=st.sampled_from(["h1", "h2", "s1", "switches"]),
                                               passed=st.sampled_from([True, False, None]),
                                               hint=st.sampled_from(["", "why 1", "why 2"]),
                                               check=st.sampled_from(["mtu", "input"]),
                                               field=st.just("f"))), max_size=8)


@settings(max_examples=300, deadline=None)
@given(findings=FINDINGS, unproven=st.lists(st.just("asked for, not measured"), max_size=1))
def test_unproven_parts_names_each_unchecked_owner_with_its_first_hint(findings, unproven):
    parts = verdict.unproven_parts(findings, {"h1": {}, "h2": {}}, {"s1": {}}, list(unproven))
    checked = set(f["host"] for f in findings if f["passed"] is not None)
    expected = []
    for kind, name in (("host", "h1"), ("host", "h2"), ("switch", "s1")):
        if name not in checked:
            why = [f["hint"] for f in findings if f["host"] == name and f["passed"] is None][:1]
            expected.append("%s %s: nothing checked%s" % (kind, name, (" (%s)" % why[0]) if why else ""))
    assert [part for part in parts if "nothing checked" in part and part != "nothing was checked"] == expected
