"""The interface-name rules: the kernel's dev_valid_name() (net/core/dev.c), and the stricter one for names
written into network configuration and shell lines; rail names."""

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import (
    check_ifname,
    check_netdev,
    check_rail_name,
    shell_netdev,
    valid_ifname,
    valid_netdev,
)


@pytest.mark.parametrize(
    "name",
    [
        "eth0",
        "ens1f0np0",
        "bond0.100",
        "a@b",
        "lo",
        "a" * 15,  # IFNAMSIZ - 1 bytes
        "\u00e9" * 7,  # 14 bytes of UTF-8
        "br-lan_2+x",
        "...",  # only '.' and '..' are refused
    ],
)
def test_names_the_kernel_accepts(name):
    assert valid_ifname(name) is True
    assert check_ifname("interface", name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        "a/b",
        "eth0:1",  # an address label, not an interface
        "a b",
        "eth0\t",
        "eth0\n",  # re.match("...$") used to accept a trailing newline
        "\neth0",
        "eth\r0",
        "eth\x0b0",
        "eth\x0c0",
        "a" * 16,
        "\u00e9" * 8,  # 8 characters but 16 bytes
        "\u20ac" * 6,  # 6 characters, 18 bytes
        "eth\x000",  # NUL ends the C string the kernel gets
        "\u00e0",  # UTF-8 C3 A0: the kernel's isspace() counts the byte 0xA0
        "a\u00a0b",  # no-break space
        "\ud800",  # a lone surrogate cannot be encoded at all
        None,
        0,
        b"eth0",
    ],
)
def test_names_the_kernel_refuses(name):
    assert valid_ifname(name) is False
    with pytest.raises(InputError) as info:
        check_ifname("interfaces[0]", name)
    assert isinstance(info.value, RdmaopsError)
    assert info.value.details == {"option": "interfaces[0]"}
    assert info.value.msg.startswith("interfaces[0]=%r is not a kernel interface name" % (name,))
    assert "1-15 bytes" in info.value.msg


# -- the rule for names written into network configuration (link_mtu, nic_layer, rails) -------------
@pytest.mark.parametrize("name", ["eth0", "ens1f0np0", "bond0.100", "a" * 15, "br-lan_2", "_x", "0", "rxe-0"])
def test_netdev_names_written_into_configuration(name):
    assert valid_netdev(name) is True
    assert check_netdev("interface", name) == name
    assert shell_netdev(name) == name  # a checked name needs no quotes: the lines read as before


@pytest.mark.parametrize("name", ["r0;reboot", "r0$(id)", "r0`id`", "r0'x", 'r0"x', "a@b", "br-lan_2+x", "...", "-r0", ".r0",
                                  "r0=work", "r0#x", "r0*", "r0%i", "\u00e9" * 7, "r0\\x", "r0|x"])
def test_kernel_names_refused_for_configuration_name_the_option_and_the_form(name):
    assert valid_ifname(name) is True and valid_netdev(name) is False
    with pytest.raises(InputError) as info:
        check_netdev("rails.links[2].interface", name)
    assert info.value.details == {"option": "rails.links[2].interface"}
    assert info.value.msg == (
        "rails.links[2].interface=%r is refused: the kernel allows it, but it holds a character that is shell or file syntax in "
        "the network configuration it is written into (ifupdown, ifcfg, networkd, netplan, NetworkManager). Use 1-15 "
        "characters of A-Z, a-z, 0-9, '_', '.' and '-', the first a letter, a digit or '_' (such as ens1f0np0, eth1.100, "
        "bond_rdma)" % name)
    with pytest.raises(InputError):
        shell_netdev(name)


@pytest.mark.parametrize("name, shown", [("a/b", "'a/b'"), ("r0\nreboot", "'r0\\nreboot'"), (None, "nothing"), (7, "7"),
                                         (["eth0"], "a list"), ("x" * 50, repr("x" * 40) + "...")])
def test_names_the_kernel_refuses_are_shown_short_and_escaped(name, shown):
    with pytest.raises(InputError) as info:
        check_netdev("interface", name)
    assert info.value.msg.startswith("interface=%s is not a kernel interface name (1-15 bytes" % shown)
    assert "\n" not in info.value.msg and "NoneType" not in info.value.msg and "<class" not in info.value.msg


@pytest.mark.parametrize("name", ["rail0", "r", "R1_a-b", "0", "r" * 32])
def test_rail_names(name):
    assert check_rail_name("rails.links[0].rail", name) == name


@pytest.mark.parametrize("name", ["rail0\n100\tmain", "", "-r", "_r", "rail.0", "rail 0", "r" * 33, None, 0])
def test_rail_names_refused(name):
    with pytest.raises(InputError) as info:
        check_rail_name("rails.links[0].rail", name)
    assert info.value.details == {"option": "rails.links[0].rail"}
    assert "is not a rail name: use 1-32 characters of A-Z, a-z, 0-9, '_' and '-'" in info.value.msg


@settings(max_examples=300, deadline=None, database=None)
@given(name=st.one_of(st.text(max_size=18), st.text(alphabet="a0_.-;$`'\" \n\\|&*?#=%:/", max_size=16)))
def test_any_name_is_refused_or_is_one_plain_shell_word(name):
    try:
        word = shell_netdev(name)
    except InputError as exc:
        assert exc.details == {"option": "interface"} and not valid_netdev(name)
        return
    assert word == name and valid_ifname(name)
    proc = subprocess.run(["/bin/sh", "-c", 'printf "%s\\0" ' + word + " " + word], capture_output=True, text=True, check=True)
    assert proc.stdout == name + "\0" + name + "\0"
