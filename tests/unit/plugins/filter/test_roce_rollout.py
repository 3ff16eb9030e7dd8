"""The rollout settings, checked on the controller: every wrong variable named with its fix."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.roce.plugins.filter.roce_rollout import (
    roce_disruption_exceeds,
    roce_disruption_highest,
    roce_rollout,
)


def test_defaults_are_todays_behaviour():
    policy = roce_rollout({}, 8)
    assert policy == dict(scheduler="none", enabled=False, drain="auto", drain_timeout=3600, drain_timeout_action="fail",
                          max_unavailable=1, reboot="scheduler", gate="none", poll_interval=10, max_disruption=None,
                          scheduler_timeout=60)


def test_a_scheduler_turns_the_gate_on_and_percentages_become_counts():
    policy = roce_rollout({"scheduler": "slurm", "max_unavailable": "25%", "drain_timeout": "600"}, 10)
    assert (policy["enabled"], policy["gate"], policy["max_unavailable"], policy["drain_timeout"]) == (True, "validate", 2, 600)
    assert roce_rollout({"scheduler": "slurm", "gate": "none"}, 10)["gate"] == "none"


@pytest.mark.parametrize("settings, words", [
    ({"scheduler": "pbs"}, "rdmaops_scheduler='pbs': choose one of none, slurm, command"),
    ({"scheduler": ["slurm"]}, "rdmaops_scheduler=['slurm']: choose one of none, slurm, command"),
    ({"max_unavailable": "half"}, "rdmaops_max_unavailable is 'half'"),
    ({"max_unavailable": 0}, "rdmaops_max_unavailable is 0"),
    ({"drain": "sometimes"}, "rdmaops_drain='sometimes': choose one of auto, always, never"),
    ({"drain_timeout": -5}, "rdmaops_drain_timeout=-5: give a whole number of seconds, at least 0"),
    ({"drain_timeout": True}, "rdmaops_drain_timeout=True"),
    ({"drain_timeout_action": "retry"}, "rdmaops_drain_timeout_action='retry': choose one of fail, skip"),
    ({"reboot": "yes"}, "rdmaops_reboot='yes': choose one of scheduler, allowed, never"),
    ({"max_disruption": "link-reset"}, "rdmaops_max_disruption='link-reset': choose one of none, online, link_reset"),
    ({"slurm_node_name": "gpu[1-8]"}, "rdmaops_slurm_node_name='gpu[1-8]'"),
    ({"slurm_node_name": "gpu1\nState=DOWN"}, "rdmaops_slurm_node_name="),
    ({"scheduler": "command", "scheduler_commands": {"busy": "x"}}, "rdmaops_scheduler: command needs rdmaops_scheduler_commands"),
])
def test_each_wrong_setting_is_named(settings, words):
    with pytest.raises(AnsibleFilterError) as info:
        roce_rollout(settings, 4)
    assert words in str(info.value)
    assert "Traceback" not in str(info.value) and "<class" not in str(info.value)


def test_every_problem_at_once():
    with pytest.raises(AnsibleFilterError) as info:
        roce_rollout({"scheduler": "pbs", "drain": "x", "max_unavailable": "x"}, 4)
    assert str(info.value).count("; ") >= 2


@pytest.mark.parametrize("settings", ["slurm", ["scheduler"], None, 3])
def test_not_a_mapping(settings):
    with pytest.raises(AnsibleFilterError) as info:
        roce_rollout(settings, 4)
    assert "mapping of rdmaops_* variables" in str(info.value)


def test_disruption_filters():
    assert roce_disruption_exceeds("link_reset", "online") is True
    assert roce_disruption_exceeds("online", "online") is False
    assert roce_disruption_exceeds("reboot", None) is False and roce_disruption_exceeds("reboot", "") is False
    assert roce_disruption_highest(["online", "driver_restart", "none"]) == "driver_restart"
    assert roce_disruption_highest([]) == "none"
    with pytest.raises(AnsibleFilterError):
        roce_disruption_exceeds("sometimes", "online")
    with pytest.raises(AnsibleFilterError):
        roce_disruption_highest(["online", "sometimes"])


def test_a_missing_disruption_class_counts_as_the_most_disruptive():
    # a layer that did not say what it disrupts is not made in place under a job
    assert roce_disruption_exceeds(None, "online") is True
    assert roce_disruption_exceeds("", "link_reset") is True
    assert roce_disruption_exceeds(None, "reboot") is False
    assert roce_disruption_highest(["online", None]) == "reboot"


@pytest.mark.parametrize("call, words", [
    (lambda: roce_disruption_highest(5), "give a list of disruption classes"),
    (lambda: roce_disruption_highest("reboot"), "give a list of disruption classes"),
    (lambda: roce_disruption_highest({"nic": "online"}), "give a list of disruption classes"),
    (lambda: roce_disruption_highest([3]), "unknown disruption class 3"),
    (lambda: roce_disruption_exceeds("sometimes", "online"), "unknown disruption class 'sometimes'"),
    (lambda: roce_disruption_exceeds("online", "hard"), "unknown disruption cap 'hard'"),
    (lambda: roce_disruption_exceeds(["online"], "online"), "unknown disruption class ['online']"),
    (lambda: roce_rollout({}, float("inf")), "pool must be a whole number of hosts"),
    (lambda: roce_rollout({}, float("nan")), "pool must be a whole number of hosts"),
    (lambda: roce_rollout({}, "many"), "pool must be a whole number of hosts"),
    (lambda: roce_rollout({}, -3), "pool must be a whole number of hosts"),
])
def test_wrong_types_get_a_message_not_a_python_error(call, words):
    with pytest.raises(AnsibleFilterError) as info:
        call()
    assert words in str(info.value)
    assert "Traceback" not in str(info.value) and "<class" not in str(info.value) and "Error:" not in str(info.value)


def test_the_pool_may_be_the_list_of_hosts():
    assert roce_rollout({"max_unavailable": "50%"}, ["a", "b", "c", "d"])["max_unavailable"] == 2


@pytest.mark.parametrize("value, words", [
    ("101%", "rdmaops_max_unavailable is '101%'"), (0, "rdmaops_max_unavailable is 0"),
    ("0%", "rdmaops_max_unavailable is '0%'"), ("1.5", "rdmaops_max_unavailable is '1.5'"),
    ([2], "rdmaops_max_unavailable is [2]"), ("2 hosts", "rdmaops_max_unavailable is '2 hosts'"),
])
def test_max_unavailable_malformed_zero_or_over_100_percent_is_refused(value, words):
    with pytest.raises(AnsibleFilterError) as info:
        roce_rollout({"scheduler": "slurm", "max_unavailable": value}, 10)
    assert words in str(info.value)


def test_waves_and_partners_filters():
    from ansible_collections.rdmaops.roce.plugins.filter.roce_rollout import roce_rollout_partners, roce_rollout_waves

    assert roce_rollout_waves([["gpu1", "in"], ["gpu2", "in"], ["gpu3", "ours"]], 2, 1) == [["gpu3"], ["gpu1"], ["gpu2"]]
    assert roce_rollout_waves([["a", "in"], ["b", "in"], ["c", "in"]], 2, 0, "") == [["a", "b"], ["c"]]
    with pytest.raises(AnsibleFilterError, match="list of \\[host, status\\] pairs"):
        roce_rollout_waves(["gpu1"], 2)
    with pytest.raises(AnsibleFilterError, match="max_unavailable must be a count"):
        roce_rollout_waves([["a", "in"]], 0)
    assert roce_rollout_partners(["gpu3"], ["gpu1", "gpu2", "gpu3", "gpu4"], ["gpu1", "gpu4"]) == ["gpu4"]
    with pytest.raises(AnsibleFilterError, match="as lists of hosts"):
        roce_rollout_partners("gpu3", [], [])
