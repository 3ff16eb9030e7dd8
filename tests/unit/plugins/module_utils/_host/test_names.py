"""The one interface-name rule: the kernel's dev_valid_name() (net/core/dev.c)."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname, valid_ifname


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
