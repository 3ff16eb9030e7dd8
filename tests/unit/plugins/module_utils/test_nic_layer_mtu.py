"""nic_layer's MTU part: every RDMA link of a host in the one plan, sharing one view of its files."""

import pytest

from linkhost import LinkHost

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError, Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import NicLayer

SSH = {"SSH_CONNECTION": "10.0.2.2 51234 10.0.2.15 22"}
INTERFACES = "auto lo\niface lo inet loopback\n\nauto ens3\niface ens3 inet static\n    address 10.0.2.15/24\n    gateway 10.0.2.2\n"
NETPLAN = ("network:\n  version: 2\n  renderer: networkd\n  ethernets:\n"
           "    ens4:\n      addresses: [198.18.0.11/24]\n    ens5:\n      addresses: [198.18.1.11/24]\n")


def stanza(name, mtu):
    return ("\n# BEGIN rdmaops.roce mtu %s\nallow-hotplug %s\niface %s inet manual\n    mtu %d\n# END rdmaops.roce mtu %s\n"
            % (name, name, name, mtu, name))


def make_host(tmp_path, netplan=False):
    host = LinkHost(tmp_path)
    host.link("ens3", addrs=["10.0.2.15/24"], driver="virtio_net", max_mtu=65535)
    host.link("ens4", addrs=["198.18.0.11/24"])
    host.link("ens5", addrs=["198.18.1.11/24"])
    host.materialize()
    host.default_routes = [("inet", "10.0.2.2", "ens3")]
    host.client_routes = {"10.0.2.2": "ens3"}
    if netplan:
        host.tools |= {"netplan", "networkctl"}
        host.file("/etc/netplan/50-cloud-init.yaml", NETPLAN, mode=0o600)
    else:
        host.tools |= {"ifup"}
        host.file("/etc/network/interfaces", INTERFACES)
    return host


def run(host, check=False, **link_mtu):
    module = host.module(check_mode=check)
    ctx = Context(module, host=HostRoot(host.root), runner=CommandRunner(module))
    ctx.diff_mode = True
    link_mtu.setdefault("mtu", 9000)
    link_mtu.setdefault("interfaces", ["ens4", "ens5"])
    layer = NicLayer(ctx, dict(link_mtu=link_mtu, ports=[], boot_reapply=False), environ=SSH)
    result, _plan = execute(layer, Plan())
    return result


def sets(host):
    return [call for call in host.calls if call.startswith("ip link set")]


def test_two_links_in_one_file_make_one_write_and_a_repeat_does_nothing(tmp_path):
    host = make_host(tmp_path)
    predicted = run(host, check=True)
    assert predicted["changed"] is True and sets(host) == [] and host.read("/etc/network/interfaces") == INTERFACES
    applied = run(host)
    assert applied["changes"] == predicted["changes"]
    # both stanzas, built on each other in one write (one plan entry for the file)
    assert host.read("/etc/network/interfaces") == INTERFACES + stanza("ens4", 9000) + stanza("ens5", 9000)
    assert [change for change in applied["changes"] if "/etc/network/interfaces" in change] == [
        "ifupdown: /etc/network/interfaces gets a manual stanza for ens4 with mtu 9000; "
        "ifupdown: /etc/network/interfaces gets a manual stanza for ens5 with mtu 9000"]
    assert sets(host) == ["ip link set dev ens4 mtu 9000", "ip link set dev ens5 mtu 9000"]
    mtu = applied["link_mtu"]
    assert mtu["mtu"] == 9000 and mtu["management_change"] is False
    assert mtu["commands"] == ["ip link set dev ens4 mtu 9000", "ip link set dev ens5 mtu 9000"]
    assert [(link["interface"], link["after"]["runtime"]) for link in mtu["links"]] == [
        ("ens4", {"ens4": 9000}), ("ens5", {"ens5": 9000})]
    assert "commands" not in mtu["links"][0]
    again = run(host)
    assert again["changed"] is False and again["changes"] == [] and sets(host) == sets(host)[:2]


def test_netplan_generate_runs_once_for_every_link(tmp_path):
    host = make_host(tmp_path, netplan=True)
    result = run(host)
    assert result["changed"] is True
    generates = [call for call in host.calls if call.startswith("netplan generate")]
    assert len(generates) == 1
    # the management path is detected once for the host, not once per link
    assert host.calls.count("ip -j route show default") == 1
    assert host.sys_mtu("ens4") == 9000 and host.sys_mtu("ens5") == 9000


def test_a_failed_validation_rolls_back_every_link(tmp_path):
    host = make_host(tmp_path, netplan=True)
    host.fail["netplan generate"] = (1, "Error in network definition: mtu")
    with pytest.raises(ApplyError) as caught:
        run(host)
    assert "netplan generate" in str(caught.value.msg)
    assert host.sys_mtu("ens4") == 1500 and host.sys_mtu("ens5") == 1500
    assert host.read("/etc/netplan/50-cloud-init.yaml") == NETPLAN
    assert not host.exists("/etc/netplan/90-rdmaops-ens4.yaml")


def test_the_management_link_is_refused_before_any_link_changes(tmp_path):
    host = make_host(tmp_path)
    with pytest.raises(RefusedError) as caught:
        run(host, interfaces=["ens4", "ens3"])
    assert "ens3" in caught.value.msg and "allow_management_change" in caught.value.msg
    assert sets(host) == [] and host.read("/etc/network/interfaces") == INTERFACES


def test_input_errors_name_the_option(tmp_path):
    host = make_host(tmp_path)
    with pytest.raises(InputError) as caught:
        run(host, interfaces=["ens4", "ens5;reboot"])
    assert caught.value.details["option"] == "link_mtu.interfaces[1]"
    assert caught.value.msg.startswith("link_mtu.interfaces[1]='ens5;reboot' is refused")
    assert sets(host) == [] and host.read("/etc/network/interfaces") == INTERFACES
    with pytest.raises(InputError) as caught:
        run(host, interfaces=["ens4", "ens4"])
    assert caught.value.details["option"] == "link_mtu.interfaces"
    with pytest.raises(InputError) as caught:
        run(host, mtu=None)
    assert caught.value.details["option"] == "link_mtu.mtu"
    with pytest.raises(InputError) as caught:
        run(host, interfaces=[])
    assert "nothing to do" in caught.value.msg
