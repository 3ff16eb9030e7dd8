"""The scheduler module's engine: drain, resume, set_reason, reboot and wait_idle against a
Slurm that answers with the recorded lines of tests/unit/fixtures/slurm, kept per node as its
state changes (a drain puts the recorded drained line, with the reason given, in its place)."""

import os
import re

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, run_facts, run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.engine import SchedulerChange, gather

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm")


def line(fixture, node):
    with open(os.path.join(FIXTURES, fixture)) as handle:
        for text in handle.read().splitlines():
            if text.startswith("NodeName=%s " % node):
                return text
    raise AssertionError("no line for %s in %s" % (node, fixture))


def as_node(text, node):
    """A recorded line renamed to ``node`` (the rest of the line is Slurm's own)."""
    return re.sub(r"^NodeName=\S+", "NodeName=" + node, text)


IDLE = line("show_node_idle.txt", "vm1")
BUSY = line("show_node_allocated.txt", "vm1")
DRAINED = line("show_node_drained.txt", "vm1")
DRAINING = line("show_node_draining.txt", "vm1")
DOWN = line("show_node_drained.txt", "vm2")
REASON_AT = re.compile(r" Reason=.*$")
JOB = "1|RUNNING|%s|root|wrap\n"


class Slurm:
    """scontrol/squeue for a few nodes: state per node, recorded lines, and the job holding each."""

    def __init__(self, **nodes):
        self.nodes = dict((name, dict(kind=kind, reason=None)) for name, kind in nodes.items())
        self.calls = []
        self.bounds = []
        self.jobs_end_after = None

    def _line(self, name):
        node = self.nodes[name]
        kind = node["kind"]
        drained = node["reason"] is not None and kind != "down"
        base = {"idle": DRAINED if drained else IDLE, "busy": DRAINING if drained else BUSY, "down": DOWN}[kind]
        text = as_node(base, name)
        if drained:
            text = REASON_AT.sub(" Reason=%s [root@2026-11-26T09:21:06]" % node["reason"], text)
        return text

    def get_bin_path(self, tool):
        return "/usr/bin/" + tool

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True, **kwargs):
        if os.path.basename(argv[0]) == "timeout":  # the runner's time bound: timeout --kill-after=N Ns <command>
            self.bounds.append(int(argv[2].rstrip("s")))
            argv = argv[3:]
        tool, args = os.path.basename(argv[0]), list(argv[1:])
        self.calls.append(" ".join([tool] + args))
        if tool == "scontrol" and args[:2] == ["show", "node"]:
            names = args[3].split(",")
            unknown = [n for n in names if n not in self.nodes]
            out = "\n".join(self._line(n) for n in names if n in self.nodes) + "\n"
            if unknown:
                return 1, out, "".join("Node %s not found\n" % n for n in unknown)
            return 0, out, ""
        if tool == "squeue":
            if self.jobs_end_after is not None:
                self.jobs_end_after -= 1
                if self.jobs_end_after < 0:
                    for node in self.nodes.values():
                        node["kind"] = "idle" if node["kind"] == "busy" else node["kind"]
            names = args[args.index("-w") + 1].split(",")
            return 0, "".join(JOB % n for n in names if self.nodes[n]["kind"] == "busy"), ""
        if tool == "scontrol" and args[0] == "update":
            names = args[1].split("=", 1)[1].split(",")
            for name in names:
                if args[2] == "State=DRAIN":
                    self.nodes[name]["reason"] = args[3].split("=", 1)[1]
                elif args[2] == "State=RESUME":
                    if self.nodes[name]["reason"] is None:
                        return 1, "", "slurm_update error: Invalid node state specified\n"
                    self.nodes[name]["reason"] = None
            return 0, "", ""
        if tool == "scontrol" and args[0] == "reboot":
            return 0, "", ""
        raise AssertionError("unexpected command %r" % argv)


class Module:
    def __init__(self, slurm, params, check_mode=False):
        self.slurm, self.params, self.check_mode, self._diff = slurm, params, check_mode, True
        self.warnings = []

    def get_bin_path(self, tool):
        return self.slurm.get_bin_path(tool)

    def run_command(self, *args, **kwargs):
        return self.slurm.run_command(*args, **kwargs)

    def warn(self, msg):
        self.warnings.append(msg)

    def exit_json(self, **result):
        raise Done("exit", result)

    def fail_json(self, **result):
        raise Done("fail", result)


class Done(Exception):
    def __init__(self, kind, result):
        super(Done, self).__init__(kind)
        self.kind, self.result = kind, result


def run(slurm, check_mode=False, **params):
    defaults = dict(backend="slurm", commands=None, pool=None, max_unavailable=None, reason=None, timeout=3600,
                    poll_interval=10, command_timeout=60)
    defaults.update(params)
    module = Module(slurm, defaults, check_mode)
    ctx = Context(module, host=HostRoot("/"))
    with pytest.raises(Done) as info:
        if params["action"] in ("query", "wait_idle"):
            run_facts(module, gather, ctx)
        else:
            run_module(module, SchedulerChange, ctx)
    info.value.result["warned"] = module.warnings
    return info.value.kind, info.value.result


def test_drain_writes_our_reason_then_a_repeat_changes_nothing():
    slurm = Slurm(vm1="busy", vm2="idle")
    kind, result = run(slurm, action="drain", nodes=["vm1"], reason="nic_layer: ens4 set mtu from 1500 to 9000")
    assert kind == "exit" and result["changed"] is True and result["acted"] == ["vm1"]
    assert result["nodes"]["vm1"]["reason"] == "rdmaops.roce: nic_layer: ens4 set mtu from 1500 to 9000"
    assert result["nodes"]["vm1"]["busy"] is True and result["nodes"]["vm1"]["ours"] is True
    assert result["diff"][0] == {"before": {"drain vm1": None},
                                 "after": {"drain vm1": "rdmaops.roce: nic_layer: ens4 set mtu from 1500 to 9000"}}
    kind, again = run(slurm, action="drain", nodes=["vm1"], reason="nic_layer: ens4 set mtu from 1500 to 9000")
    assert again["changed"] is False and again["acted"] == []


def test_check_mode_predicts_and_drains_nothing():
    slurm = Slurm(vm1="idle")
    kind, result = run(slurm, check_mode=True, action="drain", nodes=["vm1"], reason="x")
    assert result["changed"] is True and result["acted"] == ["vm1"]
    assert not any(call.startswith("scontrol update") for call in slurm.calls)
    assert slurm.nodes["vm1"]["reason"] is None


def test_max_unavailable_counts_nodes_out_of_service_for_other_reasons():
    slurm = Slurm(a="idle", b="idle", c="down", d="idle")
    slurm.nodes["d"]["reason"] = "disk replacement, ticket 4711"
    kind, result = run(slurm, action="drain", nodes=["a", "b"], pool=["a", "b", "c", "d"], max_unavailable=3, reason="x")
    # c (down) and d (drained by someone) already use two of the three
    assert result["acted"] == ["a"] and result["deferred"] == ["b"]
    assert result["max_unavailable"] == 3 and result["unavailable"] == ["c", "d"]
    assert slurm.nodes["b"]["reason"] is None


def test_a_node_drained_by_someone_else_keeps_its_reason_and_is_never_resumed():
    slurm = Slurm(vm1="idle")
    slurm.nodes["vm1"]["reason"] = "disk replacement, ticket 4711"
    kind, drained = run(slurm, action="drain", nodes=["vm1"], reason="x")
    assert drained["changed"] is False and drained["foreign"] == ["vm1"]
    kind, resumed = run(slurm, action="resume", nodes=["vm1"])
    assert resumed["changed"] is False and resumed["foreign"] == ["vm1"]
    kind, relabelled = run(slurm, action="set_reason", nodes=["vm1"], reason="gate failed")
    assert relabelled["changed"] is False and relabelled["foreign"] == ["vm1"]
    assert slurm.nodes["vm1"]["reason"] == "disk replacement, ticket 4711"


def test_resume_only_ours_and_not_a_node_in_service():
    slurm = Slurm(vm1="idle", vm2="idle")
    run(slurm, action="drain", nodes=["vm1"], reason="x")
    kind, result = run(slurm, action="resume", nodes=["vm1", "vm2"])
    assert result["acted"] == ["vm1"] and result["changed"] is True
    assert slurm.nodes["vm1"]["reason"] is None
    assert "scontrol update NodeName=vm2 State=RESUME" not in slurm.calls


def test_a_failed_gate_rewrites_our_reason_and_the_node_stays_drained():
    slurm = Slurm(vm1="idle")
    run(slurm, action="drain", nodes=["vm1"], reason="nic_layer: mtu")
    kind, result = run(slurm, action="set_reason", nodes=["vm1"], reason="gate failed: vm1 mtu_path")
    assert result["changed"] is True
    assert slurm.nodes["vm1"]["reason"] == "rdmaops.roce: gate failed: vm1 mtu_path"


def test_wait_idle_waits_for_the_job_then_says_idle():
    slurm = Slurm(vm1="busy")
    slurm.jobs_end_after = 2
    kind, result = run(slurm, action="wait_idle", nodes=["vm1"], timeout=30, poll_interval=0)
    assert kind == "exit" and result["idle"] == ["vm1"] and result["busy"] == [] and result["timed_out"] is False


def test_wait_idle_timeout_names_the_job_that_held_the_node():
    slurm = Slurm(vm1="busy")
    kind, result = run(slurm, action="wait_idle", nodes=["vm1"], timeout=0, poll_interval=0)
    assert result["timed_out"] is True and result["busy"] == ["vm1"]
    assert result["holding"] == {"vm1": ["1 wrap (RUNNING, root)"]}


def test_wait_idle_in_check_mode_does_not_wait():
    slurm = Slurm(vm1="busy")
    kind, result = run(slurm, check_mode=True, action="wait_idle", nodes=["vm1"], timeout=3600, poll_interval=10)
    assert result["timed_out"] is False and result["busy"] == ["vm1"] and result["waited"] == 0


def test_unknown_node_is_refused_before_anything_is_drained():
    slurm = Slurm(vm1="idle")
    kind, result = run(slurm, action="drain", nodes=["vm1", "vm9"], reason="x")
    assert kind == "fail" and "vm9" in result["msg"] and "rdmaops_slurm_node_name" in result["msg"]
    assert result["changed"] is False and slurm.nodes["vm1"]["reason"] is None


def test_drain_needs_a_reason():
    kind, result = run(Slurm(vm1="idle"), action="drain", nodes=["vm1"])
    assert kind == "fail" and "reason is required" in result["msg"]


def test_reboot_is_handed_to_slurm_once():
    slurm = Slurm(vm1="idle")
    kind, result = run(slurm, action="reboot", nodes=["vm1"], reason="mlxconfig next boot")
    assert result["changed"] is True
    assert "scontrol reboot ASAP nextstate=RESUME reason=rdmaops.roce: mlxconfig next boot vm1" in slurm.calls


# -- someone else's drain is never lost ---------------------------------------------------------------
ADMIN = "disk replacement, ticket 4711"


def test_reboot_refuses_a_node_someone_else_drained_and_says_it_still_needs_the_reboot():
    """Today's code ran `scontrol reboot ASAP nextstate=RESUME reason=rdmaops.roce: ...` here: the
    admin's reason was replaced and Slurm would have put the node back in service after the reboot."""
    slurm = Slurm(vm1="idle")
    slurm.nodes["vm1"]["reason"] = ADMIN
    kind, result = run(slurm, action="reboot", nodes=["vm1"], reason="mlxconfig next boot")
    assert kind == "exit" and result["changed"] is False
    assert result["foreign"] == ["vm1"] and result["acted"] == []
    assert not any(call.startswith("scontrol reboot") or call.startswith("scontrol update") for call in slurm.calls)
    assert slurm.nodes["vm1"]["reason"] == ADMIN
    assert result["nodes"]["vm1"]["foreign"] is True and result["nodes"]["vm1"]["drained"] is True
    assert len(result["warned"]) == 1
    warning = result["warned"][0]
    assert "vm1 was not handed to the scheduler for a reboot" in warning and ADMIN in warning
    assert "still needs a reboot for: mlxconfig next boot" in warning


def test_reboot_in_check_mode_predicts_the_refusal_too():
    slurm = Slurm(vm1="idle", vm2="idle")
    slurm.nodes["vm1"]["reason"] = ADMIN
    kind, result = run(slurm, check_mode=True, action="reboot", nodes=["vm1", "vm2"], reason="kernel arguments")
    assert result["foreign"] == ["vm1"] and result["acted"] == ["vm2"] and result["changed"] is True
    assert not any(call.startswith("scontrol reboot") for call in slurm.calls)


def test_reboot_of_a_node_we_drained_is_handed_to_slurm_with_nextstate_resume():
    slurm = Slurm(vm1="busy")
    run(slurm, action="drain", nodes=["vm1"], reason="mlxconfig next boot")
    kind, result = run(slurm, action="reboot", nodes=["vm1"], reason="reboot for mlxconfig next boot")
    assert result["acted"] == ["vm1"] and result["foreign"] == [] and result["warned"] == []
    assert "scontrol reboot ASAP nextstate=RESUME reason=rdmaops.roce: reboot for mlxconfig next boot vm1" in slurm.calls


@pytest.mark.parametrize("action, extra", [
    ("drain", dict(reason="nic_layer: mtu")),
    ("set_reason", dict(reason="gate failed: mtu")),
    ("reboot", dict(reason="mlxconfig")),
    ("resume", {}),
])
def test_a_node_down_with_someone_elses_reason_is_left_alone_by_every_action(action, extra):
    """DOWN with a reason (an admin's `scontrol update State=DOWN Reason=...`, Slurm's own "Not
    responding"): today's drain wrote our reason over it, and a later resume would have brought the
    node back in service."""
    slurm = Slurm(vm1="down")
    kind, result = run(slurm, action=action, nodes=["vm1"], **extra)
    assert kind == "exit" and result["changed"] is False, result.get("msg")
    assert result["foreign"] == (["vm1"] if action != "resume" else []) and result["acted"] == []
    assert not any(call.startswith("scontrol update") or call.startswith("scontrol reboot") for call in slurm.calls)


@pytest.mark.parametrize("action, extra", [
    ("drain", dict(reason="nic_layer: mtu")),
    ("set_reason", dict(reason="gate failed: mtu")),
    ("resume", {}),
    ("reboot", dict(reason="mlxconfig")),
])
def test_every_action_leaves_someone_elses_drain_and_reason_alone(action, extra):
    slurm = Slurm(vm1="busy")
    slurm.nodes["vm1"]["reason"] = ADMIN
    kind, result = run(slurm, action=action, nodes=["vm1"], **extra)
    assert result["changed"] is False and result["foreign"] == ["vm1"]
    assert slurm.nodes["vm1"]["reason"] == ADMIN
    assert not any(call.startswith("scontrol update") or call.startswith("scontrol reboot") for call in slurm.calls)


# -- time bounds ------------------------------------------------------------------------------------
def test_every_command_gets_the_command_timeout():
    slurm = Slurm(vm1="idle")
    run(slurm, action="drain", nodes=["vm1"], reason="x", command_timeout=7)
    assert slurm.bounds and set(slurm.bounds) == {7}
    assert len(slurm.bounds) == len(slurm.calls)


def test_reads_while_waiting_end_with_the_wait():
    """wait_idle with 2 s left never lets a read run for the full command timeout: at most
    MIN_WAIT_READ (5 s) here, so a hanging squeue cannot hold a 2 s wait for a minute."""
    slurm = Slurm(vm1="busy")
    kind, result = run(slurm, action="wait_idle", nodes=["vm1"], timeout=2, poll_interval=1, command_timeout=60)
    assert result["timed_out"] is True
    assert slurm.bounds and max(slurm.bounds) == 5


@pytest.mark.parametrize("value", [0, -3, "abc", True])
def test_a_bad_command_timeout_is_refused_naming_it(value):
    slurm = Slurm(vm1="idle")
    kind, result = run(slurm, action="drain", nodes=["vm1"], reason="x", command_timeout=value)
    assert kind == "fail" and "command_timeout is" in result["msg"] and "at least 1" in result["msg"]
    assert slurm.calls == []
