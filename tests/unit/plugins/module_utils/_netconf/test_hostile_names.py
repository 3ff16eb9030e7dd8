"""Hostile netdev, rail and netplan names through every network backend's renderer.

Every name that is written into a configuration file or onto a command line is either refused
with a message naming the option and the allowed form, or the rendered file reads back (by the
backends' own readers and by the real tools: ``/bin/sh``, Debian's ``ifquery`` and
``ifup --no-act``, ``netplan generate``) as exactly that name, with no extra line, stanza, key
or shell word.  Hypothesis draws the names; the real-tool properties draw fewer examples (each
starts processes).
"""

import os
import shlex
import shutil
import subprocess

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.files import merge_block
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import valid_netdev
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import backends
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import formats as fmt
from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import rails
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.iproute import parse_rt_tables

SBIN_PATH = os.pathsep.join([os.environ.get("PATH", os.defpath), "/usr/sbin", "/sbin"])
IFQUERY = shutil.which("ifquery", path=SBIN_PATH)
IFUP = os.path.join(os.path.dirname(IFQUERY), "ifup") if IFQUERY else None
NETPLAN = shutil.which("netplan", path=SBIN_PATH)
SH = "/bin/sh"
needs_ifupdown = pytest.mark.skipif(IFQUERY is None, reason="Debian's ifupdown is not installed (no ifquery): apt-get install ifupdown")

V4 = dict(rail="rail0", interface="v0", address="10.10.0.1", prefix=31, network="10.10.0.0/31", gateway="10.10.0.0", table=100,
          rule_priority=1000)
V6 = dict(rail="rail2", interface="v0", address="fd00:2::2", prefix=64, network="fd00:2::/64", gateway="fd00:2::1", table=102,
          rule_priority=1000)

# The names of the issue, and what the shell, ifupdown, ifcfg, networkd and rt_tables read specially.
HOSTILE = ["r0;reboot", "r0$(reboot)", "r0`id`", "r0'x", 'r0"x', "r0 x", "r0\nup reboot", "r0\\", "r0|x", "r0&x", "r0>x",
           "r0<x", "r0*", "r0?", "r0[1]", "r0#x", "r0=work", "r0%i", "r0~", "r0{a,b}", "r0!", "-r0", ".r0", "r0/x", "r0:1",
           "\u00e9th0", "r0\x7f", "r0\t", "\nr0", "", "r" * 16]
PLAIN = ["eth0", "ens1f0np0", "eth1.100", "bond_rdma", "a" * 15, "0", "_x", "rxe-0"]
FAST = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
REAL = settings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
NETPLAN_GENERATE = settings(max_examples=4, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])  # ~1.5 s each

# Anything, weighted towards the bytes that matter, and names that pass.
names = st.one_of(
    st.text(min_size=0, max_size=18),
    st.text(alphabet="ab0_.-;$`'\" \n\t\\|&<>*?[]#=%:/!{}()", min_size=1, max_size=16),
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}", fullmatch=True),
)
safe_names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}", fullmatch=True)


def shell_words(command):
    """The words ``/bin/sh`` gives ``ip`` for ``command`` (an ifupdown ``up`` line): ``ip`` is a
    function printing its arguments, so nothing runs."""
    script = "ip() { printf '%s\\0' \"$@\"; }\n" + command + "\n"
    proc = subprocess.run([SH, "-c", script], capture_output=True, text=True, check=False, timeout=10)
    assert proc.returncode == 0, (command, proc.stderr)
    return proc.stdout.split("\0")[:-1]


def rail_link(option, **overrides):
    """The RailLink of V4 with ``overrides``, or None where it is refused naming ``option``."""
    try:
        return rails.RailLink(0, dict(V4, **overrides))
    except InputError as exc:
        assert exc.details["option"] == option
        assert "Traceback" not in exc.msg and "\n" not in exc.msg
        return None


def refused_naming(option, call):
    with pytest.raises(InputError) as info:
        call()
    assert info.value.details.get("option") == option, info.value.details
    assert info.value.msg.startswith(option + "=")
    assert "A-Z, a-z, 0-9" in info.value.msg  # the allowed form
    assert "Error" not in info.value.msg and "Traceback" not in info.value.msg
    return info.value.msg


# -- the cases: refused where the old code wrote them ----------------------------------------
@pytest.mark.parametrize("name", HOSTILE)
def test_a_rail_netdev_with_shell_or_file_syntax_is_refused_naming_the_option(name):
    msg = refused_naming("rails.links[0].interface", lambda: rails.RailLink(0, dict(V4, interface=name)))
    assert "\n" not in msg  # the name is shown escaped


@pytest.mark.parametrize("name", HOSTILE)
def test_every_backend_refuses_the_name_before_it_looks_at_anything(name):
    ctx = backends.Context(None, None, None)  # nothing is read: the name is checked first
    for backend in ("auto",) + backends.BACKENDS:
        refused_naming("interface", lambda: backends.detect(ctx, dict(name=name), backend))


@pytest.mark.parametrize("name", HOSTILE)
def test_the_mtu_renderers_refuse_the_name(name):
    refused_naming("interface", lambda: fmt.ifupdown_block(name, 9000))
    refused_naming("interface", lambda: fmt.netplan_dropin("ethernets", "fabric0", 9000, name, "/etc/netplan/50.yaml"))
    text = "iface %s inet dhcp\n" % "x0"
    refused_naming("interface", lambda: fmt.ifupdown_edit_mtu(text.replace("x0", name), name, 9000))


@pytest.mark.parametrize("rail", ["rail0\n100\tmain", "rail 0", "rail0;x", "", "-rail", "r" * 33, 7, ["rail0"]])
def test_a_rail_name_that_would_start_another_line_in_rt_tables_is_refused(rail):
    with pytest.raises(InputError) as info:
        rails.RailLink(0, dict(V4, rail=rail))
    assert info.value.details["option"] == "rails.links[0].rail"
    assert "is not a rail name: use 1-32 characters of A-Z, a-z, 0-9, '_' and '-'" in info.value.msg
    assert "\n" not in info.value.msg and "Error" not in info.value.msg


# -- properties over any name ---------------------------------------------------------------------
@FAST
@given(name=names)
@example(name="r0;reboot")
def test_any_rail_netdev_is_refused_or_reads_back_from_networkd_and_ifcfg_and_rt_tables(name):
    link = rail_link("rails.links[0].interface", interface=name)
    assert (link is not None) == valid_netdev(name)
    if link is None:
        return
    # systemd-networkd: one comment line, then exactly our sections and keys
    text = fmt.networkd_rails_dropin([link])
    assert [line for line in text.splitlines() if line.startswith("#")] == [text.splitlines()[0]]
    entries = fmt.parse_ini(text)
    assert [(s, k) for s, k, _v in entries] == [
        ("Address", "Address"), ("Route", "Destination"), ("Route", "PreferredSource"),
        ("Route", "Table"), ("Route", "Scope"), ("Route", "Gateway"), ("Route", "Table"),
        ("RoutingPolicyRule", "From"), ("RoutingPolicyRule", "Table"), ("RoutingPolicyRule", "Priority")]
    # rt_tables.d: the table is named after the netdev and reads back as that name and the rail
    table_names = {100: rails.table_name(name)}
    assert parse_rt_tables(rails.rt_tables_text([link], table_names)) == {100: ("rdmaops_" + name, "rail0")}
    # ifcfg: the route lines split into the words ip is given
    assert fmt.ifcfg_route_lines([link])[0].split() == ["10.10.0.0/31", "dev", name, "src", "10.10.0.1", "table", "100"]


@FAST
@given(rail=st.one_of(st.none(), st.text(max_size=34), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}", fullmatch=True)))
@example(rail="rail0\n100\tmain")
def test_any_rail_name_is_refused_or_is_exactly_one_comment_line_of_rt_tables(rail):
    link = rail_link("rails.links[0].rail", rail=rail)
    if link is None:
        return
    text = rails.rt_tables_text([link], {100: "rdmaops_v0"})
    assert len(text.splitlines()) == 3  # our header, the rail's comment, the table
    assert parse_rt_tables(text) == {100: ("rdmaops_v0", rail if rail is not None else "v0")}


@FAST
@given(netdef_id=st.text(min_size=1, max_size=24), origin=st.text(max_size=24), name=safe_names)
@example(netdef_id="fabric0\n  bridges: {}", origin="/etc/netplan/50.yaml\nnetwork: {}", name="eth0")
@example(netdef_id="yes", origin="x", name="eth0")
def test_netplan_dropins_read_back_as_exactly_their_definition(netdef_id, origin, name):
    # the definition's id and the file it comes from are the host's own netplan files' text
    text = fmt.netplan_dropin("ethernets", netdef_id, 9000, name, origin)
    assert yaml.safe_load(text) == {"network": {"version": 2, "ethernets": {netdef_id: {"mtu": 9000}}}}
    link = rails.RailLink(0, dict(V4, interface=name))
    text = fmt.netplan_rails_dropin("ethernets", netdef_id, [link], origin)
    definition = yaml.safe_load(text)["network"]["ethernets"]
    assert list(definition) == [netdef_id] and definition[netdef_id]["addresses"] == ["10.10.0.1/31"]
    assert sorted(definition[netdef_id]) == ["addresses", "routes", "routing-policy"]


# -- the real shell and the real ifupdown --------------------------------------------------------------
@REAL
@given(name=names)
@example(name="r0;reboot")
@example(name="eth1.100")
def test_ifupdown_rail_stanza_is_refused_or_sh_and_ifquery_read_exactly_the_name(tmp_path_factory, name):
    link = rail_link("rails.links[0].interface", interface=name)
    assert (link is not None) == valid_netdev(name)
    if link is None:
        return
    lines = fmt.ifupdown_rails_lines([link, rails.RailLink(1, dict(V6, interface=name))])
    # each up/down line, run by the real /bin/sh as ifup runs it, gives ip exactly the argv of the live change
    ups = [line.strip().split(" ", 1)[1] for line in lines if line.strip().startswith(("up ", "down "))]
    assert shell_words(ups[0]) == ["link", "set", "dev", name, "up"]
    assert shell_words(ups[1]) == link.address_argv("replace")[1:]
    assert shell_words(ups[2]) == link.subnet_route_argv()[1:]
    assert shell_words(ups[5]) == link.rule_argv("add")[1:]
    if IFQUERY:
        tmp = tmp_path_factory.mktemp("ifupdown")
        text = merge_block("auto lo\niface lo inet loopback\n", lines, "rails %s" % name)
        (tmp / "interfaces").write_text(text)
        proc = subprocess.run([IFQUERY, "-i", str(tmp / "interfaces"), "--state-dir", str(tmp), "--list", "--all"],
                              capture_output=True, text=True, check=False, timeout=30)
        assert proc.returncode == 0, proc.stderr
        proc = subprocess.run([IFQUERY, "-i", str(tmp / "interfaces"), "--state-dir", str(tmp), name],
                              capture_output=True, text=True, check=False, timeout=30)
        assert proc.returncode == 0, proc.stderr
        # both stanzas of the name (inet, inet6), and nothing else
        assert [line for line in proc.stdout.splitlines() if not line.startswith(("up: ", "down: "))] == []
        assert "up: ip -4 rule add from 10.10.0.1 table 100 priority 1000" in proc.stdout.splitlines()


@needs_ifupdown
@pytest.mark.parametrize("name", PLAIN)
def test_ifup_no_act_runs_our_stanzas_commands_for_the_name(tmp_path, name):
    lines = fmt.ifupdown_rails_lines([rails.RailLink(0, dict(V4, interface=name))])
    text = merge_block("auto lo\niface lo inet loopback\n", ["allow-hotplug %s" % name] + lines, "rails %s" % name)
    block = fmt.ifupdown_block(name, 9000)
    text = merge_block(text, block, "mtu %s" % name)
    (tmp_path / "interfaces").write_text(text)
    proc = subprocess.run([IFUP, "--no-act", "-i", str(tmp_path / "interfaces"), "--state-dir", str(tmp_path), name],
                          capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 0, proc.stderr
    commands = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    assert "ip -4 address replace 10.10.0.1/31 dev %s" % name in commands
    assert "ip -4 rule add from 10.10.0.1 table 100 priority 1000" in commands
    # every command ifup would run through sh gives ip the name as one word
    for command in commands:
        if command.startswith("ip ") and " dev " in command:
            words = shell_words(command.split(" 2>", 1)[0])
            assert words[words.index("dev") + 1] == name


@needs_ifupdown
@pytest.mark.parametrize("name", PLAIN)
def test_the_pre_up_mtu_line_gives_ip_the_name_as_one_word(tmp_path, name):
    text = "allow-hotplug %s\niface %s inet dhcp\n" % (name, name)
    after, _detached = fmt.ifupdown_edit_mtu(text, name, 9000)
    (tmp_path / "interfaces").write_text(after)
    proc = subprocess.run([IFQUERY, "-i", str(tmp_path / "interfaces"), "--state-dir", str(tmp_path), name],
                          capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 0, proc.stderr
    pre_up = [line.split(": ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("pre-up: ")]
    assert len(pre_up) == 1 and shell_words(pre_up[0]) == ["link", "set", "dev", name, "mtu", "9000"]


@pytest.mark.skipif(NETPLAN is None, reason="netplan is not installed: apt-get install netplan.io")
@NETPLAN_GENERATE
@given(name=safe_names)
@example(name="eth1.100")
def test_netplan_generate_renders_exactly_the_name(tmp_path_factory, name):
    root = tmp_path_factory.mktemp("netplan")
    etc = root / "etc" / "netplan"
    etc.mkdir(parents=True)
    (etc / "50-cloud-init.yaml").write_text(
        "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    fabric0:\n      match: {name: %s}\n" % fmt._yaml_key(name))
    link = rails.RailLink(0, dict(V4, interface=name))
    (etc / "90-rdmaops-fabric0.yaml").write_text(fmt.netplan_dropin("ethernets", "fabric0", 9000, name, "/etc/netplan/50-cloud-init.yaml"))
    (etc / "90-rdmaops-fabric0-rails.yaml").write_text(
        fmt.netplan_rails_dropin("ethernets", "fabric0", [link], "/etc/netplan/50-cloud-init.yaml"))
    for path in etc.iterdir():
        path.chmod(0o600)
    proc = subprocess.run([NETPLAN, "generate", "--root-dir", str(root)], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rendered = fmt.parse_ini((root / "run/systemd/network/10-netplan-fabric0.network").read_text())
    assert ("Match", "Name", name) in rendered and ("Link", "MTUBytes", "9000") in rendered
    assert ("Network", "Address", "10.10.0.1/31") in rendered


@REAL
@given(name=names)
@example(name="r0*")
@example(name="eth1.100")
def test_ifcfg_route_lines_are_split_by_sh_into_exactly_the_words(name):
    # the network scripts run ``ip route add $line``: unquoted, so split (and globbed) by the shell
    link = rail_link("rails.links[0].interface", interface=name)
    assert (link is not None) == valid_netdev(name)
    if link is None:
        return
    for line in fmt.ifcfg_route_lines([link]):
        assert shell_words("line=%s; ip route add $line" % shlex.quote(line)) == ["route", "add"] + line.split(" ")
        assert line.split(" ")[line.split(" ").index("dev") + 1] == name
