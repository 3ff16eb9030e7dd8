"""The shipped inventories parse, and every host's intent resolves."""

import json

import pytest

import ansiblerun

from ansible_collections.rdmaops.roce.plugins.module_utils.intent import resolve_intent


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
    assert hostvars["leaf-a"]["switch_nos"] == "cumulus_nvue"
    assert hostvars["leaf-b"]["switch_nos"] == "sonic"
