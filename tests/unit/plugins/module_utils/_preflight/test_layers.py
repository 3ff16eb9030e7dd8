"""The preflight's reads of later layers (rdma_facts' plans): each is the layer's own module run
read-only inside the preflight's call, on the recorded Soft-RoCE host with NICs simulated behind
ethtool, and a role may use it only when its options are the ones the read ran with and, for a layer
that changes the host, when it found nothing to change."""

import os

import pytest

import hosttree
from ethtoolsim import FakeNic, cx7

from ansible_collections.rdmaops.roce.plugins.filter.roce_layer_plan import roce_layer_plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandResult, CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._preflight.layers import plan_layers, reusable
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import status
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed.packages import INBOX_PACKAGES, wanted_inbox_packages
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.layer import TuningLayer

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools")
DPKG = "dpkg-query -W -f=${Package}\t${Version}\t${db:Status-Abbrev}\n"
SYSCTL_FILE = "/etc/sysctl.d/90-rdmaops-roce.conf"
PROC = {"net/core/rmem_max": "212992\n", "net/ipv4/tcp_rmem": "4096\t131072\t33554432\n"}
# the options the tuning role gives (roles/tuning/vars/main.yml), the NIC knobs' netdevs from the facts
TUNING = dict(
    sysctl=dict(settings={"net.core.rmem_max": 4194304, "net.ipv4.tcp_rmem": "4096 87380 4194304"}, path=SYSCTL_FILE,
                apply_runtime=True, runtime_errors="fail"),
    memlock=dict(limit="unlimited", domains=["*", "root"], limits_file="/etc/security/limits.d/90-rdmaops-roce-memlock.conf",
                 systemd_dropin="/etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf"),
    nic=dict(interfaces=[], global_pause=False, rings={"rx": "max", "tx": "max"}, adaptive_rx=True, adaptive_tx=True,
             persist=True, unsupported="warn"),
    gpudirect={},
)


class Nics(FakeNic):
    """The simulated NICs behind ethtool; no other tool (lspci: the GPUDirect report reads sysfs alone)."""

    def has(self, tool):
        return tool == "ethtool"


class Recorded(CommandRunner):
    """The recorded host's tools, a command without a record failing as a missing tool would (the
    management-path detector also asks ip for routes, which the recording has not)."""

    def __init__(self, commands):
        super(Recorded, self).__init__(None)
        self.records = dict(commands)
        # the lab VM's whole package list (dpkg-query as ofed_status runs it), captured on the inbox stack
        with open(os.path.join(TOOLS, "dpkg-query", "bookworm-lab-vm-inbox.txt")) as handle:
            self.records[DPKG] = dict(rc=0, stdout=handle.read(), stderr="")

    def has(self, tool):
        return any(key.split(" ", 1)[0] == tool for key in self.records)

    def run(self, argv, check=True, ok_rcs=(0,), data=None, **_kwargs):
        record = self.records.get(" ".join(argv), dict(rc=127, stdout="", stderr="not recorded"))
        self.commands.append(" ".join(argv))
        return CommandResult(list(argv), record["rc"], record["stdout"], record["stderr"])


class Module(hosttree.ReplayModule):
    """The preflight's module: a normal run (not check mode), its warnings kept."""

    def __init__(self, commands, bindir):
        super(Module, self).__init__(commands, bindir)
        self.check_mode = False
        self._diff = False
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)


@pytest.fixture(name="host")
def fixture_host(tmp_path):
    """The recorded Soft-RoCE VM (rxe0 on ens4), the kernel's sysctl values, a ConnectX-7 behind ethtool."""
    manifest = hosttree.load("rxe_bookworm_mtu9000.json")
    bindir = hosttree.materialize(manifest, tmp_path)
    for rel, text in PROC.items():
        path = tmp_path / "proc/sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    module = Module(manifest.get("commands", {}), bindir)
    facts = RdmaFacts(HostRoot(str(tmp_path)), None, use_tools=False, gpu_topology=False).gather()
    return dict(root=tmp_path, module=module, facts=facts, nics={"ens4": cx7()})


def preflight(host, plans, tools="ethtool"):
    """rdma_facts' plans on the host: ethtool answered by the simulated NICs, or (tools "recorded") every
    tool by the host's recorded outputs through the module."""
    runner = Nics(host["nics"]) if tools == "ethtool" else Recorded(host["module"].commands)
    return plan_layers(host["module"], plans, host["facts"], host=HostRoot(str(host["root"])), runner=runner), runner


def tuning_run(host, check_mode, **changes):
    module = host["module"]
    module.check_mode = check_mode
    try:
        ctx = Context(module, host=HostRoot(str(host["root"])), runner=Nics(host["nics"]))
        params = dict(TUNING, adopt=False, max_disruption=None, **changes)
        params["nic"] = dict(params["nic"], interfaces=["ens4"])
        params["gpudirect"] = dict(use_lspci=True)
        params["sysctl"] = dict(params["sysctl"], state="present")
        return execute(TuningLayer(ctx, params), Plan())[0]
    finally:
        module.check_mode = False


def role_options(**changes):
    """What the tuning role passes at its own call: the facts' netdevs, sorted."""
    options = dict(TUNING, **changes)
    options["nic"] = dict(options["nic"], interfaces=options["nic"]["interfaces"] or ["ens4"])
    return options


def test_the_tuning_read_is_the_modules_check_mode_and_changes_nothing(host):
    plans, runner = preflight(host, dict(tuning_layer=TUNING))
    read = plans["tuning_layer"]
    expected = tuning_run(host, check_mode=True)
    assert read["failed"] is False and read["changed"] is True
    assert read["changes"] == expected["changes"] and read["changes"][0] == "write " + SYSCTL_FILE
    # nothing applied: no file, the running value and the NIC as they were, ethtool only read
    assert not (host["root"] / SYSCTL_FILE.lstrip("/")).exists()
    assert (host["root"] / "proc/sys/net/core/rmem_max").read_text() == "212992\n"
    assert set(call[1] for call in runner.calls) == {"-a", "-g", "-c"}
    # the NIC knobs' netdevs are the facts' (the options are made before there are facts)
    assert read["params"]["nic"]["interfaces"] == ["ens4"]
    # something to change: the role calls its module
    assert reusable(plans, "tuning_layer", role_options(), unchanged=True) == {}


def test_after_the_layer_applied_the_read_stands_for_the_call(host):
    applied = tuning_run(host, check_mode=False)
    assert applied["changed"] is True
    plans, _runner = preflight(host, dict(tuning_layer=TUNING))
    read = plans["tuning_layer"]
    assert read["changed"] is False and read["changes"] == []
    assert read["ansible_facts"]["gpudirect"]["applicable"] is False
    used = roce_layer_plan(plans, "tuning_layer", role_options(), True)
    assert used["changed"] is False and used["sysctl"]["changed"] is False
    # a rollout pass's max_disruption is not part of what the read found
    assert reusable(plans, "tuning_layer", dict(role_options(), max_disruption="online"), unchanged=True)
    # other options than the read's: the module runs
    other = role_options(sysctl=dict(TUNING["sysctl"], settings={"net.core.rmem_max": 8388608}))
    assert reusable(plans, "tuning_layer", other, unchanged=True) == {}
    assert reusable(plans, "tuning_layer", role_options(nic=dict(TUNING["nic"], interfaces=["ens5"])), unchanged=True) == {}
    assert reusable(plans, "tuning_layer", role_options(gpudirect=None), unchanged=True) == {}
    # the inputs are left as they were
    assert TUNING["nic"]["interfaces"] == []


def test_a_drifted_value_after_the_layer_applied_is_seen_by_the_read(host):
    tuning_run(host, check_mode=False)
    (host["root"] / "proc/sys/net/core/rmem_max").write_text("212992\n")
    host["nics"]["ens4"]["rx"] = 1024
    plans, _runner = preflight(host, dict(tuning_layer=TUNING))
    read = plans["tuning_layer"]
    assert read["changed"] is True
    assert "set net.core.rmem_max from '212992' to '4194304' at runtime" in read["changes"]
    assert reusable(plans, "tuning_layer", role_options(), unchanged=True) == {}


@pytest.mark.parametrize("options, words", [
    (dict(TUNING, sysctl=dict(TUNING["sysctl"], state="gone")), "sysctl"),
    (dict(TUNING, surprise=True), "surprise"),
    (dict(TUNING, nic=dict(TUNING["nic"], interfaces=["ens4;reboot"])), "ens4;reboot"),
    ("not a mapping", "mapping"),
])
def test_options_the_module_would_refuse_are_a_failed_read_not_a_failed_call(host, options, words):
    plans, runner = preflight(host, dict(tuning_layer=options))
    read = plans["tuning_layer"]
    assert read["failed"] is True and words in read["msg"] and "Traceback" not in read["msg"]
    assert runner.calls == [] and not (host["root"] / SYSCTL_FILE.lstrip("/")).exists()
    assert reusable(plans, "tuning_layer", TUNING) == {}


def test_the_ofed_read_is_ofed_status_with_the_stack_just_read(host):
    options = dict(provider="auto", doca_version="", inbox_packages=[], inbox_extra_packages=["mstflint"])
    plans, _runner = preflight(host, dict(ofed_status=options), tools="recorded")
    read = plans["ofed_status"]
    ctx = Context(host["module"], host=HostRoot(str(host["root"])), runner=Recorded(host["module"].commands))
    module_params = dict(read["params"])
    expected = status.gather(ctx, module_params)
    for key in ("provider", "needed", "needed_reason", "target_flavor", "package_family", "inbox_packages", "activation",
                "disruption", "problems", "packages", "stack"):
        assert read[key] == expected[key], key
    # the distribution's list by its package manager (the recorded VM's dpkg, captured before
    # infiniband-diags was installed), then the extra ones
    assert read["package_family"] == "apt" and read["provider"] == "inbox"
    assert read["inbox_packages"] == list(INBOX_PACKAGES["apt"]) + ["mstflint"]
    assert read["needed"] == "install" and read["needed_reason"] == "inbox packages missing: infiniband-diags, mstflint"
    # ofed_status only reads: the role uses the read whatever it found, with the same options
    assert reusable(plans, "ofed_status", options)["needed"] == read["needed"]
    assert reusable(plans, "ofed_status", dict(options, inbox_extra_packages=[])) == {}
    assert reusable(plans, "ofed_status", dict(options, provider="doca")) == {}
    assert reusable(plans, "nic_layer", options) == {} and reusable(None, "ofed_status", options) == {}


def test_a_layer_not_asked_for_is_not_read(host):
    plans, runner = preflight(host, dict(tuning_layer=None))
    assert plans == {} and runner.calls == []


@pytest.mark.parametrize("family, named, extra, expected", [
    ("apt", [], [], list(INBOX_PACKAGES["apt"])),
    ("dnf", [], ["mstflint"], list(INBOX_PACKAGES["dnf"]) + ["mstflint"]),
    ("apt", ["rdma-core", "perftest"], ["perftest", "mstflint"], ["rdma-core", "perftest", "mstflint"]),
    (None, [], ["mstflint"], ["mstflint"]),
])
def test_the_inbox_packages_in_use(family, named, extra, expected):
    assert wanted_inbox_packages(family, named, extra) == expected
