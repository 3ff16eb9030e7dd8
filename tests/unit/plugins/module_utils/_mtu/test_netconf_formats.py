"""Readers and editors of interfaces(5), ifcfg, .network, NetworkManager keyfiles and netplan YAML."""

import difflib
import os

import pytest
import yaml

from ansible_collections.rdmaops.roce.plugins.module_utils._mtu import formats as fmt

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "fixtures", "netconf")


def fixture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def changed_lines(before, after):
    """Only the lines a diff adds or removes."""
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


# -- ifupdown -------------------------------------------------------------------------------
def test_ifupdown_parses_the_installer_file():
    parsed = fmt.parse_ifupdown(fixture("interfaces.debian-installer"))
    assert [(s.name, s.family, s.method) for s in parsed["stanzas"]] == [("lo", "inet", "loopback"), ("eno1", "inet", "dhcp")]
    assert parsed["sources"] == [("source", "/etc/network/interfaces.d/*")]
    assert parsed["auto"] == ["lo", "eno1"]


def test_ifupdown_parses_tabs_comments_and_continued_lines():
    parsed = fmt.parse_ifupdown(fixture("interfaces.d-fabric"))
    static, inet6, dhcp = parsed["stanzas"]
    assert (static.name, static.method, static.indent) == ("ens1f0np0", "static", "\t")
    assert [opt for _i, opt, _v in static.options] == ["address", "post-up"]
    assert static.option("post-up").endswith("dev ens1f0np0 metric 50")
    assert static.last == 6  # the continued line belongs to the stanza
    assert (inet6.family, inet6.method) == ("inet6", "manual")
    assert dhcp.name == "ens1f1np1" and not dhcp.native_mtu


def test_ifupdown_adds_mtu_to_the_static_stanza_and_changes_nothing_else():
    before = fixture("interfaces.d-fabric")
    assert fmt.ifupdown_mtu(before, "ens1f0np0") is None
    after = fmt.ifupdown_set_mtu(before, "ens1f0np0", 9000)
    assert changed_lines(before, after) == ["+\tmtu 9000"]
    # after the continued post-up line, inside the inet stanza
    assert after.splitlines()[7] == "\tmtu 9000"
    assert fmt.ifupdown_mtu(after, "ens1f0np0") == 9000
    assert fmt.ifupdown_set_mtu(after, "ens1f0np0", 9000) == after


def test_ifupdown_rewrites_an_existing_mtu_in_place():
    before = "auto ens4\niface ens4 inet static\n    address 198.18.0.11/24\n    mtu 1500\n    # keep me\n"
    after = fmt.ifupdown_set_mtu(before, "ens4", 9000)
    assert changed_lines(before, after) == ["-    mtu 1500", "+    mtu 9000"]


def test_ifupdown_dhcp_gets_a_pre_up_command_because_its_method_ignores_mtu():
    before = fixture("interfaces.debian-installer")
    after = fmt.ifupdown_set_mtu(before, "eno1", 9000)
    assert changed_lines(before, after) == ["+    pre-up ip link set dev eno1 mtu 9000"]
    assert fmt.ifupdown_mtu(after, "eno1") == 9000
    again = fmt.ifupdown_set_mtu(after, "eno1", 4200)
    assert changed_lines(after, again) == ["-    pre-up ip link set dev eno1 mtu 9000", "+    pre-up ip link set dev eno1 mtu 4200"]


def test_ifupdown_ignores_mtu_where_the_method_would_ignore_it():
    text = "iface eno1 inet dhcp\n    mtu 9000\n"
    assert fmt.ifupdown_mtu(text, "eno1") is None


def test_ifupdown_refuses_a_file_without_the_stanza():
    with pytest.raises(ValueError):
        fmt.ifupdown_set_mtu(fixture("interfaces.debian-installer"), "ens4", 9000)


def test_ifupdown_block_is_a_manual_stanza_without_addresses():
    parsed = fmt.parse_ifupdown("\n".join(fmt.ifupdown_block("ens4", 9000)) + "\n")
    (stanza,) = parsed["stanzas"]
    assert (stanza.method, stanza.options[0][1:]) == ("manual", ("mtu", "9000"))
    assert parsed["auto"] == ["ens4"]


# -- ifcfg ----------------------------------------------------------------------------------
def test_ifcfg_appends_mtu():
    before = fixture("ifcfg-ens1f0np0")
    after = fmt.ifcfg_set_mtu(before, 9000)
    assert changed_lines(before, after) == ["+MTU=9000"]
    assert fmt.parse_ifcfg(after)["MTU"] == "9000"


def test_ifcfg_keeps_quoting():
    before = 'DEVICE="ens1f0np0"\nMTU="1500"\nONBOOT=yes\n'
    assert fmt.ifcfg_set_mtu(before, 9000) == 'DEVICE="ens1f0np0"\nMTU="9000"\nONBOOT=yes\n'
    assert fmt.parse_ifcfg(before)["DEVICE"] == "ens1f0np0"


# -- INI: NetworkManager keyfiles and .network files ---------------------------------------
def test_keyfile_edit_matches_what_networkmanager_wrote():
    before = fixture("fabric0.nmconnection")
    after = fmt.ini_set(before, ["ethernet", "802-3-ethernet"], "mtu", "9000")
    assert changed_lines(before, after) == ["+mtu=9000"]
    nm_wrote = fixture("fabric0-after-nmcli.nmconnection")
    # NetworkManager's own edit differs only by the activation timestamp it adds.
    assert changed_lines(after, nm_wrote) == ["+timestamp=1795304333"]
    assert fmt.ini_set(after, ["ethernet", "802-3-ethernet"], "mtu", "4200").count("mtu=") == 1


def test_keyfile_without_the_section_gets_one():
    before = "[connection]\nid=x\ntype=ethernet\n\n[ipv4]\nmethod=auto\n"
    after = fmt.ini_set(before, ["ethernet", "802-3-ethernet"], "mtu", "9000")
    assert after.endswith("method=auto\n\n[ethernet]\nmtu=9000\n")


def test_keyfile_with_the_long_section_name_is_edited_there():
    before = "[connection]\nid=x\n\n[802-3-ethernet]\nmac-address=AA:BB:CC:DD:EE:FF\nmtu=1500\n"
    after = fmt.ini_set(before, ["ethernet", "802-3-ethernet"], "mtu", "9000")
    assert changed_lines(before, after) == ["-mtu=1500", "+mtu=9000"]


def test_network_file_reads_mtu_and_sizes():
    entries = fmt.parse_ini(fixture("10-netplan-fabric0.network"))
    assert fmt.parse_bytes(fmt.ini_get(entries, ["Link"], "MTUBytes")) == 9000
    assert fmt.parse_bytes("9K") == 9216
    assert fmt.parse_bytes("jumbo") is None


def test_networkd_match_rules():
    link = dict(name="ens1f0np0", mac="b8:3f:d2:a1:b2:c4", permanent_mac=None, driver="mlx5_core", type="ether")

    def match(text):
        return fmt.networkd_match(fmt.parse_ini(text), link)

    assert match("[Match]\nName=ens1f0np0\n") is True
    assert match("[Match]\nName=ens1f* eno1\n") is True
    assert match("[Match]\nName=!ens1f* eno1\n") is False
    assert match("[Match]\nName=eno1\n") is False
    assert match("[Match]\nMACAddress=B8:3F:D2:A1:B2:C4\n") is True
    assert match("[Match]\nDriver=mlx5_*\nType=ether\n") is True
    assert match("[Network]\nDHCP=yes\n") is True  # no [Match]: every link
    assert match("[Match]\nName=ens1f0np0\nPath=pci-0000:3d:00.0\n") is None  # cannot evaluate Path=
    assert match("[Match]\nName=eno1\nPath=pci-0000:3d:00.0\n") is False  # Name= already fails
    real = fmt.parse_ini(fixture("10-netplan-fabric0.network"))
    assert fmt.networkd_match(real, dict(name="veth-b", mac="3e:38:3c:48:1d:19", permanent_mac="3e:38:3c:48:1d:19")) is True


# -- netplan --------------------------------------------------------------------------------
def test_netplan_match_by_macaddress_and_set_name():
    data = yaml.safe_load(fixture("50-cloud-init.netplan"))
    merged = fmt.netplan_merge([("/etc/netplan/50-cloud-init.yaml", data)])
    definition = merged[("ethernets", "fabric0")]
    link = dict(name="veth-b", mac="3e:38:3c:48:1d:19")
    assert fmt.netplan_matches("ethernets", "fabric0", definition, link)
    assert not fmt.netplan_matches("ethernets", "fabric0", definition, dict(link, mac="3e:38:3c:48:1d:20"))
    assert not fmt.netplan_matches("ethernets", "fabric0", definition, dict(link, name="eth1"))  # set-name differs
    assert definition["__files__"] == ["/etc/netplan/50-cloud-init.yaml"]


def test_netplan_match_by_name_glob_and_driver():
    definition = dict(match=dict(name="ens1f*", driver=["mlx5_core", "ice"]))
    assert fmt.netplan_matches("ethernets", "rdma", definition, dict(name="ens1f1np1", driver="mlx5_core"))
    assert not fmt.netplan_matches("ethernets", "rdma", definition, dict(name="ens1f1np1", driver="virtio_net"))
    assert fmt.netplan_matches("ethernets", "eno1", {}, dict(name="eno1"))
    assert fmt.netplan_matches("vlans", "bond0.100", dict(id=100, link="bond0"), dict(name="bond0.100"))
    assert not fmt.netplan_matches("bonds", "bond0", {}, dict(name="bond1"))


def test_netplan_later_files_win_and_the_dropin_sets_only_mtu():
    base = yaml.safe_load(fixture("50-cloud-init.netplan"))
    text = fmt.netplan_dropin("ethernets", "fabric0", 9000, "veth-b", "/etc/netplan/50-cloud-init.yaml")
    dropin = yaml.safe_load(text)
    assert dropin == {"network": {"version": 2, "ethernets": {"fabric0": {"mtu": 9000}}}}
    merged = fmt.netplan_merge([("/etc/netplan/50-cloud-init.yaml", base), ("/etc/netplan/90-rdmaops-fabric0.yaml", dropin)])
    definition = merged[("ethernets", "fabric0")]
    assert definition["mtu"] == 9000 and definition["__mtu_file__"] == "/etc/netplan/90-rdmaops-fabric0.yaml"
    assert definition["addresses"] == ["198.18.0.21/24"] and definition["set-name"] == "veth-b"
    later = {"network": {"version": 2, "ethernets": {"fabric0": {"mtu": 1500}}}}
    merged = fmt.netplan_merge([("a", base), ("b", dropin), ("c", later)])
    assert merged[("ethernets", "fabric0")]["mtu"] == 1500


def test_netplan_dropin_quotes_ids_yaml_would_misread():
    text = fmt.netplan_dropin("ethernets", "yes", 9000, "eth1", "x")
    assert yaml.safe_load(text)["network"]["ethernets"] == {"yes": {"mtu": 9000}}


def test_netplan_renderer():
    docs = [("a", {"network": {"renderer": "NetworkManager"}}), ("b", {"network": {"version": 2}})]
    assert fmt.netplan_renderer(docs, {}) == "NetworkManager"
    assert fmt.netplan_renderer(docs, {"renderer": "networkd"}) == "networkd"
    assert fmt.netplan_renderer([], {}) == "networkd"
