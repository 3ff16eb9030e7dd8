"""The containers molecule gives every scenario behave like the hosts roles expect."""

import re

PEERS = {"rdmaops-harness-1": "rdmaops-harness-2", "rdmaops-harness-2": "rdmaops-harness-1"}
JUMBO = {"rdmaops-harness-1": "198.18.250.11", "rdmaops-harness-2": "198.18.250.12"}
STD = {"rdmaops-harness-1": "198.18.251.11", "rdmaops-harness-2": "198.18.251.12"}


def test_systemd_is_init_and_booted(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state in ("running", "degraded"), host.run("systemctl --failed --no-pager").stdout


def test_nics_have_stable_names_and_fabric_addresses(host, hostvars):
    name = hostvars["inventory_hostname"]
    addrs = host.run("ip -o -4 addr show").stdout
    assert re.search(r"^\d+: eth0\s+inet 10\.", addrs, re.M), addrs
    assert re.search(r"^\d+: eth1\s+inet %s/24" % re.escape(JUMBO[name]), addrs, re.M), addrs
    assert re.search(r"^\d+: eth2\s+inet %s/24" % re.escape(STD[name]), addrs, re.M), addrs


def test_jumbo_fabric_carries_9000_byte_frames(host, hostvars):
    peer = JUMBO[PEERS[hostvars["inventory_hostname"]]]
    assert host.file("/sys/class/net/eth1/mtu").content_string.strip() == "9000"
    ping = host.run("ping -c 1 -W 2 -M do -s 8972 %s" % peer)
    assert ping.rc == 0, ping.stdout + ping.stderr


def test_1500_fabric_drops_9000_byte_frames(host, hostvars):
    """converge.yml set eth2 to 9000: the NIC accepts the frame, the 1500-byte network does not."""
    peer = STD[PEERS[hostvars["inventory_hostname"]]]
    assert host.file("/sys/class/net/eth2/mtu").content_string.strip() == "9000"
    assert host.run("ping -c 1 -W 2 -M do -s 1472 %s" % peer).rc == 0
    ping = host.run("ping -c 1 -W 2 -M do -s 8972 %s" % peer)
    assert ping.rc != 0, "a 9000-byte frame crossed the 1500-byte network: " + ping.stdout


def test_only_net_sysctls_are_writable(host):
    mounts = host.file("/proc/self/mountinfo").content_string
    assert re.search(r"^\S+ \S+ \S+ \S+ /proc/sys ro,", mounts, re.M), mounts
    assert re.search(r"^\S+ \S+ \S+ \S+ /proc/sys/net rw,", mounts, re.M), mounts
    # A per-namespace key can be written (to the value it already has) ...
    current = host.file("/proc/sys/net/ipv4/tcp_syn_retries").content_string.strip()
    assert host.run("echo %s > /proc/sys/net/ipv4/tcp_syn_retries" % current).rc == 0
    # ... a machine-wide one cannot, so no scenario can change the machine running the tests.
    current = host.file("/proc/sys/vm/swappiness").content_string.strip()
    denied = host.run("echo %s > /proc/sys/vm/swappiness" % current)
    assert denied.rc != 0 and "Read-only file system" in denied.stderr
    denied = host.run("echo 212992 > /proc/sys/net/core/rmem_max")
    assert denied.rc != 0, "net.core.rmem_max is global and must not be writable from a container"
