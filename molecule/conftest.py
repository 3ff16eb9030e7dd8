"""Testinfra fixtures shared by every molecule scenario (pytest finds this file above each
scenario's tests/ directory).

Molecule runs testinfra with ``--connection=ansible`` against its inventory. Testinfra has no
native mapping for Ansible's ``containers.podman.podman`` connection, so it would run every
command through a full ``ansible`` call (seconds each). The ``host`` fixture below keeps the
inventory as the source of truth but talks to each container with ``podman exec`` directly.
"""

import pytest
import testinfra

PODMAN_CONNECTIONS = ("containers.podman.podman", "podman")


@pytest.fixture(scope="module")
def host(_testinfra_host):
    backend = _testinfra_host.backend
    if getattr(backend, "NAME", None) != "ansible":
        return _testinfra_host
    hostvars = backend.ansible_runner.get_variables(backend.host)
    if hostvars.get("ansible_connection") not in PODMAN_CONNECTIONS:
        return _testinfra_host
    return testinfra.get_host("podman://" + hostvars.get("ansible_host", backend.host))


@pytest.fixture(scope="module")
def hostvars(_testinfra_host):
    """The host's variables from molecule's inventory (``ansible-inventory --host``)."""
    backend = _testinfra_host.backend
    return backend.ansible_runner.get_variables(backend.host)
