"""Readers and editors of interfaces(5), ifcfg, .network, NetworkManager keyfiles and netplan YAML."""

import difflib
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import formats as fmt

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "fixtures", "netconf")


def fixture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def changed_lines(before, after):
    """Only the lines a diff adds or removes."""
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


# -- ifupdown -------------------------------------------------------------------------------
def test_ifupdown_parses_the_installer_file():
    parsed = fmt.parse_ifupdown(fixture("interfaces.debian-installer"))
    assert [(s.name, s.family, s.method) for s in parsed["stanzas"]] == [("lo", "inet", "loopback"), ("eno1", "inet", "dhcp")]
    assert parsed["sources"] == [("source", "/etc/network/interfaces.d/*")]
    assert parsed["auto"] == ["lo", "eno1"]


def test_ifupdown_parses_tabs_comments_and_continued_lines():
    parsed = fmt.parse_ifupdown(fixture("interfaces.d-fabric"))
    static, inet6, dhcp = parsed["stanzas"]
    assert (static.name, static.method, static.indent) == ("ens1f0np0", "static", "\t")
    assert [opt for _i, opt, _v in static.options] == ["address", "post-up"]
    assert static.option("post-up").endswith("dev ens1f0np0 metric 50")
    assert static.last == 6  # the continued line belongs to the stanza
    assert (inet6.family, inet6.method) == ("inet6", "manual")
    assert dhcp.name == "ens1f1np1" and not dhcp.native_mtu


def test_ifupdown_adds_mtu_to_the_static_stanza_and_changes_nothing_else():
    before = fixture("interfaces.d-fabric")
    assert fmt.ifupdown_mtu(before, "ens1f0np0") is None
    after = fmt.ifupdown_set_mtu(before, "ens1f0np0", 9000)
    assert changed_lines(before, after) == ["+\tmtu 9000"]
    # after the continued post-up line, inside the inet stanza
    assert after.splitlines()[7] == "\tmtu 9000"
    assert fmt.ifupdown_mtu(after, "ens1f0np0") == 9000
    assert fmt.ifupdown_set_mtu(after, "ens1f0np0", 9000) == after


def test_ifupdown_rewrites_an_existing_mtu_in_place():
    before = "auto ens4\niface ens4 inet static\n    address 198.18.0.11/24\n    mtu 1500\n    # keep me\n"
    after = fmt.ifupdown_set_mtu(before, "ens4", 9000)
    assert changed_lines(before, after) == ["-    mtu 1500", "+    mtu 9000"]


def test_ifupdown_dhcp_gets_a_pre_up_command_because_its_method_ignores_mtu():
    before = fixture("interfaces.debian-installer")
    after = fmt.ifupdown_set_mtu(before, "eno1", 9000)
    assert changed_lines(before, after) == ["+    pre-up ip link set dev eno1 mtu 9000"]
    assert fmt.ifupdown_mtu(after, "eno1") == 9000
    again = fmt.ifupdown_set_mtu(after, "eno1", 4200)
    assert changed_lines(after, again) == ["-    pre-up ip link set dev eno1 mtu 9000", "+    pre-up ip link set dev eno1 mtu 4200"]


def test_ifupdown_ignores_mtu_where_the_method_would_ignore_it():
    text = "iface eno1 inet dhcp\n    mtu 9000\n"
    assert fmt.ifupdown_mtu(text, "eno1") is None


def test_ifupdown_refuses_a_file_without_the_stanza():
    with pytest.raises(ValueError):
        fmt.ifupdown_set_mtu(fixture("interfaces.debian-installer"), "ens4", 9000)


def test_ifupdown_block_is_a_manual_stanza_without_addresses():
    parsed = fmt.parse_ifupdown("\n".join(fmt.ifupdown_block("ens4", 9000)) + "\n")
    (stanza,) = parsed["stanzas"]
    assert (stanza.method, stanza.options[0][1:]) == ("manual", ("mtu", "9000"))
    assert parsed["auto"] == ["ens4"]


# -- ifupdown: inherits (interfaces(5), INTERFACE TEMPLATES) --------------------------------
def stanza_mtus(text, interface):
    """The mtu value ifupdown gives each stanza of ``interface`` (inherited lines joined as it joins them)."""
    stanzas = fmt.parse_ifupdown(text)["stanzas"]
    return [
        "\n".join(value for _owner, _i, opt, value in stanza.resolved() if opt == "mtu")
        for stanza in stanzas
        if stanza.name == interface and stanza.error is None
    ]


def test_ifupdown_inherits_resolves_chains_family_and_method():
    stanzas = {(s.name, s.family): s for s in fmt.parse_ifupdown(fixture("interfaces.templates"))["stanzas"]}
    port = stanzas[("ens1f0np0", "inet")]
    assert [link.name for link in port.chain()] == ["ens1f0np0", "roce-v4", "roce-link"]
    assert [(opt, value) for _s, _i, opt, value in port.resolved()] == [
        ("mtu", "4200"),
        ("post-up", "ip link set dev $IFACE txqueuelen 10000"),
        ("netmask", "255.255.255.0"),
        ("post-up", "sysctl -q -w net.ipv4.conf.$IFACE.arp_ignore=1"),
        ("address", "192.168.100.12"),
    ]
    # "iface ens2f0np0 inherits roce-link": family and method come from the parent
    storage = stanzas[("ens2f0np0", "inet")]
    assert (storage.method, storage.own_family, storage.native_mtu) == ("manual", False, True)
    # an inet6 stanza inherits the inet6 template, never the inet one
    assert stanzas[("ens1f1np1", "inet6")].parent is stanzas[("roce-link6", "inet6")]


def test_ifupdown_reads_an_inherited_mtu_and_where_it_comes_from():
    text = fixture("interfaces.templates")
    assert fmt.ifupdown_mtu(text, "ens1f0np0") == 4200
    assert fmt.ifupdown_mtu(text, "ens2f0np0") == 4200
    effective = fmt.ifupdown_effective(fmt.parse_ifupdown(text)["stanzas"], "ens1f0np0")
    assert effective["source"] == dict(kind="mtu", mtu=4200, iface="roce-link", family="inet", method="manual", path=None,
                                       line=10, inherited=True, via=["roce-v4", "roce-link"])
    # dhcp ignores mtu: the template's pre-up command ($IFACE, which ifupdown exports) is what sets it
    effective = fmt.ifupdown_effective(fmt.parse_ifupdown(text)["stanzas"], "eno1")
    assert (effective["mtu"], effective["source"]["kind"], effective["source"]["iface"]) == (9000, "pre-up", "dhcp-jumbo")


def test_ifupdown_inherited_mtu_that_differs_moves_into_the_stanza_and_the_templates_stay():
    before = fixture("interfaces.templates")
    after = fmt.ifupdown_set_mtu(before, "ens1f0np0", 9000)
    assert changed_lines(before, after) == [
        "-iface ens1f0np0 inet static inherits roce-v4",
        "+iface ens1f0np0 inet static",
        "+    # rdmaops.roce link_mtu: options copied from roce-v4 and roce-link (ifupdown cannot override an inherited mtu)",
        "+    mtu 9000",
        "+    post-up ip link set dev $IFACE txqueuelen 10000",
        "+    netmask 255.255.255.0",
        "+    post-up sysctl -q -w net.ipv4.conf.$IFACE.arp_ignore=1",
    ]
    # exactly one mtu for the port; the other port still inherits 4200 from the untouched templates
    assert stanza_mtus(after, "ens1f0np0") == ["9000"]
    assert fmt.ifupdown_mtu(after, "ens1f0np0") == 9000
    assert fmt.ifupdown_mtu(after, "ens1f1np1") == 4200 and fmt.ifupdown_mtu(after, "ens2f0np0") == 4200
    assert fmt.ifupdown_set_mtu(after, "ens1f0np0", 9000) == after


def test_ifupdown_inherited_mtu_that_matches_changes_nothing():
    before = fixture("interfaces.templates")
    for interface, mtu in (("ens1f0np0", 4200), ("ens2f0np0", 4200), ("ens1f1np1", 4200), ("eno1", 9000)):
        assert fmt.ifupdown_set_mtu(before, interface, mtu) == before, interface
        out, detached = fmt.ifupdown_edit_mtu(before, interface, mtu)
        assert (out, detached) == (before, [])


def test_ifupdown_inherits_without_family_gets_them_written_when_it_stops_inheriting():
    before = fixture("interfaces.templates")
    after, detached = fmt.ifupdown_edit_mtu(before, "ens2f0np0", 9000)
    assert [stanza.name for stanza in detached] == ["ens2f0np0"]
    assert changed_lines(before, after) == [
        "-iface ens2f0np0 inherits roce-link",
        "+iface ens2f0np0 inet manual",
        "+    # rdmaops.roce link_mtu: options copied from roce-link (ifupdown cannot override an inherited mtu)",
        "+    mtu 9000",
        "+    post-up ip link set dev $IFACE txqueuelen 10000",
    ]


def test_ifupdown_inet_and_inet6_stanzas_each_get_the_mtu():
    before = fixture("interfaces.templates")
    after = fmt.ifupdown_set_mtu(before, "ens1f1np1", 9000)
    assert stanza_mtus(after, "ens1f1np1") == ["9000", "9000"]
    assert "iface roce-link6 inet6 manual\n    mtu 4200\n" in after and fmt.ifupdown_mtu(after, "ens1f1np1") == 9000


def test_ifupdown_inet6_mtu_only_raises_the_link_mtu():
    # ifupdown 0.8.41: inet6 static/manual run "if [ $(cat .../mtu) -lt N ]; then ip link set ...; else sysctl ...ipv6...mtu=N"
    text = "iface ens4 inet manual\n    mtu 9000\n\niface ens4 inet6 manual\n    mtu 1500\n"
    assert fmt.ifupdown_mtu(text, "ens4") == 9000
    assert fmt.ifupdown_mtu("iface ens4 inet6 manual\n    mtu 9000\n", "ens4") == 9000


def test_ifupdown_dhcp_after_an_inherited_pre_up_gets_its_own_pre_up():
    before = fixture("interfaces.templates")
    after = fmt.ifupdown_set_mtu(before, "eno1", 1500)
    assert changed_lines(before, after) == ["+    pre-up ip link set dev eno1 mtu 1500"]
    assert after.endswith("iface eno1 inet dhcp inherits dhcp-jumbo\n    pre-up ip link set dev eno1 mtu 1500\n")
    assert fmt.ifupdown_mtu(after, "eno1") == 1500  # ifupdown runs the template's pre-up, then ours
    assert "    pre-up ip link set dev $IFACE mtu 9000\n" in after


def test_ifupdown_own_mtu_under_an_inherited_one_is_broken_and_gets_repaired():
    # ifupdown joins the two into "1500\n9000" and runs "ip link set dev ens4 mtu 1500" then "9000 ... up"
    before = "iface tpl inet static\n    mtu 1500\n\niface ens4 inet static inherits tpl\n    address 10.0.0.4/24\n    mtu 9000\n"
    effective = fmt.ifupdown_effective(fmt.parse_ifupdown(before)["stanzas"], "ens4")
    assert effective["mtu"] is None and "a stanza's own mtu does not override an inherited one" in effective["broken"][0]
    after = fmt.ifupdown_set_mtu(before, "ens4", 9000)
    assert after == (
        "iface tpl inet static\n    mtu 1500\n\niface ens4 inet static\n"
        "    # rdmaops.roce link_mtu: options copied from tpl (ifupdown cannot override an inherited mtu)\n"
        "    address 10.0.0.4/24\n    mtu 9000\n"
    )
    assert stanza_mtus(after, "ens4") == ["9000"]


def test_ifupdown_a_second_mtu_line_is_removed_not_rewritten():
    before = "iface ens4 inet manual\n    mtu 1500\n    # keep me\n    mtu 4200\n"
    assert fmt.ifupdown_mtu(before, "ens4") is None  # "1500\n4200": broken
    after = fmt.ifupdown_set_mtu(before, "ens4", 9000)
    assert after == "iface ens4 inet manual\n    mtu 9000\n    # keep me\n"


def test_ifupdown_refuses_what_ifupdown_rejects():
    # a parent defined later, or in another family, is "unknown iface to inherit from": ifupdown stops reading
    later = "iface ens4 inet static inherits tpl\n    address 10.0.0.4/24\n\niface tpl inet manual\n    mtu 4200\n"
    inet6 = "iface tpl inet manual\n    mtu 4200\n\niface ens4 inet6 manual inherits tpl\n"
    for text, error in ((later, "unknown iface to inherit from: tpl (inet)"), (inet6, "unknown iface to inherit from: tpl (inet6)")):
        (stanza,) = [s for s in fmt.parse_ifupdown(text)["stanzas"] if s.name == "ens4"]
        assert stanza.error == error
        assert fmt.ifupdown_mtu(text, "ens4") is None
        with pytest.raises(ValueError, match="ifupdown rejects"):
            fmt.ifupdown_set_mtu(text, "ens4", 9000)


def test_ifupdown_keeps_crlf_and_form_feeds_it_does_not_own():
    before = "# lab\r\n\x0c\niface ens4 inet manual\r\n    mtu 1500\r\n    up true\x0c\r\n"
    after = fmt.ifupdown_set_mtu(before, "ens4", 9000)
    assert after == before.replace("mtu 1500", "mtu 9000")
    # a backslash before "\r" does not continue the line (ifupdown tests it before stripping blanks)
    text = "iface ens4 inet manual\n    up true \\\r\n    mtu 4200\n"
    assert fmt.ifupdown_mtu(text, "ens4") == 4200


def test_ifupdown_resolve_follows_the_order_it_is_given():
    # a template in a file sourced at the top comes before the stanzas after the source line
    template = fmt.parse_ifupdown("iface tpl inet manual\n    mtu 4200\n")["stanzas"]
    main = fmt.parse_ifupdown("iface ens4 inet static inherits tpl\n    address 10.0.0.4/24\n")["stanzas"]
    assert main[0].error is not None
    fmt.ifupdown_resolve(template + main)
    assert main[0].error is None and fmt.ifupdown_effective(main, "ens4")["mtu"] == 4200
    after = fmt.ifupdown_set_mtu("iface ens4 inet static inherits tpl\n    address 10.0.0.4/24\n", "ens4", 9000, main)
    assert after == (
        "iface ens4 inet static\n    # rdmaops.roce link_mtu: options copied from tpl (ifupdown cannot override an inherited mtu)\n"
        "    mtu 9000\n    address 10.0.0.4/24\n"
    )


# -- the same files read by Debian's ifupdown itself ------------------------------------------
# ifquery/ifup live in /usr/sbin, which a user's PATH may lack.
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", os.defpath), "/usr/sbin", "/sbin"])
IFQUERY = shutil.which("ifquery", path=SBIN_PATH)
IFUP = os.path.join(os.path.dirname(IFQUERY), "ifup") if IFQUERY else None  # ifquery is ifup under another name
needs_ifupdown = pytest.mark.skipif(IFQUERY is None, reason="Debian's ifupdown is not installed (no ifquery): apt-get install ifupdown")


def ifupdown_run(tmp_path, text, interface, no_act=False):
    """``ifquery`` (or ``ifup --no-act``) on ``text``, with a state dir of the test's own: (rc, stdout, stderr).

    Both work as any user and never touch the host's links or /run/network: ifquery only reads,
    ``--no-act`` prints the commands (on stderr) instead of running them.
    """
    path = tmp_path / "interfaces"
    path.write_text(text)
    argv = [IFUP, "--no-act"] if no_act else [IFQUERY]
    argv += ["-i", str(path), "--state-dir", str(tmp_path / "state"), interface]
    proc = subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    return proc.returncode, proc.stdout, proc.stderr


def ifquery(tmp_path, text, interface):
    """ifquery's ``option: value`` lines as a list of (option, value); a value ifupdown joined keeps its newline."""
    rc, out, err = ifupdown_run(tmp_path, text, interface)
    assert rc == 0 and err == "", err
    options = []
    for line in out.splitlines():
        match = re.match(r"^([A-Za-z0-9_-]+): ?(.*)$", line)
        if match:
            options.append([match.group(1), match.group(2)])
        else:
            options[-1][1] += "\n" + line
    return [tuple(option) for option in options]


def ifup_commands(tmp_path, text, interface):
    """The commands ``ifup --no-act`` would run; fails on a warning or on a line that is no command."""
    rc, out, err = ifupdown_run(tmp_path, text, interface, no_act=True)
    assert rc == 0 and out == "", err
    commands = [line.strip() for line in err.splitlines() if line.strip()]
    assert not [line for line in commands if line.startswith("ifup:")], err
    for line in commands:
        # each line is one shell command: a command name, a path, "[" or an assignment; a joined
        # value ("mtu 1500\n9000") leaves a line that starts with the number
        assert re.match(r"^(?:[A-Za-z_][\w.+-]*|/[\w./+-]+|\[|[A-Za-z_]\w*=\S*)(?:\s|;|$)", line), (
            "ifup would run a broken command: %r" % line
        )
    return commands


def mtu_commands(commands):
    return [line for line in commands if re.search(r"\bmtu\b", line)]


@needs_ifupdown
def test_real_ifupdown_shows_the_broken_command_of_an_mtu_line_under_an_inherited_one(tmp_path):
    # what the old code wrote: its own mtu line under the template's
    text = "iface tpl inet static\n    mtu 1500\n\niface ens4 inet static inherits tpl\n    address 10.0.0.4/24\n    mtu 9000\n"
    assert ("mtu", "1500\n9000") in ifquery(tmp_path, text, "ens4")
    with pytest.raises(AssertionError, match="broken command: '9000"):
        ifup_commands(tmp_path, text, "ens4")


@needs_ifupdown
@pytest.mark.parametrize("interface", ["ens1f0np0", "ens1f1np1", "ens2f0np0", "eno1", "roce-v4"])
def test_real_ifquery_agrees_with_the_parser(tmp_path, interface):
    text = fixture("interfaces.templates")
    real = [value for option, value in ifquery(tmp_path, text, interface) if option == "mtu"]
    assert real == [value for value in stanza_mtus(text, interface) if value]


@needs_ifupdown
@pytest.mark.parametrize("interface,mtu", [("ens1f0np0", 9000), ("ens2f0np0", 9000), ("ens1f1np1", 9000), ("ens1f0np0", 1500)])
def test_real_ifupdown_reads_exactly_the_new_mtu_from_what_we_write(tmp_path, interface, mtu):
    before = fixture("interfaces.templates")
    after = fmt.ifupdown_set_mtu(before, interface, mtu)
    was = ifquery(tmp_path, before, interface)
    now = ifquery(tmp_path, after, interface)
    # one mtu per stanza of the interface (inet, inet6), each exactly the new value
    assert [value for option, value in now if option == "mtu"] == [str(mtu)] * len([o for o in was if o[0] == "mtu"])
    # the stanza lost nothing else: the same options, in ifupdown's order
    assert [o for o in now if o[0] != "mtu"] == [o for o in was if o[0] != "mtu"]
    commands = mtu_commands(ifup_commands(tmp_path, after, interface))
    assert commands and all(re.search(r"\bmtu %d\b" % mtu, line) for line in commands)
    assert not [line for line in commands if "4200" in line]
    # the templates and the ports that inherit them read as before
    for other in ("ens1f0np0", "ens1f1np1", "ens2f0np0", "eno1", "roce-link", "roce-v4", "roce-link6"):
        if other != interface:
            assert ifquery(tmp_path, after, other) == ifquery(tmp_path, before, other)


@needs_ifupdown
def test_real_ifupdown_dhcp_runs_the_template_pre_up_then_ours(tmp_path):
    after = fmt.ifupdown_set_mtu(fixture("interfaces.templates"), "eno1", 1500)
    assert mtu_commands(ifup_commands(tmp_path, after, "eno1")) == [
        "ip link set dev $IFACE mtu 9000",
        "ip link set dev eno1 mtu 1500",
    ]


@needs_ifupdown
def test_real_ifupdown_repaired_stanza_runs_one_mtu_command(tmp_path):
    before = "iface tpl inet static\n    mtu 1500\n\niface ens4 inet static inherits tpl\n    address 10.0.0.4/24\n    mtu 9000\n"
    after = fmt.ifupdown_set_mtu(before, "ens4", 9000)
    assert [value for option, value in ifquery(tmp_path, after, "ens4") if option == "mtu"] == ["9000"]
    assert mtu_commands(ifup_commands(tmp_path, after, "ens4")) == ["ip link set dev ens4 mtu 9000  up"]


# -- ifcfg ----------------------------------------------------------------------------------
def test_ifcfg_appends_mtu():
    before = fixture("ifcfg-ens1f0np0")
    after = fmt.ifcfg_set_mtu(before, 9000)
    assert changed_lines(before, after) == ["+MTU=9000"]
    assert fmt.parse_ifcfg(after)["MTU"] == "9000"


def test_ifcfg_keeps_quoting():
    before = 'DEVICE="ens1f0np0"\nMTU="1500"\nONBOOT=yes\n'
    assert fmt.ifcfg_set_mtu(before, 9000) == 'DEVICE="ens1f0np0"\nMTU="9000"\nONBOOT=yes\n'
    assert fmt.parse_ifcfg(before)["DEVICE"] == "ens1f0np0"


# -- INI: NetworkManager keyfiles and .network files ---------------------------------------
def test_keyfile_edit_matches_what_networkmanager_wrote():
    before = fixture("fabric0.nmconnection")
    after = fmt.ini_set(before, ["ethernet", "802-3-ethernet"], "mtu", "9000")
    assert changed_lines(before, after) == ["+mtu=9000"]
    nm_wrote = fixture("fabric0-after-nmcli.nmconnection")
    # NetworkManager's own edit differs only by the activation timestamp it adds.
    assert changed_lines(after, nm_wrote) == ["+timestamp=1795304333"]
    assert fmt.ini_set(after, ["ethernet", "802-3-ethernet"], "mtu", "4200").count("mtu=") == 1


def test_keyfile_without_the_section_gets_one():
    before = "[connection]\nid=x\ntype=ethernet\n\n[ipv4]\nmethod=auto\n"
    after = fmt.ini_set(before, ["ethernet", "802-3-ethernet"], "mtu", "9000")
    assert after.endswith("method=auto\n\n[ethernet]\nmtu=9000\n")


def test_keyfile_with_the_long_section_name_is_edited_there():
    before = "[connection]\nid=x\n\n[802-3-ethernet]\nmac-address=AA:BB:CC:DD:EE:FF\nmtu=1500\n"
    after = fmt.ini_set(before, ["ethernet", "802-3-ethernet"], "mtu", "9000")
    assert changed_lines(before, after) == ["-mtu=1500", "+mtu=9000"]


def test_network_file_reads_mtu_and_sizes():
    entries = fmt.parse_ini(fixture("10-netplan-fabric0.network"))
    assert fmt.parse_bytes(fmt.ini_get(entries, ["Link"], "MTUBytes")) == 9000
    assert fmt.parse_bytes("9K") == 9216
    assert fmt.parse_bytes("jumbo") is None


def test_networkd_match_rules():
    link = dict(name="ens1f0np0", mac="b8:3f:d2:a1:b2:c4", permanent_mac=None, driver="mlx5_core", type="ether")

    def match(text):
        return fmt.networkd_match(fmt.parse_ini(text), link)

    assert match("[Match]\nName=ens1f0np0\n") is True
    assert match("[Match]\nName=ens1f* eno1\n") is True
    assert match("[Match]\nName=!ens1f* eno1\n") is False
    assert match("[Match]\nName=eno1\n") is False
    assert match("[Match]\nMACAddress=B8:3F:D2:A1:B2:C4\n") is True
    assert match("[Match]\nDriver=mlx5_*\nType=ether\n") is True
    assert match("[Network]\nDHCP=yes\n") is True  # no [Match]: every link
    assert match("[Match]\nName=ens1f0np0\nPath=pci-0000:3d:00.0\n") is None  # cannot evaluate Path=
    assert match("[Match]\nName=eno1\nPath=pci-0000:3d:00.0\n") is False  # Name= already fails
    real = fmt.parse_ini(fixture("10-netplan-fabric0.network"))
    assert fmt.networkd_match(real, dict(name="veth-b", mac="3e:38:3c:48:1d:19", permanent_mac="3e:38:3c:48:1d:19")) is True


# -- netplan --------------------------------------------------------------------------------
def test_netplan_match_by_macaddress_and_set_name():
    data = yaml.safe_load(fixture("50-cloud-init.netplan"))
    merged = fmt.netplan_merge([("/etc/netplan/50-cloud-init.yaml", data)])
    definition = merged[("ethernets", "fabric0")]
    link = dict(name="veth-b", mac="3e:38:3c:48:1d:19")
    assert fmt.netplan_matches("ethernets", "fabric0", definition, link)
    assert not fmt.netplan_matches("ethernets", "fabric0", definition, dict(link, mac="3e:38:3c:48:1d:20"))
    assert not fmt.netplan_matches("ethernets", "fabric0", definition, dict(link, name="eth1"))  # set-name differs
    assert definition["__files__"] == ["/etc/netplan/50-cloud-init.yaml"]


def test_netplan_match_by_name_glob_and_driver():
    definition = dict(match=dict(name="ens1f*", driver=["mlx5_core", "ice"]))
    assert fmt.netplan_matches("ethernets", "rdma", definition, dict(name="ens1f1np1", driver="mlx5_core"))
    assert not fmt.netplan_matches("ethernets", "rdma", definition, dict(name="ens1f1np1", driver="virtio_net"))
    assert fmt.netplan_matches("ethernets", "eno1", {}, dict(name="eno1"))
    assert fmt.netplan_matches("vlans", "bond0.100", dict(id=100, link="bond0"), dict(name="bond0.100"))
    assert not fmt.netplan_matches("bonds", "bond0", {}, dict(name="bond1"))


def test_netplan_later_files_win_and_the_dropin_sets_only_mtu():
    base = yaml.safe_load(fixture("50-cloud-init.netplan"))
    text = fmt.netplan_dropin("ethernets", "fabric0", 9000, "veth-b", "/etc/netplan/50-cloud-init.yaml")
    dropin = yaml.safe_load(text)
    assert dropin == {"network": {"version": 2, "ethernets": {"fabric0": {"mtu": 9000}}}}
    merged = fmt.netplan_merge([("/etc/netplan/50-cloud-init.yaml", base), ("/etc/netplan/90-rdmaops-fabric0.yaml", dropin)])
    definition = merged[("ethernets", "fabric0")]
    assert definition["mtu"] == 9000 and definition["__mtu_file__"] == "/etc/netplan/90-rdmaops-fabric0.yaml"
    assert definition["addresses"] == ["198.18.0.21/24"] and definition["set-name"] == "veth-b"
    later = {"network": {"version": 2, "ethernets": {"fabric0": {"mtu": 1500}}}}
    merged = fmt.netplan_merge([("a", base), ("b", dropin), ("c", later)])
    assert merged[("ethernets", "fabric0")]["mtu"] == 1500


def test_netplan_dropin_quotes_ids_yaml_would_misread():
    text = fmt.netplan_dropin("ethernets", "yes", 9000, "eth1", "x")
    assert yaml.safe_load(text)["network"]["ethernets"] == {"yes": {"mtu": 9000}}


def test_netplan_renderer():
    docs = [("a", {"network": {"renderer": "NetworkManager"}}), ("b", {"network": {"version": 2}})]
    assert fmt.netplan_renderer(docs, {}) == "NetworkManager"
    assert fmt.netplan_renderer(docs, {"renderer": "networkd"}) == "networkd"
    assert fmt.netplan_renderer([], {}) == "networkd"
