"""link_mtu end to end on host trees: detection, plans, check mode, idempotence, refusals, stacking."""

import os
import re
import shutil
import subprocess

import pytest

from linkhost import LinkHost

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError, VerifyError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError, CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._host.management import ssh_connection
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf.mtu import LinkMtu

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "fixtures", "netconf")
SSH = {"SSH_CONNECTION": "10.0.2.2 51234 10.0.2.15 22"}
LAB_INTERFACES = "auto lo\niface lo inet loopback\n\nauto ens3\niface ens3 inet static\n    address 10.0.2.15/24\n    gateway 10.0.2.2\n"


def fixture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def engine(host, check=False, environ=None, **params):
    args = dict(persist=True, backend="auto", allow_management_change=False, management_interfaces=[], raise_lower=True,
                adopt=False)
    args.update(params)
    module = host.module(check_mode=check)
    ctx = Context(module, host=HostRoot(host.root), runner=CommandRunner(module))
    ctx.diff_mode = True
    return LinkMtu(ctx, args, environ=SSH if environ is None else environ)


def run(host, check=False, environ=None, **params):
    """The engine's result; its errors are raised.  ``warnings`` as Ansible reports module.warn()."""
    job = engine(host, check=check, environ=environ, **params)
    result, _plan = execute(job)
    result["warnings"] = list(job.ctx.warnings)
    return result


def snapshot(host):
    """Every file of the tree with its content and mode, to prove check mode changes nothing."""
    out = {}
    for base, _dirs, files in os.walk(host.root):
        for name in files:
            path = os.path.join(base, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as handle:
                out[path] = (handle.read(), os.stat(path).st_mode)
    return out


def sets(host):
    return [call for call in host.calls if call.startswith("ip link set")]


@pytest.fixture
def lab(tmp_path):
    """The lab VM: ens3 management (ifupdown static, SSH, default route), ens4 fabric that nothing configures."""
    host = LinkHost(tmp_path)
    host.link("ens3", addrs=["10.0.2.15/24"], driver="virtio_net", max_mtu=65535)
    host.link("ens4", addrs=["198.18.0.11/24"], driver="virtio_net", max_mtu=65535)
    host.materialize()
    host.tools |= {"ifup"}
    host.default_routes = [("inet", "10.0.2.2", "ens3")]
    host.client_routes = {"10.0.2.2": "ens3"}
    host.file("/etc/network/interfaces", LAB_INTERFACES)
    return host


# -- ifupdown, the lab's layout ------------------------------------------------------------
def test_check_mode_predicts_and_changes_nothing(lab):
    before = snapshot(lab)
    result = run(lab, check=True, interface="ens4", mtu=9000)
    assert result["changed"] is True
    assert result["changes"] == [
        "runtime: ip link set dev ens4 mtu 9000 (was 1500)",
        "ifupdown: /etc/network/interfaces gets a manual stanza for ens4 with mtu 9000",
    ]
    assert result["before"] == {"runtime": {"ens4": 1500}, "persistent": {"ens4": None}}
    assert result["after"] == {"runtime": {"ens4": 9000}, "persistent": {"ens4": 9000}}
    # the live MTU resets the link; the persisted stanza alone changes nothing that runs
    assert result["disruption"] == "link_reset"
    assert result["disruptive_changes"] == ["link_reset: runtime: ip link set dev ens4 mtu 9000 (was 1500)"]
    assert snapshot(lab) == before
    assert sets(lab) == []
    file_diff = result["diff"][1]
    assert file_diff["before"] == LAB_INTERFACES
    assert file_diff["after"] == LAB_INTERFACES + (
        "\n# BEGIN rdmaops.roce mtu ens4\nallow-hotplug ens4\niface ens4 inet manual\n    mtu 9000\n# END rdmaops.roce mtu ens4\n"
    )
    assert result["diff"][0] == {"before": {"runtime:ens4": 1500}, "after": {"runtime:ens4": 9000}}


def test_apply_then_second_run_changes_nothing(lab):
    predicted = run(lab, check=True, interface="ens4", mtu=9000)
    applied = run(lab, interface="ens4", mtu=9000)
    assert applied["changes"] == predicted["changes"] and applied["diff"] == predicted["diff"]
    assert applied["after"] == predicted["after"]
    assert lab.sys_mtu("ens4") == 9000 and lab.sys_mtu("ens3") == 1500
    assert sets(lab) == ["ip link set dev ens4 mtu 9000"]
    assert applied["commands"] == ["ip link set dev ens4 mtu 9000"]
    assert lab.read("/etc/network/interfaces").startswith(LAB_INTERFACES)
    again = run(lab, interface="ens4", mtu=9000)
    assert again["changed"] is False and again["changes"] == [] and again["diff"] == []
    assert again["config"]["files"] == ["/etc/network/interfaces"]  # our stanza is now what configures it
    assert sets(lab) == ["ip link set dev ens4 mtu 9000"]


def test_runtime_only_touches_no_file(lab):
    before = lab.read("/etc/network/interfaces")
    result = run(lab, interface="ens4", mtu=9000, backend="runtime")
    assert result["backend"] == "runtime" and result["configs"] == []
    assert lab.read("/etc/network/interfaces") == before and lab.sys_mtu("ens4") == 9000
    assert run(lab, interface="ens4", mtu=9000, persist=False)["changed"] is False


def test_existing_stanza_in_a_sourced_file_is_edited_there_only(tmp_path):
    host = LinkHost(tmp_path).link("eno1", addrs=["10.1.0.5/24"]).link("ens1f0np0", addrs=["192.168.100.12/24"]).link("ens1f1np1").materialize()
    host.default_routes = [("inet", "10.1.0.1", "eno1")]
    host.file("/etc/network/interfaces", fixture("interfaces.debian-installer"))
    host.file("/etc/network/interfaces.d/fabric", fixture("interfaces.d-fabric"))
    result = run(host, interface="ens1f0np0", mtu=9000, environ={})
    assert result["config"] == {
        "backend": "ifupdown", "interface": "ens1f0np0", "path": "/etc/network/interfaces.d/fabric", "mtu": None,
        "files": ["/etc/network/interfaces.d/fabric"],
    }
    assert host.read("/etc/network/interfaces") == fixture("interfaces.debian-installer")
    edited = host.read("/etc/network/interfaces.d/fabric").splitlines()
    assert edited[:7] == fixture("interfaces.d-fabric").splitlines()[:7] and edited[7] == "\tmtu 9000"
    assert edited[8:] == fixture("interfaces.d-fabric").splitlines()[7:]
    # the dhcp port: a pre-up command, because ifupdown's dhcp method has no mtu option
    run(host, interface="ens1f1np1", mtu=9000, environ={})
    assert "\tpre-up ip link set dev ens1f1np1 mtu 9000" in host.read("/etc/network/interfaces.d/fabric").splitlines()
    assert run(host, interface="ens1f1np1", mtu=9000, environ={})["changed"] is False


def test_source_directory_follows_run_parts_names(tmp_path):
    host = LinkHost(tmp_path).link("eno1").link("ens4").materialize()
    host.file("/etc/network/interfaces", "source-directory interfaces.d\n")
    host.file("/etc/network/interfaces.d/fabric.cfg", "iface ens4 inet manual\n")  # ignored: a dot in the name
    host.file("/etc/network/interfaces.d/fabric", "iface ens4 inet static\n    address 198.18.0.11/24\n")
    result = run(host, interface="ens4", mtu=9000, environ={})
    assert result["config"]["path"] == "/etc/network/interfaces.d/fabric"
    assert host.read("/etc/network/interfaces.d/fabric.cfg") == "iface ens4 inet manual\n"


TEMPLATES = "# shared by the fabric ports\niface roce-link inet manual\n    mtu 4200\n    post-up ip link set dev $IFACE txqueuelen 10000\n"
PORTS = (
    "source interfaces.d/*\n\n"
    "auto ens1f0np0\niface ens1f0np0 inet static inherits roce-link\n    address 192.168.100.12/24\n\n"
    "auto ens1f1np1\niface ens1f1np1 inet static inherits roce-link\n    address 192.168.101.12/24\n"
)


@pytest.fixture
def templated(tmp_path):
    """Two fabric ports whose MTU comes from a template in a file sourced at the top."""
    host = LinkHost(tmp_path).link("ens1f0np0", mtu=4200, addrs=["192.168.100.12/24"]).link("ens1f1np1", mtu=4200).materialize()
    host.file("/etc/network/interfaces", PORTS)
    host.file("/etc/network/interfaces.d/templates", TEMPLATES)
    return host


def test_an_inherited_mtu_is_read_with_where_it_comes_from_and_kept_when_it_matches(templated):
    before = snapshot(templated)
    result = run(templated, interface="ens1f0np0", mtu=4200, environ={})
    assert result["changed"] is False and result["diff"] == []
    assert result["config"]["mtu"] == 4200
    assert result["config"]["mtu_source"] == dict(kind="mtu", mtu=4200, iface="roce-link", family="inet", method="manual",
                                                  path="/etc/network/interfaces.d/templates", line=3, inherited=True, via=["roce-link"])
    assert snapshot(templated) == before


def test_an_inherited_mtu_that_differs_is_set_in_the_port_stanza_and_the_template_stays(templated):
    result = run(templated, interface="ens1f0np0", mtu=9000, environ={})
    assert result["before"]["persistent"] == {"ens1f0np0": 4200} and result["after"]["persistent"] == {"ens1f0np0": 9000}
    assert result["changes"][1].startswith(
        "ifupdown: /etc/network/interfaces sets mtu 9000 for ens1f0np0; the stanza at /etc/network/interfaces:4 stops inheriting roce-link"
    )
    assert templated.read("/etc/network/interfaces.d/templates") == TEMPLATES
    assert templated.read("/etc/network/interfaces") == PORTS.replace(
        "iface ens1f0np0 inet static inherits roce-link\n",
        "iface ens1f0np0 inet static\n"
        "    # rdmaops.roce link_mtu: options copied from roce-link in /etc/network/interfaces.d/templates"
        " (ifupdown cannot override an inherited mtu)\n"
        "    mtu 9000\n    post-up ip link set dev $IFACE txqueuelen 10000\n",
    )
    again = run(templated, interface="ens1f0np0", mtu=9000, environ={})
    assert again["changed"] is False and again["config"]["mtu_source"]["inherited"] is False
    # the other port still has the template's MTU
    assert run(templated, interface="ens1f1np1", mtu=4200, environ={}, check=True)["changed"] is False


IFQUERY = shutil.which("ifquery", path=os.pathsep.join([os.environ.get("PATH", os.defpath), "/usr/sbin", "/sbin"]))


@pytest.mark.skipif(IFQUERY is None, reason="Debian's ifupdown is not installed (no ifquery): apt-get install ifupdown")
def test_real_ifquery_reads_the_files_the_module_wrote(templated, tmp_path):
    run(templated, interface="ens1f0np0", mtu=9000, environ={})
    main = templated.path("/etc/network/interfaces")  # "source interfaces.d/*" is relative: it reads the tree's templates

    def mtus(interface):
        proc = subprocess.run(check=False, args=[IFQUERY, "-i", main, "--state-dir", str(tmp_path / "state"), interface],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        return re.findall(r"^mtu: (.*(?:\n[^:\n]*$)*)", proc.stdout, re.M)

    assert mtus("ens1f0np0") == ["9000"] and mtus("ens1f1np1") == ["4200"]


def test_a_template_ifupdown_cannot_resolve_is_refused(tmp_path):
    host = LinkHost(tmp_path).link("ens4").materialize()
    # the template comes after the stanza: "unknown iface to inherit from", ifupdown stops reading there
    text = "iface ens4 inet static inherits roce-link\n    address 198.18.0.11/24\n\niface roce-link inet manual\n    mtu 4200\n"
    host.file("/etc/network/interfaces", text)
    with pytest.raises(RefusedError) as err:
        run(host, interface="ens4", mtu=9000, environ={})
    assert "ifupdown cannot read /etc/network/interfaces: /etc/network/interfaces:1: unknown iface to inherit from: roce-link (inet)" in str(err.value)
    assert host.read("/etc/network/interfaces") == text
    # in a sourced file, ifupdown stops reading that file there
    host.file("/etc/network/interfaces", "source-directory interfaces.d\n")
    host.file("/etc/network/interfaces.d/fabric", "iface ens4 inet6 manual inherits roce-link\n\niface ens4 inet manual\n")
    host.file("/etc/network/interfaces.d/aa-templates", "iface roce-link inet manual\n    mtu 4200\n")
    with pytest.raises(RefusedError) as err:
        run(host, interface="ens4", mtu=9000, environ={})
    assert "ifupdown rejects the stanza of ens4 at /etc/network/interfaces.d/fabric:1: unknown iface to inherit from: roce-link (inet6)" in str(err.value)


# -- the management path -------------------------------------------------------------------
def test_management_interface_is_refused_before_anything_changes(lab):
    before = snapshot(lab)
    with pytest.raises(RefusedError) as err:
        run(lab, interface="ens3", mtu=9000)
    msg = str(err.value)
    assert msg.startswith("refusing to change the MTU of ens3: it is on the path that carries the Ansible connection")
    assert "holds 10.0.2.15, the address this SSH connection came in on" in msg
    assert "carries an IPv4 default route" in msg and "allow_management_change: true" in msg
    assert err.value.details["management"]["change"] is True
    assert snapshot(lab) == before and sets(lab) == []
    # check mode refuses the same way
    with pytest.raises(RefusedError):
        run(lab, check=True, interface="ens3", mtu=9000)


def test_default_route_alone_protects_an_interface(lab):
    with pytest.raises(RefusedError) as err:
        run(lab, interface="ens3", mtu=9000, environ={})
    assert "ens3 carries an IPv4 default route" in str(err.value)


def test_each_default_route_family_is_named_once(lab):
    # as on the lab VMs: an IPv4 default route and an IPv6 one learnt from a router advertisement,
    # plus a second IPv4 default route with another metric
    lab.default_routes += [("inet6", "fe80::2", "ens3"), ("inet", "10.0.2.3", "ens3")]
    with pytest.raises(RefusedError) as err:
        run(lab, interface="ens3", mtu=9000, environ={})
    reasons = err.value.details["management"]["interfaces"]["ens3"]
    assert reasons == ["carries an IPv4 default route", "carries an IPv6 default route"]


def test_named_management_interfaces_are_protected_too(lab):
    with pytest.raises(RefusedError) as err:
        run(lab, interface="ens4", mtu=9000, management_interfaces=["ens4"])
    assert "named in management_interfaces" in str(err.value)


def test_ssh_connection_is_found_in_an_ancestor_when_become_cleared_it(tmp_path):
    host = LinkHost(tmp_path)
    host.file("/proc/300/stat", "300 (python3) S 200 300 200 0 -1 4194560 0 0 0 0\n")
    host.file("/proc/300/environ", "PATH=/usr/bin\0HOME=/root\0")
    host.file("/proc/200/stat", "200 (sudo (x) y) S 100 200 100 0 -1 4194560 0 0 0 0\n")
    host.file("/proc/200/environ", "")
    host.file("/proc/100/stat", "100 (sh) S 1 100 100 0 -1 4194560 0 0 0 0\n")
    host.file("/proc/100/environ", "USER=admin\0SSH_CONNECTION=::ffff:10.0.2.2 51234 ::ffff:10.0.2.15 22\0")
    assert ssh_connection(HostRoot(str(tmp_path)), {}, pid=300) == ("10.0.2.2", "10.0.2.15")
    assert ssh_connection(HostRoot(str(tmp_path)), {}, pid=999) is None


def test_allowed_management_change_is_made_and_retested(lab):
    result = run(lab, interface="ens3", mtu=9000, allow_management_change=True)
    assert lab.sys_mtu("ens3") == 9000
    assert result["management"]["change"] is True
    assert result["management"]["retest"] == [
        "ens3 still holds 10.0.2.15",
        "route to the SSH client via ens3",
        "default routes: default via 10.0.2.2 dev ens3",
    ]
    assert "mtu 9000" in lab.read("/etc/network/interfaces")


def test_retest_fails_when_the_connection_address_is_gone(lab):
    real_set = lab._ip_set_mtu

    def losing_address(name, mtu):
        answer = real_set(name, mtu)
        lab.links[name]["addrs"] = []  # e.g. a driver reset that drops the address
        lab.default_routes = []
        return answer

    lab._ip_set_mtu = losing_address
    with pytest.raises(VerifyError) as err:
        run(lab, interface="ens3", mtu=9000, allow_management_change=True)
    assert str(err.value).startswith("connectivity re-test failed after the management change: ")
    assert "the connection's address 10.0.2.15 moved from ens3 to None" in str(err.value)
    assert "default routes lost: default via 10.0.2.2 dev ens3" in str(err.value)


# -- bonds and VLANs -----------------------------------------------------------------------
BOND_INTERFACES = """\
auto lo
iface lo inet loopback

auto eno1
iface eno1 inet static
    address 10.1.0.5/24
    gateway 10.1.0.1

auto ens1f0np0
iface ens1f0np0 inet manual
    bond-master bond0

auto ens1f1np1
iface ens1f1np1 inet manual
    bond-master bond0

auto bond0
iface bond0 inet manual
    bond-slaves ens1f0np0 ens1f1np1
    bond-mode 802.3ad
    bond-miimon 100

auto bond0.100
iface bond0.100 inet static
    address 192.168.100.12/24
    vlan-raw-device bond0
"""


@pytest.fixture
def bonded(tmp_path):
    """A bond of two ConnectX ports with a VLAN on it; eno1 is the management NIC."""
    host = LinkHost(tmp_path)
    host.link("eno1", addrs=["10.1.0.5/24"], driver="igb")
    host.link("ens1f0np0", mtu=1500)
    host.link("ens1f1np1", mtu=1500)
    host.link("bond0", kind="bond", lowers=["ens1f0np0", "ens1f1np1"])
    host.link("bond0.100", kind="vlan", lowers=["bond0"], addrs=["192.168.100.12/24"])
    host.materialize()
    host.default_routes = [("inet", "10.1.0.1", "eno1")]
    host.client_routes = {"10.1.0.9": "eno1"}
    host.file("/etc/network/interfaces", BOND_INTERFACES)
    return host


BOND_ENV = {"SSH_CONNECTION": "10.1.0.9 40000 10.1.0.5 22"}


def test_sysfs_tree_has_the_kernel_layout(bonded):
    root = bonded.root
    assert os.readlink(os.path.join(root, "sys/devices/virtual/net/bond0.100/lower_bond0")) == "../bond0"
    assert os.readlink(os.path.join(root, "sys/devices/virtual/net/bond0/lower_ens1f0np0")) == "../../../pci0000:00/0000:00:03.0/net/ens1f0np0"
    assert bonded.read("/sys/class/net/bond0/bonding/slaves") == "ens1f0np0 ens1f1np1\n"
    assert "bond0.100      | 100  | bond0" in bonded.read("/proc/net/vlan/config")


def test_vlan_on_a_bond_raises_members_then_bond_then_vlan(bonded):
    result = run(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV)
    assert sets(bonded) == [
        "ip link set dev ens1f0np0 mtu 9000",
        "ip link set dev ens1f1np1 mtu 9000",
        "ip link set dev bond0 mtu 9000",
        "ip link set dev bond0.100 mtu 9000",
    ]
    assert result["before"]["runtime"] == {"bond0.100": 1500, "bond0": 1500, "ens1f0np0": 1500, "ens1f1np1": 1500}
    assert result["after"]["runtime"] == {"bond0.100": 9000, "bond0": 9000, "ens1f0np0": 9000, "ens1f1np1": 9000}
    # the VLAN and the bond are persisted; the members take the bond's MTU when enslaved
    assert [c["interface"] for c in result["configs"]] == ["bond0.100", "bond0"]
    text = bonded.read("/etc/network/interfaces")
    assert "    bond-miimon 100\n    mtu 9000\n" in text
    assert "    vlan-raw-device bond0\n    mtu 9000\n" in text
    assert text.count("mtu 9000") == 2
    assert run(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV)["changed"] is False


def test_a_child_never_exceeds_its_parent_when_raising_is_not_allowed(bonded):
    before = snapshot(bonded)
    with pytest.raises(RefusedError) as err:
        run(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV, raise_lower=False)
    assert str(err.value).startswith("bond0.100 sits on ens1f0np0, whose MTU is 1500: a link cannot exceed the device below it")
    assert snapshot(bonded) == before


def test_vlan_over_a_management_bond_is_refused(bonded):
    bonded.default_routes = [("inet", "192.168.100.1", "bond0")]
    with pytest.raises(RefusedError) as err:
        run(bonded, interface="bond0.100", mtu=9000, environ={})
    msg = str(err.value)
    assert "refusing to change the MTU of bond0, ens1f0np0, ens1f1np1" in msg
    assert "ens1f0np0 is below bond0, which carries an IPv4 default route" in msg
    assert sets(bonded) == []


def test_lowering_a_bond_warns_about_the_vlan_the_kernel_lowers(bonded):
    run(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV)
    job_result = run(bonded, interface="bond0", mtu=4200, environ=BOND_ENV)
    assert bonded.sys_mtu("bond0.100") == 4200
    assert job_result["warnings"] == [
        "lowering bond0 to 4200 also lowers bond0.100 (now 9000): the kernel keeps a device at or below the one it sits on; "
        "its persistent configuration is not changed"
    ]


def test_driver_maximum_is_checked_before_anything_changes(bonded):
    bonded.links["ens1f1np1"]["max_mtu"] = 4200
    with pytest.raises(InputError) as err:
        run(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV)
    assert str(err.value) == "ens1f1np1 accepts an MTU of at most 4200 (its driver's max_mtu), not 9000"
    assert sets(bonded) == []


def test_a_kernel_that_does_not_take_the_value_fails_the_module(lab):
    lab._ip_set_mtu = lambda name, mtu: (0, "", "")  # accepted, but nothing changes
    with pytest.raises(VerifyError) as err:
        run(lab, interface="ens4", mtu=9000)
    assert "the kernel reports ens4 at MTU 1500 after setting 9000" in str(err.value)


def test_a_kernel_error_is_reported_with_the_command(lab):
    lab.fail["ip link set dev ens4"] = (2, "Error: mtu greater than device maximum.\n")
    with pytest.raises(ApplyError) as err:
        run(lab, interface="ens4", mtu=9000)
    assert isinstance(err.value.cause, CommandError)
    assert err.value.cause.result.stderr == "Error: mtu greater than device maximum.\n"
    assert err.value.details["stderr"] == "Error: mtu greater than device maximum.\n"


def test_unknown_interface_and_bad_values(lab):
    with pytest.raises(InputError, match="interface ens9 does not exist on this host; links: ens3, ens4"):
        run(lab, interface="ens9", mtu=9000)
    with pytest.raises(InputError, match="mtu=70000 is out of range"):
        run(lab, interface="ens4", mtu=70000)
    with pytest.raises(InputError, match="is not a kernel interface name"):
        run(lab, interface="../ens4", mtu=9000)


def test_a_netdev_whose_name_is_shell_is_refused_before_ifupdown_runs_it_at_boot(tmp_path):
    # Linux accepts "r0;reboot"; a dhcp stanza gets our pre-up line, which ifup runs through /bin/sh
    host = LinkHost(tmp_path)
    host.link("ens3", addrs=["10.0.2.15/24"], driver="virtio_net", max_mtu=65535)
    host.link("r0;reboot", driver="virtio_net", max_mtu=65535)
    host.materialize()
    host.tools |= {"ifup"}
    host.default_routes = [("inet", "10.0.2.2", "ens3")]
    text = LAB_INTERFACES + "\nallow-hotplug r0;reboot\niface r0;reboot inet dhcp\n"
    host.file("/etc/network/interfaces", text)
    before = snapshot(host)
    for backend in ("auto", "ifupdown"):
        with pytest.raises(InputError) as info:
            run(host, interface="r0;reboot", mtu=9000, backend=backend)
        assert info.value.details["option"] == "interface"
        assert info.value.msg.startswith("interface='r0;reboot' is refused: the kernel allows it, but it holds a character that is "
                                         "shell or file syntax")
        assert "Use 1-15 characters of A-Z, a-z, 0-9, '_', '.' and '-'" in info.value.msg
    assert snapshot(host) == before and not [call for call in host.calls if call.startswith("ip link set")]


# -- netplan --------------------------------------------------------------------------------
@pytest.fixture
def netplan(tmp_path):
    host = LinkHost(tmp_path)
    host.link("eth0", addrs=["10.0.0.5/24"], driver="virtio_net")
    host.link("veth-b", mac="3e:38:3c:48:1d:19", addrs=["198.18.0.21/24"], driver="virtio_net")
    host.materialize()
    host.tools |= {"netplan", "networkctl"}
    host.default_routes = [("inet", "10.0.0.1", "eth0")]
    host.file("/etc/netplan/50-cloud-init.yaml", fixture("50-cloud-init.netplan"), mode=0o600)
    host.file("/etc/netplan/01-mgmt.yaml", "network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n", mode=0o600)
    os.makedirs(host.path("/run/systemd/netif/links"))
    return host


def test_netplan_dropin_for_a_match_definition(netplan):
    before = snapshot(netplan)
    predicted = run(netplan, check=True, interface="veth-b", mtu=9000, environ={})
    assert snapshot(netplan) == before
    assert predicted["commands"] == ["netplan generate --root-dir %s" % netplan.root, "networkctl reload"]
    result = run(netplan, interface="veth-b", mtu=9000, environ={})
    assert result["config"] == {
        "backend": "netplan", "interface": "veth-b", "path": "/etc/netplan/90-rdmaops-fabric0.yaml", "mtu": None,
        "definition": "ethernets.fabric0", "origin": "/etc/netplan/50-cloud-init.yaml", "renderer": "networkd",
    }
    dropin = netplan.read("/etc/netplan/90-rdmaops-fabric0.yaml")
    assert dropin.endswith("network:\n  version: 2\n  ethernets:\n    fabric0:\n      mtu: 9000\n")
    assert netplan.mode("/etc/netplan/90-rdmaops-fabric0.yaml") == 0o600
    assert netplan.read("/etc/netplan/50-cloud-init.yaml") == fixture("50-cloud-init.netplan")
    assert result["commands"] == ["ip link set dev veth-b mtu 9000", "netplan generate --root-dir %s" % netplan.root, "networkctl reload"]
    assert result["after"]["persistent"] == {"veth-b": 9000}
    assert run(netplan, interface="veth-b", mtu=9000, environ={})["changed"] is False


def test_netplan_generate_failure_restores_the_files(netplan):
    netplan.fail["netplan generate"] = (1, fixture("netplan-generate-error.txt"))
    with pytest.raises(ApplyError) as err:
        run(netplan, interface="veth-b", mtu=9000, environ={})
    assert "rejected the configuration, so the files were restored" in str(err.value)
    assert "invalid unsigned int value 'jumbo'" in str(err.value)
    assert not netplan.exists("/etc/netplan/90-rdmaops-fabric0.yaml")


def test_netplan_later_file_that_overrides_us_is_refused(netplan):
    netplan.file("/etc/netplan/99-local.yaml", "network:\n  ethernets:\n    fabric0:\n      mtu: 1500\n", mode=0o600)
    with pytest.raises(RefusedError) as err:
        run(netplan, interface="veth-b", mtu=9000, environ={})
    assert str(err.value).startswith("/etc/netplan/99-local.yaml sorts after /etc/netplan/90-rdmaops-fabric0.yaml and sets mtu 1500")


def test_netplan_definition_shared_with_other_links_is_refused(tmp_path):
    host = LinkHost(tmp_path).link("ens1f0np0").link("ens1f1np1").materialize()
    host.file("/etc/netplan/10-rdma.yaml", "network:\n  ethernets:\n    rdma:\n      match:\n        name: ens1f*\n      dhcp4: true\n")
    with pytest.raises(RefusedError) as err:
        run(host, interface="ens1f0np0", mtu=9000, environ={})
    assert "netplan definition ethernets.rdma (/etc/netplan/10-rdma.yaml) matches ens1f1np1 as well as ens1f0np0" in str(err.value)


def test_netplan_bond_and_vlan_by_id(bonded):
    os.unlink(bonded.path("/etc/network/interfaces"))
    bonded.tools |= {"netplan"}
    bonded.file(
        "/etc/netplan/01-netcfg.yaml",
        "# fabric bond\nnetwork:\n  version: 2\n  ethernets:\n    ens1f0np0: {}\n    ens1f1np1: {}\n"
        "  bonds:\n    bond0:\n      interfaces: [ens1f0np0, ens1f1np1]\n      parameters: {mode: 802.3ad}\n"
        "  vlans:\n    bond0.100:\n      id: 100\n      link: bond0\n      addresses: [192.168.100.12/24]\n",
    )
    result = run(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV)
    assert [c["path"] for c in result["configs"]] == ["/etc/netplan/90-rdmaops-bond0.100.yaml", "/etc/netplan/90-rdmaops-bond0.yaml"]
    assert "  vlans:\n    bond0.100:\n      mtu: 9000\n" in bonded.read("/etc/netplan/90-rdmaops-bond0.100.yaml")
    assert "  bonds:\n    bond0:\n      mtu: 9000\n" in bonded.read("/etc/netplan/90-rdmaops-bond0.yaml")
    assert result["commands"].count("netplan generate --root-dir %s" % bonded.root) == 1


# -- NetworkManager -------------------------------------------------------------------------
def nm_host(tmp_path, running=True):
    host = LinkHost(tmp_path)
    host.link("eth0", addrs=["10.88.0.10/16"], driver="virtio_net")
    host.link("veth-a", driver="virtio_net")
    host.link("veth-b", mac="3e:38:3c:48:1d:19", addrs=["198.18.0.11/24"], driver="virtio_net")
    host.materialize()
    host.tools |= {"nmcli"}
    host.default_routes = [("inet", "10.88.0.1", "eth0")]
    profiles = []
    for line in fixture("nmcli-connection-show.txt").splitlines():
        name, uuid, kind, device, filename = line.split(":", 4)
        profiles.append(dict(name=name, uuid=uuid, type=kind, device=device, filename=filename,
                             **{"connection.interface-name": device or ""}))
    states = dict(line.split(":", 1) for line in fixture("nmcli-device.txt").splitlines())
    host.nm = dict(running=running, devices=states, profiles=profiles)
    host.file("/etc/NetworkManager/system-connections/fabric0.nmconnection", fixture("fabric0.nmconnection"), mode=0o600)
    return host


def test_networkmanager_profile_is_modified_and_reapplied(tmp_path):
    host = nm_host(tmp_path)
    predicted = run(host, check=True, interface="veth-b", mtu=9000, environ={})
    assert predicted["changes"] == [
        "runtime: ip link set dev veth-b mtu 9000 (was 1500)",
        "networkmanager: profile fabric0 (dc98779b-7462-4b68-b82c-592aa6f600c2) 802-3-ethernet.mtu auto -> 9000",
    ]
    assert predicted["commands"] == ["nmcli device modify veth-b 802-3-ethernet.mtu 9000"]
    assert not [c for c in host.calls if "modify" in c]
    result = run(host, interface="veth-b", mtu=9000, environ={})
    assert result["config"]["uuid"] == "dc98779b-7462-4b68-b82c-592aa6f600c2" and result["config"]["active"] is True
    assert [c for c in host.calls if "modify" in c] == [
        "nmcli connection modify dc98779b-7462-4b68-b82c-592aa6f600c2 802-3-ethernet.mtu 9000",
        "nmcli device modify veth-b 802-3-ethernet.mtu 9000",
    ]
    assert run(host, interface="veth-b", mtu=9000, environ={})["changed"] is False


def test_networkmanager_external_and_unmanaged_devices_are_not_its_own(tmp_path):
    host = nm_host(tmp_path)
    # eth0 is "connected (externally)": NetworkManager only mirrors what someone else set up.
    host.default_routes = []
    with pytest.raises(RefusedError) as err:
        run(host, interface="eth0", mtu=9000, environ={})
    assert "NetworkManager runs but does not manage eth0 (device state connected (externally))" in str(err.value)
    assert "adding it to a network manager that does not know it yet" in str(err.value)


def test_networkmanager_prefers_the_stored_profile_over_an_in_memory_active_one(tmp_path):
    host = nm_host(tmp_path)
    for profile in host.nm["profiles"]:
        if profile["name"] == "fabric0":
            profile["device"] = ""
            profile["connection.interface-name"] = "veth-b"
        if profile["name"] == "Wired connection 2":
            profile["device"] = "veth-b"
    result = run(host, interface="veth-b", mtu=9000, environ={})
    assert result["config"]["profile"] == "fabric0" and result["config"]["active"] is False
    assert not [c for c in host.calls if c.startswith("nmcli device modify")]


def test_networkmanager_keyfile_is_edited_when_it_is_not_running(tmp_path):
    host = nm_host(tmp_path, running=False)
    result = run(host, interface="veth-b", mtu=9000, environ={})
    path = "/etc/NetworkManager/system-connections/fabric0.nmconnection"
    assert result["config"]["mode"] == "keyfile" and result["config"]["path"] == path
    assert host.read(path) == fixture("fabric0.nmconnection").replace("[ethernet]\n", "[ethernet]\nmtu=9000\n")
    assert host.mode(path) == 0o600
    assert run(host, interface="veth-b", mtu=9000, environ={})["changed"] is False


# -- systemd-networkd ---------------------------------------------------------------------
def networkd_host(tmp_path):
    host = LinkHost(tmp_path).link("eth0", addrs=["10.0.0.5/24"]).link("veth-c").link("veth-d").materialize()
    host.tools |= {"networkctl"}
    host.file("/etc/systemd/network/30-fabric.network", "[Match]\nName=veth-d\n\n[Network]\nAddress=198.18.1.11/24\n")
    host.file("/usr/lib/systemd/network/80-container-host0.network", "[Match]\nKind=veth\nName=host0\nVirtualization=container\n\n[Network]\nDHCP=yes\n")
    host.file("/run/systemd/netif/links/%d" % host.links["veth-d"]["ifindex"], fixture("networkd-links-state.txt"))
    return host


def test_networkd_dropin_for_the_file_networkd_applied(tmp_path):
    host = networkd_host(tmp_path)
    result = run(host, interface="veth-d", mtu=9000, environ={})
    dropin = "/etc/systemd/network/30-fabric.network.d/90-rdmaops-mtu.conf"
    assert result["config"] == {"backend": "networkd", "interface": "veth-d", "path": dropin, "mtu": None,
                                "network_file": "/etc/systemd/network/30-fabric.network"}
    assert host.read(dropin) == "# Managed by rdmaops.roce (link_mtu): the MTU of veth-d.\n[Link]\nMTUBytes=9000\n"
    assert result["commands"][-1] == "networkctl reload"
    assert run(host, interface="veth-d", mtu=9000, environ={})["changed"] is False


def test_networkd_later_dropin_wins_and_is_reported(tmp_path):
    host = networkd_host(tmp_path)
    host.file("/etc/systemd/network/30-fabric.network.d/99-local.conf", "[Link]\nMTUBytes=1500\n")
    with pytest.raises(RefusedError, match="99-local.conf sorts after .*90-rdmaops-mtu.conf and sets MTUBytes=1500"):
        run(host, interface="veth-d", mtu=9000, environ={})


def test_networkd_file_shared_by_several_links_is_refused(tmp_path):
    host = networkd_host(tmp_path)
    host.file("/etc/systemd/network/30-fabric.network", "[Match]\nName=veth-*\n\n[Network]\nDHCP=yes\n")
    with pytest.raises(RefusedError, match="30-fabric.network configures veth-c as well as veth-d"):
        run(host, interface="veth-d", mtu=9000, environ={})


# -- ifcfg ----------------------------------------------------------------------------------
def test_ifcfg_line_is_added(tmp_path):
    host = LinkHost(tmp_path).link("eno1").link("ens1f0np0").materialize()
    host.file("/etc/sysconfig/network-scripts/ifcfg-ens1f0np0", fixture("ifcfg-ens1f0np0"))
    result = run(host, interface="ens1f0np0", mtu=9000, environ={})
    assert result["backend"] == "ifcfg"
    assert host.read("/etc/sysconfig/network-scripts/ifcfg-ens1f0np0") == fixture("ifcfg-ens1f0np0") + "MTU=9000\n"
    assert run(host, interface="ens1f0np0", mtu=9000, environ={})["changed"] is False


# -- detection -----------------------------------------------------------------------------
def test_nothing_configures_the_link_and_no_ifupdown_means_a_clear_refusal(tmp_path):
    host = LinkHost(tmp_path).link("eth0").link("ens4").materialize()
    with pytest.raises(RefusedError) as err:
        run(host, interface="ens4", mtu=9000, environ={})
    msg = str(err.value)
    assert msg.startswith("nothing configures ens4 persistently on this host")
    assert "netplan: no YAML in /run/netplan, /etc/netplan, /lib/netplan" in msg
    assert "ifupdown: /etc/network/interfaces does not exist" in msg
    assert "ifcfg: no ifcfg file for ens4" in msg
    assert msg.endswith("or use backend: runtime")


def test_named_backend_that_does_not_configure_the_link_fails(lab):
    with pytest.raises(InputError, match="backend networkd does not configure ens4 on this host"):
        run(lab, interface="ens4", mtu=9000, backend="networkd")


def test_netplan_wins_over_the_networkd_file_it_rendered(netplan):
    netplan.file("/run/systemd/network/10-netplan-fabric0.network", fixture("10-netplan-fabric0.network"))
    assert run(netplan, check=True, interface="veth-b", mtu=9000, environ={})["backend"] == "netplan"
    with pytest.raises(InputError, match="10-netplan-fabric0.network is rendered by netplan"):
        run(netplan, check=True, interface="veth-b", mtu=9000, environ={}, backend="networkd")


def test_the_management_refusal_comes_before_any_configuration_question(tmp_path):
    host = LinkHost(tmp_path).link("eth0", addrs=["10.88.0.10/16"]).materialize()
    host.default_routes = [("inet", "10.88.0.1", "eth0")]
    with pytest.raises(RefusedError, match="^refusing to change the MTU of eth0: .*eth0 carries an IPv4 default route"):
        run(host, interface="eth0", mtu=9000, environ={})


def test_networkmanager_owns_its_ifcfg_profiles(tmp_path):
    host = nm_host(tmp_path)
    host.link("ens1f0np0").materialize()
    host.file("/etc/sysconfig/network-scripts/ifcfg-ens1f0np0", fixture("ifcfg-ens1f0np0"))
    host.nm["devices"]["ens1f0np0"] = "connected"
    host.nm["profiles"].append(dict(name="ens1f0np0", uuid="3a5d9d5e-0a21-4c2e-9d3e-6d3e2b7c1a10", type="802-3-ethernet",
                                    device="ens1f0np0", filename="/etc/sysconfig/network-scripts/ifcfg-ens1f0np0"))
    result = run(host, interface="ens1f0np0", mtu=9000, environ={})
    assert result["backend"] == "networkmanager" and result["config"]["path"] == "/etc/sysconfig/network-scripts/ifcfg-ens1f0np0"
    assert "nmcli connection modify 3a5d9d5e-0a21-4c2e-9d3e-6d3e2b7c1a10 802-3-ethernet.mtu 9000" in host.calls
    # NetworkManager writes the file itself; the module does not touch it behind its back
    assert host.read("/etc/sysconfig/network-scripts/ifcfg-ens1f0np0") == fixture("ifcfg-ens1f0np0")


def test_a_failed_reapply_is_a_warning_because_the_live_mtu_is_set_already(tmp_path):
    host = nm_host(tmp_path)
    host.fail["nmcli device modify"] = (1, "Error: Reapplying connection to device 'veth-b' failed: Can't reapply changes.\n")
    result = run(host, interface="veth-b", mtu=9000, environ={})
    assert host.sys_mtu("veth-b") == 9000
    assert result["warnings"] == [
        "nmcli device modify veth-b 802-3-ethernet.mtu 9000 failed (rc 1: Error: Reapplying connection to device 'veth-b' "
        "failed: Can't reapply changes.); the live MTU was set with ip already"
    ]


# -- the module on the engine runner: failures that tell what stayed --------------------------
class Exited(Exception):
    def __init__(self, result):
        super(Exited, self).__init__(result)
        self.result = result


class AnsibleModuleStub:
    """What run_module needs from AnsibleModule, over a LinkHost's tools."""

    def __init__(self, host, params, check_mode=False):
        self.fake = host.module(check_mode=check_mode)
        self.params = params
        self.check_mode = check_mode
        self._diff = True
        self.warnings = []

    def get_bin_path(self, tool):
        return self.fake.get_bin_path(tool)

    def run_command(self, argv, **kwargs):
        return self.fake.run_command(argv, **kwargs)

    def warn(self, message):
        self.warnings.append(message)

    def exit_json(self, **result):
        raise Exited(result)

    def fail_json(self, **result):
        result["failed"] = True
        raise Exited(result)


def module_result(host, check=False, environ=None, **params):
    """What ``rdmaops.roce.link_mtu`` returns (run_module, the one runner every module uses)."""
    from functools import partial

    from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import run_module

    args = dict(persist=True, backend="auto", allow_management_change=False, management_interfaces=[], raise_lower=True,
                adopt=False)
    args.update(params)
    module = AnsibleModuleStub(host, args, check_mode=check)
    ctx = Context(module, host=HostRoot(host.root), runner=CommandRunner(module))
    with pytest.raises(Exited) as done:
        run_module(module, partial(LinkMtu, environ=SSH if environ is None else environ), ctx=ctx)
    return done.value.result


def test_netplan_generate_failure_rolls_back_the_files_and_the_live_mtu(netplan):
    # Once: the files were restored but the live MTU stayed at 9000 (and the result did not say so).
    netplan.fail["netplan generate"] = (1, fixture("netplan-generate-error.txt"))
    result = module_result(netplan, interface="veth-b", mtu=9000, environ={})
    assert result["failed"] is True and result["changed"] is False
    assert "rejected the configuration, so the files were restored" in result["msg"]
    assert result["rolled_back"] == [
        "netplan: /etc/netplan/90-rdmaops-fabric0.yaml sets mtu 9000 for ethernets.fabric0",
        "runtime: ip link set dev veth-b mtu 9000 (was 1500)",
    ]
    assert result["applied"] == [] and result["not_applied"] == []
    assert netplan.sys_mtu("veth-b") == 1500
    assert not netplan.exists("/etc/netplan/90-rdmaops-fabric0.yaml")
    assert sets(netplan) == ["ip link set dev veth-b mtu 9000", "ip link set dev veth-b mtu 1500"]
    assert result["commands"] == [
        "ip link set dev veth-b mtu 9000", "netplan generate --root-dir %s" % netplan.root, "ip link set dev veth-b mtu 1500",
    ]
    assert result["after"]["runtime"] == {"veth-b": 1500} and result["after"]["persistent"] == {"veth-b": None}


def test_what_cannot_be_undone_is_reported_as_changed_with_what_stayed(bonded):
    # raising bond0.100: the members, the bond, then the VLAN, which the kernel refuses; setting the bond
    # back fails too, so the bond stays at 9000 and the module says so.
    bonded.fail["ip link set dev bond0.100 mtu 9000"] = (2, "RTNETLINK answers: Numerical result out of range\n")
    bonded.fail["ip link set dev bond0 mtu 1500"] = (2, "RTNETLINK answers: Device or resource busy\n")
    result = module_result(bonded, interface="bond0.100", mtu=9000, environ=BOND_ENV)
    assert result["failed"] is True and result["changed"] is True
    assert result["applied"] == ["runtime: ip link set dev bond0 mtu 9000 (was 1500), below bond0.100"]
    assert result["rolled_back"] == [
        "runtime: ip link set dev ens1f1np1 mtu 9000 (was 1500), below bond0.100",
        "runtime: ip link set dev ens1f0np0 mtu 9000 (was 1500), below bond0.100",
    ]
    assert result["not_applied"] == [
        "runtime: ip link set dev bond0.100 mtu 9000 (was 1500)",
        "ifupdown: /etc/network/interfaces sets mtu 9000 for bond0.100; ifupdown: /etc/network/interfaces sets mtu 9000 for bond0",
    ]
    assert len(result["rollback_failed"]) == 1
    assert result["rollback_failed"][0].startswith("runtime: ip link set dev bond0 mtu 9000 (was 1500), below bond0.100 (")
    assert "rolling back also failed for" in result["msg"]
    assert result["stderr"] == "RTNETLINK answers: Numerical result out of range\n"
    assert bonded.read("/etc/network/interfaces") == BOND_INTERFACES
    assert bonded.sys_mtu("bond0") == 9000 and result["after"]["runtime"]["bond0"] == 9000


def test_an_activation_that_validates_nothing_leaves_the_changes_and_says_so(tmp_path):
    host = networkd_host(tmp_path)
    host.fail["networkctl reload"] = (1, "Failed to reload network settings: Unit dbus-org.freedesktop.network1.service not found.\n")
    result = module_result(host, interface="veth-d", mtu=9000, environ={})
    dropin = "/etc/systemd/network/30-fabric.network.d/90-rdmaops-mtu.conf"
    assert result["failed"] is True and result["changed"] is True
    assert result["applied"] == ["runtime: ip link set dev veth-d mtu 9000 (was 1500)", "networkd: %s sets MTUBytes=9000" % dropin]
    assert result["rolled_back"] == [] and result["not_applied"] == []
    assert host.sys_mtu("veth-d") == 9000 and "MTUBytes=9000" in host.read(dropin)


def test_nothing_refused_is_reported_as_changed(lab):
    result = module_result(lab, interface="ens3", mtu=9000)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("refusing to change the MTU of ens3")
    assert result["after"] == result["before"] == {"runtime": {"ens3": 1500}, "persistent": {}}


def test_the_module_result_on_success(lab):
    result = module_result(lab, interface="ens4", mtu=9000)
    assert result["changed"] is True and not result.get("failed")
    assert result["commands"] == ["ip link set dev ens4 mtu 9000"]
    assert result["management"]["interfaces"] == {
        "ens3": ["holds 10.0.2.15, the address this SSH connection came in on", "carries the route back to the SSH client 10.0.2.2",
                 "carries an IPv4 default route"],
    }


# -- names -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ens4:1", "..", ".", "ens4 ", "a" * 16, "-r", "--help", "ens4\n"])
def test_interface_names_the_kernel_refuses_are_refused_before_anything_is_read(lab, name):
    before = list(lab.calls)
    with pytest.raises(InputError) as err:
        run(lab, interface=name, mtu=9000)
    assert err.value.details["option"] == "interface"
    assert lab.calls == before


def test_management_interfaces_are_checked_too(lab):
    with pytest.raises(InputError, match="management_interfaces="):
        run(lab, interface="ens4", mtu=9000, management_interfaces=["eth0:1"])


# -- files: symlinks, foreign bytes, ownership ---------------------------------------------------
def _link(host, host_link, host_target):
    real = host.path(host_link)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    os.symlink(os.path.relpath(host.path(host_target), os.path.dirname(real)), real)


def test_a_symlinked_configuration_file_is_written_through_and_stays_a_link(tmp_path):
    host = LinkHost(tmp_path).link("eno1").link("ens1f0np0").materialize()
    host.file("/srv/conf/ifcfg-ens1f0np0", fixture("ifcfg-ens1f0np0"))
    _link(host, "/etc/sysconfig/network-scripts/ifcfg-ens1f0np0", "/srv/conf/ifcfg-ens1f0np0")
    run(host, interface="ens1f0np0", mtu=9000, environ={})
    assert os.path.islink(host.path("/etc/sysconfig/network-scripts/ifcfg-ens1f0np0"))
    assert host.read("/srv/conf/ifcfg-ens1f0np0") == fixture("ifcfg-ens1f0np0") + "MTU=9000\n"


def test_a_symlinked_netplan_dropin_is_updated_through_the_link_and_restored_through_it(netplan):
    old = (
        "# Managed by rdmaops.roce (link_mtu): the MTU of veth-b.\nnetwork:\n  version: 2\n  ethernets:\n    fabric0:\n      mtu: 4200\n"
    )
    netplan.file("/srv/conf/90-rdmaops-fabric0.yaml", old, mode=0o600)
    _link(netplan, "/etc/netplan/90-rdmaops-fabric0.yaml", "/srv/conf/90-rdmaops-fabric0.yaml")
    link = netplan.path("/etc/netplan/90-rdmaops-fabric0.yaml")
    netplan.fail["netplan generate"] = (1, "boom\n")
    result = module_result(netplan, interface="veth-b", mtu=9000, environ={})
    assert result["failed"] is True and result["changed"] is False
    assert os.path.islink(link) and netplan.read("/srv/conf/90-rdmaops-fabric0.yaml") == old
    del netplan.fail["netplan generate"]
    result = run(netplan, interface="veth-b", mtu=9000, environ={})
    assert result["before"]["persistent"] == {"veth-b": 4200} and result["after"]["persistent"] == {"veth-b": 9000}
    assert os.path.islink(link)
    assert netplan.read("/srv/conf/90-rdmaops-fabric0.yaml").endswith("    fabric0:\n      mtu: 9000\n")
    assert netplan.mode("/srv/conf/90-rdmaops-fabric0.yaml") == 0o600


def _bytes(host, host_path):
    with open(host.path(host_path), "rb") as handle:
        return handle.read()


def _write_bytes(host, host_path, data):
    os.makedirs(os.path.dirname(host.path(host_path)), exist_ok=True)
    with open(host.path(host_path), "wb") as handle:
        handle.write(data)


def test_latin1_bytes_in_an_ifcfg_file_survive_byte_for_byte(tmp_path):
    host = LinkHost(tmp_path).link("eno1").link("ens1f0np0").materialize()
    original = b"# Ger\xe4t der Fabrik (Latin-1)\n" + fixture("ifcfg-ens1f0np0").encode()
    _write_bytes(host, "/etc/sysconfig/network-scripts/ifcfg-ens1f0np0", original)
    result = run(host, interface="ens1f0np0", mtu=9000, environ={})
    assert _bytes(host, "/etc/sysconfig/network-scripts/ifcfg-ens1f0np0") == original + b"MTU=9000\n"
    assert "# Ger\ufffdt der Fabrik (Latin-1)" in result["diff"][1]["after"]  # shown, never raw
    assert run(host, interface="ens1f0np0", mtu=9000, environ={})["changed"] is False


def test_latin1_bytes_in_the_interfaces_file_survive_byte_for_byte(lab):
    original = b"# R\xe9seau de gestion\n" + LAB_INTERFACES.encode()
    _write_bytes(lab, "/etc/network/interfaces", original)
    run(lab, interface="ens4", mtu=9000)
    data = _bytes(lab, "/etc/network/interfaces")
    assert data.startswith(original) and b"iface ens4 inet manual\n    mtu 9000\n" in data


def test_a_dropin_path_holding_a_file_we_did_not_write_is_left_alone_unless_adopted(netplan):
    mine = "network:\n  version: 2\n  ethernets:\n    fabric0:\n      mtu: 1500\n"
    netplan.file("/etc/netplan/90-rdmaops-fabric0.yaml", mine, mode=0o600)
    with pytest.raises(RefusedError, match="was not written by rdmaops.roce"):
        run(netplan, interface="veth-b", mtu=9000, environ={})
    assert netplan.read("/etc/netplan/90-rdmaops-fabric0.yaml") == mine and sets(netplan) == []
    run(netplan, interface="veth-b", mtu=9000, environ={}, adopt=True)
    assert "Managed by rdmaops.roce" in netplan.read("/etc/netplan/90-rdmaops-fabric0.yaml")
