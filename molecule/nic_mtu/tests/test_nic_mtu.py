"""What rdmaops.roce.nic leaves on each host: the live MTU, the one file value it changed, a jumbo path."""

import pytest

FABRIC = {
    "rdmaops-nic-mtu-netplan": "198.18.240.11",
    "rdmaops-nic-mtu-nm": "198.18.240.12",
    "rdmaops-nic-mtu-ifupdown": "198.18.240.13",
}


@pytest.fixture(scope="module")
def name(hostvars):
    return hostvars["inventory_hostname"]


def test_fabric_nic_is_at_9000_and_the_management_nic_is_untouched(host):
    assert host.file("/sys/class/net/eth1/mtu").content_string == "9000\n"
    assert host.file("/sys/class/net/eth0/mtu").content_string == "1500\n"


def test_jumbo_frames_cross_the_fabric(host, name):
    for peer_name, peer in FABRIC.items():
        if peer_name == name:
            continue
        ok = host.run("ping -M do -s 8972 -c 2 -W 2 %s", peer)
        assert ok.rc == 0, ok.stdout + ok.stderr
        # one byte more does not fit a 9000-byte MTU: the path really is 9000, not more
        too_big = host.run("ping -M do -s 8973 -c 1 -W 2 %s", peer)
        assert too_big.rc != 0


def netplan_dropin_and_what_netplan_renders(host):
    dropin = host.file("/etc/netplan/90-rdmaops-fabric0.yaml")
    assert dropin.mode == 0o600
    assert dropin.content_string.endswith("network:\n  version: 2\n  ethernets:\n    fabric0:\n      mtu: 9000\n")
    # cloud-init's file is byte for byte what it was
    assert host.file("/etc/netplan/50-cloud-init.yaml").content_string == host.file("/root/prepared/50-cloud-init.yaml").content_string
    assert host.run("netplan get ethernets.fabric0.mtu").stdout.strip() == "9000"
    rendered = host.file("/run/systemd/network/10-netplan-fabric0.network").content_string
    assert "[Link]\nMTUBytes=9000\n" in rendered
    assert "Address=198.18.240.11/24" in rendered
    assert "MTU: 9000" in host.run("networkctl status eth1").stdout


def without_timestamp(text):
    return "".join(line for line in text.splitlines(True) if not line.startswith("timestamp="))


def networkmanager_profile(host):
    keyfile = host.file("/etc/NetworkManager/system-connections/fabric0.nmconnection")
    assert keyfile.mode == 0o600
    before = host.file("/root/prepared/fabric0.nmconnection").content_string
    # NetworkManager itself stores the profile, and records when it last activated it
    # ([connection] timestamp=); apart from that line only the MTU differs.
    assert without_timestamp(keyfile.content_string) == without_timestamp(before).replace("[ethernet]\n", "[ethernet]\nmtu=9000\n", 1)
    assert host.run("nmcli -g 802-3-ethernet.mtu connection show fabric0").stdout.strip() == "9000"
    assert host.run("nmcli -g GENERAL.MTU device show eth1").stdout.strip() == "9000"
    assert host.run("nmcli -g GENERAL.STATE device show eth1").stdout.strip() == "100 (connected)"


def ifupdown_stanza(host):
    before = host.file("/root/prepared/interfaces").content_string
    after = host.file("/etc/network/interfaces").content_string
    assert after == before.replace("    address 198.18.240.13/24\n", "    address 198.18.240.13/24\n    mtu 9000\n")
    assert "mtu: 9000" in host.run("ifquery eth1").stdout.splitlines()
    plan = host.run("ifup --no-act --force eth1")
    assert "ip link set dev eth1 mtu 9000  up" in plan.stdout + plan.stderr


PERSISTED = {
    "rdmaops-nic-mtu-netplan": netplan_dropin_and_what_netplan_renders,
    "rdmaops-nic-mtu-nm": networkmanager_profile,
    "rdmaops-nic-mtu-ifupdown": ifupdown_stanza,
}


def test_mtu_is_persisted_in_the_hosts_own_configuration_and_nothing_else_changed(host, name):
    PERSISTED[name](host)
