"""The nic role run by ansible-playbook against the Soft-RoCE lab VM as captured (rxe0 on ens4).

The tree is the real capture of a lab VM (tests/unit/fixtures/hosts/rxe_bookworm_*.json) plus the
lab image's /etc/network/interfaces. ``ip link set`` is a stub that changes the tree's sysfs MTU;
every other tool replays what the VM answered. ``ibv_devinfo`` answers from the MTU 9000 capture
(active_mtu 4096) or, to prove the check catches it, from the MTU 1500 capture (1024).
"""

import os
import sys

import pytest
import ansiblerun

import hosttree
DCB_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "fixtures", "tools", "dcb")
LAB_INTERFACES = "auto lo\niface lo inet loopback\n\nauto ens3\niface ens3 inet static\n    address 10.0.2.15/24\n    gateway 10.0.2.2\n"

IP_STUB = r"""#!{python}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
if args[:3] == ["link", "set", "dev"] and args[4] == "mtu":
    with open(os.path.join(os.environ["RDMAOPS_HOST_ROOT"], "sys/class/net", args[3], "mtu"), "w") as handle:
        handle.write(args[5] + "\n")
    sys.exit(0)
record = json.load(open(os.path.join(here, "commands.json"))).get(" ".join(["ip"] + args))
if record is None:
    sys.stderr.write("stub: no recorded output for ip %s\n" % " ".join(args))
    sys.exit(127)
sys.stdout.write(record.get("stdout", ""))
sys.exit(record.get("rc", 0))
"""

PLAYBOOK = """\
- name: NIC role on the captured lab VM
  hosts: localhost
  gather_facts: false
  roles:
    - role: rdmaops.roce.nic
"""


def lab_vm(tmp_path, ibv_from):
    manifest = hosttree.load("rxe_bookworm_mtu1500.json")
    answers = hosttree.load(ibv_from)["commands"]
    for key in ("ibv_devinfo", "ibv_devinfo -v"):
        manifest["commands"][key] = answers[key]
    root = tmp_path / "vm"
    bindir = hosttree.materialize(manifest, root)
    with open(os.path.join(bindir, "ip"), "w") as handle:
        handle.write(IP_STUB.format(python=sys.executable))
    # the VM's virtio NIC has no DCB ops: dcb answers as the real iproute2 6.1 does on such a netdev
    with open(os.path.join(bindir, "dcb"), "w") as handle:
        handle.write("#!/bin/sh\ncat %s >&2\nexit 1\n" % os.path.join(DCB_FIXTURES, "real-iproute2-6.1-lo-unsupported.stderr"))
    os.chmod(os.path.join(bindir, "dcb"), 0o755)
    with open(os.path.join(bindir, "ifup"), "w") as handle:
        handle.write("#!/bin/sh\nexit 1\n")
    os.chmod(os.path.join(bindir, "ifup"), 0o755)
    os.makedirs(str(root / "etc/network"))
    (root / "etc/network/interfaces").write_text(LAB_INTERFACES)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(RDMAOPS_HOST_ROOT=str(root), PATH=bindir + os.pathsep + os.environ["PATH"], SSH_CONNECTION="10.0.2.2 51234 10.0.2.15 22")
    return root, env


def play(tmp_path, env, extra_vars=None):
    _rc, tasks, stats = ansiblerun.playbook(tmp_path / "play.yml", env, extra_vars)
    return stats, dict((name.split(" : ", 1)[-1], result) for name, result in tasks.items())


def sys_mtu(root, name):
    return int((root / "sys/class/net" / name / "mtu").read_text())


def test_role_sets_persists_verifies_and_repeats_without_change(tmp_path):
    root, env = lab_vm(tmp_path, "rxe_bookworm_mtu9000.json")
    stats, tasks = play(tmp_path, env)
    assert stats["failures"] == 0, tasks
    layer = tasks["MTU of every RDMA link and QoS of every RoCE port (trust, PFC, ECN, ToS), re-applied at boot"]
    # one module call for the whole layer: the MTU of the link and the QoS of its RoCE port
    assert layer["changed"] is True and [link["interface"] for link in layer["link_mtu"]["links"]] == ["ens4"]
    result = layer["link_mtu"]["links"][0]
    assert result["backend"] == "ifupdown" and layer["link_mtu"]["commands"][0] == "ip link set dev ens4 mtu 9000"
    assert result["management"]["interfaces"]["ens3"] == ["holds 10.0.2.15, the address this SSH connection came in on"]
    assert sys_mtu(root, "ens4") == 9000 and sys_mtu(root, "ens3") == 1500
    assert "iface ens4 inet manual\n    mtu 9000\n" in (root / "etc/network/interfaces").read_text()
    assert tasks["Check each port's RoCE active_mtu"]["msg"] == "1 RoCE port(s) on ens4 at MTU 9000, active_mtu 4096"
    assert tasks["Re-test the connection after a management interface changed"].get("skipped") is True
    # QoS in one call: virtio has no DCB (said once), no OFED ECN tree; the RDMA-CM ToS is set and re-applied at boot
    qos = layer
    assert list(qos["unsupported"]["qos"]) == ["ens4"] and qos["ports"][0]["device"] == "rxe0"
    assert [w for w in qos["warnings"] if w.startswith("trust, PFC and ETS not applied on ens4")] == [qos["warnings"][0]]
    # no OFED ECN tree on virtio, and no ConnectX whose firmware could take it instead
    assert any("ens4 has no ECN sysfs tree" in w and "not on a ConnectX PCI function" in w and "mlxconfig -y" not in w
               for w in qos["warnings"])
    assert (root / "sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").read_text() == "106\n"
    script = (root / "usr/local/sbin/rdmaops-nic-reapply").read_text()
    assert "write /sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos 106" in script and "dcb" not in script

    stats, tasks = play(tmp_path, env)
    assert stats["failures"] == 0 and stats["changed"] == 0, tasks
    # the repeat reuses nothing stale and gathers nothing twice: facts once, the layer once
    assert tasks["Gather RDMA facts again after a live MTU changed"].get("skipped") is True


def test_role_reports_the_port_whose_active_mtu_stays_low(tmp_path):
    root, env = lab_vm(tmp_path, "rxe_bookworm_mtu1500.json")
    stats, tasks = play(tmp_path, env)
    assert stats["failures"] == 1
    msg = tasks["Check each port's RoCE active_mtu"]["msg"]
    assert "localhost rxe0 port 1 (ens4): active_mtu 1024, not 4096" in msg
    assert "[netdev MTU 9000, active_mtu 1024 from ibv_devinfo]" in msg


def test_role_refuses_the_management_nic(tmp_path):
    root, env = lab_vm(tmp_path, "rxe_bookworm_mtu9000.json")
    stats, tasks = play(tmp_path, env, {"nic_interfaces": ["ens3"]})
    assert stats["failures"] == 1
    result = tasks["MTU of every RDMA link and QoS of every RoCE port (trust, PFC, ECN, ToS), re-applied at boot"]
    assert result["msg"].startswith("refusing to change the MTU of ens3: it is on the path that carries the Ansible connection")
    assert sys_mtu(root, "ens3") == 1500
    assert (root / "etc/network/interfaces").read_text() == LAB_INTERFACES


@pytest.mark.parametrize("fabric", [{"host_mtu": 4200}])
def test_role_takes_the_mtu_from_the_intent(tmp_path, fabric):
    root, env = lab_vm(tmp_path, "rxe_bookworm_mtu9000.json")
    stats, tasks = play(tmp_path, env, {"roce_fabric": fabric})
    assert stats["failures"] == 0, tasks
    assert sys_mtu(root, "ens4") == 4200
    assert tasks["Check each port's RoCE active_mtu"]["msg"].endswith("at MTU 4200, active_mtu 4096")
