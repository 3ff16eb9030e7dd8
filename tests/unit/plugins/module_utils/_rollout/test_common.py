"""max_unavailable arithmetic and our drain reason."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import (
    NodeState,
    command_timeout,
    drain_capacity,
    is_our_reason,
    max_unavailable_count,
    our_reason,
)


@pytest.mark.parametrize("value, pool, expected", [
    (1, 10, 1), ("3", 10, 3), (" 2 ", 10, 2),
    ("25%", 8, 2), ("25%", 10, 2), ("10%", 4, 1), ("100%", 7, 7), ("1%", 1000, 10), ("50%", 1, 1),
    (12, 4, 12),  # more than the pool is allowed: every host
])
def test_max_unavailable(value, pool, expected):
    assert max_unavailable_count(value, pool) == expected


@pytest.mark.parametrize("value", [0, "0", -1, "-1", "1.5", "0%", "101%", "25 %", "%", "a", "", None, True, [1], {"n": 1}, 2.5])
def test_max_unavailable_refuses_anything_else_naming_the_variable(value):
    with pytest.raises(InputError) as info:
        max_unavailable_count(value, 10)
    assert "rdmaops_max_unavailable" in info.value.msg
    assert "object" not in info.value.msg and "Type" not in info.value.msg


def test_capacity_counts_every_node_out_of_service_for_any_reason():
    states = dict(
        a=NodeState("a", "IDLE"),
        b=NodeState("b", "IDLE", ["DRAIN"], reason="disk", drained=True, out_of_service=True),
        c=NodeState("c", "DOWN", ["NOT_RESPONDING"], out_of_service=True),
        d=NodeState("d", "MIXED", busy=True),
    )
    assert drain_capacity(states, 3) == (1, ["b", "c"])
    assert drain_capacity(states, 2) == (0, ["b", "c"])


def test_our_reason_is_one_line_prefixed_and_bounded():
    reason = our_reason("nic_layer:\n ens4 set mtu\tfrom 1500 to 9000")
    assert reason == "rdmaops.roce: nic_layer: ens4 set mtu from 1500 to 9000"
    assert is_our_reason(reason) and not is_our_reason("disk replacement") and not is_our_reason(None)
    long = our_reason("x" * 500)
    assert len(long) == 200 and long.endswith("...")


# -- rdmaops_scheduler_timeout, from the role's variable to the module's command_timeout ------------
def test_the_scheduler_timeout_defaults_to_60_and_takes_whole_seconds():
    from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.policy import resolve_policy
    assert resolve_policy({"scheduler": "slurm"}, 2)["scheduler_timeout"] == 60
    assert resolve_policy({"scheduler": "slurm", "scheduler_timeout": " 5 "}, 2)["scheduler_timeout"] == 5


@pytest.mark.parametrize("value", [0, -1, "abc", "\u00b2", "1.5", 1.5, True, [3]])
def test_a_bad_scheduler_timeout_is_refused_on_the_controller_naming_the_variable(value):
    from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.policy import RolloutError, resolve_policy
    with pytest.raises(RolloutError) as info:
        resolve_policy({"scheduler": "slurm", "scheduler_timeout": value}, 2)
    assert "rdmaops_scheduler_timeout=" in info.value.msg and "at least 1" in info.value.msg


@pytest.mark.parametrize("value, expected", [(1, 1), ("60", 60), (" 7 ", 7)])
def test_command_timeout(value, expected):
    assert command_timeout(value) == expected


@pytest.mark.parametrize("value", [0, -5, "", "x", "\u00b2", None, 2.5, False])
def test_command_timeout_refused(value):
    with pytest.raises(InputError) as info:
        command_timeout(value)
    assert "command_timeout is" in info.value.msg and "at least 1" in info.value.msg


def test_foreign_is_someone_elses_drain_or_down_and_never_ours():
    assert NodeState("a", "IDLE", drained=True, reason="disk").foreign
    assert NodeState("a", "IDLE", drained=True, reason=None).foreign  # a drain we cannot read is not ours
    assert NodeState("a", "DOWN", out_of_service=True, reason="Not responding").foreign
    assert not NodeState("a", "DOWN", out_of_service=True).foreign  # never registered: nobody's reason
    assert not NodeState("a", "IDLE", drained=True, reason="rdmaops.roce: x").foreign
    assert not NodeState("a", "IDLE", reason="left over on a node in service").foreign
