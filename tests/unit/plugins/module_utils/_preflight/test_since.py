"""Which earlier layer of a run changed the host (_preflight/since.py), over variables as Ansible
leaves them: facts set by set_fact, results registered by a module, skipped and looped results."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._preflight.since import ORDER, changed_before

CHANGED = {"changed": True}
UNCHANGED = {"changed": False}
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


def getter(variables):
    return variables.get


def test_nothing_set_means_nothing_changed_for_every_layer():
    for layer in ORDER:
        assert changed_before(getter({}), layer) == []


def test_each_layer_counts_only_for_the_layers_after_it():
    variables = {"rdmaops_modules_result": CHANGED}
    assert changed_before(getter(variables), "ofed") == []
    assert changed_before(getter(variables), "modules") == []
    assert changed_before(getter(variables), "peermem") == ["modules"]
    assert changed_before(getter(variables), "facts") == ["modules"]


def test_the_tuning_layer_counts_for_nccl_and_the_facts_play_not_for_itself():
    variables = {"tuning_layer_result": CHANGED}
    assert changed_before(getter(variables), "tuning") == []
    assert changed_before(getter(variables), "nccl") == ["tuning"]
    assert changed_before(getter(variables), "facts") == ["tuning"]


def test_the_driver_stack_counts_when_it_changed_or_its_modules_reload_or_wait_for_a_reboot():
    assert changed_before(getter({"ofed__stack_changed": True}), "modules") == ["ofed"]
    # set_fact of a template under ansible-core 2.16 may leave the text of a boolean
    assert changed_before(getter({"ofed__stack_changed": "True"}), "modules") == ["ofed"]
    assert changed_before(getter({"ofed__stack_changed": False}), "modules") == []
    for activation, changed in (("restart", True), ("reboot", True), ("none", False)):
        found = changed_before(getter({"ofed__stack_changed": False, "ofed__final": {"activation": activation}}), "tuning")
        assert found == (["ofed"] if changed else []), activation


def test_skipped_unchanged_and_malformed_results_count_as_nothing_changed():
    variables = {"rdmaops_modules_result": SKIPPED, "peermem_result": UNCHANGED, "nic_layer_result": "changed",
                 "tuning_layer_result": None, "ofed__final": "reboot", "ofed__stack_changed": ["yes"]}
    assert changed_before(getter(variables), "facts") == []


def test_a_looped_result_counts_when_any_item_changed():
    looped = {"changed": False, "results": [{"changed": False}, {"changed": True}]}
    assert changed_before(getter({"nic_layer_result": looped}), "tuning") == ["nic"]
    assert changed_before(getter({"nic_layer_result": {"results": [UNCHANGED, "x"]}}), "tuning") == []


def test_every_layer_that_changed_is_named_in_site_yml_order():
    variables = {"ofed__stack_changed": True, "rdmaops_modules_result": CHANGED, "peermem_result": CHANGED,
                 "nic_layer_result": CHANGED, "tuning_layer_result": CHANGED}
    assert changed_before(getter(variables), "facts") == ["ofed", "modules", "peermem", "nic", "tuning"]
    assert changed_before(getter(variables), "nic") == ["ofed", "modules", "peermem"]


@pytest.mark.parametrize("layer", ["", "Tuning", "tuning ", "switch", None])
def test_an_unknown_layer_is_refused_with_the_names_that_are_known(layer):
    with pytest.raises(ValueError, match="is not a layer of site.yml: use one of ofed, modules, peermem"):
        changed_before(getter({}), layer)
