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
                          max_unavailable=1, reboot="scheduler", gate="none", poll_interval=10, max_disruption=None)


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
