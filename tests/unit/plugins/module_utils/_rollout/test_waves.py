"""Phase two's wave planning and the limit arithmetic when other drains are present (the rollout's
policy, computed on the controller)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.policy import gate_partners, plan_waves


def hosts(*specs):
    return [tuple(spec.split(":")) for spec in specs]


def test_waves_are_max_unavailable_hosts_in_inventory_order():
    assert plan_waves(hosts("a:in", "b:in", "c:in", "d:in", "e:in"), 2) == [["a", "b"], ["c", "d"], ["e"]]


def test_other_drains_in_the_pool_shrink_every_wave():
    # limit 3, two nodes out elsewhere (another run's, an admin's): one host at a time
    assert plan_waves(hosts("a:in", "b:in", "c:in"), 3, others_out=2) == [["a"], ["b"], ["c"]]
    # the pool is full: still one at a time, the drain waits for room in the scheduler
    assert plan_waves(hosts("a:in", "b:in"), 2, others_out=5) == [["a"], ["b"]]


def test_a_host_someone_else_drained_goes_first_and_keeps_its_room():
    # c is drained by an admin: it stays out after the run, so only one more fits beside it
    assert plan_waves(hosts("a:in", "b:in", "c:out"), 2) == [["c", "a"], ["b"]]


def test_interrupted_hosts_are_finished_first_within_the_limit():
    assert plan_waves(hosts("a:in", "b:ours", "c:in", "d:in"), 2) == [["b", "a"], ["c", "d"]]
    # more interrupted hosts than the limit: finished together (they are out already), nothing new beside them
    assert plan_waves(hosts("a:ours", "b:ours", "c:ours", "d:in"), 2) == [["a", "b", "c"], ["d"]]


def test_serial_caps_the_waves():
    assert plan_waves(hosts("a:in", "b:in", "c:in"), 10, serial=2) == [["a", "b"], ["c"]]


def test_nothing_held_back_means_no_wave():
    assert plan_waves([], 4) == []


@pytest.mark.parametrize("limit, serial", [(0, None), (-1, None), ("2", None), (True, None), (2, 0)])
def test_bad_limits_are_refused(limit, serial):
    with pytest.raises(InputError):
        plan_waves(hosts("a:in"), limit, serial=serial)


def test_an_unknown_status_is_refused():
    with pytest.raises(InputError, match="unknown host status"):
        plan_waves([("a", "drained")], 2)


@settings(max_examples=300, deadline=None)
@given(statuses=st.lists(st.sampled_from(["in", "in", "in", "ours", "out"]), max_size=40),
       limit=st.integers(1, 8), others=st.integers(0, 10), serial=st.one_of(st.none(), st.integers(1, 6)))
def test_every_host_once_and_no_wave_takes_more_than_the_room(statuses, limit, others, serial):
    entries = [("h%d" % index, status) for index, status in enumerate(statuses)]
    waves = plan_waves(entries, limit, others_out=others, serial=serial)
    flat = [host for wave in waves for host in wave]
    assert sorted(flat) == sorted(entry[0] for entry in entries) and len(flat) == len(set(flat))
    status = dict(entries)
    foreign = statuses.count("out")
    room = max(1, limit - others - foreign)
    for wave in waves:
        assert wave
        new = [host for host in wave if status[host] == "in"]
        ours = [host for host in wave if status[host] == "ours"]
        # hosts newly taken out, beside the ones of ours already out, never exceed the room
        assert len(new) + len(ours) <= max(room, len(ours)) or not new
        if serial and new:
            assert len(new) + len(ours) <= max(serial, len(ours))


def test_partners_are_the_nearest_rolled_out_hosts():
    order = ["g%d" % n for n in range(10)]
    assert gate_partners(order, ["g5", "g6"], ["g0", "g4", "g9", "g5"]) == ["g4", "g9"]
    assert gate_partners(order, ["g5"], []) == []
    assert gate_partners(order, ["g5"], ["g3", "g7"]) == ["g3"]  # a tie: the earlier one


def test_no_room_beside_someone_elses_drain_puts_new_hosts_in_later_waves():
    # limit 1, b drained by an admin (it stays out): a is not drained beside it in the first wave
    assert plan_waves(hosts("a:in", "b:out"), 1) == [["b"], ["a"]]


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 30), data=st.data())
def test_partners_of_every_wave_at_once_match_one_wave_at_a_time(size, data):
    from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.policy import gate_partners_all

    order = ["h%d" % n for n in range(size)]
    candidates = data.draw(st.lists(st.sampled_from(order), unique=True))
    rest = [host for host in order if host not in candidates]
    waves, start = [], 0
    while start < len(rest):
        step = data.draw(st.integers(1, 4))
        waves.append(rest[start:start + step])
        start += step
    together = gate_partners_all(order, waves, candidates)
    for wave, partners in zip(waves, together):
        # the reference: sort every candidate by its distance to the wave's first host
        first = order.index(wave[0])
        ranked = sorted((abs(order.index(h) - first), order.index(h), h) for h in candidates if h not in wave)
        assert partners == [h for _d, _i, h in ranked[:len(wave)]]
        assert gate_partners(order, wave, candidates) == partners
