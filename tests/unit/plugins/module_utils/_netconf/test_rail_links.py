"""The rails of the NIC layer: each RDMA netdev's address, table, rule and ARP/rp_filter sysctls,
live on a real kernel (a network namespace of the test's own, real iproute2) and persisted by
each backend (rendered files read back by the backends' own readers, or by the real tools where
they are installed)."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import merge_block
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import formats as fmt
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import rails
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.iproute import parse_rt_tables
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.rails import rail_findings

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])

V4 = dict(rail="rail0", interface="v0", address="10.10.0.1", prefix=31, network="10.10.0.0/31", gateway="10.10.0.0", table=100,
          rule_priority=1000)
V4_SUBNET = dict(rail="rail1", interface="v1", address="10.20.0.2", prefix=24, network="10.20.0.0/24", gateway="10.20.0.1",
                 table=101, rule_priority=1000)
V6 = dict(rail="rail2", interface="v1", address="fd00:2::2", prefix=64, network="fd00:2::/64", gateway="fd00:2::1", table=102,
          rule_priority=1000)


def link(**overrides):
    return rails.RailLink(0, dict(V4, **overrides))


# -- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("overrides, expected", [
    (dict(interface="a/b"), "is not a kernel interface name"),
    (dict(address="10.10.0.300"), "is not an address and prefix length"),
    (dict(prefix=33), "is not an address and prefix length"),
    (dict(network="10.10.0.2/31"), "does not hold 10.10.0.1/31"),
    (dict(gateway="10.9.0.1"), "gateway 10.9.0.1 is not another address of 10.10.0.0/31"),
    (dict(gateway="10.10.0.1"), "is not another address"),
    (dict(table=254), "table 254 must be a number"),
    (dict(rule_priority=0), "rule_priority 0 must be a number 1..32765"),
])
def test_a_link_the_controller_did_not_plan_is_refused(overrides, expected):
    with pytest.raises(InputError, match=expected):
        link(**overrides)


# -- renderers, read back ----------------------------------------------------------------------
def test_networkd_dropin_reads_back_as_networkd_sections():
    text = fmt.networkd_rails_dropin([rails.RailLink(0, V4_SUBNET), rails.RailLink(1, V6)])
    entries = fmt.parse_ini(text)
    assert [(s, k, v) for s, k, v in entries if s == "Address"] == [("Address", "Address", "10.20.0.2/24"), ("Address", "Address", "fd00:2::2/64")]
    assert ("Route", "Gateway", "10.20.0.1") in entries and ("Route", "PreferredSource", "10.20.0.2") in entries
    assert ("Route", "PreferredSource", "fd00:2::2") not in entries  # tentative until DAD: the kernel refuses it as a source
    assert [(k, v) for s, k, v in entries if s == "RoutingPolicyRule"] == [
        ("From", "10.20.0.2/32"), ("Table", "101"), ("Priority", "1000"), ("From", "fd00:2::2/128"), ("Table", "102"), ("Priority", "1000")]
    assert text.startswith("# Managed by rdmaops.roce")


def test_netplan_dropin_is_yaml_netplan_merges_over_the_definition():
    text = fmt.netplan_rails_dropin("ethernets", "fabric0", [rails.RailLink(0, V4_SUBNET)], "/etc/netplan/50-cloud-init.yaml")
    data = yaml.safe_load(text)
    fabric = data["network"]["ethernets"]["fabric0"]
    assert fabric["addresses"] == ["10.20.0.2/24"]
    assert fabric["routes"] == [{"to": "10.20.0.0/24", "from": "10.20.0.2", "scope": "link", "table": 101},
                                {"to": "default", "via": "10.20.0.1", "table": 101}]
    assert fabric["routing-policy"] == [{"from": "10.20.0.2/32", "table": 101, "priority": 1000}]


def test_ifupdown_stanza_runs_the_same_commands():
    lines = fmt.ifupdown_rails_lines([rails.RailLink(0, V4_SUBNET), rails.RailLink(1, V6)])
    assert lines == [
        "iface v1 inet manual",
        "    up ip link set dev v1 up",
        "    up ip -4 address replace 10.20.0.2/24 dev v1",
        "    up ip -4 route replace 10.20.0.0/24 dev v1 src 10.20.0.2 table 101",
        "    up ip -4 route replace default via 10.20.0.1 dev v1 table 101",
        "    up ip -4 rule del from 10.20.0.2 table 101 priority 1000 2>/dev/null || true",
        "    up ip -4 rule add from 10.20.0.2 table 101 priority 1000",
        "    down ip -4 rule del from 10.20.0.2 table 101 priority 1000 2>/dev/null || true",
        "iface v1 inet6 manual",
        "    up ip link set dev v1 up",
        "    up ip -6 address replace fd00:2::2/64 dev v1",
        "    up ip -6 route replace fd00:2::/64 dev v1 table 102",
        "    up ip -6 route replace default via fd00:2::1 dev v1 table 102",
        "    up ip -6 rule del from fd00:2::2 table 102 priority 1000 2>/dev/null || true",
        "    up ip -6 rule add from fd00:2::2 table 102 priority 1000",
        "    down ip -6 rule del from fd00:2::2 table 102 priority 1000 2>/dev/null || true",
    ]


def test_ifcfg_addresses_are_added_beside_the_users_own():
    before = 'DEVICE=ens1f0np0\nBOOTPROTO=none\nIPADDR="192.168.5.4"\nPREFIX=24\nMTU=9000\n'
    after = fmt.ifcfg_set_addresses(before, [rails.RailLink(0, V4_SUBNET)])
    assert after == before + "IPADDR1=10.20.0.2\nPREFIX1=24\n"
    assert fmt.ifcfg_set_addresses(after, [rails.RailLink(0, V4_SUBNET)]) == after  # a second run changes nothing
    assert fmt.ifcfg_addresses(after) == ["10.20.0.2/24", "192.168.5.4/24"]
    exclusive = fmt.ifcfg_set_addresses(after, [rails.RailLink(0, V4_SUBNET)], exclusive=True)
    assert exclusive == "DEVICE=ens1f0np0\nBOOTPROTO=none\nMTU=9000\nIPADDR1=10.20.0.2\nPREFIX1=24\n"
    assert fmt.ifcfg_route_lines([rails.RailLink(0, V4_SUBNET)]) == [
        "10.20.0.0/24 dev v1 src 10.20.0.2 table 101", "default via 10.20.0.1 dev v1 table 101"]
    assert fmt.ifcfg_rule_lines([rails.RailLink(0, V4_SUBNET)]) == ["from 10.20.0.2/32 table 101 priority 1000"]


# -- the real tools, where they are installed ----------------------------------------------------
IFQUERY = shutil.which("ifquery", path=SBIN_PATH)
NETPLAN = shutil.which("netplan", path=SBIN_PATH)


@pytest.mark.skipif(IFQUERY is None, reason="Debian's ifupdown is not installed (no ifquery): apt-get install ifupdown")
def test_real_ifupdown_reads_our_stanza_next_to_the_users(tmp_path):
    # the user's stanza holds the very address the plan gives (an installer addressed the NIC as
    # planned: the two-rail lab); ours must not add it a second time (ifup failed on "File exists"
    # before our routes and rules ran)
    text = "auto v1\niface v1 inet static\n    address 10.20.0.2/24\n    mtu 9000\n\n"
    text = merge_block(text, fmt.ifupdown_rails_lines([rails.RailLink(0, V4_SUBNET)]), "rails v1")
    path = tmp_path / "interfaces"
    path.write_text(text)
    state = tmp_path / "state"
    state.mkdir()
    proc = subprocess.run([IFQUERY, "-i", str(path), "--state-dir", str(state), "v1"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    # both stanzas of v1 are read: the user's address and MTU, and our commands
    lines = proc.stdout.splitlines()
    assert "mtu: 9000" in lines and "address: 10.20.0.2" in lines
    assert "up: ip -4 address replace 10.20.0.2/24 dev v1" in lines
    assert "up: ip -4 rule add from 10.20.0.2 table 101 priority 1000" in lines
    ifup = os.path.join(os.path.dirname(IFQUERY), "ifup")
    proc = subprocess.run([ifup, "--no-act", "-i", str(path), "--state-dir", str(state), "v1"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert out.count("ip addr add 10.20.0.2/255.255.255.0") == 1  # the user's stanza only
    assert out.index("ip addr add 10.20.0.2/255.255.255.0") < out.index("ip -4 address replace 10.20.0.2/24 dev v1")
    assert "ip -4 rule add from 10.20.0.2 table 101 priority 1000" in out
    assert "ip -4 route replace default via 10.20.0.1 dev v1 table 101" in out


@pytest.mark.skipif(NETPLAN is None, reason="netplan is not installed: apt-get install netplan.io")
def test_real_netplan_generate_renders_our_dropin(tmp_path):
    etc = tmp_path / "etc" / "netplan"
    etc.mkdir(parents=True)
    (etc / "50-cloud-init.yaml").write_text(
        "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    fabric0:\n      match: {name: v1}\n      mtu: 9000\n")
    (etc / "90-rdmaops-fabric0-rails.yaml").write_text(
        fmt.netplan_rails_dropin("ethernets", "fabric0", [rails.RailLink(0, V4_SUBNET)], "/etc/netplan/50-cloud-init.yaml"))
    for path in etc.iterdir():
        path.chmod(0o600)
    proc = subprocess.run([NETPLAN, "generate", "--root-dir", str(tmp_path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    network = (tmp_path / "run" / "systemd" / "network" / "10-netplan-fabric0.network").read_text()
    entries = fmt.parse_ini(network)
    assert ("Network", "Address", "10.20.0.2/24") in entries
    assert ("RoutingPolicyRule", "From", "10.20.0.2/32") in entries and ("RoutingPolicyRule", "Table", "101") in entries
    assert ("Route", "Gateway", "10.20.0.1") in entries and ("Link", "MTUBytes", "9000") in entries


# -- live, on a real kernel ------------------------------------------------------------------------
def _netns_available():
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    proc = subprocess.run(["unshare", "--net", "--mount", "true"], capture_output=True, check=False)
    return proc.returncode == 0


needs_netns = pytest.mark.skipif(not _netns_available(), reason="needs root and unshare (a network namespace of the test's own)")


def run_in_netns(tmp_path, params, steps, veths=(("v0", "p0"), ("v1", "p1")), before=(), files=None, environ=None):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True, exist_ok=True)
    for name in ("proc", "sys"):
        if not (root / name).exists():
            os.symlink("/" + name, str(root / name))
    for path, text in (files or {}).items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "networkctl.log"
    # systemd-networkd does not run here: its reload is recorded, the files are what is checked
    (bindir / "networkctl").write_text("#!/bin/sh\necho \"$@\" >> %s\n" % log)
    (bindir / "networkctl").chmod(0o755)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(dict(root=str(root), bindir=str(bindir), params=params, steps=list(steps),
                                    veths=[list(v) for v in veths], before=[list(b) for b in before], environ=environ or {})))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(["unshare", "--net", "--mount", sys.executable, os.path.join(UNIT, "railnetns.py"), str(spec)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    out["root"] = root
    out["networkctl"] = log.read_text() if log.exists() else ""
    return out


IFUPDOWN_AND_NETWORKD = {
    "/etc/network/interfaces": "# the user's file\nauto lo\niface lo inet loopback\n\nallow-hotplug v0\niface v0 inet manual\n    mtu 9000\n",
    "/etc/systemd/network/30-v1.network": "[Match]\nName=v1\n\n[Network]\nLinkLocalAddressing=no\n",
    "/run/systemd/netif/links/.keep": "",
}


@needs_netns
def test_two_rails_live_and_persisted_then_a_second_run_changes_nothing(tmp_path):
    params = dict(rails=dict(links=[V4, V4_SUBNET, V6]))
    out = run_in_netns(tmp_path, params, ["check", "apply", "again"], files=IFUPDOWN_AND_NETWORKD,
                       before=[["ip", "address", "add", "192.168.9.9/24", "dev", "v0"]])
    check, apply, again = out["steps"]
    assert "error" not in apply, apply
    # check mode predicts, applies nothing
    assert check["result"]["changed"] is True
    predicted = check["result"]["changes"]
    assert "rails: ip address add 10.10.0.1/31 dev v0 (rail rail0)" in predicted
    assert "rails: ip -4 rule add from 10.10.0.1 table 100 priority 1000" in predicted
    assert "rails: net.ipv4.conf.v0.arp_ignore = 1 (was 0)" in predicted
    assert apply["result"]["changes"] == predicted
    # a second run: nothing to do
    assert again["result"]["changed"] is False, again["result"]["changes"]
    # the kernel has it
    rules = [(r["priority"], r["src"], r["table"]) for r in out["rules"]]
    assert (1000, "10.10.0.1", "100") in rules and (1000, "10.20.0.2", "101") in rules
    routes = [(r.get("table", "254"), r["dst"], r.get("gateway"), r["dev"]) for r in out["routes"] if r.get("table") in ("100", "101")]
    assert sorted(routes) == sorted([("100", "10.10.0.0/31", None, "v0"), ("100", "default", "10.10.0.0", "v0"),
                                     ("101", "10.20.0.0/24", None, "v1"), ("101", "default", "10.20.0.1", "v1")])
    v0 = [a for link in out["addresses"] if link["ifname"] == "v0" for a in link["addr_info"] if a["family"] == "inet"]
    assert sorted("%s/%s" % (a["local"], a["prefixlen"]) for a in v0) == ["10.10.0.1/31", "192.168.9.9/24"]  # the foreign one stays
    assert out["sysctls"] == {"v0.arp_ignore": 1, "v0.arp_announce": 2, "v0.rp_filter": 2,
                              "v1.arp_ignore": 1, "v1.arp_announce": 2, "v1.rp_filter": 2}
    # persisted: ifupdown's stanza for v0, networkd's drop-in for v1, the table names and the sysctls
    root = out["root"]
    interfaces = (root / "etc/network/interfaces").read_text()
    assert interfaces.startswith("# the user's file\nauto lo\niface lo inet loopback\n\nallow-hotplug v0\niface v0 inet manual\n    mtu 9000\n")
    assert "# BEGIN rdmaops.roce rails v0\niface v0 inet manual\n    up ip link set dev v0 up\n    up ip -4 address replace 10.10.0.1/31 dev v0\n" in interfaces
    dropin = fmt.parse_ini((root / "etc/systemd/network/30-v1.network.d/90-rdmaops-rails.conf").read_text())
    assert [v for s, k, v in dropin if k == "Address"] == ["10.20.0.2/24", "fd00:2::2/64"]
    rt_tables = (root / "etc/iproute2/rt_tables.d/rdmaops.conf").read_text()
    assert rt_tables.splitlines()[1:] == [
        "# rail rail0", "100\trdmaops_v0", "# rail rail1", "101\trdmaops_v1", "# rail rail2", "102\trdmaops_v1_102"]
    assert parse_rt_tables(rt_tables) == {100: ("rdmaops_v0", "rail0"), 101: ("rdmaops_v1", "rail1"), 102: ("rdmaops_v1_102", "rail2")}
    if "rules_named" in out:
        named = [(r["priority"], r["src"], r["table"]) for r in out["rules_named"] if r["priority"] == 1000]
        assert (1000, "10.10.0.1", "rdmaops_v0") in named and (1000, "10.20.0.2", "rdmaops_v1") in named
    sysctl = (root / "etc/sysctl.d/90-rdmaops-rails.conf").read_text()
    assert "net/ipv4/conf/v0/arp_ignore = 1\n" in sysctl and "net/ipv4/conf/v1/rp_filter = 2\n" in sysctl
    assert out["networkctl"] == "reload\n"
    # validate's view: before the run every rail fails, after it every check passes
    before = rail_findings("h", dict(rails=dict(links=params["rails"]["links"], read=check["result"]["rails"]["before"])))
    after = rail_findings("h", dict(rails=dict(links=params["rails"]["links"], read=again["result"]["rails"]["before"])))
    assert [f["field"] for f in before if f["passed"] is False][:4] == [
        "rail rail0 address", "rail rail0 rule", "rail rail0 table 100", "net.ipv4.conf.v0.arp_ignore"]
    assert after and all(f["passed"] is True for f in after), [f for f in after if not f["passed"]]
    assert len(after) == 3 * 3 + 2 * 3  # address, rule, table per rail; three sysctls per netdev
    result = apply["result"]["rails"]
    assert [(l["interface"], l["backend"]) for l in result["links"]] == [("v0", "ifupdown"), ("v1", "networkd"), ("v1", "networkd")]
    assert result["after"]["v0"]["sysctls"] == {"arp_ignore": 1, "arp_announce": 2, "rp_filter": 2}


@needs_netns
def test_exclusive_removes_a_foreign_address_and_an_old_rule_goes(tmp_path):
    params = dict(rails=dict(links=[V4], exclusive=True, backend="runtime", arp_ignore=2))
    out = run_in_netns(tmp_path, params, ["apply", "again"], veths=[("v0", "p0")], before=[
        ["ip", "address", "add", "192.168.9.9/24", "dev", "v0"],
        ["ip", "rule", "add", "from", "10.10.0.7", "table", "100", "priority", "1000"],
    ])
    apply, again = out["steps"]
    assert "error" not in apply, apply
    changes = apply["result"]["changes"]
    assert "rails: ip address del 192.168.9.9/24 dev v0 (not the rail's; nic_addresses_exclusive)" in changes
    assert "rails: ip -4 rule del from 10.10.0.7 table 100 priority 1000 (the rule of an old address)" in changes
    assert again["result"]["changed"] is False
    assert [(r["src"], r["table"]) for r in out["rules"] if r["priority"] == 1000] == [("10.10.0.1", "100")]
    assert out["sysctls"]["v0.arp_ignore"] == 2
    assert not (out["root"] / "etc/sysctl.d/90-rdmaops-rails.conf").exists()  # runtime only


@needs_netns
def test_a_missing_netdev_is_refused_before_anything_changes(tmp_path):
    out = run_in_netns(tmp_path, dict(rails=dict(links=[dict(V4, interface="nope0")])), ["apply"], veths=[("v0", "p0")],
                       files=IFUPDOWN_AND_NETWORKD)
    assert out["steps"][0]["error"].startswith("rails: interface nope0 does not exist on this host")
    assert not any(r["priority"] == 1000 for r in out["rules"])


@needs_netns
@pytest.mark.skipif(NETPLAN is None, reason="netplan is not installed: apt-get install netplan.io")
def test_netplan_host_gets_a_rails_dropin_that_netplan_generate_accepts(tmp_path):
    files = {
        "/etc/netplan/50-cloud-init.yaml": "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    fabric0:\n"
                                           "      match: {name: v1}\n      mtu: 9000\n",
        "/run/systemd/netif/links/.keep": "",
    }
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4_SUBNET])), ["apply", "again"], veths=[("v1", "p1")], files=files)
    apply, again = out["steps"]
    assert "error" not in apply, apply
    assert again["result"]["changed"] is False, again["result"]["changes"]
    root = out["root"]
    assert (root / "etc/netplan/50-cloud-init.yaml").read_text().endswith("      mtu: 9000\n")  # the user's file as it was
    dropin = yaml.safe_load((root / "etc/netplan/90-rdmaops-fabric0-rails.yaml").read_text())
    assert dropin["network"]["ethernets"]["fabric0"]["addresses"] == ["10.20.0.2/24"]
    # netplan generate ran on the files (it validates them) and rendered them for networkd
    assert any(step.startswith("netplan generate --root-dir") for step in apply["result"]["steps"]), apply["result"]
    rendered = fmt.parse_ini((root / "run/systemd/network/10-netplan-fabric0.network").read_text())
    assert ("Network", "Address", "10.20.0.2/24") in rendered and ("RoutingPolicyRule", "Priority", "1000") in rendered
    assert out["networkctl"] == "reload\n"


@needs_netns
def test_ifcfg_host_gets_ipaddr_and_route_and_rule_files(tmp_path):
    ifcfg = 'DEVICE=v0\nBOOTPROTO=none\nONBOOT=yes\nIPADDR="192.168.9.9"\nPREFIX=24\n'
    files = {"/etc/sysconfig/network-scripts/ifcfg-v0": ifcfg,
             "/etc/sysconfig/network-scripts/route-v0": "# the user's route\n192.168.50.0/24 via 192.168.9.1 dev v0\n"}
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4])), ["apply", "again"], veths=[("v0", "p0")], files=files)
    apply, again = out["steps"]
    assert "error" not in apply, apply
    assert again["result"]["changed"] is False, again["result"]["changes"]
    scripts = out["root"] / "etc/sysconfig/network-scripts"
    assert (scripts / "ifcfg-v0").read_text() == ifcfg + "IPADDR1=10.10.0.1\nPREFIX1=31\n"
    assert (scripts / "route-v0").read_text() == (
        "# the user's route\n192.168.50.0/24 via 192.168.9.1 dev v0\n\n# BEGIN rdmaops.roce rails v0\n"
        "10.10.0.0/31 dev v0 src 10.10.0.1 table 100\ndefault via 10.10.0.0 dev v0 table 100\n# END rdmaops.roce rails v0\n")
    assert "from 10.10.0.1/32 table 100 priority 1000\n" in (scripts / "rule-v0").read_text()
    assert apply["result"]["rails"]["links"][0]["backend"] == "ifcfg"


# NetworkManager does not run here: a stand-in answers the nmcli commands the backend runs, in the
# terse format of nmcli 1.42 (tests/unit/fixtures/netconf: `-t` fields, `-g` values with ':' escaped),
# keeps the profile's properties and records every modify.
NMCLI_STANDIN = r'''#!/usr/bin/env python3
import json, sys
state_path = __file__ + ".json"
state = json.load(open(state_path))
args = sys.argv[1:]
state["calls"].append(args)
def out(text):
    sys.stdout.write(text)
if args == ["-t", "-f", "RUNNING", "general"]:
    out("running\n")
elif args == ["-t", "-f", "DEVICE,STATE", "device"]:
    out("v1:connected\nlo:connected (externally)\n")
elif args == ["-t", "-f", "NAME,UUID,TYPE,DEVICE,FILENAME", "connection", "show"]:
    out("fabric1:5c3a0f0e-1111-4222-8333-944455556666:802-3-ethernet:v1:/etc/NetworkManager/system-connections/fabric1.nmconnection\n")
elif args[:1] == ["-g"] and args[2:4] == ["connection", "show"]:
    out(state["props"].get(args[1], "").replace("\\", "\\\\").replace(":", "\\:") + "\n")
elif args[:2] == ["connection", "modify"]:
    state["props"][args[3]] = args[4]
else:
    sys.exit("unexpected nmcli %s" % args)
json.dump(state, open(state_path, "w"))
'''


def nmcli_standin(tmp_path, ipv4_method, ipv4_addresses, ipv6_method, ipv6_addresses):
    """The nmcli stand-in with one profile's properties (no routes, no rules); its folder."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nmcli").write_text(NMCLI_STANDIN)
    (bindir / "nmcli").chmod(0o755)
    props = {"ipv4.method": ipv4_method, "ipv4.addresses": ipv4_addresses, "ipv4.routes": "", "ipv4.routing-rules": "",
             "ipv6.method": ipv6_method, "ipv6.addresses": ipv6_addresses, "ipv6.routes": "", "ipv6.routing-rules": ""}
    (bindir / "nmcli.json").write_text(json.dumps(dict(props=props, calls=[])))
    return bindir


@needs_netns
def test_networkmanager_profile_gets_addresses_routes_and_rules(tmp_path):
    bindir = nmcli_standin(tmp_path, "disabled", "", "link-local", "")
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4_SUBNET, V6])), ["apply", "again"], veths=[("v1", "p1")])
    apply, again = out["steps"]
    assert "error" not in apply, apply
    assert again["result"]["changed"] is False, again["result"]["changes"]
    state = json.loads((bindir / "nmcli.json").read_text())
    modified = [call[3:] for call in state["calls"] if call[:2] == ["connection", "modify"]]
    # the method first (NetworkManager takes no address on a disabled or link-local profile)
    assert modified == [
        ["ipv4.method", "manual"],
        ["ipv4.addresses", "10.20.0.2/24"],
        ["ipv4.routes", "10.20.0.0/24 table=101 src=10.20.0.2, 0.0.0.0/0 10.20.0.1 table=101"],
        ["ipv4.routing-rules", "priority 1000 from 10.20.0.2/32 table 101"],
        ["ipv6.method", "manual"],
        ["ipv6.addresses", "fd00:2::2/64"],
        ["ipv6.routes", "fd00:2::/64 table=102, ::/0 fd00:2::1 table=102"],
        ["ipv6.routing-rules", "priority 1000 from fd00:2::2/128 table 102"],
    ]
    assert apply["result"]["rails"]["links"][0]["backend"] == "networkmanager"


@needs_netns
def test_exclusive_on_networkmanager_drops_the_profiles_other_addresses_of_the_family(tmp_path):
    bindir = nmcli_standin(tmp_path, "manual", "192.168.9.9/24, 10.20.0.2/24", "manual", "fd00:9::9/64")
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4_SUBNET], exclusive=True)), ["apply", "again"], veths=[("v1", "p1")])
    apply, again = out["steps"]
    assert "error" not in apply, apply
    assert "networkmanager: profile fabric1 ipv4.addresses -= 192.168.9.9/24 (nic_addresses_exclusive)" in apply["result"]["changes"]
    assert again["result"]["changed"] is False, again["result"]["changes"]
    state = json.loads((bindir / "nmcli.json").read_text())
    assert state["props"]["ipv4.addresses"] == "10.20.0.2/24"
    assert state["props"]["ipv6.addresses"] == "fd00:9::9/64"  # no rail of that family: left alone


@needs_netns
def test_a_link_ifupdown_does_not_know_gets_a_stanza_ifup_brings_up_at_boot(tmp_path):
    if not shutil.which("ifup", path=SBIN_PATH):
        pytest.skip("no ifup here: the ifupdown backend only creates a stanza where ifupdown is installed")
    files = {"/etc/network/interfaces": "auto lo\niface lo inet loopback\n"}
    params = dict(rails=dict(links=[V4]))
    out = run_in_netns(tmp_path, params, ["apply", "again"], veths=[("v0", "p0")], files=files,
                       before=[["ip", "rule", "add", "from", "10.10.0.1", "table", "100", "priority", "900"]])
    apply, again = out["steps"]
    assert "error" not in apply, apply
    assert "rails: ip -4 rule del from 10.10.0.1 table 100 priority 900 (at priority 900, not 1000)" in apply["result"]["changes"]
    assert again["result"]["changed"] is False, again["result"]["changes"]
    text = (out["root"] / "etc/network/interfaces").read_text()
    assert text.startswith("auto lo\niface lo inet loopback\n\n# BEGIN rdmaops.roce rails v0\nallow-hotplug v0\niface v0 inet manual\n")
    if IFQUERY:
        path = tmp_path / "interfaces"
        path.write_text(text)
        state = tmp_path / "state"
        state.mkdir()
        proc = subprocess.run([IFQUERY, "-i", str(path), "--state-dir", str(state), "--allow", "hotplug", "-l"],
                              capture_output=True, text=True, check=False)
        assert proc.stdout.split() == ["v0"], proc.stderr


@needs_netns
def test_a_subnet_route_of_the_rails_table_no_rail_has_any_more_is_removed(tmp_path):
    # the rail moved to another subnet (the two-rail lab's subnet-per-rail scenario): the old subnet
    # route stayed in the rail's table beside the new one
    params = dict(rails=dict(links=[V4], persist=False))
    out = run_in_netns(tmp_path, params, ["apply", "again"], veths=[("v0", "p0")],
                       before=[["ip", "address", "add", "10.30.0.5/24", "dev", "v0"],
                               ["ip", "route", "add", "10.30.0.0/24", "dev", "v0", "src", "10.30.0.5", "table", "100"]])
    apply, again = out["steps"]
    assert "error" not in apply, apply
    assert "rails: ip -4 route del 10.30.0.0/24 dev v0 table 100 (no rail of table 100 has 10.30.0.0/24 any more)" in apply["result"]["changes"]
    assert again["result"]["changed"] is False, again["result"]["changes"]
    table = sorted(r["dst"] for r in out["routes"] if r.get("table") == "100")
    assert table == ["10.10.0.0/31", "default"]


# -- the management path: link_mtu's detector and guard, never cut by a rail -----------------------
def _v4(out, name):
    return sorted("%s/%s" % (a["local"], a["prefixlen"]) for link in out["addresses"] if link["ifname"] == name
                  for a in link["addr_info"] if a["family"] == "inet")


@needs_netns
def test_exclusive_on_the_netdev_of_the_default_route_is_refused_and_its_address_stays(tmp_path):
    # the case: a rail with exclusive on the link holding the default route and the SSH
    # address ran "ip -4 address del <mgmt address> dev eno1"
    params = dict(rails=dict(links=[V4], exclusive=True, backend="runtime"))
    out = run_in_netns(tmp_path, params, ["check", "apply"], veths=[("v0", "p0")],
                       environ={"SSH_CONNECTION": "192.168.9.50 40000 192.168.9.9 22"},
                       before=[["ip", "address", "add", "192.168.9.9/24", "dev", "v0"],
                               ["ip", "route", "add", "default", "via", "192.168.9.1", "dev", "v0"]])
    for step in out["steps"]:
        assert step["error"] == (
            "refusing to remove 192.168.9.9/24 (rails.exclusive, live) from v0: it is on the path that carries the Ansible "
            "connection (v0 holds 192.168.9.9, the address this SSH connection came in on; carries the route back to the SSH "
            "client 192.168.9.50; carries an IPv4 default route). Removing an address there can cut this host off. Set "
            "rails.exclusive: false for this host (the rail's address is added beside the others), or give the rail a netdev "
            "that is not on the management path"), step
        assert step["details"]["option"] == "rails.exclusive"
        assert step["details"]["management"]["protected"] == ["v0"]
    # nothing was touched: the management address, the default route; no rail address, no rule
    assert _v4(out, "v0") == ["192.168.9.9/24"]
    assert [r["dev"] for r in out["routes"] if r["dst"] == "default" and r.get("table", "254") == "254"] == ["v0"]
    assert not any(r["priority"] == 1000 for r in out["rules"])


@needs_netns
def test_exclusive_elsewhere_still_removes_and_the_management_netdev_keeps_its_address(tmp_path):
    params = dict(rails=dict(links=[V4], exclusive=True, backend="runtime"))
    out = run_in_netns(tmp_path, params, ["apply"], veths=[("v0", "p0"), ("v1", "p1")],
                       before=[["ip", "address", "add", "192.168.9.9/24", "dev", "v1"],
                               ["ip", "route", "add", "default", "via", "192.168.9.1", "dev", "v1"],
                               ["ip", "address", "add", "192.168.7.7/24", "dev", "v0"]])
    assert "error" not in out["steps"][0], out["steps"][0]
    assert _v4(out, "v0") == ["10.10.0.1/31"] and _v4(out, "v1") == ["192.168.9.9/24"]


@needs_netns
def test_a_rail_whose_address_is_the_management_one_gets_no_rule(tmp_path):
    # the rule "from <ssh address> lookup <rail table>" would send the connection's replies elsewhere
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4], backend="runtime")), ["apply"], veths=[("v0", "p0")],
                       environ={"SSH_CONNECTION": "10.10.0.0 40000 10.10.0.1 22"},
                       before=[["ip", "address", "add", "10.10.0.1/31", "dev", "v0"]])
    error = out["steps"][0]["error"]
    assert error.startswith("refusing to add the rule to table 100 (rail rail0) for the traffic from 10.10.0.1: it is on the path "
                            "that carries the Ansible connection (10.10.0.1 is the address this SSH connection came in on)")
    assert not any(r["priority"] == 1000 for r in out["rules"])


@needs_netns
def test_a_route_of_the_management_netdev_in_the_rails_table_is_not_removed(tmp_path):
    # the site's own policy routing uses the table number the plan gave the rail
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4], backend="runtime")), ["apply"], veths=[("v0", "p0"), ("v1", "p1")],
                       before=[["ip", "address", "add", "192.168.9.9/24", "dev", "v1"],
                               ["ip", "route", "add", "default", "via", "192.168.9.1", "dev", "v1"],
                               ["ip", "route", "add", "192.168.9.0/24", "dev", "v1", "table", "100"]])
    assert out["steps"][0]["error"].startswith(
        "refusing to remove the route 192.168.9.0/24 dev v1 from table 100 (192.168.9.0/24 is not a rail's subnet) on v1: it is on "
        "the path that carries the Ansible connection (v1 carries an IPv4 default route)")
    assert [r["dst"] for r in out["routes"] if r.get("table") == "100"] == ["192.168.9.0/24"]


@needs_netns
def test_exclusive_does_not_take_the_management_address_out_of_an_ifcfg_file(tmp_path):
    # live, the netdev holds nothing foreign; its file does: at the next boot the address would be gone
    ifcfg = 'DEVICE=v0\nBOOTPROTO=none\nONBOOT=yes\nIPADDR="192.168.9.9"\nPREFIX=24\n'
    files = {"/etc/sysconfig/network-scripts/ifcfg-v0": ifcfg}
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4], exclusive=True)), ["apply"], veths=[("v0", "p0")], files=files,
                       before=[["ip", "route", "add", "default", "dev", "v0"]])
    assert out["steps"][0]["error"].startswith(
        "refusing to remove 192.168.9.9/24 (rails.exclusive, /etc/sysconfig/network-scripts/ifcfg-v0) from v0: it is on the path")
    assert (out["root"] / "etc/sysconfig/network-scripts/ifcfg-v0").read_text() == ifcfg
    assert _v4(out, "v0") == []  # and nothing live either


@needs_netns
def test_exclusive_does_not_take_the_management_address_out_of_a_networkmanager_profile(tmp_path):
    bindir = nmcli_standin(tmp_path, "manual", "192.168.9.9/24", "ignore", "")
    out = run_in_netns(tmp_path, dict(rails=dict(links=[V4_SUBNET], exclusive=True)), ["apply"], veths=[("v1", "p1")],
                       before=[["ip", "route", "add", "default", "dev", "v1"]])
    assert out["steps"][0]["error"].startswith(
        "refusing to remove 192.168.9.9/24 (rails.exclusive, NetworkManager profile fabric1) from v1: it is on the path")
    state = json.loads((bindir / "nmcli.json").read_text())
    assert state["props"]["ipv4.addresses"] == "192.168.9.9/24"
    assert not [call for call in state["calls"] if call[:2] == ["connection", "modify"]]
