"""fabric_check's checks on real recorded hosts: the lab's Soft-RoCE VM (rdma_facts on its recorded
trees) and the CX-7 tree whose QoS state nic_layer reads in check mode, healthy and with one fault each."""

import copy
import os
import sys

import pytest
import yaml

import hosttree
from fixtures.qos import trees

from ansible_collections.rdmaops.roce.plugins.filter.roce_nic_ports import nic_ports
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.findings import FINDING_KEYS
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.verdict import fabric_check

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, *[os.pardir] * 5))
PERFTEST = os.path.join(REPO, "tests", "unit", "fixtures", "perftest")
LAB_VARS = yaml.safe_load(open(os.path.join(REPO, "inventories", "lab", "group_vars", "all.yml")))
LAB_FABRIC = LAB_VARS["roce_fabric"]
LAB_FRACTION = LAB_VARS["validate_min_bw_fraction"]  # Soft-RoCE under emulation: see the inventory
INTENT = resolve_intent(LAB_FABRIC)


def read(name):
    with open(os.path.join(PERFTEST, name)) as handle:
        return handle.read()


def rxe_facts(tmp_path, name="rxe_bookworm_mtu9000.json", edit=None):
    """rdma_facts of the lab VM's recorded tree, ``edit`` changing the manifest first (a real fault in the tree)."""
    manifest = hosttree.load(name)
    if edit:
        edit(manifest)
    return hosttree.gather_facts(tmp_path, manifest)[0]


def measured(host, peer, address, bw="ib_write_bw.txt", lat="ib_write_lat.txt"):
    """What the role records for a pair measured in the lab (perftest's real output)."""
    ping = dict(host=host, peer=peer, address=address, size=INTENT["host_mtu"] - 28, rc=0, stdout=read("ping_ok.txt"), stderr="")
    runs = [dict(test="ib_write_bw", host=host, peer=peer, device="rxe0/1", peer_device="rxe0/1", gid_index=1, tos=106, rc=0,
                 stdout=read(bw), stderr=""),
            dict(test="ib_write_lat", host=host, peer=peer, device="rxe0/1", peer_device="rxe0/1", gid_index=1, tos=106, rc=0,
                 stdout=read(lat), stderr="")]
    return dict(pings=[ping], rdma_runs=runs)


@pytest.fixture
def lab(tmp_path):
    """Two healthy lab VMs (the recorded Soft-RoCE VM at MTU 9000), vm1 measuring against vm2."""
    vm1 = dict(rdma=rxe_facts(tmp_path / "vm1"), nic=None)
    vm1.update(measured("vm1", "vm2", "198.18.0.12"))
    vm2 = dict(rdma=rxe_facts(tmp_path / "vm2"), nic=None)
    return dict(vm1=vm1, vm2=vm2)


def failed(result):
    return [f for f in result["findings"] if f["passed"] is False]


def one_failure(result, host, field):
    bad = failed(result)
    assert [(f["host"], f["field"]) for f in bad if f["host"] == host and f["field"] == field], bad
    return [f for f in bad if f["host"] == host and f["field"] == field][0]


def test_healthy_lab_has_no_failing_finding_and_records_the_measurements(lab):
    result = fabric_check(INTENT, lab, switches={}, min_bw_fraction=LAB_FRACTION)
    assert failed(result) == []
    assert result["passed"] is True
    assert all(tuple(sorted(f)) == tuple(sorted(FINDING_KEYS)) for f in result["findings"])
    checked = dict(((f["check"], f["host"], f["field"]), f["passed"]) for f in result["findings"])
    for host in ("vm1", "vm2"):
        assert checked[("mtu", host, "mtu")] is True and checked[("mtu", host, "active_mtu")] is True
        assert checked[("modules", host, "rdma_cm")] is True and checked[("gid", host, "roce_v2_ipv4_gid_index")] is True
    assert checked[("path", "vm1", "mtu_path")] is True and checked[("rdma_bw", "vm1", "bandwidth_gbps")] is True
    kinds = dict((m["kind"], m) for m in result["measurements"])
    assert kinds["ib_write_bw"]["value"] > 0 and kinds["ib_write_bw"]["unit"] == "Gb/s"
    assert kinds["ib_write_bw"]["detail"]["link_rate_gbps"] == 2.5  # rxe's nominal 1X SDR
    assert kinds["ib_write_lat"]["value"] > 0 and kinds["ib_write_lat"]["unit"] == "usec"


def test_parts_without_data_are_not_checked_never_passed(lab):
    result = fabric_check(INTENT, lab, switches={}, min_bw_fraction=LAB_FRACTION)
    unchecked = dict(((f["check"], f["host"], f["field"]), f) for f in result["findings"] if f["passed"] is None)
    # no switch state, no QoS state (nic None), Soft-RoCE has no firmware version
    assert ("switch", "switches", "fabric") in unchecked
    assert ("qos", "vm1", "trust") in unchecked and ("tos", "vm2", "tos") in unchecked
    assert ("drift", "vm1", "firmware") in unchecked
    assert all(f["actual"] == "not checked" and f["hint"] for f in unchecked.values())
    assert result["summary"]["not_checked"] == sum(1 for f in result["findings"] if f["passed"] is None)


def test_fault_mtu_1500_on_one_vm(tmp_path, lab):
    lab["vm2"]["rdma"] = rxe_facts(tmp_path / "bad", "rxe_bookworm_mtu1500.json")
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    assert result["passed"] is False
    mtu = one_failure(result, "vm2", "mtu")
    assert (mtu["expected"], mtu["actual"], mtu["device"]) == (9000, 1500, "rxe0/1")
    assert "ens4" in mtu["hint"]
    active = one_failure(result, "vm2", "active_mtu")
    assert (active["expected"], active["actual"]) == (4096, 1024)
    assert result["summary"]["failed_hosts"] == ["vm2"]


def test_fault_rdma_cm_unloaded(tmp_path, lab):
    def unload(manifest):
        for path in [p for p in manifest["entries"] if p == "/sys/module/rdma_cm" or p.startswith("/sys/module/rdma_cm/")]:
            del manifest["entries"][path]

    lab["vm2"]["rdma"] = rxe_facts(tmp_path / "bad", edit=unload)
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    finding = one_failure(result, "vm2", "rdma_cm")
    assert (finding["check"], finding["expected"], finding["actual"]) == ("modules", "loaded", "not loaded")
    assert "modprobe rdma_cm" in finding["hint"]


def test_fault_perftest_without_result_and_slow_bandwidth(lab):
    lab["vm1"]["rdma_runs"][0].update(rc=1, stdout="", stderr=read("ib_write_bw_rejected.txt"))
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    finding = one_failure(result, "vm1", "bandwidth_gbps")
    assert finding["peer"] == "vm2" and finding["actual"] == "no result" and "rdma_cm" in finding["hint"]
    # the same real measurement against the 0.8 default is far below 2 Gb/s
    healthy = measured("vm1", "vm2", "198.18.0.12")
    lab["vm1"].update(healthy)
    slow = one_failure(fabric_check(INTENT, lab), "vm1", "bandwidth_gbps")
    assert slow["expected"] == ">= 2.0" and slow["actual"] < 2.0 and "validate_min_bw_fraction" in slow["hint"]


def test_attempts_a_result_took_are_named(lab):
    """validate_rdma_attempts: a result measured on a second attempt says so in its measurement; a
    test that failed on every attempt says how many it had; one attempt adds nothing."""
    lab["vm1"]["rdma_runs"][1]["attempts"] = 2
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    assert result["passed"] is True
    kinds = dict((m["kind"], m) for m in result["measurements"])
    assert kinds["ib_write_lat"]["detail"]["attempts"] == 2 and "attempts" not in kinds["ib_write_bw"]["detail"]
    lab["vm1"]["rdma_runs"][1].update(rc=124, stdout="", stderr="", attempts=2)
    hung = one_failure(fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION), "vm1", "latency_usec")
    assert hung["actual"] == "no result" and "failed (rc 124, after 2 attempts)" in hung["hint"]
    lab["vm1"]["rdma_runs"][1]["attempts"] = 1
    once = one_failure(fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION), "vm1", "latency_usec")
    assert "failed (rc 124): " in once["hint"]


def test_fault_path_drops_jumbo_frames(lab):
    lab["vm1"]["pings"][0].update(rc=1, stdout=read("ping_dropped.txt"))
    finding = one_failure(fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION), "vm1", "mtu_path")
    assert finding["peer"] == "vm2" and finding["actual"] == "0/2 replies" and "8972" in finding["hint"]


SWITCH = dict(fabric=dict(roce_dscp=26, roce_priority=3, cnp_dscp=48, cnp_priority=6, pfc_priorities=[3], ecn_priorities=[3],
                          trust="dscp", switch_mtu=9216,
                          ecn=dict(min_threshold_bytes=150000, max_threshold_bytes=1500000, probability_percent=100),
                          pfc_watchdog=True),
              interfaces=[dict(name="Ethernet0", mtu=9216, pfc_priorities=[3])])


def test_switch_matching_the_intent_passes_and_pfc_disagreement_fails(lab):
    good = fabric_check(INTENT, lab, switches=dict(leaf1=SWITCH), min_bw_fraction=LAB_FRACTION)
    switch = [f for f in good["findings"] if f["check"] == "switch"]
    assert switch and all(f["passed"] is True for f in switch)
    bad = copy.deepcopy(SWITCH)
    bad["fabric"]["pfc_priorities"] = [3, 4]
    result = fabric_check(INTENT, lab, switches=dict(leaf1=bad), min_bw_fraction=LAB_FRACTION)
    finding = one_failure(result, "leaf1", "pfc_priorities")
    assert (finding["expected"], finding["actual"]) == ([3], [3, 4]) and "pfc priorities" in finding["hint"]
    assert result["summary"]["failed_hosts"] == ["leaf1"]


def test_switch_mtu_max_asks_for_the_hosts_frames(lab):
    """switch_mtu: max (each NOS's largest) cannot be compared as a number: a switch must carry host_mtu."""
    intent = resolve_intent(dict(LAB_FABRIC, switch_mtu="max"))
    for mtu, passed in ((9214, True), (8000, False)):
        state = copy.deepcopy(SWITCH)
        state["fabric"]["switch_mtu"] = mtu
        result = fabric_check(intent, lab, switches=dict(leaf1=state), min_bw_fraction=LAB_FRACTION)
        finding = [f for f in result["findings"] if f["host"] == "leaf1" and f["field"] == "switch_mtu"][0]
        assert (finding["expected"], finding["actual"], finding["passed"]) == (">= %d" % intent["host_mtu"], mtu, passed)


def test_switch_keys_missing_are_not_checked(lab):
    result = fabric_check(INTENT, lab, switches=dict(leaf1=dict(fabric=dict(pfc_priorities=[3]))), min_bw_fraction=LAB_FRACTION)
    switch = dict((f["field"], f["passed"]) for f in result["findings"] if f["check"] == "switch")
    assert switch["pfc_priorities"] is True
    assert switch["roce_dscp"] is None and switch["switch_mtu"] is None and switch["ecn.min_threshold_bytes"] is None


def test_drift_names_the_host_off_the_majority(tmp_path, lab):
    def kernel(manifest):
        manifest["entries"]["/proc/sys/kernel/osrelease"]["content"] = "6.1.0-99-amd64\n"

    lab["vm3"] = dict(rdma=rxe_facts(tmp_path / "vm3"), nic=None)
    lab["vm2"]["rdma"] = rxe_facts(tmp_path / "odd", edit=kernel)
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    finding = one_failure(result, "vm2", "kernel")
    assert (finding["check"], finding["expected"], finding["actual"]) == ("drift", "6.1.0-50-amd64", "6.1.0-99-amd64")
    assert [f["host"] for f in failed(result)] == ["vm2"]


# the CX-7 tree: QoS state read by nic_layer in check mode ------------------------------------
class Cx7:
    """The recorded CX-7 host with a dcb stand-in (tests/unit/plugins/module_utils/test_nic_layer.Host)."""

    def __init__(self, tmp_path, apply=True):
        # the QoS engines' own test host, tree plus dcb stand-in (tests/unit/plugins/module_utils/
        # test_nic_layer.py), importable whether or not pytest collected its directory first
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from test_nic_layer import Host
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.host = Host(tmp_path)
        self.facts = hosttree.gather_facts(tmp_path / "facts", trees.cx7())[0]
        self.ports = nic_ports(self.facts, LAB_FABRIC, interfaces=["ens1f0np0"])  # the active port
        if apply:
            self.host.run(ports=self.ports, boot_reapply=False)

    def state(self):
        result, _ctx = self.host.run(check_mode=True, ports=self.ports, boot_reapply=False)
        return dict(rdma=self.facts, nic=result["ports"])


@pytest.fixture
def qos_test_path(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "_qos"))


def test_cx7_with_the_intent_applied_passes_qos_ecn_tos(tmp_path, qos_test_path):
    result = fabric_check(INTENT, dict(gpu1=Cx7(tmp_path).state()), switches={})
    qos = [f for f in result["findings"] if f["check"] in ("qos", "ecn", "tos") and f["device"] == "mlx5_0/1"]
    fields = set(f["field"] for f in qos)
    assert {"trust", "pfc", "dscp26_priority", "ecn_np_priorities", "ecn_rp_priorities", "cnp_dscp", "tos", "roce_mode"} <= fields
    assert all(f["passed"] is True for f in qos), [f for f in qos if not f["passed"]]
    assert failed(result) == []
    # the GPU host's peermem is checked (nvidia_peermem is loaded in the recording)
    assert [f["passed"] for f in result["findings"] if f["check"] == "peermem"] == [True]


def test_cx7_fault_tos_and_untouched_qos(tmp_path, qos_test_path):
    cx7 = Cx7(tmp_path)
    tos = cx7.host.root / "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"
    tos.write_text("0\n")
    result = fabric_check(INTENT, dict(gpu1=cx7.state()), switches={})
    finding = one_failure(result, "gpu1", "tos")
    assert (finding["device"], finding["expected"], finding["actual"]) == ("mlx5_0/1", 106, 0)
    assert "default_roce_tos" in finding["hint"]
    fresh = Cx7(tmp_path / "fresh", apply=False)  # the recording as found: trust pcp, no PFC
    result = fabric_check(INTENT, dict(gpu1=fresh.state()), switches={})
    assert one_failure(result, "gpu1", "trust")["actual"] == "pcp"
    assert one_failure(result, "gpu1", "pfc")["actual"] == []


def test_bad_input_names_the_key(lab):
    with pytest.raises(InputError, match="intent lacks .*roce_intent"):
        fabric_check(LAB_FABRIC, lab)
    with pytest.raises(InputError, match="min_bw_fraction"):
        fabric_check(INTENT, lab, min_bw_fraction=3)
    with pytest.raises(InputError, match="hosts must map"):
        fabric_check(INTENT, {})
