"""Day two of the driver stack: a version bump is an upgrade or a downgrade, and a downgrade is
refused before anything changes unless ofed_allow_downgrade consents; the reason names the versions
(the rollout's drain reason is built from it)."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import status, versions

from test_ofed import DOCA_STACK, DPKG_KEY, OFED_V, PARAMS, WANTS, FakeRunner, doca_host


@pytest.mark.parametrize("installed,wanted,older", [
    ("3.2.1-044000", "3.1.0", True),
    ("3.2.1-044000", "3.3.0", False),
    ("3.2.1-044000", "3.2.1", False),
    ("3.2.1-044000", "3.2", False),
    ("3.2.1-044000", "3.2.0*", True),
    ("3.2.1-044000", "3.10.0", False),  # numbers, not text: 10 > 2
    ("3.10.0-1", "3.9.0", True),
    ("3.2.1-044000-25.10-ubuntu2404", "3.2.1-043000-25.10-ubuntu2404", True),
    ("3.2.1-044000-25.10-ubuntu2404", "3.2.1-045000-25.10-ubuntu2404", False),
    ("24.10-1.1.4.0", "23.10-1.1.9.0", True),
    ("24.10-1.1.4.0", "24.10-2.1.8.0", False),
    ("24.10-1.1.4.0", "24.10-1.1.3.0", True),
    (None, "3.1.0", False),
    ("3.2.1", "", False),
])
def test_is_downgrade(installed, wanted, older):
    assert versions.is_downgrade(installed, wanted) is older


@pytest.mark.parametrize("provider,stack,packages,expected", [
    ("doca", DOCA_STACK, {"doca-ofed": "3.2.1-044000"}, "none"),
    ("doca", DOCA_STACK, {"doca-ofed": "3.1.0-091000"}, "upgrade"),
    ("doca", DOCA_STACK, {"doca-ofed": "3.3.0-010000"}, "downgrade"),
    ("mlnx_ofed", dict(flavor="mlnx_ofed", version="23.10-1.1.9.0"), {}, "upgrade"),
    ("mlnx_ofed", dict(flavor="mlnx_ofed", version="25.04-0.6.1.0"), {}, "downgrade"),
])
def test_plan_action_tells_a_downgrade_from_an_upgrade(provider, stack, packages, expected):
    action, _remove, reason = status.plan_action("present", provider, stack, packages, WANTS)
    assert action == expected
    if expected != "none":
        assert "is installed" in reason and "is wanted" in reason


def _newer_host(tmp_path):
    doca_host(tmp_path)
    return FakeRunner({
        DPKG_KEY: (0, "doca-ofed\t3.3.0-010000\tii \nrdma-core\t2510.0.11-1\tii \n"),
        "dkms status": (0, "mlnx-ofed-kernel/%s, 6.8.0-45-generic, x86_64: installed\n" % OFED_V),
    })


def test_a_downgrade_is_refused_without_consent_naming_both_versions(tmp_path):
    runner = _newer_host(tmp_path)
    with pytest.raises(InputError) as info:
        status.gather_status(HostRoot(str(tmp_path)), runner, PARAMS, DOCA_STACK)
    assert "doca-ofed 3.3.0-010000 is installed, 3.2.1 is wanted" in info.value.msg
    assert "ofed_allow_downgrade: true" in info.value.msg and "nothing was changed" in info.value.msg
    assert info.value.details["option"] == "allow_downgrade"


def test_a_downgrade_with_consent_is_planned_like_an_upgrade(tmp_path):
    runner = _newer_host(tmp_path)
    result, _problems, _warnings = status.gather_status(
        HostRoot(str(tmp_path)), runner, dict(PARAMS, allow_downgrade=True), DOCA_STACK)
    assert result["needed"] == "downgrade"
    assert result["needed_reason"] == ("doca-ofed 3.3.0-010000 is installed, 3.2.1 is wanted "
                                       "(a downgrade, allowed by ofed_allow_downgrade)")
    # openibd is there and nothing depends on the driver: the rollout drains it for a driver restart
    assert result["disruption"] == "driver_restart"
