"""ethtool for simulated NICs, answering in ethtool 6.1's captured layouts (tests/unit/fixtures/tools/ethtool):
shared by the nic_ethtool and tuning_layer tests."""

import os

import hosttree
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandError, CommandResult

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(hosttree.__file__)), "fixtures", "tools", "ethtool")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


class FakeNic:
    """ethtool for one or more NICs: answers -a/-g/-c in ethtool 6.1's layout, applies -A/-G/-C."""

    def __init__(self, nics):
        self.nics = nics
        self.calls = []
        self.commands = []

    def find(self, tool):
        return "/usr/sbin/ethtool"

    def has(self, tool):
        return True

    def run(self, argv, check=True):
        self.calls.append(list(argv))
        flag, name, rest = argv[1], argv[2], argv[3:]
        nic = self.nics[name]
        if flag in nic.get("unsupported", ()):
            result = CommandResult(argv, 1, "", "netlink error: Operation not supported\n")
        elif flag == "-a":
            p = nic["pause"]
            onoff = dict((k, "on" if v else "off") for k, v in p.items())
            text = "Pause parameters for %s:\nAutonegotiate:\t%s\nRX:\t\t%s\nTX:\t\t%s\n" % (name, onoff["autoneg"], onoff["rx"], onoff["tx"])
            result = CommandResult(argv, 0, text, "")
        elif flag == "-g":
            text = fixture("mlx5-composed-g.txt").replace("ens1f0np0", name)
            text = text.replace("RX:\t\t8192", "RX:\t\t%d" % nic["max"]).replace("TX:\t\t8192", "TX:\t\t%d" % nic["max"])
            text = text.replace("RX:\t\t1024", "RX:\t\t%d" % nic["rx"]).replace("TX:\t\t1024", "TX:\t\t%d" % nic["tx"])
            result = CommandResult(argv, 0, text, "")
        elif flag == "-c":
            a = nic["adaptive"]
            line = "Adaptive RX: %s  TX: %s" % tuple("n/a" if a[k] is None else ("on" if a[k] else "off") for k in ("rx", "tx"))
            result = CommandResult(argv, 0, fixture("mlx5-composed-c.txt").replace("Adaptive RX: on  TX: on", line), "")
        elif flag in nic.get("refuse", ()):
            result = CommandResult(argv, 1, "", "netlink error: Invalid argument\n")
        elif flag == "-A":
            for key, value in zip(rest[::2], rest[1::2]):
                nic["pause"][key] = value == "on"
            result = CommandResult(argv, 0, "", "")
        elif flag == "-G":
            for key, value in zip(rest[::2], rest[1::2]):
                nic[key] = int(value)
            result = CommandResult(argv, 0, "", "")
        elif flag == "-C":
            for key, value in zip(rest[::2], rest[1::2]):
                nic["adaptive"][key.split("-")[1]] = value == "on"
            result = CommandResult(argv, 0, "", "")
        else:
            raise AssertionError(argv)
        if check and result.rc != 0:
            raise CommandError(result)
        return result


def cx7():
    return dict(pause=dict(autoneg=False, rx=True, tx=True), max=8192, rx=1024, tx=1024, adaptive=dict(rx=True, tx=False))
