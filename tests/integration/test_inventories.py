"""The shipped inventories parse, and every host's intent resolves."""

import json

import pytest

import ansiblerun

from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent


def inventory_hostvars(name):
    proc = ansiblerun.run("ansible-inventory", ["-i", "inventories/%s" % name, "--list"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["_meta"]["hostvars"]


@pytest.mark.parametrize("name", ["example", "local"])
def test_every_host_intent_resolves(name):
    hostvars = inventory_hostvars(name)
    assert hostvars
    for host, hvars in hostvars.items():
        intent = resolve_intent(hvars.get("roce_fabric", {}))
        assert intent["pfc_bitmap"] == "0,0,0,1,0,0,0,0", host


def test_example_site_shape():
    hostvars = inventory_hostvars("example")
    assert hostvars["gpu-a01"]["ofed_provider"] == "doca"
    assert hostvars["gpu-b01"]["ofed_provider"] == "mlnx_ofed"
    assert hostvars["leaf-a"]["ansible_network_os"] == "rdmaops.roce.nvue"
    assert hostvars["leaf-a"]["ansible_connection"] == "ansible.netcommon.httpapi"
    assert hostvars["leaf-b"]["ansible_network_os"] == "rdmaops.roce.sonic"
    # the switches get the hosts' intent: the same roce_fabric
    assert hostvars["leaf-a"]["roce_fabric"] == hostvars["gpu-a01"]["roce_fabric"] == hostvars["leaf-b"]["roce_fabric"]


ROLE_PREFIXES = ("ofed", "nic", "peermem", "tuning", "nccl", "switch")


def role_options(role):
    import yaml

    with open("%s/roles/%s/meta/argument_specs.yml" % (ansiblerun.REPO, role)) as handle:
        spec = yaml.safe_load(handle)
    return set(spec["argument_specs"]["main"]["options"])


@pytest.mark.parametrize("name", ["example", "lab"])
def test_role_variables_in_inventories_are_documented_options(name):
    """A role variable set in a shipped inventory must exist in that role's argument spec:
    a renamed or misspelt variable would otherwise be ignored without a word."""
    import os

    if not os.path.isdir(os.path.join(ansiblerun.REPO, "inventories", name)):
        pytest.skip("inventories/%s is not in this checkout" % name)
    options = dict((role, role_options(role)) for role in ROLE_PREFIXES)
    unknown = []
    for host, hvars in inventory_hostvars(name).items():
        for key in hvars:
            role = key.split("_", 1)[0]
            if role in options and key not in options[role]:
                unknown.append("%s: %s" % (host, key))
    assert unknown == []
