"""validate_probe's nic read (rdmaops.roce.validate's rails read, nic_layer's engine in check mode in a
call that is not in check mode) on a real kernel: a network namespace of the test's own, as
test_rail_links.py runs the NIC layer's rails."""

from test_rail_links import V4, V4_SUBNET, needs_netns, run_in_netns


@needs_netns
def test_the_rails_read_is_nic_layers_check_mode_and_the_kernel_keeps_its_state(tmp_path):
    """The role's rails read (persist false) on veths without their rails: what nic_layer's check mode
    reads and would change, and the namespace's addresses, rules, routes and sysctls untouched."""
    params = dict(rails=dict(links=[V4, V4_SUBNET], persist=False), boot_reapply=False, unsupported="warn")
    out = run_in_netns(tmp_path, params, ["check", "probe"])
    check, merged = out["steps"]
    assert "error" not in check and merged["result"]["failed"] is False, merged
    for key in ("rails", "changes", "disruption"):
        assert merged["result"][key] == check["result"][key], key
    assert "rails: ip -4 rule add from 10.10.0.1 table 100 priority 1000" in merged["result"]["changes"]
    assert not [r for r in out["rules"] if r.get("src") in ("10.10.0.1", "10.20.0.2")], out["rules"]
    assert not [r for r in out["routes"] if r.get("table") in ("100", "101")], out["routes"]
    assert not [a for link in out["addresses"] for a in link["addr_info"] if a["local"] in ("10.10.0.1", "10.20.0.2")]
    read = check["result"]["rails"]["before"]
    assert out["sysctls"] == dict(("%s.%s" % (netdev, key), read[netdev]["sysctls"][key])
                                  for netdev in ("v0", "v1") for key in ("arp_ignore", "arp_announce", "rp_filter"))
    assert out["sysctls"]["v0.arp_ignore"] != 1 and "rails: net.ipv4.conf.v0.arp_ignore = 1 (was 0)" in merged["result"]["changes"]
