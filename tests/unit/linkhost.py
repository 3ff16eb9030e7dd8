"""A host's links as files and the tools that change them, for link_mtu tests.

:class:`LinkHost` writes a sysfs tree in the kernel's layout (physical netdevs under their
PCI function, virtual ones under /sys/devices/virtual/net, ``/sys/class/net`` links,
``lower_``/``upper_`` links between stacked devices, ``bonding/slaves``,
``bonding_slave/perm_hwaddr`` and ``master``, ``/proc/net/vlan/config``) and answers the
commands link_mtu runs the way the kernel and the tools do:

* ``ip link set dev X mtu N`` changes the tree and enforces what the kernel enforces: the
  driver's max_mtu ("Error: mtu greater than device maximum."), a VLAN above its parent
  (``vlan_dev_change_mtu``: "RTNETLINK answers: Numerical result out of range"), a bond passes
  its MTU to its members, lowering a parent lowers the VLANs on it;
* ``ip -j ...`` answers in iproute2 6.1's JSON shape (captured on Debian 12);
* ``nmcli`` answers from a small NetworkManager model in the terse format of nmcli 1.42;
* ``netplan generate`` and ``networkctl reload`` are recorded (and can be made to fail).

Every command is recorded in ``calls``; a command the host does not know fails the test.
"""

import json
import os
import posixpath

PCI = "/sys/devices/pci0000:00"


class LinkHost:
    def __init__(self, root):
        self.root = str(root)
        self.links = {}
        self.order = []
        self.default_routes = []  # (family, gateway, dev)
        self.client_routes = {}  # client ip -> dev
        self.ssh = None
        self.nm = None  # dict(running, devices {name: state}, profiles [dict])
        self.tools = set(["ip"])
        self.calls = []
        self.fail = {}  # command prefix -> (rc, stderr)

    # -- building -----------------------------------------------------------------------
    def link(self, name, mtu=1500, kind="ether", lowers=(), mac=None, driver="mlx5_core", max_mtu=9978, addrs=(),
             operstate="up", pci_slot=None):
        index = len(self.order) + 2
        self.links[name] = dict(
            name=name,
            mtu=mtu,
            kind=kind,
            lowers=list(lowers),
            mac=mac or "52:54:00:00:00:%02x" % index,
            driver=driver if kind == "ether" else None,
            max_mtu=max_mtu if kind == "ether" else 65535,
            addrs=list(addrs),
            operstate=operstate,
            ifindex=index,
            pci=pci_slot or "0000:00:%02x.0" % index,
        )
        self.order.append(name)
        return self

    def file(self, path, text, mode=0o644):
        real = self.path(path)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "w") as handle:
            handle.write(text)
        os.chmod(real, mode)
        return self

    def path(self, host_path):
        return os.path.join(self.root, host_path.lstrip("/"))

    def read(self, host_path):
        try:
            with open(self.path(host_path)) as handle:
                return handle.read()
        except IOError:
            return None

    def exists(self, host_path):
        return os.path.lexists(self.path(host_path))

    def mode(self, host_path):
        return os.stat(self.path(host_path)).st_mode & 0o777

    def _devdir(self, name):
        info = self.links[name]
        if info["kind"] == "ether":
            return "%s/%s/net/%s" % (PCI, info["pci"], name)
        return "/sys/devices/virtual/net/%s" % name

    def _symlink(self, host_link, host_target):
        real = self.path(host_link)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        if os.path.lexists(real):
            os.unlink(real)
        os.symlink(posixpath.relpath(host_target, posixpath.dirname(host_link)), real)

    def materialize(self):
        vlans = []
        for name in self.order:
            info = self.links[name]
            base = self._devdir(name)
            os.makedirs(self.path(base), exist_ok=True)
            for attr, value in (
                ("mtu", info["mtu"]),
                ("address", info["mac"]),
                ("ifindex", info["ifindex"]),
                ("type", 1),
                ("operstate", info["operstate"]),
                ("addr_assign_type", 0 if info["kind"] == "ether" else 3),
            ):
                self.file(base + "/" + attr, "%s\n" % value)
            devtype = {"bond": "bond", "vlan": "vlan", "bridge": "bridge"}.get(info["kind"])
            self.file(base + "/uevent", "INTERFACE=%s\nIFINDEX=%d\n%s" % (name, info["ifindex"], "DEVTYPE=%s\n" % devtype if devtype else ""))
            self._symlink("/sys/class/net/" + name, base)
            if info["kind"] == "ether":
                drv = "/sys/bus/pci/drivers/" + info["driver"]
                os.makedirs(self.path(drv), exist_ok=True)
                self._symlink("%s/%s/driver" % (PCI, info["pci"]), drv)
                self._symlink(base + "/device", "%s/%s" % (PCI, info["pci"]))
        for name in self.order:
            info = self.links[name]
            base = self._devdir(name)
            for lower in info["lowers"]:
                self._symlink(base + "/lower_" + lower, self._devdir(lower))
                self._symlink(self._devdir(lower) + "/upper_" + name, base)
            if info["kind"] == "bond":
                self.file(base + "/bonding/slaves", " ".join(info["lowers"]) + "\n")
                for member in info["lowers"]:
                    mbase = self._devdir(member)
                    self.file(mbase + "/bonding_slave/perm_hwaddr", self.links[member]["mac"] + "\n")
                    self._symlink(mbase + "/master", base)
            if info["kind"] == "vlan":
                vlans.append((name, int(name.rsplit(".", 1)[-1]) if "." in name else 100, info["lowers"][0]))
        if vlans:
            lines = ["VLAN Dev name\t | VLAN ID", "Name-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD"]
            lines += ["%-15s| %d  | %s" % vlan for vlan in vlans]
            self.file("/proc/net/vlan/config", "\n".join(lines) + "\n")
        return self

    def sys_mtu(self, name):
        return int(self.read(self._devdir(name) + "/mtu"))

    def _set_sys_mtu(self, name, mtu):
        self.links[name]["mtu"] = mtu
        self.file(self._devdir(name) + "/mtu", "%d\n" % mtu)

    # -- tools ----------------------------------------------------------------------------
    def module(self, check_mode=False):
        return FakeModule(self, check_mode)

    def run(self, argv):
        tool = os.path.basename(argv[0])
        args = list(argv[1:])
        line = " ".join([tool] + args)
        self.calls.append(line)
        for prefix, answer in self.fail.items():
            if line.startswith(prefix):
                return answer[0], "", answer[1]
        handler = getattr(self, "_" + tool.replace("-", "_"), None)
        if handler is None:
            raise AssertionError("unexpected command: %s" % line)
        return handler(args)

    def _ip(self, args):
        if args[:3] == ["link", "set", "dev"] and args[4] == "mtu":
            return self._ip_set_mtu(args[3], int(args[5]))
        if args == ["-j", "-d", "link", "show"]:
            out = [dict(ifindex=i["ifindex"], ifname=i["name"], mtu=i["mtu"], min_mtu=68, max_mtu=i["max_mtu"]) for i in self._ordered()]
            return 0, json.dumps(out), ""
        if args == ["-j", "addr", "show"]:
            out = []
            for info in self._ordered():
                addr_info = []
                for addr in info["addrs"]:
                    local, prefix = addr.split("/")
                    family = "inet6" if ":" in local else "inet"
                    addr_info.append(dict(family=family, local=local, prefixlen=int(prefix), scope="global", label=info["name"]))
                out.append(dict(ifindex=info["ifindex"], ifname=info["name"], mtu=info["mtu"], operstate=info["operstate"].upper(), addr_info=addr_info))
            return 0, json.dumps(out), ""
        if args in (["-j", "route", "show", "default"], ["-j", "-6", "route", "show", "default"]):
            family = "inet6" if "-6" in args else "inet"
            out = [dict(dst="default", gateway=gw, dev=dev, flags=[]) for fam, gw, dev in self.default_routes if fam == family]
            return 0, json.dumps(out), ""
        if args[:3] == ["-j", "route", "get"]:
            dev = self.client_routes.get(args[3])
            if dev is None:
                return 2, "", "RTNETLINK answers: Network is unreachable\n"
            return 0, json.dumps([dict(dst=args[3], dev=dev, prefsrc="", flags=[], uid=0, cache=[])]), ""
        raise AssertionError("unexpected ip command: %s" % " ".join(args))

    def _ordered(self):
        return [self.links[name] for name in self.order]

    def _ip_set_mtu(self, name, mtu):
        info = self.links.get(name)
        if info is None:
            return 1, "", 'Cannot find device "%s"\n' % name
        if mtu > info["max_mtu"]:
            return 2, "", "Error: mtu greater than device maximum.\n"
        if info["kind"] == "vlan" and mtu > self.links[info["lowers"][0]]["mtu"]:
            return 2, "", "RTNETLINK answers: Numerical result out of range\n"
        if info["kind"] == "bond":
            for member in info["lowers"]:
                if mtu > self.links[member]["max_mtu"]:
                    return 2, "", "Error: mtu greater than device maximum.\n"
            for member in info["lowers"]:
                self._set_sys_mtu(member, mtu)
        self._set_sys_mtu(name, mtu)
        for upper in self._ordered():
            if upper["kind"] == "vlan" and upper["lowers"] == [name] and upper["mtu"] > mtu:
                self._set_sys_mtu(upper["name"], mtu)
        return 0, "", ""

    def _netplan(self, args):
        if args[:1] == ["generate"]:
            return 0, "", ""
        raise AssertionError("unexpected netplan command: %s" % args)

    def _networkctl(self, args):
        if args == ["reload"]:
            return 0, "", ""
        raise AssertionError("unexpected networkctl command: %s" % args)

    # nmcli ----------------------------------------------------------------------------------
    def _nmcli(self, args):
        nm = self.nm
        if args == ["-t", "-f", "RUNNING", "general"]:
            if not nm or not nm.get("running"):
                return 8, "", "Error: NetworkManager is not running.\n"
            return 0, "running\n", ""
        if args == ["-t", "-f", "DEVICE,STATE", "device"]:
            return 0, "".join("%s:%s\n" % (dev, state) for dev, state in nm["devices"].items()), ""
        if args == ["-t", "-f", "NAME,UUID,TYPE,DEVICE,FILENAME", "connection", "show"]:
            lines = []
            for p in nm["profiles"]:
                fields = [p["name"], p["uuid"], p["type"], p.get("device", ""), p.get("filename", "")]
                lines.append(":".join(f.replace("\\", "\\\\").replace(":", "\\:") for f in fields))
            return 0, "\n".join(lines) + "\n", ""
        if args[:1] == ["-g"] and args[2:4] == ["connection", "show"]:
            profile = self._profile(args[4])
            value = profile.get(args[1], "")
            if args[1] == "802-3-ethernet.mtu":
                value = str(profile.get("mtu") or "auto")
            return 0, value + "\n", ""
        if args[:2] == ["connection", "modify"] and args[3] == "802-3-ethernet.mtu":
            self._profile(args[2])["mtu"] = int(args[4])
            return 0, "", ""
        if args[:2] == ["device", "modify"] and args[3] == "802-3-ethernet.mtu":
            nm.setdefault("applied", {})[args[2]] = int(args[4])
            self._set_sys_mtu(args[2], int(args[4]))
            return 0, "Connection successfully reapplied to device '%s'.\n" % args[2], ""
        raise AssertionError("unexpected nmcli command: %s" % args)

    def _profile(self, uuid):
        for profile in self.nm["profiles"]:
            if profile["uuid"] == uuid:
                return profile
        raise AssertionError("no profile %s" % uuid)


class FakeModule:
    """What CommandRunner needs from AnsibleModule: binaries on a fake PATH and run_command."""

    def __init__(self, host, check_mode):
        self.host = host
        self.check_mode = check_mode

    def get_bin_path(self, tool):
        return "/usr/sbin/" + tool if tool in self.host.tools else None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        assert environ_update == {"LANG": "C", "LC_ALL": "C", "LANGUAGE": "C"}
        return self.host.run(argv)
