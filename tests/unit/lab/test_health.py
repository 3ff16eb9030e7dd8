"""The lab's fabric health (tests/lab/health.py) over probe outputs recorded in lab VMs: a healthy
lab, a VM whose fabric NIC is down, a VM whose switch port is down, a VM whose transmit queue
stalled (the kernel's watchdog, TX errors), a VM that does not answer SSH."""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import health  # noqa: E402  pylint: disable=wrong-import-position
import lab  # noqa: E402  pylint: disable=wrong-import-position

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "health")
ADDR = {"vm1": "198.18.0.11", "vm2": "198.18.0.12", "vm3": "198.18.0.13", "vm4": "198.18.0.14"}
PORT_UP = '[{"ifindex":5,"ifname":"rl54d4b2v2","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":9216,' \
          '"qdisc":"fq_codel","master":"br-fabric","operstate":"UP"}]'


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def probe(name):
    return health.parse_probe(fixture(name))


def view(probes, ports=None):
    ports = ports or {}
    return {name: {"address": ADDR[name], "probe": p, "switch_port": ports.get(name, health.parse_switch_port(PORT_UP))}
            for name, p in probes.items()}


def test_probe_command_pings_every_peer_in_parallel_and_reads_the_fabric_netdev():
    command = health.probe_command(["198.18.0.11", "198.18.0.13"])
    assert command.count("ping -n -q -c 3") == 2
    assert command.index("== netdev") > command.index("198.18.0.13 >")  # the pings start first, run meanwhile
    assert "wait;" in command and "/sys/class/infiniband/rxe0/parent" in command
    assert "ip -j -s link show" in command and "NETDEV WATCHDOG" in command
    assert "ping" not in health.probe_command([])


def test_parse_a_healthy_probe_recorded_under_load():
    p = probe("vm2_healthy_4vms.txt")
    assert p["netdev"] == "ens4"
    assert p["port_active"] and p["port_state"] == "4: ACTIVE"
    assert p["link"]["up"] and p["link"]["carrier"] and p["link"]["mtu"] == 9000
    assert p["link"]["tx_errors"] == 0 and p["link"]["tx_packets"] == 915
    assert p["watchdog_count"] == 0
    # -c 3 -w 4: ping may send a fourth request while a reply is late; one was lost here
    assert p["pings"] == {"198.18.0.11": (4, 3), "198.18.0.13": (3, 3)}
    assert len(p["neighbours"]) == 3


def test_ping_summary_variants():
    assert health.parse_ping(["3 packets transmitted, 0 received, +3 errors, 100% packet loss, time 2040ms"]) == (3, 0)
    assert health.parse_ping(["ping: SO_BINDTODEVICE ens4: No such device"]) == (0, 0)


def test_a_healthy_lab_is_healthy():
    p = probe("vm2_healthy_4vms.txt")
    v = view({"vm2": p, "vm1": health.parse_probe(fixture("vm1_healthy.txt")), "vm3": None})
    verdict = health.assess({k: v[k] for k in ("vm1", "vm2")})
    assert verdict["healthy"], verdict
    assert verdict["vms"]["vm2"]["pings"]["vm1"] == {"sent": 4, "received": 3}


def test_a_vm_that_does_not_answer_ssh_is_unhealthy_and_its_peers_are_not_blamed():
    probes = {"vm1": health.parse_probe(fixture("vm1_healthy.txt")), "vm2": None}
    verdict = health.assess(view(probes))
    assert not verdict["healthy"]
    assert verdict["vms"]["vm2"]["problems"] == ["does not answer SSH"]
    assert verdict["vms"]["vm1"]["healthy"]


def test_fabric_nic_down_in_the_vm_is_blamed_on_that_vm_with_evidence():
    probes = {"vm1": probe("vm1_peer_nic_down.txt"), "vm2": probe("vm2_nic_down.txt")}
    verdict = health.assess(view(probes))
    assert not verdict["healthy"]
    vm2 = verdict["vms"]["vm2"]
    assert any("administratively down" in e for e in vm2["evidence"]), vm2
    assert any(p.startswith("fabric path dead") for p in vm2["problems"])
    assert verdict["vms"]["vm1"]["healthy"], verdict["vms"]["vm1"]
    assert "UNHEALTHY" in "\n".join(health.describe(verdict))


def test_switch_port_down_is_blamed_on_the_vm_behind_it():
    port_down = fixture("switch_port_down.json")  # ip -j link show of vm2's tap, set down in the namespace
    probes = {"vm1": probe("vm1_switch_port_down.txt"), "vm2": probe("vm2_switch_port_down.txt")}
    verdict = health.assess(view(probes, {"vm2": health.parse_switch_port(port_down)}))
    assert not verdict["vms"]["vm2"]["healthy"]
    assert "switch port is down" in verdict["vms"]["vm2"]["evidence"]
    assert verdict["vms"]["vm1"]["healthy"]


def test_a_dead_path_without_local_evidence_blames_both_ends():
    probes = {"vm1": probe("vm1_switch_port_down.txt"), "vm2": probe("vm2_switch_port_down.txt")}
    verdict = health.assess(view(probes))  # the namespace not looked at: nobody shows a cause
    assert not verdict["vms"]["vm1"]["healthy"] and not verdict["vms"]["vm2"]["healthy"]
    assert "no answer to pings from vm2" in verdict["vms"]["vm1"]["problems"][0]


def test_rxe_port_down_is_a_problem_even_when_pings_pass():
    text = fixture("vm1_healthy.txt").replace("4: ACTIVE", "1: DOWN")
    verdict = health.assess(view({"vm1": health.parse_probe(text), "vm2": probe("vm2_healthy_4vms.txt")}))
    assert verdict["vms"]["vm1"]["problems"] == ["rxe0 port 1 is 1: DOWN, not ACTIVE"]


def test_switch_port_parser():
    port = health.parse_switch_port(PORT_UP)
    assert port == {"up": True, "carrier": True, "mtu": 9216, "master": "br-fabric"}
    assert health.parse_switch_port("Device \"x\" does not exist.") is None


def test_status_exit_code_and_json_carry_the_fabric_verdict(monkeypatch, tmp_path, capsys):
    record = {"netns": "ns", "bridge": "br-fabric", "image_dir": "/img", "vms": {
        "vm1": {"name": "vm1", "index": 1, "pid": 1, "ssh_port": 2401, "fabric_address": "198.18.0.11/24", "tap": "t1"},
        "vm2": {"name": "vm2", "index": 2, "pid": 2, "ssh_port": 2402, "fabric_address": "198.18.0.12/24", "tap": "t2"}}}
    probes = {"vm1": probe("vm1_peer_nic_down.txt"), "vm2": probe("vm2_nic_down.txt")}
    monkeypatch.setattr(lab.Lab, "load", lambda self: record)
    monkeypatch.setattr(lab.Lab, "alive", lambda self, vm: True)
    monkeypatch.setattr(lab, "ssh_banner", lambda port: True)
    monkeypatch.setattr(lab, "netns_exists", lambda name: True)
    monkeypatch.setattr(lab, "link_mtu", lambda name, netns=None: 9216)
    monkeypatch.setattr(lab.Lab, "probe_fabric", lambda self, vm, peers, *rail2: probes[vm["name"]])
    monkeypatch.setattr(lab.Lab, "switch_port", lambda self, rec, vm: health.parse_switch_port(PORT_UP))
    assert lab.main(["--state-dir", str(tmp_path), "status", "--json"]) == 1
    out = capsys.readouterr().out
    assert '"healthy": false' in out and "administratively down" in out
    probes["vm2"] = probe("vm2_healthy_4vms.txt")
    probes["vm1"] = health.parse_probe(fixture("vm1_healthy.txt"))
    assert lab.main(["--state-dir", str(tmp_path), "status"]) == 0
    assert "fabric: healthy" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(FIXTURES) if n.endswith(".txt")))
def test_every_recorded_probe_parses(name):
    p = probe(name)
    assert p["netdev"] == "ens4" and p["link"] is not None and p["pings"]


class HealDouble:
    """What heal sees of the lab, scripted: the verdicts it gets in turn, the remedies it calls."""

    def __init__(self, monkeypatch, tmp_path, verdicts, answers_ssh=True, port=None):
        self.calls = []
        self.verdicts = list(verdicts)
        self.record = {"netns": "ns", "bridge": "br-fabric", "image_dir": "/img", "vms": {
            "vm2": {"name": "vm2", "index": 2, "pid": 2, "ssh_port": 2402, "fabric_address": "198.18.0.12/24",
                    "tap": "t2", "port_mtu": 9216, "fabric_mac": "52:54:00:18:00:12"}}}
        port = port or health.parse_switch_port(PORT_UP)
        port["mtu"] = 9216
        monkeypatch.setattr(lab, "require_root", lambda: None)
        monkeypatch.setattr(lab.time, "sleep", lambda seconds: None)  # the SSH retries' pauses
        monkeypatch.setattr(lab.Lab, "load", lambda _self: self.record)
        monkeypatch.setattr(lab.Lab, "alive", lambda _self, vm: True)
        monkeypatch.setattr(lab.Lab, "fabric_health", lambda _self, rec: {"vms": {"vm2": self.verdicts.pop(0)}})
        monkeypatch.setattr(lab.Lab, "switch_port", lambda _self, rec, vm: port)
        monkeypatch.setattr(lab.Lab, "plug_tap", lambda _self, vm: self.calls.append("plug"))
        monkeypatch.setattr(lab.Lab, "probe", lambda _self, vm: ("boot", True) if answers_ssh else None)
        monkeypatch.setattr(lab.Lab, "ssh_output", lambda _self, vm, cmd, timeout=30: self.calls.append(
            "nic reset %s" % ("52:54:00:18:00:12" in cmd)) or "re-bound")
        monkeypatch.setattr(lab.Lab, "reboot", lambda _self, name, timeout: self.calls.append("reboot"))
        monkeypatch.setattr(lab.Lab, "power_cycle", lambda _self, rec, name, timeout: self.calls.append("power"))
        self.lab = lab.Lab(str(tmp_path), str(tmp_path))


SICK = {"healthy": False, "problems": ["fabric path dead: no answer to pings from vm1"],
        "evidence": ["kernel log: 12 transmit watchdog line(s), last: TX timeout on queue: 0"]}
WELL = {"healthy": True, "problems": [], "evidence": []}


def test_heal_stops_at_the_first_remedy_that_works(monkeypatch, tmp_path):
    double = HealDouble(monkeypatch, tmp_path, [SICK, WELL])
    assert double.lab.heal("vm2", 60) == "NIC reset"
    assert double.calls == ["nic reset True"]  # the NIC found by its MAC


def test_heal_goes_on_to_a_reboot_when_the_nic_reset_does_not_help(monkeypatch, tmp_path):
    double = HealDouble(monkeypatch, tmp_path, [SICK, SICK, WELL])
    assert double.lab.heal("vm2", 60) == "reboot"
    assert double.calls == ["nic reset True", "reboot"]


def test_heal_plugs_a_switch_port_in_first(monkeypatch, tmp_path):
    down = health.parse_switch_port(PORT_UP)
    down["up"] = False
    double = HealDouble(monkeypatch, tmp_path, [SICK, WELL], port=down)
    assert double.lab.heal("vm2", 60) == "switch port"
    assert double.calls == ["plug"]


def test_heal_power_cycles_a_vm_without_ssh_and_fails_loudly_if_that_does_not_help(monkeypatch, tmp_path):
    double = HealDouble(monkeypatch, tmp_path, [SICK, WELL], answers_ssh=False)
    assert double.lab.heal("vm2", 60) == "power cycle"
    assert double.calls == ["power"]
    double = HealDouble(monkeypatch, tmp_path, [SICK, SICK], answers_ssh=False)
    with pytest.raises(lab.LabError, match="still dead after a power cycle"):
        double.lab.heal("vm2", 60)


def test_heal_leaves_a_healthy_vm_alone(monkeypatch, tmp_path):
    double = HealDouble(monkeypatch, tmp_path, [WELL])
    assert double.lab.heal("vm2", 60) is None
    assert not double.calls


# ---------------------------------------------------------------- two rails (recorded in a two-rail lab)
ADDR2 = {"vm1": "198.18.0.21", "vm2": "198.18.0.22"}
RAIL2_PORT_UP = PORT_UP.replace("br-fabric", "br-rail2")


def view2(probes, rail2_ports=None):
    rail2_ports = rail2_ports or {}
    return {name: {"address": ADDR[name], "probe": p, "switch_port": health.parse_switch_port(PORT_UP),
                   "rail2_address": ADDR2[name], "rail2_switch_port": rail2_ports.get(name, health.parse_switch_port(RAIL2_PORT_UP))}
            for name, p in probes.items()}


def test_two_rail_probe_pings_each_rail_from_the_rails_address():
    command = health.probe_command(["198.18.0.12"], "198.18.0.21", ["198.18.0.22"])
    assert "-I 198.18.0.21 198.18.0.22" in command and "rxe1/ports/1/state" in command
    assert "ip -4 -o addr show dev" in command  # rail 1's pings leave from rail 1's address, not bound to the netdev
    assert "rxe1" not in health.probe_command(["198.18.0.12"])  # one rail: as before


def test_a_healthy_two_rail_lab_pings_both_rails():
    verdict = health.assess(view2({"vm1": probe("vm1_two_rails_healthy.txt"), "vm2": probe("vm2_two_rails_healthy.txt")}))
    assert verdict["healthy"]
    vm1 = verdict["vms"]["vm1"]
    assert vm1["pings"] == {"vm2": {"sent": 6, "received": 6}} and vm1["rail2_port_state"] == "4: ACTIVE"
    assert vm1["rail_pings"] == {"198.18.0.12": {"sent": 3, "received": 3}, "198.18.0.22": {"sent": 3, "received": 3}}
    assert "rxe1 4: ACTIVE" in health.describe(verdict)[0]


def test_a_rail_2_switch_port_down_is_blamed_on_the_vm_behind_it():
    # vm2's rail-2 tap down before the rails were configured: its replies to vm1's rail-1 pings left by
    # rail 2 as well (the main table's first route on vm2 was rail 2's), so both rails' pings failed
    port_down = health.parse_switch_port(fixture("rail2_port_down.json"))
    verdict = health.assess(view2({"vm1": probe("vm1_rail2_port_down.txt"), "vm2": probe("vm2_rail2_port_down.txt")},
                                  {"vm2": port_down}))
    assert not verdict["healthy"]
    assert verdict["vms"]["vm1"]["healthy"]
    assert verdict["vms"]["vm2"]["evidence"] == ["rail-2 switch port is down"]
    assert verdict["vms"]["vm2"]["problems"] == ["fabric path dead: no answer to pings from vm1; gets no answer from vm1"]
