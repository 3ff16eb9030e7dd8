"""The soft-RoCE lab CLI (tests/lab/lab.py) without VMs: arguments, addressing, recipe hash,
busy ports, inventories, the QEMU command line, the summary parser and the lab tier's
idempotence gate."""

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import threading

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import imagebuild  # noqa: E402  pylint: disable=wrong-import-position
import lab  # noqa: E402  pylint: disable=wrong-import-position

BIN = os.path.dirname(sys.executable)

# What SUMMARY_PROBE printed in a lab VM (Debian 12, rdma-core 44, fabric MTU 1500).
PROBE_OUTPUT = """\
vm1
netdev ens4
mtu 1500
3: ens4    inet 198.18.0.11/24 brd 198.18.0.255 scope global ens4\\       valid_lft forever preferred_lft forever
hca_id:\trxe0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t0.0.0
\tnode_guid:\t\t\t5054:00ff:fe18:0011
\tsys_image_guid:\t\t\t5054:00ff:fe18:0011
\tvendor_id:\t\t\t0xffffff
\tvendor_part_id:\t\t\t0
\thw_ver:\t\t\t\t0x0
\tphys_port_cnt:\t\t\t1
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t1024 (3)
\t\t\tsm_lid:\t\t\t0
\t\t\tport_lid:\t\t0
\t\t\tport_lmc:\t\t0x00
\t\t\tlink_layer:\t\tEthernet
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("RDMAOPS_LAB_STATE", "RDMAOPS_LAB_CACHE", "RDMAOPS_LAB_SSH_BASE_PORT", "RDMAOPS_LAB_MIRROR"):
        monkeypatch.delenv(name, raising=False)


def parse_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        lab.parse_args(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# --------------------------------------------------------------------------- arguments


def test_up_defaults():
    args = lab.parse_args(["up"])
    assert (args.vms, args.port_mtus, args.switch_mtu, args.ssh_base_port) == (2, {}, 9216, 2220)
    assert args.state_dir == "/run/rdmaops-lab" and args.cache_dir == "/var/cache/rdmaops-lab"
    assert str(args.fabric_net) == "198.18.0.0/24"
    assert args.timeout >= 300


def test_environment_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("RDMAOPS_LAB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("RDMAOPS_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RDMAOPS_LAB_SSH_BASE_PORT", "3300")
    args = lab.parse_args(["up", "-n", "3"])
    assert args.state_dir == str(tmp_path / "state")
    assert args.cache_dir == str(tmp_path / "cache")
    assert args.ssh_base_port == 3300 and args.vms == 3


def test_bad_port_environment_is_named(monkeypatch):
    monkeypatch.setenv("RDMAOPS_LAB_SSH_BASE_PORT", "22x")
    with pytest.raises(lab.LabError, match="RDMAOPS_LAB_SSH_BASE_PORT"):
        lab.parse_args(["up"])


def test_port_mtu_per_vm_repeatable_and_comma_separated():
    args = lab.parse_args(["up", "-n", "4", "--port-mtu", "vm2=1500", "--port-mtu", "vm3=9000,vm4=1280"])
    assert args.port_mtus == {"vm2": 1500, "vm3": 9000, "vm4": 1280}


def test_fabric_netconf_defaults_and_overrides():
    # the default lab covers ifupdown and networkd; vm3 brings netplan
    vms = lab.plan_lab("/x", 4)["vms"]
    assert [vm["fabric_netconf"] for vm in vms.values()] == ["ifupdown", "networkd", "netplan", "ifupdown"]
    args = lab.parse_args(["up", "-n", "3", "--fabric-netconf", "vm1=netplan,vm3=networkd", "--fabric-netconf", "vm2=ifupdown"])
    assert args.fabric_netconfs == {"vm1": "netplan", "vm2": "ifupdown", "vm3": "networkd"}
    vms = lab.plan_lab("/x", 3, fabric_netconfs=args.fabric_netconfs)["vms"]
    assert [vm["fabric_netconf"] for vm in vms.values()] == ["netplan", "ifupdown", "networkd"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["up", "--fabric-netconf", "vm2=nm"], "KIND one of ifupdown, networkd, netplan"),
        (["up", "--fabric-netconf", "vm2"], "write VM=KIND"),
        (["up", "--fabric-netconf", "vm3=netplan"], "no VM 'vm3' in a lab of 2 VMs"),
        (["up", "-n", "5"], "1 to 4 VMs"),
        (["up", "-n", "0"], "1 to 4 VMs"),
        (["up", "--port-mtu", "vm3=1500"], "no VM 'vm3' in a lab of 2 VMs"),
        (["up", "--port-mtu", "vm2"], "write VM=MTU"),
        (["up", "--port-mtu", "vm2=jumbo"], "from 1280 to 9216"),
        (["up", "--port-mtu", "vm2=9217"], "from 1280 to 9216"),
        (["up", "--port-mtu", "vm2=1279"], "from 1280 to 9216"),
        (["up", "--switch-mtu", "70000"], "--switch-mtu=70000"),
        (["up", "--fabric-subnet", "10.0.0.0/24"], "inside 198.18.0.0/15"),
        (["up", "--fabric-subnet", "198.20.0.0/24"], "inside 198.18.0.0/15"),
        (["up", "--fabric-subnet", "198.18.0.0/28"], "/27 or larger"),
        (["up", "--fabric-subnet", "198.18.0.1/24"], "host bits set"),
        (["up", "--ssh-base-port", "22"], "choose 1024"),
        (["up", "--memory", "64"], "256 to 16384 MiB"),
        (["bogus"], "invalid choice"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(argv, message, capsys):
    assert message in parse_error(argv, capsys)


def test_mtu_bounds_are_inclusive():
    assert lab.validate_mtu("1280", "x") == 1280
    assert lab.validate_mtu(9216, "x") == 9216


def test_ssh_keeps_the_remote_command():
    args = lab.parse_args(["ssh", "vm1", "ip", "-br", "link"])
    assert (args.vm, args.cmd) == ("vm1", ["ip", "-br", "link"])


# --------------------------------------------------------------------------- addressing


def test_plan_addresses_ports_macs_and_names():
    plan = lab.plan_lab("/run/rdmaops-lab", 4, port_mtus={"vm2": 1500})
    vms = plan["vms"]
    assert list(vms) == ["vm1", "vm2", "vm3", "vm4"]
    assert [vm["fabric_address"] for vm in vms.values()] == [
        "198.18.0.11/24", "198.18.0.12/24", "198.18.0.13/24", "198.18.0.14/24"]
    assert [vm["ssh_port"] for vm in vms.values()] == [2221, 2222, 2223, 2224]
    assert [vm["port_mtu"] for vm in vms.values()] == [9216, 1500, 9216, 9216]
    assert vms["vm1"]["fabric_mac"] == "52:54:00:18:00:11"  # the MAC of the recorded rxe fixtures
    assert len({vm["tap"] for vm in vms.values()}) == 4
    assert all(len(vm["tap"]) <= 15 for vm in vms.values())  # IFNAMSIZ
    assert len({vm["mgmt_mac"] for vm in vms.values()} | {vm["fabric_mac"] for vm in vms.values()}) == 8
    assert len(plan["netns"]) <= 255 and plan["netns"].startswith("rdmaops-lab-")


@pytest.mark.parametrize("subnet", ["198.18.0.0/24", "198.19.255.0/24", "198.18.64.0/27", "198.18.0.0/15"])
def test_fabric_addresses_never_leave_the_benchmarking_range(subnet):
    import ipaddress

    for vm in lab.plan_lab("/x", 4, fabric_subnet=subnet)["vms"].values():
        iface = ipaddress.ip_interface(vm["fabric_address"])
        assert iface.ip in ipaddress.ip_network("198.18.0.0/15")
        assert iface.ip in ipaddress.ip_network(subnet)
        assert iface.ip not in (iface.network.network_address, iface.network.broadcast_address)


def test_lab_id_depends_on_the_state_directory_only():
    assert lab.lab_id("/run/rdmaops-lab") == lab.lab_id("/run/rdmaops-lab/")
    assert lab.lab_id("/run/rdmaops-lab") != lab.lab_id("/tmp/other-lab")
    assert lab.plan_lab("/a", 2)["vms"]["vm1"]["tap"] != lab.plan_lab("/b", 2)["vms"]["vm1"]["tap"]


def test_vm_env_is_shell_sourceable(tmp_path):
    vm = lab.plan_lab("/run/rdmaops-lab", 2)["vms"]["vm2"]
    env = tmp_path / "vm.env"
    env.write_text(lab.vm_env(vm, "abc123-vm2-deadbeef"))
    out = subprocess.run(
        ["sh", "-c", '. "$1"; echo "$RDMAOPS_LAB_HOSTNAME|$RDMAOPS_LAB_FABRIC_ADDRESS|$RDMAOPS_LAB_FABRIC_MAC|'
         '$RDMAOPS_LAB_MGMT_ADDRESS|$RDMAOPS_LAB_INSTANCE|$RDMAOPS_LAB_FABRIC_NETCONF"', "sh", str(env)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert out == "vm2|198.18.0.12/24|52:54:00:18:00:12|10.0.2.15/24|abc123-vm2-deadbeef|networkd"


def test_qemu_command_line():
    vm = lab.plan_lab("/run/rdmaops-lab", 2, port_mtus={"vm2": 1500})["vms"]["vm2"]
    argv = lab.qemu_argv(vm, "/cache/images/h", "/run/rdmaops-lab/vm2", 1024, "inst")
    joined = " ".join(argv)
    assert argv[0] == "qemu-system-x86_64"
    assert argv[argv.index("-accel") + 1].split(",")[0] == "tcg" and argv[argv.index("-smp") + 1] == "1"
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in joined  # loopback only
    assert "ifname=%s" % vm["tap"] in joined and "mac=52:54:00:18:00:12" in joined
    assert "host_mtu" not in joined  # virtio's host_mtu would make the guest start at that MTU
    fw_cfg = [argv[i + 1] for i, a in enumerate(argv) if a == "-fw_cfg"]
    assert sorted(item.split(",")[0] for item in fw_cfg) == [
        "name=opt/org.rdmaops.lab/authorized_keys",
        "name=opt/org.rdmaops.lab/ssh_host_ed25519_key",
        "name=opt/org.rdmaops.lab/vm.env",
    ]
    assert all(len(item.split(",")[0]) - len("name=") <= 55 for item in fw_cfg)  # FW_CFG_MAX_FILE_PATH - 1
    assert "/run/rdmaops-lab/vm2/disk.qcow2" in joined  # down finds its QEMUs by this path
    assert "systemd.machine_id=" + lab.machine_id("inst") in joined


def test_two_rails_give_each_vm_a_second_nic_on_its_own_leaf_in_the_same_subnet(tmp_path):
    vms = lab.plan_lab("/run/rdmaops-lab", 4, rails=2)["vms"]
    assert [vm["rail2_address"] for vm in vms.values()] == [
        "198.18.0.21/24", "198.18.0.22/24", "198.18.0.23/24", "198.18.0.24/24"]
    assert vms["vm1"]["rail2_mac"] == "52:54:00:18:00:21"
    taps = [tap for vm in vms.values() for tap, _bridge in lab.vm_taps(vm)]
    assert len(set(taps)) == 8 and all(len(tap) <= 15 for tap in taps)
    assert lab.vm_taps(vms["vm2"]) == [(vms["vm2"]["tap"], "br-fabric"), (vms["vm2"]["rail2_tap"], "br-rail2")]
    assert lab.rxe_devices(vms["vm2"]) == ["rxe0", "rxe1"]
    macs = [vm[key] for vm in vms.values() for key in ("mgmt_mac", "fabric_mac", "rail2_mac")]
    assert len(set(macs)) == 12
    # one rail: no second NIC, and the lab is what it was
    one = lab.plan_lab("/run/rdmaops-lab", 2, rails=1)["vms"]["vm1"]
    assert "rail2_tap" not in one and lab.vm_taps(one) == [(one["tap"], "br-fabric")] and lab.rxe_devices(one) == ["rxe0"]
    assert "rail2" not in lab.vm_env(one, "i") and "rail2" not in " ".join(lab.qemu_argv(one, "/i", "/d", 1024, "i"))
    # the second NIC reaches the image (fw_cfg vm.env) and QEMU (its tap at PCI slot 7: ens7)
    env = tmp_path / "vm.env"
    env.write_text(lab.vm_env(vms["vm2"], "i"))
    out = subprocess.run(["sh", "-c", '. "$1"; echo "$RDMAOPS_LAB_RAIL2_MAC|$RDMAOPS_LAB_RAIL2_ADDRESS"', "sh", str(env)],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "52:54:00:18:00:22|198.18.0.22/24"
    joined = " ".join(lab.qemu_argv(vms["vm2"], "/i", "/d", 1024, "i"))
    assert "tap,id=rail2,ifname=%s," % vms["vm2"]["rail2_tap"] in joined
    assert "virtio-net-pci,netdev=rail2,mac=52:54:00:18:00:22,addr=0x7," in joined
    # the RDMA NICs without the event index (issue 22's transmit stalls), the management NIC as QEMU makes it
    assert joined.count(",event_idx=off") == 2 and "addr=0x4,romfile=,event_idx=off" in joined and "addr=0x3,romfile= " in joined
    # the inventory: each VM's place in roce_fabric.rails, or rails off in a one-rail lab
    assert "roce_rail_index: 2" in lab.render_inventory(vms) and "lab_rail2_address: 198.18.0.22/24" in lab.render_inventory(vms)
    assert "nic_rails_enabled: false" in lab.render_inventory({"vm1": one})


def test_a_one_rail_vm_beside_two_rail_vms_gets_no_rail_2_pings():
    vms = lab.plan_lab("/run/rdmaops-lab", 2, rails=2)["vms"]
    vms["vm3"] = lab.plan_lab("/run/rdmaops-lab", 3, rails=1)["vms"]["vm3"]
    inventory = lab.render_inventory(vms)
    assert inventory.count("roce_rail_index:") == 2 and inventory.count("nic_rails_enabled: false") == 1


def test_rails_is_an_up_option_of_one_or_two():
    assert lab.parse_args(["up"]).rails == lab.DEFAULT_RAILS == 2
    assert lab.parse_args(["up", "--rails", "1"]).rails == 1
    with pytest.raises(SystemExit):
        lab.parse_args(["up", "--rails", "3"])


# --------------------------------------------------------------------------- recipe hash


def copy_recipe(tmp_path):
    dest = tmp_path / "image"
    shutil.copytree(lab.IMAGE_RECIPE_DIR, dest)
    return str(dest)


def test_recipe_hash_is_stable_and_ignores_timestamps(tmp_path):
    recipe = copy_recipe(tmp_path)
    before = lab.recipe_hash(recipe)
    assert before == lab.recipe_hash(lab.IMAGE_RECIPE_DIR)
    for path in lab.recipe_files(recipe):
        os.utime(path, (0, 0))
    assert lab.recipe_hash(recipe) == before


def test_recipe_hash_changes_with_content_packages_and_exec_bit(tmp_path):
    recipe = copy_recipe(tmp_path)
    seen = {lab.recipe_hash(recipe)}
    with open(os.path.join(recipe, "packages.txt"), "a", encoding="utf-8") as handle:
        handle.write("tcpdump\n")
    seen.add(lab.recipe_hash(recipe))
    script = os.path.join(recipe, "files", "usr", "local", "sbin", "rdmaops-lab")
    os.chmod(script, 0o644)
    seen.add(lab.recipe_hash(recipe))
    with open(os.path.join(recipe, "files", "etc", "fstab"), "a", encoding="utf-8") as handle:
        handle.write("# changed\n")
    seen.add(lab.recipe_hash(recipe))
    (tmp_path / "image" / "files" / "etc" / "new-file").write_text("x\n")
    seen.add(lab.recipe_hash(recipe))
    assert len(seen) == 5


def test_packages_file_lists_what_the_issue_asks_for():
    pkgs = lab.read_packages(lab.IMAGE_RECIPE_DIR)
    for name in ("linux-image-amd64", "rdma-core", "ibverbs-utils", "rdmacm-utils", "perftest",
                 "openssh-server", "python3", "ifupdown", "iproute2"):
        assert name in pkgs
    assert all("#" not in p and " " not in p for p in pkgs)


def test_image_scripts_are_executable_in_the_recipe():
    script = os.path.join(lab.IMAGE_RECIPE_DIR, "files", "usr", "local", "sbin", "rdmaops-lab")
    assert os.stat(script).st_mode & stat.S_IXUSR


# --------------------------------------------------------------------------- ports


def test_port_in_use_sees_a_listener_on_loopback_and_on_any():
    for bind_to in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as server:
            server.bind((bind_to, 0))
            server.listen(1)
            port = server.getsockname()[1]
            assert lab.port_in_use(port)
        assert not lab.port_in_use(port)


def test_ssh_banner_tells_sshd_from_a_bare_accept():
    def serve(server, payload):
        conn = server.accept()[0]
        with conn:
            if payload:
                conn.sendall(payload)

    for payload, expected in ((b"SSH-2.0-OpenSSH_9.2p1\r\n", True), (b"", False)):
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            thread = threading.Thread(target=serve, args=(server, payload))
            thread.start()
            assert lab.ssh_banner(server.getsockname()[1], timeout=5) is expected
            thread.join()


def test_up_names_the_busy_port_before_starting_anything(tmp_path, monkeypatch):
    """Through the real code path up to the port check: no VM, tap or namespace is made."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        busy = server.getsockname()[1]
        args = lab.parse_args(["--state-dir", str(tmp_path / "state"), "--cache-dir", str(tmp_path / "cache"),
                               "up", "--ssh-base-port", str(busy - 2)])
        the_lab = lab.Lab(args.state_dir, args.cache_dir)
        monkeypatch.setattr(lab, "require_root", lambda: None)
        monkeypatch.setattr(lab, "require_tools", lambda names: None)
        monkeypatch.setattr(the_lab, "ensure_image", lambda mirror, force=False: (str(tmp_path / "img"), False))
        made = []
        monkeypatch.setattr(the_lab, "ensure_fabric", made.append)
        monkeypatch.setattr(the_lab, "start_vm", lambda *a: made.append(a))
        with pytest.raises(lab.LabError, match=r"127\.0\.0\.1:%d \(SSH of vm2\) is already in use" % busy):
            the_lab.up(args)
        assert made == []


def test_missing_tools_name_the_debian_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None if name in ("qemu-img", "debootstrap") else "/usr/bin/" + name)
    with pytest.raises(lab.LabError) as exc:
        lab.require_tools(["qemu-img", "ip", "debootstrap"])
    assert str(exc.value) == "missing qemu-img, debootstrap; install with: apt-get install debootstrap qemu-utils"


# --------------------------------------------------------------------------- inventories


def test_committed_inventory_is_the_rendered_default():
    with open(os.path.join(REPO, "inventories", "lab", "hosts.yml"), encoding="utf-8") as handle:
        committed = handle.read()
    assert committed == lab.render_inventory(lab.plan_lab(lab.DEFAULT_STATE_DIR, lab.DEFAULT_VMS, rails=lab.DEFAULT_RAILS)["vms"])


def test_rendered_inventory_for_a_state_directory(tmp_path):
    state = str(tmp_path / "my lab")
    vms = lab.plan_lab(state, 3, base_port=4000)["vms"]
    data = yaml.safe_load(lab.render_inventory(vms, state))
    hosts = data["all"]["children"]["rdma_hosts"]["hosts"]
    assert {h: v["ansible_port"] for h, v in hosts.items()} == {"vm1": 4001, "vm2": 4002, "vm3": 4003}
    assert hosts["vm3"]["lab_fabric_address"] == "198.18.0.13/24"
    assert {h: v["lab_fabric_netconf"] for h, v in hosts.items()} == {"vm1": "ifupdown", "vm2": "networkd", "vm3": "netplan"}
    variables = data["all"]["vars"]
    assert variables["ansible_ssh_private_key_file"] == state + "/id_ed25519"
    assert "UserKnownHostsFile=%s/known_hosts" % state in variables["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in variables["ansible_ssh_common_args"]
    # without it, a task that was running while its VM rebooted would hang (ansible.builtin.reboot)
    assert variables["ansible_ssh_common_args"].endswith("-o ServerAliveInterval=5 -o ServerAliveCountMax=3")
    assert (variables["ansible_host"], variables["ansible_user"], variables["ansible_pipelining"]) == ("127.0.0.1", "root", True)


def ansible_env(**extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.update(extra)
    return env


def test_ansible_reads_the_committed_lab_inventory_with_its_state_directory(tmp_path):
    proc = subprocess.run(
        [os.path.join(BIN, "ansible"), "-i", os.path.join(REPO, "inventories", "lab"), "vm2", "-m",
         "ansible.builtin.debug", "-a",
         '{"msg": "{{ ansible_ssh_private_key_file }} {{ ansible_port }} {{ roce_fabric.roce_dscp }}"}'],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
        env=ansible_env(RDMAOPS_LAB_STATE=str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%s/id_ed25519 2222 26" % tmp_path in " ".join(proc.stdout.split())


def test_ansible_reads_a_written_inventory_with_the_lab_group_vars(tmp_path):
    state = str(tmp_path)
    the_lab = lab.Lab(state, str(tmp_path / "cache"))
    record = {"vms": lab.plan_lab(state, 3)["vms"]}
    inv = the_lab.write_inventory(record)
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-inventory"), "-i", inv, "--list"],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO, env=ansible_env(),
    )
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert sorted(data["rdma_hosts"]["hosts"]) == ["vm1", "vm2", "vm3"]
    assert sorted(data["gpu_hosts"]["hosts"]) == ["vm1", "vm2", "vm3"]  # site.yml's NCCL play runs on them
    hostvars = data["_meta"]["hostvars"]["vm3"]
    assert hostvars["ansible_port"] == 2223
    assert hostvars["roce_fabric"]["preset"] == "lossless"  # group_vars of inventories/lab come along


def test_lab_group_vars_hold_the_lossless_intent():
    with open(os.path.join(REPO, "inventories", "lab", "group_vars", "all.yml"), encoding="utf-8") as handle:
        intent = yaml.safe_load(handle)["roce_fabric"]
    rails = intent.pop("rails")
    assert intent == {"preset": "lossless", "roce_dscp": 26, "roce_priority": 3, "cnp_dscp": 48,
                      "cnp_priority": 6, "host_mtu": 9000, "switch_mtu": 9216}
    # the two rails: rxe0's and rxe1's netdevs, vmN (roce_rail_index N) at .1N and .2N as lab.py addresses them
    assert [(r["name"], r["rdma_device"], r["host_offset"]) for r in rails] == [("rail1", "rxe0", 9), ("rail2", "rxe1", 19)]
    assert rails[0]["subnet"] == lab.DEFAULT_FABRIC_SUBNET and "198.18.0.0/24" in rails[1]["subnet"]
    assert lab.FABRIC_HOST_OFFSET == rails[0]["host_offset"] + 1 and lab.RAIL2_HOST_OFFSET == rails[1]["host_offset"] + 1


# --------------------------------------------------------------------------- summary, build helpers


def test_summary_line_from_a_lab_vm():
    assert lab.summarize_probe("vm1", PROBE_OUTPUT) == (
        "vm1 (vm1): rxe0 port 1 PORT_ACTIVE (4) Ethernet, active_mtu 1024 (3); ens4 MTU 1500, 198.18.0.11/24")


def test_summary_without_rxe0():
    text = "vm2\nnetdev \nmtu \nFailed to get IB devices list: Function not implemented\n"
    assert lab.summarize_probe("vm2", text) == "vm2 (vm2): no rxe0 (Failed to get IB devices list: Function not implemented)"
    assert lab.summarize_probe("vm3", "") == "vm3: no answer"


def test_mounts_under_finds_proc():
    assert "/proc" in imagebuild.mounts_under("/proc")
    assert imagebuild.mounts_under("/proc/self/nonexistent-subtree") == []


def test_pid_check_does_not_take_other_processes_for_our_qemu():
    assert not lab.pid_is_our_qemu(os.getpid(), "/run/rdmaops-lab/vm")
    assert not lab.pid_is_our_qemu(2 ** 22 + 1, "/run/rdmaops-lab/vm")


# --------------------------------------------------------------------------- the tier's idempotence gate


def fake_playbook(tmp_path, recap, ping_rc=0):
    """ansible-playbook printing ``recap`` after 0.4 s; ansible (the ping baseline) logging its
    arguments and answering after 0.1 s with ``ping_rc``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "ansible-playbook"
    script.write_text("#!/bin/sh\nsleep 0.4\ncat <<'EOF'\n%s\nEOF\n" % recap)
    script.chmod(0o755)
    ping = bindir / "ansible"
    ping.write_text('#!/bin/sh\necho "$*" >> %s\nsleep 0.1\necho "vm1 | SUCCESS"\nexit %d\n' % (tmp_path / "pings.log", ping_rc))
    ping.chmod(0o755)
    return str(bindir)


def run_gate(tmp_path, recap, ping_rc=0):
    bindir = fake_playbook(tmp_path, recap, ping_rc)
    return subprocess.run(
        ["bash", "-c", "source scripts/lib/bootstrap.sh; source scripts/lib/tier-lab.sh; "
                       "lab_converge_idempotent inventories/lab"],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
        env=dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"]),
    )


def test_idempotence_gate_passes_on_zero_changes(tmp_path):
    proc = run_gate(tmp_path, textwrap.dedent("""\
        PLAY RECAP *********************************************************************
        vm1                        : ok=8    changed=0    unreachable=0    failed=0    skipped=0
        vm2                        : ok=8    changed=0    unreachable=0    failed=0    skipped=0
        """))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "idempotence: changed=0 on vm1, vm2" in proc.stdout
    # the no-op run against the ping baseline on the same hosts, 3 pings, the median counts
    pings = (tmp_path / "pings.log").read_text().splitlines()
    assert pings == ["rdma_hosts -i inventories/lab -m ansible.builtin.ping"] * 3
    ratio = re.search(r"^no-op site\.yml (\d+\.\d) s = (\d+\.\d) pings \(ansible rdma_hosts -m ping (\d+\.\d) s, "
                      r"median of \d+\.\d, \d+\.\d, \d+\.\d\)$", proc.stdout, re.M)
    assert ratio, proc.stdout
    noop, times, ping = (float(value) for value in ratio.groups())
    assert noop >= 0.4 and 0.1 <= ping < noop and times > 1


def test_idempotence_gate_fails_when_the_ping_baseline_fails(tmp_path):
    proc = run_gate(tmp_path, textwrap.dedent("""\
        PLAY RECAP *********************************************************************
        vm1                        : ok=8    changed=0    unreachable=0    failed=0    skipped=0
        """), ping_rc=4)
    assert proc.returncode != 0 and "pings" not in proc.stdout


def test_idempotence_gate_fails_and_names_the_changed_task(tmp_path):
    proc = run_gate(tmp_path, textwrap.dedent("""\
        TASK [rdmaops.roce.nic : Set the fabric MTU] ***********************************
        ok: [vm1]
        changed: [vm2]

        PLAY RECAP *********************************************************************
        vm1                        : ok=8    changed=0    unreachable=0    failed=0    skipped=0
        vm2                        : ok=8    changed=1    unreachable=0    failed=0    skipped=0
        """))
    assert proc.returncode == 1
    assert "vm2 changed=1" in proc.stdout
    assert "changed on vm2: rdmaops.roce.nic : Set the fabric MTU" in proc.stdout


def test_idempotence_gate_fails_without_a_recap(tmp_path):
    proc = run_gate(tmp_path, "ERROR! the playbook could not be found")
    assert proc.returncode == 1


# --------------------------------------------------------------------------- a step and the transmit stall


STATUS = {"fabric": {"healthy": False, "vms": {
    "vm1": {"healthy": False, "watchdog_count": 0, "problems": ["gets no answer from vm2"]},
    "vm2": {"healthy": False, "watchdog_count": 12, "problems": ["fabric path dead"]},
}}}


def run_step(tmp_path, status, step, heal_rc=0, rerun=True):
    """_lab_step around ``step`` (a shell command; $STATE is a folder it may count runs in), with
    lab_cli answering ``status --json`` with ``status`` and logging every call."""
    (tmp_path / "status.json").write_text(json.dumps(status))
    script = ("source scripts/lib/bootstrap.sh; source scripts/lib/tier-lab.sh; lab_timings=(); lab_stalls=(); "
              "lab_cli() { echo \"$*\" >> $STATE/lab_cli.log; case $1 in status) cat $STATE/status.json; return 1;; "
              "heal) return %d;; esac; }; step() { %s; }; rc=0; %s_lab_step 'ToS on the wire' step || rc=$?; "
              "printf '%%s\\n' \"${lab_timings[@]}\"; printf 'stall: %%s\\n' \"${lab_stalls[@]}\"; exit $rc"
              % (heal_rc, step, "" if rerun else "lab_rerun=0 "))
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
                          env=dict(os.environ, STATE=str(tmp_path)))


FAILS_ONCE = "n=$(cat $STATE/runs 2>/dev/null || echo 0); echo $((n + 1)) > $STATE/runs; [ $n -ge 1 ]"


def test_a_step_that_failed_with_a_stalled_nic_runs_again_after_the_heal_and_says_so(tmp_path):
    proc = run_step(tmp_path, STATUS, FAILS_ONCE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs").read_text().strip() == "2"
    assert (tmp_path / "lab_cli.log").read_text().splitlines() == ["status --json", "heal vm2"]  # the stalled VM only
    assert re.search(r"^  ToS on the wire +\d+\.\ds  \(run twice: a transmit stall healed\)$", proc.stdout, re.M), proc.stdout
    assert "stall: ToS on the wire: vm2" in proc.stdout


@pytest.mark.parametrize("status, heal_rc, rerun", [
    # no watchdog evidence: a failure of the collection, never run again
    ({"fabric": {"healthy": False, "vms": {"vm2": {"healthy": False, "watchdog_count": 0}}}}, 0, True),
    # watchdog lines on a VM whose path is healthy (an old stall, healed): not this failure's cause
    ({"fabric": {"healthy": True, "vms": {"vm2": {"healthy": True, "watchdog_count": 3}}}}, 0, True),
    (STATUS, 1, True),  # the heal did not bring the path back
    (STATUS, 0, False),  # a step that must not run twice
])
def test_a_step_that_failed_otherwise_fails(tmp_path, status, heal_rc, rerun):
    proc = run_step(tmp_path, status, FAILS_ONCE, heal_rc=heal_rc, rerun=rerun)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (tmp_path / "runs").read_text().strip() == "1"
    assert re.search(r"^  ToS on the wire +\d+\.\ds  FAILED$", proc.stdout, re.M), proc.stdout
    assert "stall: ToS" not in proc.stdout
    if not rerun:
        assert not (tmp_path / "lab_cli.log").exists()


def test_stale_images_spare_the_new_one_and_those_in_use(tmp_path):
    images = tmp_path / "images"
    a, b, c, d = ("%016x" % n for n in (0xA, 0xB, 0xC, 0xD))
    for name in (a, b, c, d, "build-" + a):
        (images / name).mkdir(parents=True)
    (images / "notes.txt").write_text("not an image")
    cmdlines = [
        ["qemu-system-x86_64", "-kernel", str(images / b / "vmlinuz"), "-initrd", str(images / b / "initrd.img")],
        ["qemu-system-x86_64", "-kernel", "/elsewhere/%s/vmlinuz" % c],
    ]
    # not the new image, not one a VM boots from, not a build directory or another file
    assert lab.stale_images(str(images), d, cmdlines) == [str(images / a), str(images / c)]
    assert lab.stale_images(str(tmp_path / "missing"), d, cmdlines) == []


def test_a_vm_that_answers_too_late_is_a_lab_error_naming_it(tmp_path, monkeypatch):
    # a starved TCG VM: `lab.py up` used to end in subprocess.TimeoutExpired's traceback
    the_lab = lab.Lab(str(tmp_path / "state"), str(tmp_path / "cache"))
    monkeypatch.setattr(lab.Lab, "ssh_argv", lambda self, port: ["sh", "-c", "sleep 5", "sh"])
    with pytest.raises(lab.LabError) as info:
        the_lab.ssh_output({"name": "vm1", "ssh_port": 2221}, "true", timeout=1)
    assert str(info.value).startswith("vm1: no answer over SSH within 1 s"), str(info.value)
