"""The soft-RoCE lab: Debian VMs under QEMU software emulation, each with a Soft-RoCE NIC.

    python3 tests/lab/lab.py build [--force]          build and cache the VM image (once)
    python3 tests/lab/lab.py up [-n N] [--rails 1|2] [--port-mtu vm2=1500 ...]
    python3 tests/lab/lab.py status [--json] [--no-fabric]
    python3 tests/lab/lab.py heal VM
    python3 tests/lab/lab.py ssh VM [CMD ...]
    python3 tests/lab/lab.py reboot VM
    python3 tests/lab/lab.py console VM [--lines N]
    python3 tests/lab/lab.py summary
    python3 tests/lab/lab.py inventory [--stdout]
    python3 tests/lab/lab.py slurm CMD [ARG ...]       a Slurm client command against the lab's slurmctld
    python3 tests/lab/lab.py doca-repo                 serve the signed DOCA stand-in repository to the VMs
    python3 tests/lab/lab.py down [--purge]

Every VM boots the cached image through a copy-on-write overlay, is reached over SSH on a
127.0.0.1 port with the lab's own key, and has a second NIC on a bridge inside a network
namespace made for the lab. At boot the image gives that NIC its fabric address and creates
a Soft-RoCE device (rxe0) on it. With two rails (the default, ``--rails``) each VM has a
third NIC on a second bridge (rail 2's leaf) with its own address and Soft-RoCE device
(rxe1). See tests/lab/README.md.

Standard library only; runs as root (network namespaces, tap devices).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import docarepo
import health
import imagebuild
import slurmlab
# SIGTERM, SIGKILL after a grace (a VM's disk is a throw-away overlay), a zombie counts as gone
from procs import stop_pid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
IMAGE_RECIPE_DIR = os.path.join(HERE, "image")
# node_exporter (port 9100 in a VM) is forwarded to 127.0.0.1:<its SSH port + this> (tests/lab/monitor.py)
METRICS_PORT_OFFSET = 1000
LAB_INVENTORY_DIR = os.path.join(REPO_ROOT, "inventories", "lab")

# Bump when the build steps in this file change what goes into the image (the files under
# image/ are hashed by themselves).
RECIPE_VERSION = 1
SUITE = "bookworm"
IMAGE_SIZE = "3G"

DEFAULT_STATE_DIR = "/run/rdmaops-lab"
DEFAULT_CACHE_DIR = "/var/cache/rdmaops-lab"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SSH_BASE_PORT = 2220  # vm1 answers on 2221, vm2 on 2222 ...
DEFAULT_VMS = 2
MAX_VMS = 4
# What configures each VM's fabric NIC (written at its first boot): the collection must find
# the MTU's place in each. vm1 and vm2 (the default lab) cover ifupdown and systemd-networkd;
# vm3 netplan (rendering to networkd).
FABRIC_NETCONFS = ("ifupdown", "networkd", "netplan")
DEFAULT_FABRIC_NETCONF = {"vm1": "ifupdown", "vm2": "networkd", "vm3": "netplan", "vm4": "ifupdown"}
DEFAULT_MEMORY_MIB = 1024
DEFAULT_TIMEOUT = 600  # generous: on a busy 2-core host a boot under emulation can take minutes
DEFAULT_SWITCH_MTU = 9216
MTU_MIN = 1280
MTU_MAX = 9216
FABRIC_RANGE = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544 benchmarking range
DEFAULT_FABRIC_SUBNET = "198.18.0.0/24"
FABRIC_HOST_OFFSET = 10  # vm1 = .11, vm2 = .12 ...
MGMT_ADDRESS = "10.0.2.15/24"  # QEMU user-mode network, one per VM
MGMT_GATEWAY = "10.0.2.2"
BRIDGE = "br-fabric"
# Rail 2 (issue 24): a second fabric NIC per VM on a leaf of its own (br-rail2), in the same
# subnet as rail 1 as an installer leaves it (vmN = .2N: the ARP-flux case), rxe1 on it.
RAIL2_BRIDGE = "br-rail2"
RAIL2_HOST_OFFSET = 20  # vm1 = .21, vm2 = .22 ...
RAIL2_PCI_SLOT = 0x7  # ens7 in the VM (the fabric NIC is ens4 at 0x4)
DEFAULT_RAILS = 2
FWCFG_PREFIX = "opt/org.rdmaops.lab/"
KEY_NAME = "id_ed25519"
STATE_FILE = "lab.json"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\[[0-9;]*m")  # the second: SGR cut off by systemd's ellipsis

# command -> Debian package that provides it
HOST_TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-img": "qemu-utils",
    "ip": "iproute2",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "debootstrap": "debootstrap",
    "mkfs.ext4": "e2fsprogs",
    "chroot": "coreutils",
    "mount": "mount",
    "umount": "mount",
}
UP_TOOLS = ("qemu-system-x86_64", "qemu-img", "ip", "ssh", "ssh-keygen")
BUILD_TOOLS = ("debootstrap", "mkfs.ext4", "chroot", "mount", "umount")


class LabError(Exception):
    """A failure the user can act on; printed without a traceback."""


def log(msg):
    print("lab: %s" % msg, flush=True)


# --------------------------------------------------------------------------- configuration


def env_int(name, default):
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise LabError("%s=%r is not an integer" % (name, value)) from None


def parse_vm_values(option, values, vm_count, convert, usage):
    """``{vm: convert(value)}`` from ``VM=VALUE`` items (repeatable or comma separated)."""
    result = {}
    names = vm_names(vm_count)
    for value in values or []:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if not sep:
                raise LabError("%s %r: write %s" % (option, item, usage))
            if name not in names:
                raise LabError("%s %r: no VM %r in a lab of %d VMs (%s)" % (option, item, name, vm_count, ", ".join(names)))
            result[name] = convert(name, raw.strip(), item)
    return result


def parse_port_mtus(values, vm_count):
    """Parse ``--port-mtu`` values (``vm2=1500``)."""
    return parse_vm_values("--port-mtu", values, vm_count, lambda name, raw, _item: validate_mtu(raw, "--port-mtu %s" % name),
                           "VM=MTU, for example vm2=1500")


def parse_fabric_netconfs(values, vm_count):
    """Parse ``--fabric-netconf`` values (``vm2=netplan``); unnamed VMs keep DEFAULT_FABRIC_NETCONF."""
    usage = "VM=KIND with KIND one of %s, for example vm2=netplan" % ", ".join(FABRIC_NETCONFS)

    def kind(_name, raw, item):
        if raw not in FABRIC_NETCONFS:
            raise LabError("--fabric-netconf %r: write %s" % (item, usage))
        return raw

    return parse_vm_values("--fabric-netconf", values, vm_count, kind, usage)


def validate_mtu(value, what):
    try:
        mtu = int(value)
    except (TypeError, ValueError):
        mtu = None
    if mtu is None or not MTU_MIN <= mtu <= MTU_MAX:
        raise LabError("%s=%s: a switch port MTU is an integer from %d to %d" % (what, value, MTU_MIN, MTU_MAX))
    return mtu


def validate_fabric_subnet(value):
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise LabError("--fabric-subnet %s: %s" % (value, exc)) from None
    if net.version != 4 or not net.subnet_of(FABRIC_RANGE):
        raise LabError("--fabric-subnet %s: the lab's fabric stays inside %s (the benchmarking range)" % (value, FABRIC_RANGE))
    if net.num_addresses < 32:
        raise LabError("--fabric-subnet %s: needs a /27 or larger (VMs use host addresses .11 to .14)" % value)
    return net


def build_parser():
    parser = argparse.ArgumentParser(
        prog="lab.py",
        description="Soft-RoCE VM lab for rdmaops.roce (QEMU software emulation, rdma_rxe).",
    )
    parser.add_argument(
        "--state-dir",
        default=os.environ.get("RDMAOPS_LAB_STATE") or DEFAULT_STATE_DIR,
        help="the lab's runtime state: PIDs, SSH keys, inventory (env RDMAOPS_LAB_STATE, default %(default)s)",
    )
    parser.add_argument(
        "--cache-dir",
        default=os.environ.get("RDMAOPS_LAB_CACHE") or DEFAULT_CACHE_DIR,
        help="where built images are kept (env RDMAOPS_LAB_CACHE, default %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    build = sub.add_parser("build", help="build the VM image unless the cache has it")
    build.add_argument("--force", action="store_true", help="rebuild even when the cache has this recipe")
    build.add_argument("--mirror", default=os.environ.get("RDMAOPS_LAB_MIRROR") or DEFAULT_MIRROR,
                       help="Debian mirror (env RDMAOPS_LAB_MIRROR, default %(default)s)")

    up = sub.add_parser("up", help="boot the lab (reuses running VMs and the cached image)")
    up.add_argument("-n", "--vms", type=int, default=DEFAULT_VMS, help="number of VMs, 1 to %d (default %%(default)s)" % MAX_VMS)
    up.add_argument("--port-mtu", action="append", default=[], metavar="VM=MTU",
                    help="MTU of one VM's switch port, e.g. vm2=1500 (repeatable; others get --switch-mtu)")
    up.add_argument("--fabric-netconf", action="append", default=[], metavar="VM=KIND",
                    help="what configures a VM's fabric NIC: %s (repeatable; default %s)" % (
                        ", ".join(FABRIC_NETCONFS), ", ".join("%s=%s" % kv for kv in sorted(DEFAULT_FABRIC_NETCONF.items()))))
    up.add_argument("--switch-mtu", default=DEFAULT_SWITCH_MTU, help="MTU of every other switch port (default %(default)s)")
    up.add_argument("--ssh-base-port", type=int, default=env_int("RDMAOPS_LAB_SSH_BASE_PORT", DEFAULT_SSH_BASE_PORT),
                    help="vmN answers SSH on 127.0.0.1:BASE+N (env RDMAOPS_LAB_SSH_BASE_PORT, default %(default)s)")
    up.add_argument("--fabric-subnet", default=DEFAULT_FABRIC_SUBNET,
                    help="fabric IPv4 subnet inside 198.18.0.0/15; vmN gets host .1N (default %(default)s)")
    up.add_argument("--rails", type=int, choices=(1, 2), default=DEFAULT_RAILS,
                    help="fabric NICs of each VM started now: 2 adds rail 2 (NIC, leaf bridge %s, rxe1; default %%(default)s); "
                         "running VMs keep theirs" % RAIL2_BRIDGE)
    up.add_argument("--memory", type=int, default=DEFAULT_MEMORY_MIB, help="MiB of RAM per VM (default %(default)s)")
    up.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, help="seconds to wait for SSH (default %(default)s)")
    up.add_argument("--mirror", default=os.environ.get("RDMAOPS_LAB_MIRROR") or DEFAULT_MIRROR, help=argparse.SUPPRESS)
    up.add_argument("--no-slurm", action="store_true", default=os.environ.get("RDMAOPS_LAB_SLURM") == "0",
                    help="no Slurm: neither the controller in the lab's namespace nor slurmd in the VMs (env RDMAOPS_LAB_SLURM=0)")

    status = sub.add_parser("status", help="show the lab and check its fabric; exit 0 when healthy, 1 when not, 3 when down")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.add_argument("--no-fabric", action="store_true",
                        help="only processes, SSH and switch ports: no probe in the VMs, no fabric pings")

    heal = sub.add_parser("heal", help="put a VM whose fabric path is dead right (switch port, NIC reset, reboot, power cycle)")
    heal.add_argument("vm")
    heal.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, help="seconds to wait for a reboot (default %(default)s)")

    ssh = sub.add_parser("ssh", help="run a command in a VM (interactive shell without one)")
    ssh.add_argument("vm")
    ssh.add_argument("cmd", nargs=argparse.REMAINDER)

    reboot = sub.add_parser("reboot", help="reboot one VM (systemctl reboot) and wait until it answers again")
    reboot.add_argument("vm")
    reboot.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, help="seconds to wait (default %(default)s)")

    console = sub.add_parser("console", help="print the end of a VM's serial console log")
    console.add_argument("vm")
    console.add_argument("--lines", type=int, default=40)

    sub.add_parser("summary", help="one line per VM: its Soft-RoCE NIC as ibv_devinfo reports it, its fabric netdev")

    inventory = sub.add_parser("inventory", help="write an Ansible inventory for the running lab and print its path")
    inventory.add_argument("--stdout", action="store_true", help="print the hosts file instead of writing it")
    inventory.add_argument("--committed", action="store_true", help=argparse.SUPPRESS)

    slurm = sub.add_parser("slurm", help="run a Slurm client command (sbatch, squeue, sinfo, scontrol ...) against the lab's slurmctld")
    slurm.add_argument("cmd", nargs=argparse.REMAINDER)

    sub.add_parser("doca-repo", help="serve the lab's signed DOCA stand-in repository to the VMs; print one JSON line "
                   "(url, versions, key_url, fingerprint) for the ofed role")

    down = sub.add_parser("down", help="stop the lab and remove what it made")
    down.add_argument("--purge", action="store_true", help="also remove the state directory (SSH keys)")
    return parser


def parse_args(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            if not 1 <= args.vms <= MAX_VMS:
                raise LabError("-n %d: the lab runs 1 to %d VMs" % (args.vms, MAX_VMS))
            args.switch_mtu = validate_mtu(args.switch_mtu, "--switch-mtu")
            args.port_mtus = parse_port_mtus(args.port_mtu, args.vms)
            args.fabric_netconfs = parse_fabric_netconfs(args.fabric_netconf, args.vms)
            args.fabric_net = validate_fabric_subnet(args.fabric_subnet)
            validate_base_port(args.ssh_base_port)
            if not 256 <= args.memory <= 16384:
                raise LabError("--memory %d: give each VM 256 to 16384 MiB" % args.memory)
            if args.timeout < 10:
                raise LabError("--timeout %d: give the VMs at least 10 s" % args.timeout)
    except LabError as exc:
        parser.error(str(exc))
    args.state_dir = os.path.abspath(args.state_dir)
    args.cache_dir = os.path.abspath(args.cache_dir)
    return args


def validate_base_port(base):
    # the VMs' SSH, node_exporter (+1000) and Slurm (+4000) ports all derive from it
    top = 65535 - MAX_VMS - slurmlab.SLURM_PORT_OFFSET
    if not 1024 <= base <= top:
        raise LabError("--ssh-base-port %d: choose 1024 to %d" % (base, top))


# --------------------------------------------------------------------------- lab model (pure)


def vm_names(count):
    return ["vm%d" % i for i in range(1, count + 1)]


def lab_id(state_dir):
    """Short id that names the lab's namespace and taps; one per state directory."""
    return hashlib.sha256(os.path.abspath(state_dir).encode()).hexdigest()[:6]


def netns_name(lid):
    return "rdmaops-lab-%s" % lid


def tap_name(lid, index):
    return "rl%sv%d" % (lid, index)  # 10 characters, inside IFNAMSIZ


def rail2_tap_name(lid, index):
    return "rl%sr%d" % (lid, index)


def plan_rail2(lid, index, fabric_net):
    """Rail 2 of one VM: its tap on the rail-2 leaf, MAC and address (same subnet as rail 1)."""
    return {
        "rail2_tap": rail2_tap_name(lid, index),
        "rail2_mac": "52:54:00:18:00:%02x" % (0x20 + index),
        "rail2_address": "%s/%d" % (fabric_net.network_address + RAIL2_HOST_OFFSET + index, fabric_net.prefixlen),
    }


def rxe_devices(vm):
    """The Soft-RoCE devices a VM has: rxe0, and rxe1 on rail 2."""
    return ["rxe0"] + (["rxe1"] if vm.get("rail2_tap") else [])


def vm_taps(vm):
    """(tap, bridge) of every switch port of a VM: rail 1's, and rail 2's when it has one."""
    return [(vm["tap"], BRIDGE)] + ([(vm["rail2_tap"], RAIL2_BRIDGE)] if vm.get("rail2_tap") else [])


def plan_vm(lid, index, base_port, fabric_net, port_mtu, fabric_netconf="ifupdown", rails=1):
    fabric_ip = fabric_net.network_address + FABRIC_HOST_OFFSET + index
    return dict(plan_rail2(lid, index, fabric_net) if rails == 2 else {}, **{
        "name": "vm%d" % index,
        "index": index,
        "ssh_port": base_port + index,
        "tap": tap_name(lid, index),
        "mgmt_mac": "52:54:00:12:00:%02x" % index,
        "fabric_mac": "52:54:00:18:00:%02x" % (0x10 + index),
        "fabric_address": "%s/%d" % (fabric_ip, fabric_net.prefixlen),
        "port_mtu": port_mtu,
        "fabric_netconf": fabric_netconf,
    })


def plan_lab(state_dir, count, base_port=DEFAULT_SSH_BASE_PORT, fabric_subnet=DEFAULT_FABRIC_SUBNET,
             port_mtus=None, switch_mtu=DEFAULT_SWITCH_MTU, fabric_netconfs=None, rails=1):
    lid = lab_id(state_dir)
    net = validate_fabric_subnet(str(fabric_subnet))
    port_mtus = port_mtus or {}
    netconfs = dict(DEFAULT_FABRIC_NETCONF, **(fabric_netconfs or {}))
    vms = {}
    for index in range(1, count + 1):
        name = "vm%d" % index
        vms[name] = plan_vm(lid, index, base_port, net, port_mtus.get(name, switch_mtu), netconfs[name], rails)
    return {"lab_id": lid, "netns": netns_name(lid), "bridge": BRIDGE, "switch_mtu": switch_mtu, "vms": vms}


def vm_env(vm, instance):
    values = [
        ("RDMAOPS_LAB_HOSTNAME", vm["name"]),
        ("RDMAOPS_LAB_INSTANCE", instance),
        ("RDMAOPS_LAB_MGMT_MAC", vm["mgmt_mac"]),
        ("RDMAOPS_LAB_MGMT_ADDRESS", MGMT_ADDRESS),
        ("RDMAOPS_LAB_MGMT_GATEWAY", MGMT_GATEWAY),
        ("RDMAOPS_LAB_FABRIC_MAC", vm["fabric_mac"]),
        ("RDMAOPS_LAB_FABRIC_ADDRESS", vm["fabric_address"]),
        ("RDMAOPS_LAB_FABRIC_NETCONF", vm.get("fabric_netconf", "ifupdown")),
    ]
    if vm.get("rail2_mac"):
        values += [("RDMAOPS_LAB_RAIL2_MAC", vm["rail2_mac"]), ("RDMAOPS_LAB_RAIL2_ADDRESS", vm["rail2_address"])]
    return "".join("%s=%s\n" % (key, shlex.quote(value)) for key, value in values)


def machine_id(instance):
    return hashlib.sha256(instance.encode()).hexdigest()[:32]


def mgmt_netdev(vm):
    """QEMU's user-mode network of a VM: SSH, node_exporter and slurmd forwarded from 127.0.0.1."""
    slurmd = vm["ssh_port"] + slurmlab.SLURM_PORT_OFFSET
    return "user,id=mgmt,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:%d-:22,hostfwd=tcp:127.0.0.1:%d-:9100,hostfwd=tcp:127.0.0.1:%d-:%d" % (
        vm["ssh_port"], vm["ssh_port"] + METRICS_PORT_OFFSET, slurmd, slurmd)


# The RDMA NICs (fabric, rail 2) without virtio's event index (VIRTIO_RING_F_EVENT_IDX): every
# transmit stall of issue 22 (tests/lab/README.md) came on NICs with it, after a runtime ring resize
# under load (1 in 37 runs by hand, and in lab runs); with it off, 0 in 25 by hand. The device then
# notifies on every buffer instead of at the index the driver asks for: a little more emulated work.
RDMA_NIC_OPTIONS = ",event_idx=off"


def qemu_argv(vm, image_dir, vm_dir, memory, instance):
    """The QEMU command line of one lab VM (software emulation, 1 vCPU)."""
    # cryptomgr.notests: no crypto self-tests at boot, seconds of emulated CPU the lab has no use for
    append = "root=/dev/vda rw console=ttyS0 loglevel=4 cryptomgr.notests systemd.machine_id=%s" % machine_id(instance)

    def fw(name):
        return "name=%s%s,file=%s" % (FWCFG_PREFIX, name, os.path.join(vm_dir, name))

    rail2 = [
        "-netdev", "tap,id=rail2,ifname=%s,script=no,downscript=no" % vm["rail2_tap"],
        "-device", "virtio-net-pci,netdev=rail2,mac=%s,addr=0x%x,romfile=%s" % (vm["rail2_mac"], RAIL2_PCI_SLOT, RDMA_NIC_OPTIONS),
    ] if vm.get("rail2_tap") else []
    return [
        "qemu-system-x86_64",
        "-name", "rdmaops-lab-%s,process=rdmaops-lab-%s" % (vm["name"], vm["name"]),
        "-nodefaults", "-no-user-config",
        # tb-size: with QEMU's default 1 GiB translation cache the boot after a warm reset
        # (a reboot inside the VM) ran 3-4 times slower than a cold boot (120 s against 35 s)
        "-machine", "pc", "-accel", "tcg,tb-size=256", "-cpu", "max", "-smp", "1", "-m", str(memory),
        "-kernel", os.path.join(image_dir, "vmlinuz"),
        "-initrd", os.path.join(image_dir, "initrd.img"),
        "-append", append,
        "-drive", "file=%s,if=none,id=disk,format=qcow2,cache=unsafe,discard=unmap" % os.path.join(vm_dir, "disk.qcow2"),
        "-device", "virtio-blk-pci,drive=disk,addr=0x5",
        # SSH, node_exporter (the monitor role's metrics) at the SSH port + METRICS_PORT_OFFSET, and
        # slurmd at the SSH port + slurmlab.SLURM_PORT_OFFSET (the same port in the VM)
        "-netdev", mgmt_netdev(vm),
        "-device", "virtio-net-pci,netdev=mgmt,mac=%s,addr=0x3,romfile=" % vm["mgmt_mac"],
        "-netdev", "tap,id=fabric,ifname=%s,script=no,downscript=no" % vm["tap"],
        "-device", "virtio-net-pci,netdev=fabric,mac=%s,addr=0x4,romfile=%s" % (vm["fabric_mac"], RDMA_NIC_OPTIONS),
    ] + rail2 + [
        "-object", "rng-random,id=rng,filename=/dev/urandom",
        "-device", "virtio-rng-pci,rng=rng,addr=0x6",
        "-fw_cfg", fw("vm.env"),
        "-fw_cfg", fw("authorized_keys"),
        "-fw_cfg", fw("ssh_host_ed25519_key"),
        "-display", "none",
        "-chardev", "file,id=console,path=%s,append=on" % os.path.join(vm_dir, "console.log"),
        "-serial", "chardev:console",
        "-pidfile", os.path.join(vm_dir, "qemu.pid"),
        "-daemonize",
    ]


def yaml_str(value):
    # JSON strings are valid YAML double-quoted scalars.
    return json.dumps(value)


def render_inventory(vms, state_dir=None):
    """Ansible hosts file for the lab's VMs.

    With ``state_dir`` the key and known_hosts paths are written out; without it they come
    from the RDMAOPS_LAB_STATE environment variable when Ansible reads the file (that is the
    committed inventories/lab/hosts.yml).
    """
    lines = []
    if state_dir is None:
        lines += [
            "---",
            "# The soft-RoCE lab (tests/lab): VMs reached over SSH on 127.0.0.1 with the lab's own key.",
            "# `python3 tests/lab/lab.py up` boots the two VMs listed here. The key and known_hosts live",
            "# in the lab's state directory: RDMAOPS_LAB_STATE, default %s. For another" % DEFAULT_STATE_DIR,
            "# number of VMs or other ports use the inventory that `lab.py inventory` writes.",
            "# Generated by `lab.py inventory --committed`; tests/unit/lab checks that they agree.",
        ]
        state_var = "{{ lab_state_dir }}"
    else:
        lines += [
            "---",
            "# Written by tests/lab/lab.py for the lab in %s (`lab.py inventory` rewrites it)." % state_dir,
        ]
        state_var = state_dir
    lines += ["all:", "  vars:"]
    if state_dir is None:
        lines.append("    lab_state_dir: %s" % yaml_str(
            "{{ lookup('ansible.builtin.env', 'RDMAOPS_LAB_STATE') | default('%s', true) }}" % DEFAULT_STATE_DIR))
    ssh_options = [
        "-o UserKnownHostsFile=%s/known_hosts -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes" % state_var,
        # a command that was running while its VM rebooted would otherwise wait forever (QEMU's
        # user network keeps the host end of the dead TCP connection open)
        "-o ServerAliveInterval=5 -o ServerAliveCountMax=3",
    ]
    lines += [
        "    ansible_host: 127.0.0.1",
        "    ansible_user: root",
        "    ansible_ssh_private_key_file: %s" % yaml_str("%s/%s" % (state_var, KEY_NAME)),
        "    ansible_ssh_common_args: >-",
    ] + ["      %s" % options for options in ssh_options] + [
        "    ansible_ssh_retries: 3",
        "    ansible_pipelining: true",
        "    ansible_python_interpreter: /usr/bin/python3",
        "  children:",
        "    rdma_hosts:",
        "      hosts:",
    ]
    for name in sorted(vms, key=lambda n: vms[n]["index"]):
        vm = vms[name]
        lines += [
            "        %s:" % name,
            "          ansible_port: %d" % vm["ssh_port"],
            "          lab_fabric_address: %s" % vm["fabric_address"],
            "          lab_fabric_netconf: %s" % vm.get("fabric_netconf", "ifupdown"),
        ] + ([
            "          lab_rail2_address: %s" % vm["rail2_address"],
            # its place in each rail of roce_fabric.rails (inventories/lab/group_vars/all.yml)
            "          roce_rail_index: %d" % vm["index"],
        ] if vm.get("rail2_address") else [
            # a one-rail lab (lab.py up --rails 1): no rxe1 for rail 2 of roce_fabric.rails
            "          nic_rails_enabled: false",
        ])
    # Every VM is also a "GPU host" for site.yml's NCCL play: the VMs have no GPU, and the nccl role
    # needs none (nccl.conf comes from the RDMA devices), so the lab proves nccl.conf for real.
    lines += [
        "    gpu_hosts:",
        "      hosts:",
    ] + ["        %s:" % name for name in sorted(vms, key=lambda n: vms[n]["index"])]
    return "\n".join(lines) + "\n"


def recipe_files(recipe_dir):
    out = []
    for root, dirs, files in os.walk(recipe_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            out.append(os.path.join(root, name))
    return out


def read_packages(recipe_dir):
    pkgs = []
    with open(os.path.join(recipe_dir, "packages.txt"), encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                pkgs.append(line)
    return pkgs


def recipe_hash(recipe_dir=IMAGE_RECIPE_DIR):
    """Hash of everything that decides the image's content (not the mirror, not this CLI's other code)."""
    digest = hashlib.sha256()
    digest.update(("rdmaops-lab recipe %d %s %s\n" % (RECIPE_VERSION, SUITE, IMAGE_SIZE)).encode())
    for path in recipe_files(recipe_dir):
        rel = os.path.relpath(path, recipe_dir)
        executable = os.stat(path).st_mode & 0o100
        with open(path, "rb") as handle:
            content = handle.read()
        digest.update(("%s %s %s\n" % (rel, "x" if executable else "-", hashlib.sha256(content).hexdigest())).encode())
    return digest.hexdigest()[:16]


# A NIC reset in a lab VM, for `lab.py heal`: the fabric NIC's virtio device unbound from virtio_net
# and bound again (the driver resets the device: fresh virtqueues, as after a reboot, without
# one), rxe0 re-created on the new netdev, and what configures the NIC asked to apply it again
# (ifupdown, networkd) so the address and the collection's MTU come back; the udev rules the
# collection installed re-apply the rings and the ToS on the device events.
NIC_RESET = r"""set -u
dev=$(grep -lx '%(mac)s' /sys/class/net/*/address | cut -d/ -f5)
vdev=$(basename "$(readlink -f /sys/class/net/$dev/device)")
mtu=$(cat /sys/class/net/$dev/mtu)
rdma link delete rxe0 2>/dev/null || true
echo "$vdev" > /sys/bus/virtio/drivers/virtio_net/unbind
echo "$vdev" > /sys/bus/virtio/drivers/virtio_net/bind
for _ in $(seq 50); do [ -e /sys/class/net/$dev ] && break; sleep 0.2; done
ip link set dev "$dev" mtu "$mtu" up
if [ -e /etc/network/interfaces.d/rdmaops-lab-fabric ]; then ifdown --force "$dev" >/dev/null 2>&1; ifup "$dev" >/dev/null 2>&1 || true; fi
if systemctl -q is-active systemd-networkd; then networkctl reconfigure "$dev" >/dev/null 2>&1 || true; fi
ip link set dev "$dev" mtu "$mtu" up
rdma link add rxe0 type rxe netdev "$dev"
for _ in $(seq 50); do grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break; sleep 0.2; done
echo "$vdev re-bound, $dev mtu $(cat /sys/class/net/$dev/mtu), rxe0 $(cat /sys/class/infiniband/rxe0/ports/1/state)"
"""

SUMMARY_PROBE = (
    'hostname; dev=$(cat /sys/class/infiniband/rxe0/parent 2>/dev/null); echo "netdev $dev"; '
    'echo "mtu $(cat /sys/class/net/$dev/mtu 2>/dev/null)"; ip -4 -o addr show dev "$dev" 2>/dev/null; '
    'ibv_devinfo -d rxe0 2>&1'
)
# rail 2 (a VM with rxe1): the same, one line more in the summary
SUMMARY_PROBE_RAIL2 = SUMMARY_PROBE.replace("rxe0", "rxe1")


def summarize_probe(name, text, device="rxe0"):
    """One line from SUMMARY_PROBE's output (hostname, netdev, MTU, addresses, ibv_devinfo)."""
    lines = text.splitlines()
    if not lines:
        return "%s: no answer" % name
    info = {"host": lines[0].strip(), "netdev": "-", "mtu": "-", "ipv4": []}
    for line in lines[1:]:
        words = line.split()
        if not words:
            continue
        if words[0] in ("netdev", "mtu") and len(words) == 2:
            info[words[0]] = words[1]
        elif len(words) > 3 and words[2] == "inet":
            info["ipv4"].append(words[3])
        elif words[0] in ("port:", "state:", "active_mtu:", "link_layer:"):
            info.setdefault(words[0][:-1], " ".join(words[1:]))
    if "state" not in info:
        return "%s (%s): no %s (%s)" % (name, info["host"], device, lines[-1].strip())
    return "%s (%s): %s port %s %s %s, active_mtu %s; %s MTU %s, %s" % (
        name, info["host"], device, info.get("port", "?"), info["state"], info.get("link_layer", "?"), info.get("active_mtu", "?"),
        info["netdev"], info["mtu"], " ".join(info["ipv4"]) or "no IPv4")


def port_in_use(port, host="127.0.0.1"):
    """True when something listens on host:port (QEMU's host forwarding would fail to bind)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as QEMU does: TIME_WAIT is no conflict
        sock.bind((host, port))
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            return True
        raise
    finally:
        sock.close()
    return False


def ssh_banner(port, host="127.0.0.1", timeout=3.0):
    """True when an SSH server answers on the port (QEMU accepts the connection before the guest does)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(8).startswith(b"SSH-")
    except OSError:
        return False


# --------------------------------------------------------------------------- host helpers


def run(argv, check=True, **kwargs):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False, **kwargs)
    if check and proc.returncode != 0:
        raise LabError("%s failed (rc %d): %s" % (shlex.join(argv), proc.returncode, (proc.stderr or proc.stdout).strip()))
    return proc


def require_root():
    if os.geteuid() != 0:
        raise LabError("run as root: the lab makes a network namespace and tap devices")


def require_tools(names):
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pkgs = sorted(set(HOST_TOOLS[name] for name in missing))
        raise LabError("missing %s; install with: apt-get install %s" % (", ".join(missing), " ".join(pkgs)))
    if "qemu-system-x86_64" in names and not os.path.exists("/dev/net/tun"):
        raise LabError("/dev/net/tun is missing: load the tun module (modprobe tun)")


@contextlib.contextmanager
def flock(path):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another lab.py holding %s" % path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def write_file(path, text, mode=0o644):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def tail(path, lines=30):
    try:
        with open(path, "rb") as handle:
            data = handle.read()[-200000:]
    except OSError:
        return "(no %s)" % path
    text = ANSI_ESCAPE.sub("", data.decode("utf-8", "replace").replace("\r", ""))
    return "\n".join([line for line in text.splitlines() if line.strip()][-lines:])


def pid_is_our_qemu(pid, marker):
    """True when pid is a live QEMU whose command line names marker (a path in our state directory)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            cmdline = handle.read().split(b"\0")
    except (OSError, ValueError):
        return False
    return bool(cmdline) and b"qemu-system" in cmdline[0] and any(marker.encode() in arg for arg in cmdline)


def stale_images(images_dir, keep, qemu_cmdlines):
    """Image directories under images_dir other than ``keep`` that no running QEMU boots from.

    ``qemu_cmdlines`` are the argument lists of running QEMU processes (any lab, any state
    directory): each names its image directory in ``-kernel``.
    """
    try:
        names = sorted(os.listdir(images_dir))
    except OSError:
        return []
    in_use = set()
    for argv in qemu_cmdlines:
        for arg in argv:
            for name in names:
                if os.path.join(images_dir, name) + os.sep in arg:
                    in_use.add(name)
    return [os.path.join(images_dir, name) for name in names
            if re.match(r"^[0-9a-f]{16}$", name) and name != keep and name not in in_use
            and os.path.isdir(os.path.join(images_dir, name))]


def running_qemu_cmdlines():
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                argv = [arg.decode("utf-8", "replace") for arg in handle.read().split(b"\0")]
        except OSError:
            continue
        if argv and "qemu-system" in argv[0]:
            out.append(argv)
    return out


def find_our_qemus(state_dir):
    """PIDs of QEMU processes started for this state directory (found by their disk path)."""
    marker = os.path.join(state_dir, "vm")
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and pid_is_our_qemu(int(entry), marker):
            pids.append(int(entry))
    return sorted(pids)


def read_pid(path):
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def netns_exists(name):
    return os.path.exists(os.path.join("/run/netns", name))


def link_exists(name, netns=None):
    argv = ["ip"] + (["-n", netns] if netns else []) + ["link", "show", "dev", name]
    return run(argv, check=False).returncode == 0


def link_mtu(name, netns=None):
    argv = ["ip", "-j"] + (["-n", netns] if netns else []) + ["link", "show", "dev", name]
    proc = run(argv, check=False)
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)[0]["mtu"]
    except (ValueError, LookupError):
        return None


def who_listens(port):
    if shutil.which("ss") is None:
        return ""
    proc = run(["ss", "-Hltnp", "sport = :%d" % port], check=False)
    return proc.stdout.strip()


# --------------------------------------------------------------------------- the lab


class Lab:
    def __init__(self, state_dir, cache_dir):
        self.state_dir = state_dir
        self.cache_dir = cache_dir
        self.lab_id = lab_id(state_dir)
        self.netns = netns_name(self.lab_id)
        self.key = os.path.join(state_dir, KEY_NAME)
        self.known_hosts = os.path.join(state_dir, "known_hosts")

    # state -----------------------------------------------------------------
    def state_path(self):
        return os.path.join(self.state_dir, STATE_FILE)

    def load(self):
        try:
            with open(self.state_path(), encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise LabError("%s is damaged (%s); `lab.py down` cleans up by name" % (self.state_path(), exc)) from None

    def save(self, record):
        write_file(self.state_path(), json.dumps(record, indent=2, sort_keys=True) + "\n", 0o600)

    def vm_dir(self, name):
        return os.path.join(self.state_dir, name)

    def lock(self):
        return flock(os.path.join(self.state_dir, ".lock"))

    def alive(self, vm):
        pid = vm.get("pid")
        return bool(pid) and pid_is_our_qemu(pid, self.vm_dir(vm["name"]) + os.sep)

    # ssh -------------------------------------------------------------------
    def ssh_argv(self, port, connect_timeout=5):
        return [
            "ssh", "-F", "none", "-p", str(port), "-i", self.key,
            "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "UserKnownHostsFile=%s" % self.known_hosts, "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=%d" % connect_timeout,
            "-o", "LogLevel=ERROR", "root@127.0.0.1",
        ]

    def probe(self, vm):
        """(boot_id, has_rxe0) when the VM answers over SSH, else None; with rail 2, rxe1 as well."""
        devices = " ".join(rxe_devices(vm))
        argv = self.ssh_argv(vm["ssh_port"]) + [
            "cat /proc/sys/kernel/random/boot_id; ok=rxe0; for d in %s; do test -e /sys/class/infiniband/$d || ok=no-$d; done; "
            "echo $ok" % devices
        ]
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=20, check=False)
        except subprocess.TimeoutExpired:
            return None
        words = proc.stdout.split()
        if proc.returncode != 0 or len(words) != 2:
            return None
        return words[0], words[1] == "rxe0"

    def ssh_output(self, vm, command, timeout=30):
        try:
            proc = subprocess.run(self.ssh_argv(vm["ssh_port"]) + [command], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            # a VM starved of CPU (TCG on a loaded host) answers late: a lab error naming it, not a traceback
            raise LabError("%s: no answer over SSH within %d s (is the host overloaded? `lab.py status` shows the VM)"
                           % (vm["name"], timeout)) from None
        return proc.stdout.strip()

    # keys --------------------------------------------------------------------
    def ensure_keys(self, vms):
        if not os.path.exists(self.key):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rdmaops-lab-%s" % self.lab_id, "-f", self.key])
        known = []
        for vm in vms.values():
            vdir = self.vm_dir(vm["name"])
            os.makedirs(vdir, mode=0o700, exist_ok=True)
            hostkey = os.path.join(vdir, "ssh_host_ed25519_key")
            if not os.path.exists(hostkey):
                run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "%s.rdmaops-lab" % vm["name"], "-f", hostkey])
            with open(hostkey + ".pub", encoding="ascii") as handle:
                keytype, blob = handle.read().split()[:2]
            known.append("[127.0.0.1]:%d %s %s\n" % (vm["ssh_port"], keytype, blob))
        # keep entries of VMs this call does not manage (a larger lab still running)
        entries = {}
        if os.path.exists(self.known_hosts):
            with open(self.known_hosts, encoding="ascii") as handle:
                for line in handle:
                    if line.strip():
                        entries[line.split()[0]] = line
        for line in known:
            entries[line.split()[0]] = line
        write_file(self.known_hosts, "".join(entries[k] for k in sorted(entries)), 0o600)

    # network -----------------------------------------------------------------
    def ensure_fabric(self, switch_mtu):
        if not netns_exists(self.netns):
            run(["ip", "netns", "add", self.netns])
        ns = ["ip", "-n", self.netns]
        run(ns + ["link", "set", "lo", "up"])
        # no IPv6 chatter (router solicitations, MLD) from the lab's own ports on the fabric
        run(["ip", "netns", "exec", self.netns, "sh", "-c",
             "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"])
        for bridge in (BRIDGE, RAIL2_BRIDGE):  # rail 2's leaf stays empty in a one-rail lab
            if not link_exists(bridge, self.netns):
                run(ns + ["link", "add", bridge, "type", "bridge", "stp_state", "0"])
            run(ns + ["link", "set", bridge, "mtu", str(max(switch_mtu, MTU_MIN)), "up"])

    def plug_tap(self, vm):
        """The VM's switch ports (rail 1's tap, and rail 2's) into the namespace, on their leaf."""
        ns = ["ip", "-n", self.netns]
        for tap, bridge in vm_taps(vm):
            if link_exists(tap) and not link_exists(tap, self.netns):
                run(["ip", "link", "set", "dev", tap, "netns", self.netns])
            run(ns + ["link", "set", "dev", tap, "mtu", str(vm["port_mtu"]), "master", bridge, "up"])

    def remove_taps(self, vm):
        """Every tap of the VM; the names of those removed."""
        return [tap for tap, _bridge in vm_taps(vm) if self.remove_tap(tap)]

    def remove_tap(self, tap):
        removed = False
        for netns in (self.netns, None):
            if (netns is None or netns_exists(netns)) and link_exists(tap, netns):
                run(["ip"] + (["-n", netns] if netns else []) + ["link", "del", "dev", tap], check=False)
                removed = True
        return removed

    # image -------------------------------------------------------------------
    def image_dir(self, digest):
        return os.path.join(self.cache_dir, "images", digest)

    def cached_image(self, digest):
        path = self.image_dir(digest)
        if all(os.path.exists(os.path.join(path, f)) for f in ("disk.img", "vmlinuz", "initrd.img", "manifest.json")):
            return path
        return None

    def ensure_image(self, mirror, force=False):
        digest = recipe_hash()
        with flock(os.path.join(self.cache_dir, ".build.lock")):
            path = self.cached_image(digest)
            if path and not force:
                return path, False
            require_tools(BUILD_TOOLS)
            imagebuild.build_image(self.cache_dir, digest, mirror, IMAGE_RECIPE_DIR, read_packages(IMAGE_RECIPE_DIR),
                                   SUITE, IMAGE_SIZE, RECIPE_VERSION, log)
            # images of earlier recipes (hundreds of MB each) go, unless a running VM boots from one
            for stale in stale_images(os.path.join(self.cache_dir, "images"), digest, running_qemu_cmdlines()):
                shutil.rmtree(stale)
                log("removed image %s (an earlier recipe, no VM uses it)" % os.path.basename(stale))
            return self.image_dir(digest), True

    # up ----------------------------------------------------------------------
    def up(self, args):
        t_start = time.monotonic()
        require_root()
        require_tools(UP_TOOLS)
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        with self.lock():
            record = self.load() or {}
            running = {name: vm for name, vm in record.get("vms", {}).items() if self.alive(vm)}
            extra = sorted(set(running) - set(vm_names(args.vms)))
            if extra:
                raise LabError("the lab runs %s; ask for -n %d or run `lab.py down` first"
                               % (", ".join(sorted(running)), len(running)))
            if running and record.get("ssh_base_port") != args.ssh_base_port:
                raise LabError("the running lab uses SSH ports from %d; run `lab.py down` to change them"
                               % record["ssh_base_port"])
            if running and record.get("fabric_subnet") != str(args.fabric_net):
                raise LabError("the running lab uses fabric %s; run `lab.py down` to change it" % record["fabric_subnet"])
            for name, vm in sorted(running.items()):
                has = 2 if vm.get("rail2_tap") else 1
                if has != args.rails:
                    # a VM keeps the NICs it booted with; --rails is for the VMs this call starts
                    log("%s runs with %d rail(s), kept (--rails %d applies to the VMs started now)" % (name, has, args.rails))
            wanted_netconfs = dict(DEFAULT_FABRIC_NETCONF, **args.fabric_netconfs)
            for name, vm in sorted(running.items()):
                has = vm.get("fabric_netconf", "ifupdown")
                if has != wanted_netconfs[name]:
                    raise LabError("%s runs with its fabric NIC configured by %s (chosen at its first boot), not %s; "
                                   "run `lab.py down` first to change it" % (name, has, wanted_netconfs[name]))

            digest = recipe_hash()
            if running and record.get("image_dir") and os.path.exists(record["image_dir"]):
                image = record["image_dir"]
                if os.path.basename(image) != digest:
                    log("the running VMs use image %s; the recipe now gives %s (down + up to switch)"
                        % (os.path.basename(image), digest))
            else:
                t0 = time.monotonic()
                image, built = self.ensure_image(args.mirror)
                log("image %s (%s, %.1f s)" % (image, "built" if built else "cached", time.monotonic() - t0))

            plan = plan_lab(self.state_dir, args.vms, args.ssh_base_port, args.fabric_net,
                            args.port_mtus, args.switch_mtu, args.fabric_netconfs, args.rails)
            record.update({
                "version": 1, "lab_id": self.lab_id, "state_dir": self.state_dir, "netns": self.netns,
                "bridge": BRIDGE, "image_dir": image, "ssh_base_port": args.ssh_base_port,
                "fabric_subnet": str(args.fabric_net), "switch_mtu": args.switch_mtu, "rails": args.rails,
            })
            vms = record.setdefault("vms", {})
            # forget VMs that are not running; keep the records of running ones
            for name in list(vms):
                if name not in running:
                    self.cleanup_vm(vms.pop(name))
            self.save(record)

            # every port this call needs must be free before any VM starts
            for name, want in plan["vms"].items():
                if name not in running and port_in_use(want["ssh_port"]):
                    holder = who_listens(want["ssh_port"])
                    raise LabError("127.0.0.1:%d (SSH of %s) is already in use%s; free it or choose other ports with "
                                   "--ssh-base-port / RDMAOPS_LAB_SSH_BASE_PORT" % (
                                       want["ssh_port"], name, (" by: " + holder) if holder else ""))
            self.ensure_keys(plan["vms"])
            self.ensure_fabric(args.switch_mtu)
            started = []
            for name, want in plan["vms"].items():
                if name in running:
                    vm = vms[name]
                    vm["port_mtu"] = want["port_mtu"]
                    self.plug_tap(vm)
                    log("%s running (pid %d), reused; switch port MTU %d" % (name, vm["pid"], vm["port_mtu"]))
                    continue
                vm = self.start_vm(want, image, args.memory)
                vms[name] = vm
                self.save(record)
                started.append(name)
            self.save(record)
            self.write_inventory(record)

            t_boot = time.monotonic()
            self.wait_ready(record, list(plan["vms"]), args.timeout, t_boot)
            for name, vm in vms.items():
                ready = vm.pop("_ready", None)
                if name in started and ready is not None:
                    vm["ready_seconds"] = round(ready, 1)
            self.save(record)
            log("lab up: %d VM(s) in %.1f s (%s)" % (args.vms, time.monotonic() - t_start,
                                                     "started %s" % ", ".join(started) if started else "all reused"))
        # what the lab is for: every fabric path alive, every rxe0 ACTIVE; a VM whose path is dead
        # (a reused VM whose NIC stopped, a switch port left down) is healed before anyone uses it
        self.ensure_healthy(args.timeout)
        if not args.no_slurm:
            self.ensure_slurm(self.load())
        self.print_table(record)
        # inventories/lab finds the state directory through RDMAOPS_LAB_STATE, not --state-dir
        default_inv = (args.ssh_base_port == DEFAULT_SSH_BASE_PORT and args.vms == DEFAULT_VMS
                       and str(args.fabric_net) == DEFAULT_FABRIC_SUBNET
                       and self.state_dir == os.path.abspath(os.environ.get("RDMAOPS_LAB_STATE") or DEFAULT_STATE_DIR))
        if default_inv:
            log("ansible: ansible-playbook -i inventories/lab playbooks/site.yml")
        else:
            log("ansible: ansible-playbook -i %s playbooks/site.yml" % self.inventory_dir())

    # slurm -------------------------------------------------------------------
    def slurm(self, record=None):
        record = record or self.load() or {}
        return slurmlab.SlurmLab(self.state_dir, record.get("ssh_base_port", DEFAULT_SSH_BASE_PORT), log)

    def ensure_slurm(self, record):
        """The lab's Slurm (tests/lab/slurmlab.py): slurmctld in the namespace, the VMs' slurmd configured,
        every running VM a node that answers."""
        t0 = time.monotonic()
        cluster = self.slurm(record)
        try:
            cluster.ensure_controller()
            script = cluster.vm_script()
            vms = sorted(record["vms"].values(), key=lambda vm: vm["index"])
            with ThreadPoolExecutor(max_workers=len(vms)) as pool:
                said = list(pool.map(lambda vm: self.ssh_output(vm, script, timeout=120), vms))
            for vm, text in zip(vms, said):
                if not text.endswith(("slurm: unchanged", "slurm: restarted")):
                    raise LabError("%s: slurmd could not be configured: %s" % (vm["name"], text[-500:]))
            states = cluster.wait_nodes([vm["name"] for vm in vms])
        except slurmlab.SlurmLabError as exc:
            raise LabError(str(exc)) from None
        log("slurm: %s (%.1f s)" % (", ".join("%s %s" % kv for kv in sorted(states.items())), time.monotonic() - t0))

    def ensure_healthy(self, timeout):
        """Check the fabric; heal each VM found sick, then check again. Raises LabError if still sick."""
        t0 = time.monotonic()
        verdict = self.fabric_health(self.load())
        sick = [name for name, vm in verdict["vms"].items() if not vm["healthy"]]
        if not sick:
            log("fabric healthy: every VM answers the others' pings, rxe0 ACTIVE (%.1f s)" % (time.monotonic() - t0))
            return
        for line in health.describe(verdict):
            log(line)
        for name in sick:
            self.heal(name, timeout)
        verdict = self.fabric_health(self.load())
        if not verdict["healthy"]:
            raise LabError("the lab's fabric is still unhealthy after healing %s:\n%s" % (
                ", ".join(sick), "\n".join(health.describe(verdict))))
        log("fabric healthy again after healing %s (%.1f s)" % (", ".join(sick), time.monotonic() - t0))

    def start_vm(self, want, image, memory):
        """Boot a VM from a fresh overlay disk (its first boot: the image provisions it)."""
        vm = dict(want)
        name = vm["name"]
        vdir = self.vm_dir(name)
        # leftovers of a VM that died: its tap, its disk, its logs
        self.remove_taps(vm)
        self.remove_runtime_files(name)
        vm["instance"] = "%s-%s-%s" % (self.lab_id, name, secrets.token_hex(4))
        vm["memory"] = memory
        write_file(os.path.join(vdir, "vm.env"), vm_env(vm, vm["instance"]), 0o600)
        shutil.copyfile(self.key + ".pub", os.path.join(vdir, "authorized_keys"))
        run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", os.path.join(image, "disk.img"),
             os.path.join(vdir, "disk.qcow2")])
        self.launch(vm, image)
        log("%s started: pid %d, ssh 127.0.0.1:%d, fabric %s on %s (switch port MTU %d, configured by %s)%s" % (
            name, vm["pid"], vm["ssh_port"], vm["fabric_address"], vm["tap"], vm["port_mtu"], vm["fabric_netconf"],
            ", rail 2 %s on %s" % (vm["rail2_address"], vm["rail2_tap"]) if vm.get("rail2_tap") else ""))
        return vm

    def launch(self, vm, image):
        """Start QEMU for vm on its existing disk and plug its tap into the lab's bridge."""
        vdir = self.vm_dir(vm["name"])
        for tap, _bridge in vm_taps(vm):
            run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"])
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(vdir, "qemu.pid"))
        argv = qemu_argv(vm, image, vdir, vm.get("memory", DEFAULT_MEMORY_MIB), vm["instance"])
        qemu_log = os.path.join(vdir, "qemu.log")
        with open(qemu_log, "a") as out:
            out.write("--- %s %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), shlex.join(argv)))
            out.flush()
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False, timeout=120)
        pid = read_pid(os.path.join(vdir, "qemu.pid"))
        if proc.returncode != 0 or not pid:
            self.remove_taps(vm)
            raise LabError("QEMU did not start %s (rc %d):\n%s" % (vm["name"], proc.returncode, tail(qemu_log, 20)))
        vm.update({"pid": pid, "started": time.time()})
        self.plug_tap(vm)

    def wait_ready(self, record, names, timeout, t0, old_boot_ids=None):
        old_boot_ids = old_boot_ids or {}
        pending = list(names)
        rxe_missing_since = {}
        deadline = t0 + timeout
        next_note = time.monotonic() + 60
        while pending:
            for name in list(pending):
                vm = record["vms"][name]
                if not self.alive(vm):
                    raise LabError("%s stopped (QEMU pid %s is gone). QEMU said:\n%s\nConsole (end):\n%s" % (
                        name, vm.get("pid"), tail(os.path.join(self.vm_dir(name), "qemu.log"), 10),
                        tail(os.path.join(self.vm_dir(name), "console.log"), 30)))
                answer = self.probe(vm)
                if answer is None or answer[0] == old_boot_ids.get(name):
                    continue
                boot_id, has_rxe = answer
                if not has_rxe:
                    first = rxe_missing_since.setdefault(name, time.monotonic())
                    if time.monotonic() - first > 20:
                        status = self.ssh_output(vm, "systemctl status --no-pager -l rdmaops-lab-rxe.service 2>&1 | tail -n 15")
                        raise LabError("%s answers SSH but lacks %s (the image's Soft-RoCE unit):\n%s" % (
                            name, " or ".join(rxe_devices(vm)), status))
                    continue
                vm["boot_id"] = boot_id
                vm["_ready"] = time.monotonic() - t0
                log("%s answers SSH with rxe0 after %.1f s" % (name, vm["_ready"]))
                pending.remove(name)
            if pending and time.monotonic() > next_note:
                next_note = time.monotonic() + 60
                for name in pending:
                    last = tail(os.path.join(self.vm_dir(name), "console.log"), 1).strip()
                    log("%s still booting after %.0f s; console: %s" % (name, time.monotonic() - t0, last[-100:]))
            if pending:
                if time.monotonic() > deadline:
                    details = "\n".join("--- %s console (end of %s):\n%s" % (
                        name, os.path.join(self.vm_dir(name), "console.log"),
                        tail(os.path.join(self.vm_dir(name), "console.log"), 25)) for name in pending)
                    raise LabError("%s did not answer SSH within %d s\n%s" % (", ".join(pending), timeout, details))
                time.sleep(2)

    # down --------------------------------------------------------------------
    def cleanup_vm(self, vm):
        """Stop one VM (if it is ours and alive) and remove its tap and runtime files; keep its host key."""
        name = vm["name"]
        if vm.get("pid") and self.alive(vm):
            stop_pid(vm["pid"])
            log("%s stopped (pid %d)" % (name, vm["pid"]))
        for tap in self.remove_taps(vm):
            log("%s: tap %s removed" % (name, tap))
        self.remove_runtime_files(name)

    def remove_runtime_files(self, name):
        vdir = self.vm_dir(name)
        for leftover in ("disk.qcow2", "console.log", "qemu.log", "qemu.pid", "vm.env", "authorized_keys"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(vdir, leftover))

    def down(self, purge=False):
        require_root()
        t0 = time.monotonic()
        if not os.path.isdir(self.state_dir):
            leftovers = self.leftovers()
            if not any(leftovers.values()):
                log("lab is down (no state in %s)" % self.state_dir)
                return
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        with self.lock():
            record = self.load() or {}
            for vm in record.get("vms", {}).values():
                self.cleanup_vm(vm)
            # anything else by name: QEMU started for this state directory, our taps, our namespace
            for pid in find_our_qemus(self.state_dir):
                stop_pid(pid)
                log("stopped unrecorded QEMU pid %d of this lab" % pid)
            self.slurm(record).stop()
            if docarepo.stop(self.state_dir):
                log("DOCA repository server stopped")
            for index in range(1, MAX_VMS + 1):
                for tap in (tap_name(self.lab_id, index), rail2_tap_name(self.lab_id, index)):
                    if self.remove_tap(tap):
                        log("tap %s removed" % tap)
                self.remove_runtime_files("vm%d" % index)
            if netns_exists(self.netns):
                run(["ip", "netns", "del", self.netns])
                log("network namespace %s (bridges %s, %s) removed" % (self.netns, BRIDGE, RAIL2_BRIDGE))
            for leftover in (self.state_path(), os.path.join(self.state_dir, "inventory", "hosts.yml"),
                             os.path.join(self.state_dir, "inventory", "group_vars")):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(self.state_dir, "inventory"))
        left = self.leftovers()
        if any(left.values()):
            raise LabError("down left %s" % left)
        if purge:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        log("lab is down (%.1f s): no QEMU of this lab, no taps %s* or %s*, no namespace %s%s" % (
            time.monotonic() - t0, tap_name(self.lab_id, 0)[:-1], rail2_tap_name(self.lab_id, 0)[:-1], self.netns,
            "; state directory removed" if purge else "; keys kept in %s" % self.state_dir))

    def leftovers(self):
        taps = [tap for i in range(1, MAX_VMS + 1) for tap in (tap_name(self.lab_id, i), rail2_tap_name(self.lab_id, i))
                if link_exists(tap)]
        return {"qemu_pids": find_our_qemus(self.state_dir), "netns": [self.netns] if netns_exists(self.netns) else [],
                "taps": taps}

    # status ------------------------------------------------------------------
    def status(self, fabric=True):
        record = self.load()
        if not record or not record.get("vms"):
            left = self.leftovers() if os.geteuid() == 0 else {}
            return {"state": "down", "state_dir": self.state_dir, "leftovers": left, "vms": {}}
        out = {"state": "up", "state_dir": self.state_dir, "netns": record["netns"], "bridge": record["bridge"],
               "image": record.get("image_dir"), "vms": {}}
        healthy = True
        for name, vm in sorted(record["vms"].items(), key=lambda kv: kv[1]["index"]):
            alive = self.alive(vm)
            ssh = alive and ssh_banner(vm["ssh_port"])
            port_mtu = link_mtu(vm["tap"], record["netns"]) if netns_exists(record["netns"]) else None
            healthy = healthy and alive and ssh and port_mtu is not None
            out["vms"][name] = {
                "pid": vm.get("pid"), "running": alive, "ssh": ssh, "ssh_port": vm["ssh_port"],
                "fabric_address": vm["fabric_address"], "tap": vm["tap"], "switch_port_mtu": port_mtu,
                "fabric_netconf": vm.get("fabric_netconf", "ifupdown"),
                "console": os.path.join(self.vm_dir(name), "console.log"),
            }
            if vm.get("rail2_tap"):
                rail2_mtu = link_mtu(vm["rail2_tap"], record["netns"]) if netns_exists(record["netns"]) else None
                healthy = healthy and rail2_mtu is not None
                out["vms"][name].update({"rail2_address": vm["rail2_address"], "rail2_tap": vm["rail2_tap"],
                                         "rail2_switch_port_mtu": rail2_mtu})
        if os.path.exists(self.slurm(record).conf):
            out["slurm"] = self.slurm(record).describe(sorted(record["vms"]))
        if fabric:
            out["fabric"] = self.fabric_health(record)
            healthy = healthy and out["fabric"]["healthy"]
        out["state"] = "up" if healthy else "degraded"
        return out

    def print_table(self, record, st=None):
        st = st or self.status(fabric=False)
        row = "%-4s %-8s %-7s %-16s %-18s %-9s %-11s %s"
        print(row % ("vm", "pid", "ssh", "ssh at", "fabric", "by", "port MTU", "tap (netns %s)" % record["netns"]))
        for name, vm in st["vms"].items():
            print(row % (
                name, vm["pid"] if vm["running"] else "-", "yes" if vm["ssh"] else "no",
                "127.0.0.1:%d" % vm["ssh_port"], vm["fabric_address"], vm["fabric_netconf"], vm["switch_port_mtu"], vm["tap"]))
            if vm.get("rail2_tap"):
                print(row % ("", "", "", "  rail 2", vm["rail2_address"], "", vm["rail2_switch_port_mtu"],
                             "%s (%s)" % (vm["rail2_tap"], RAIL2_BRIDGE)))
        if "fabric" in st:
            print("fabric: %s" % ("healthy: every VM answers the others' pings, rxe0 ACTIVE" if st["fabric"]["healthy"]
                                  else "UNHEALTHY (lab.py heal VM)"))
            for line in health.describe(st["fabric"]):
                print("  " + line)
        if st.get("slurm"):
            print(st["slurm"])

    # fabric health -----------------------------------------------------------
    def probe_fabric(self, vm, peers, rail2_address=None, rail2_peers=()):
        """One VM's health probe (health.probe_command), parsed; None when it does not answer SSH."""
        if not self.alive(vm):
            return None
        try:
            command = health.probe_command(peers, rail2_address, rail2_peers)
            proc = subprocess.run(self.ssh_argv(vm["ssh_port"], connect_timeout=30) + [command],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60, check=False)
        except subprocess.TimeoutExpired:
            return None
        if proc.returncode == 255 or "== netdev" not in proc.stdout:  # 255: ssh itself failed
            return None
        return health.parse_probe(proc.stdout)

    def switch_port(self, record, vm, rail2=False):
        """The VM's tap (rail 2's with rail2) as the lab's namespace sees it (health.parse_switch_port), None when missing."""
        if not netns_exists(record["netns"]):
            return None
        proc = run(["ip", "-j", "-n", record["netns"], "link", "show", "dev", vm["rail2_tap" if rail2 else "tap"]], check=False)
        return health.parse_switch_port(proc.stdout) if proc.returncode == 0 else None

    def fabric_health(self, record):
        """health.assess over every VM's probe, run in parallel: pings between all fabric addresses."""
        vms = record["vms"]
        addresses = {name: vm["fabric_address"].split("/")[0] for name, vm in vms.items()}
        rail2 = {name: vm["rail2_address"].split("/")[0] for name, vm in vms.items() if vm.get("rail2_address")}

        def one(name):
            peers = [addresses[other] for other in sorted(vms, key=lambda n: vms[n]["index"]) if other != name]
            rail2_peers = [rail2[other] for other in sorted(vms, key=lambda n: vms[n]["index"])
                           if other != name and other in rail2] if name in rail2 else []
            return name, self.probe_fabric(vms[name], peers, rail2.get(name), rail2_peers)

        with ThreadPoolExecutor(max_workers=max(1, len(vms))) as pool:
            probes = dict(pool.map(one, list(vms)))
        view = {name: {"address": addresses[name], "probe": probes[name], "switch_port": self.switch_port(record, vms[name]),
                       "rail2_address": rail2.get(name),
                       "rail2_switch_port": self.switch_port(record, vms[name], rail2=True) if name in rail2 else True}
                for name in sorted(vms, key=lambda n: vms[n]["index"])}
        return health.assess(view, record.get("bridge", BRIDGE))

    def heal(self, name, timeout):
        """Put a VM whose fabric path is dead right, cheapest remedy first, checking after each.

        1. its switch port (the tap in the namespace) plugged in and up again;
        2. a NIC reset in the VM: the virtio NIC re-bound to its driver (device reset, fresh
           virtqueues), rxe0 re-created on it, and its netdev configuration applied again;
        3. a reboot from inside (systemctl reboot);
        4. a power cycle: QEMU stopped and started again on the same disk.
        Returns the remedy that worked; raises LabError when none did.
        """
        require_root()
        record = self.load()
        vm = (record or {}).get("vms", {}).get(name)
        if not vm:
            raise LabError("no VM %r in the lab (%s)" % (name, ", ".join(sorted((record or {}).get("vms", {}))) or "lab is down"))
        t0 = time.monotonic()
        verdict = self.fabric_health(record)["vms"][name]
        if verdict["healthy"]:
            log("%s: fabric healthy, nothing to heal" % name)
            return None
        log("%s: %s" % (name, "; ".join(verdict["problems"] + verdict["evidence"])))

        def still_sick(remedy):
            after = self.fabric_health(record)["vms"][name]
            log("%s after %s (%.1f s): %s" % (name, remedy, time.monotonic() - t0,
                                              "healthy" if after["healthy"] else "; ".join(after["problems"])))
            return not after["healthy"]

        port = self.switch_port(record, vm)
        if port is None or not port["up"] or port["master"] != record.get("bridge", BRIDGE) or port["mtu"] != vm["port_mtu"]:
            if port is None and self.alive(vm):
                raise LabError("%s's switch port %s is gone while its QEMU runs: `lab.py down` and `up`" % (name, vm["tap"]))
            self.plug_tap(vm)
            if not still_sick("its switch port plugged in again"):
                return "switch port"
        port2 = self.switch_port(record, vm, rail2=True) if vm.get("rail2_tap") else None
        if vm.get("rail2_tap") and port2 is not None and (not port2["up"] or port2["master"] != RAIL2_BRIDGE):
            self.plug_tap(vm)
            if not still_sick("its rail-2 switch port plugged in again"):
                return "switch port"
        if self.answers_ssh(vm):
            out = self.ssh_output(vm, NIC_RESET % {"mac": vm["fabric_mac"]}, timeout=120)
            log("%s: NIC reset: %s" % (name, out.replace("\n", "; ")))
            if not still_sick("a NIC reset"):
                return "NIC reset"
            if self.answers_ssh(vm):
                self.reboot(name, timeout)
                record = self.load()
                vm = record["vms"][name]
                if not still_sick("a reboot"):
                    return "reboot"
        self.power_cycle(record, name, timeout)
        if still_sick("a power cycle"):
            raise LabError("%s's fabric is still dead after a power cycle: see `lab.py status` and `lab.py console %s`"
                           % (name, name))
        return "power cycle"

    def answers_ssh(self, vm, tries=3):
        """True when the VM answers SSH within a few tries (a loaded host can miss one 5 s connect)."""
        for attempt in range(tries):
            if self.probe(vm) is not None:
                return True
            if attempt + 1 < tries:
                time.sleep(5)
        return False

    def power_cycle(self, record, name, timeout):
        """Stop the VM's QEMU and start it again on the same disk (a cold boot), then wait for it."""
        vm = record["vms"][name]
        t0 = time.monotonic()
        if self.alive(vm):
            stop_pid(vm["pid"])
        self.remove_taps(vm)
        with self.lock():
            self.launch(vm, record["image_dir"])
            self.save(record)
        self.wait_ready(record, [name], timeout, t0)
        vm.pop("_ready", None)
        with self.lock():
            self.save(record)
        log("%s power-cycled in %.1f s" % (name, time.monotonic() - t0))

    # inventory ---------------------------------------------------------------
    def inventory_dir(self):
        return os.path.join(self.state_dir, "inventory")

    def write_inventory(self, record):
        inv = self.inventory_dir()
        os.makedirs(inv, mode=0o700, exist_ok=True)
        write_file(os.path.join(inv, "hosts.yml"), render_inventory(record["vms"], self.state_dir), 0o600)
        link = os.path.join(inv, "group_vars")
        target = os.path.join(LAB_INVENTORY_DIR, "group_vars")
        if os.path.islink(link) and os.readlink(link) != target:
            os.unlink(link)
        if not os.path.lexists(link):
            os.symlink(target, link)
        return inv

    # reboot ------------------------------------------------------------------
    def reboot(self, name, timeout):
        """Reboot the guest (systemctl reboot: QEMU's warm reset) and wait for the new boot."""
        record = self.load()
        vm = (record or {}).get("vms", {}).get(name)
        if not vm or not self.alive(vm):
            raise LabError("%s is not running (lab.py status)" % name)
        answer = self.probe(vm)
        if answer is None:
            raise LabError("%s does not answer SSH; not rebooting it" % name)
        t0 = time.monotonic()
        subprocess.run(self.ssh_argv(vm["ssh_port"]) + ["systemctl reboot"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30, check=False)
        self.wait_ready(record, [name], timeout, t0, old_boot_ids={name: answer[0]})
        vm.pop("_ready", None)
        with self.lock():
            self.save(record)
        log("%s rebooted in %.1f s" % (name, time.monotonic() - t0))


# --------------------------------------------------------------------------- commands


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except LabError as exc:
        print("lab: error: %s" % exc, file=sys.stderr)
        return 2
    lab = Lab(args.state_dir, args.cache_dir)
    try:
        if args.command == "build":
            require_root()
            t0 = time.monotonic()
            path, built = lab.ensure_image(args.mirror, force=args.force)
            log("image %s %s (%.1f s)" % (path, "built" if built else "cached, recipe unchanged", time.monotonic() - t0))
            return 0
        if args.command == "up":
            lab.up(args)
            return 0
        if args.command == "down":
            lab.down(purge=args.purge)
            return 0
        if args.command == "status":
            st = lab.status(fabric=not args.no_fabric)
            if args.json:
                print(json.dumps(st, indent=2, sort_keys=True))
            elif st["state"] == "down":
                left = {k: v for k, v in st.get("leftovers", {}).items() if v}
                print("lab is down%s" % (" but these are left: %s (lab.py down)" % left if left else ""))
            else:
                print("lab %s (state %s, image %s)" % (st["state"], st["state_dir"], st["image"]))
                lab.print_table(lab.load(), st)
            return {"up": 0, "degraded": 1, "down": 3}[st["state"]]
        record = lab.load()
        if args.command == "slurm":
            cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
            if not record or not cmd:
                raise LabError("the lab is down (lab.py up)" if not record else "lab.py slurm CMD [ARG ...], e.g. lab.py slurm sinfo -N")
            cluster = lab.slurm(record)
            os.execvpe(cmd[0], cmd, cluster.env())
        if args.command == "doca-repo":
            if not record or not record.get("vms"):
                raise LabError("the lab is down (lab.py up)")
            try:
                print(json.dumps(docarepo.start(lab.state_dir, record.get("ssh_base_port", DEFAULT_SSH_BASE_PORT))))
            except docarepo.RepoError as exc:
                raise LabError(str(exc)) from exc
            return 0
        if args.command == "summary":
            if not record or not record.get("vms"):
                raise LabError("the lab is down (lab.py up)")
            for name, vm in sorted(record["vms"].items(), key=lambda kv: kv[1]["index"]):
                print(summarize_probe(name, lab.ssh_output(vm, SUMMARY_PROBE)))
                if vm.get("rail2_tap"):
                    print(summarize_probe(name, lab.ssh_output(vm, SUMMARY_PROBE_RAIL2), "rxe1"))
            return 0
        if args.command == "inventory":
            if not record or not record.get("vms"):
                if args.committed:
                    print(render_inventory(plan_lab(DEFAULT_STATE_DIR, DEFAULT_VMS, rails=DEFAULT_RAILS)["vms"]), end="")
                    return 0
                raise LabError("the lab is down (lab.py up)")
            if args.committed:
                print(render_inventory(plan_lab(DEFAULT_STATE_DIR, DEFAULT_VMS, rails=DEFAULT_RAILS)["vms"]), end="")
            elif args.stdout:
                print(render_inventory(record["vms"], lab.state_dir), end="")
            else:
                print(lab.write_inventory(record))
            return 0
        vm = (record or {}).get("vms", {}).get(getattr(args, "vm", None))
        if vm is None:
            raise LabError("no VM %r in the lab (%s)" % (args.vm, ", ".join(sorted((record or {}).get("vms", {}))) or "lab is down"))
        if args.command == "ssh":
            cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
            argv = lab.ssh_argv(vm["ssh_port"]) + ([" ".join(cmd)] if cmd else [])
            if not cmd:
                argv.insert(1, "-t")
            os.execvp("ssh", argv)
        if args.command == "console":
            print(tail(os.path.join(lab.vm_dir(args.vm), "console.log"), args.lines))
            return 0
        if args.command == "reboot":
            require_root()
            lab.reboot(args.vm, args.timeout)
            return 0
        if args.command == "heal":
            remedy = lab.heal(args.vm, args.timeout)
            log("%s: %s" % (args.vm, "healed by a %s" % remedy if remedy else "was healthy"))
            return 0
    except (LabError, imagebuild.BuildError) as exc:
        print("lab: error: %s" % exc, file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("lab: interrupted (lab.py down cleans up)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
