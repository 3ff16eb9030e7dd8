"""link_mtu run by ansible itself against a host tree: check mode, diff, apply, idempotence, refusal.

``RDMAOPS_HOST_ROOT=<tree> PATH=<stubs>:$PATH ansible localhost -m rdmaops.roce.link_mtu -a ...``.
The ``ip`` stub changes the tree's sysfs MTU the way the kernel does and answers the
read-only ``ip -j`` queries with the lab VM's answers (iproute2 6.1 JSON shape).
"""

import json
import os
import sys

import pytest
import ansiblerun

from linkhost import LinkHost

IP_STUB = r"""#!{python}
import json, os, sys
root = os.environ["RDMAOPS_HOST_ROOT"]
args = sys.argv[1:]
here = os.path.dirname(os.path.abspath(__file__))
if args[:3] == ["link", "set", "dev"] and args[4] == "mtu":
    with open(os.path.join(root, "sys/class/net", args[3], "mtu"), "w") as handle:
        handle.write(args[5] + "\n")
    with open(os.path.join(here, "ip.log"), "a") as handle:
        handle.write(" ".join(args) + "\n")
    sys.exit(0)
answers = json.load(open(os.path.join(here, "ip.json")))
key = " ".join(args)
if key not in answers:
    sys.stderr.write("stub: no answer for ip %s\n" % key)
    sys.exit(127)
sys.stdout.write(json.dumps(answers[key]))
"""


@pytest.fixture
def lab_tree(tmp_path):
    root = tmp_path / "root"
    host = LinkHost(root)
    host.link("ens3", addrs=["10.0.2.15/24"], driver="virtio_net", max_mtu=65535)
    host.link("ens4", addrs=["198.18.0.11/24"], driver="virtio_net", max_mtu=65535)
    host.materialize()
    host.default_routes = [("inet", "10.0.2.2", "ens3")]
    host.client_routes = {"10.0.2.2": "ens3"}
    host.file("/etc/network/interfaces", "auto ens3\niface ens3 inet static\n    address 10.0.2.15/24\n    gateway 10.0.2.2\n")
    answers = {}
    for argv in (["-j", "-d", "link", "show"], ["-j", "addr", "show"], ["-j", "route", "show", "default"],
                 ["-j", "-6", "route", "show", "default"], ["-j", "route", "get", "10.0.2.2"]):
        answers[" ".join(argv)] = json.loads(host.run(["ip"] + argv)[1])
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ip.json").write_text(json.dumps(answers))
    for tool, text in (("ip", IP_STUB.format(python=sys.executable)), ("ifup", "#!/bin/sh\nexit 1\n")):
        (bindir / tool).write_text(text)
        (bindir / tool).chmod(0o755)
    env = dict(RDMAOPS_HOST_ROOT=str(root), PATH=str(bindir) + os.pathsep + os.environ["PATH"],
               SSH_CONNECTION="10.0.2.2 51234 10.0.2.15 22")
    return host, bindir, env


def adhoc(args, env, check=False, diff=False):
    _rc, result = ansiblerun.adhoc("rdmaops.roce.link_mtu", args, env, check=check, diff=diff)
    return result


def test_check_apply_repeat(lab_tree):
    host, bindir, env = lab_tree
    original = host.read("/etc/network/interfaces")
    check = adhoc("interface=ens4 mtu=9000", env, check=True, diff=True)
    assert check["changed"] is True and not check.get("failed")
    assert check["after"]["runtime"] == {"ens4": 9000}
    assert host.read("/etc/network/interfaces") == original and host.sys_mtu("ens4") == 1500
    assert check["diff"][1]["after_header"] == "/etc/network/interfaces"

    applied = adhoc("interface=ens4 mtu=9000", env)
    assert applied["changed"] is True and applied["backend"] == "ifupdown"
    assert host.sys_mtu("ens4") == 9000
    assert (bindir / "ip.log").read_text() == "link set dev ens4 mtu 9000\n"
    assert "iface ens4 inet manual\n    mtu 9000\n" in host.read("/etc/network/interfaces")

    again = adhoc("interface=ens4 mtu=9000", env)
    assert again["changed"] is False and again["changes"] == []
    assert (bindir / "ip.log").read_text() == "link set dev ens4 mtu 9000\n"


def test_management_nic_is_refused(lab_tree):
    host, bindir, env = lab_tree
    result = adhoc("interface=ens3 mtu=9000", env)
    assert result["failed"] is True
    assert result["msg"].startswith("refusing to change the MTU of ens3")
    assert result["management"]["interfaces"]["ens3"][0] == "holds 10.0.2.15, the address this SSH connection came in on"
    assert host.sys_mtu("ens3") == 1500 and not (bindir / "ip.log").exists()


def test_a_symlinked_interfaces_file_with_latin1_bytes(lab_tree):
    # /etc/network/interfaces is a link into a directory the site manages, and has a Latin-1 comment:
    # the MTU lands in the link's target, the link stays a link, every other byte stays as it was,
    # and the diff that ansible prints (JSON) shows the bytes without failing on them.
    host, bindir, env = lab_tree
    original = b"# R\xe9seau de gestion\n" + host.read("/etc/network/interfaces").encode()
    os.unlink(host.path("/etc/network/interfaces"))
    os.makedirs(host.path("/srv/net"))
    with open(host.path("/srv/net/interfaces"), "wb") as handle:
        handle.write(original)
    os.symlink("../../srv/net/interfaces", host.path("/etc/network/interfaces"))

    check = adhoc("interface=ens4 mtu=9000", env, check=True, diff=True)
    assert check["changed"] is True and not check.get("failed")
    assert check["diff"][1]["before"].startswith("# R\ufffdseau de gestion\n")

    applied = adhoc("interface=ens4 mtu=9000", env)
    assert applied["changed"] is True and not applied.get("failed")
    assert os.path.islink(host.path("/etc/network/interfaces"))
    with open(host.path("/srv/net/interfaces"), "rb") as handle:
        data = handle.read()
    assert data.startswith(original) and b"iface ens4 inet manual\n    mtu 9000\n" in data
    assert adhoc("interface=ens4 mtu=9000", env)["changed"] is False


def test_a_name_the_kernel_refuses_fails_before_any_tool_runs(lab_tree):
    host, bindir, env = lab_tree
    result = adhoc("interface=ens4:1 mtu=9000", env)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("interface='ens4:1' is not a kernel interface name")
    assert result["option"] == "interface"
    assert not (bindir / "ip.log").exists()


HOSTILE_STANZA = "\nallow-hotplug r0;reboot\niface r0;reboot inet dhcp\n"


@pytest.fixture
def hostile_tree(tmp_path):
    """The lab tree with a netdev named ``r0;reboot`` (Linux accepts it) that an ifupdown dhcp stanza configures."""
    root = tmp_path / "root"
    host = LinkHost(root)
    host.link("ens3", addrs=["10.0.2.15/24"], driver="virtio_net", max_mtu=65535)
    host.link("r0;reboot", driver="virtio_net", max_mtu=65535)
    host.materialize()
    host.file("/etc/network/interfaces", "auto ens3\niface ens3 inet static\n    address 10.0.2.15/24\n" + HOSTILE_STANZA)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # nothing may run: every command fails loudly and is logged
    (bindir / "ip").write_text("#!/bin/sh\necho \"$@\" >> %s/ip.log\nexit 1\n" % bindir)
    (bindir / "ip").chmod(0o755)
    env = dict(RDMAOPS_HOST_ROOT=str(root), PATH=str(bindir) + os.pathsep + os.environ["PATH"],
               SSH_CONNECTION="10.0.2.2 51234 10.0.2.15 22")
    return host, bindir, env


def test_a_netdev_name_holding_shell_is_refused_by_link_mtu_and_nic_layer_with_ifupdown(hostile_tree):
    # the old code wrote "pre-up ip link set dev r0;reboot mtu 9000" (or "up ip link set dev r0;reboot up"
    # for a rail) into /etc/network/interfaces, which ifup runs through /bin/sh at every boot
    host, bindir, env = hostile_tree
    original = host.read("/etc/network/interfaces")
    result = adhoc(json.dumps(dict(interface="r0;reboot", mtu=9000, backend="ifupdown")), env)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("interface='r0;reboot' is refused: the kernel allows it, but it holds a character that is "
                                    "shell or file syntax")
    assert result["option"] == "interface"
    layer = dict(link_mtu=dict(interfaces=["r0;reboot"], mtu=9000, backend="ifupdown"))
    for args, option in ((layer, "link_mtu.interfaces[0]"),
                         (dict(rails=dict(links=[dict(interface="r0;reboot", address="10.10.0.1", prefix=31, table=100)],
                                          backend="ifupdown")), "rails.links[0].interface"),
                         (dict(rails=dict(links=[dict(interface="ens3", rail="rail0\n100\tmain", address="10.10.0.1", prefix=31,
                                                      table=100)])), "rails.links[0].rail")):
        _rc, result = ansiblerun.adhoc("rdmaops.roce.nic_layer", json.dumps(args), env)
        assert result["failed"] is True and result["changed"] is False, result
        assert result["option"] == option and result["msg"].startswith(option + "="), result["msg"]
        assert "Traceback" not in result["msg"] and "\n" not in result["msg"]
    assert host.read("/etc/network/interfaces") == original
    assert not (bindir / "ip.log").exists() and not host.exists("/etc/iproute2/rt_tables.d/rdmaops.conf")
