"""iproute2 JSON output."""

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers import iproute as parsers


def test_ip_addr_json_mixed_families():
    text = (
        '[{"ifname":"ens4","addr_info":[{"family":"inet","local":"198.18.0.11","prefixlen":24},'
        '{"family":"inet6","local":"fe80::5054:ff:fe12:3456","prefixlen":64}]},'
        '{"ifname":"ens5","addr_info":[]}]'
    )
    assert parsers.parse_ip_addr_json(text) == {
        "ens4": {"ipv4": ["198.18.0.11/24"], "ipv6": ["fe80::5054:ff:fe12:3456/64"]},
        "ens5": {"ipv4": [], "ipv6": []},
    }
    assert parsers.parse_ip_addr_json("not json") == {}


def test_ip_addr_json_skips_malformed_entries_instead_of_failing():
    # a broken tool only costs facts: entries that are not objects used to raise AttributeError
    text = '[{"ifname":"ens4","addr_info":["x",{"local":"10.0.0.1","prefixlen":24},{"local":"bad","prefixlen":8}]},"y",{}]'
    assert parsers.parse_ip_addr_json(text) == {"ens4": {"ipv4": ["10.0.0.1/24"], "ipv6": []}}
    assert parsers.parse_ip_addr_json('{"ifname":"ens4"}') == {}
    assert parsers.parse_ip_addr_json(None) == {}
