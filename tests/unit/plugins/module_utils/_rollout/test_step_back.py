"""The limit across parallel runs: a drain reads the pool again and steps back when another run
drained at the same moment. The scheduler here is a small stand-in for scontrol/squeue in which a
second run's drain lands between our drain and our second read."""

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout import engine as engine_module
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.engine import SchedulerChange

LINE = ("NodeName={name} Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=1 State={state} ThreadsPerCore=1"
        "{reason}")


class Racing:
    """Nodes with a drain reason or none; ``race`` drains another node right after our drain, as a
    second ansible-playbook would."""

    def __init__(self, nodes, race=None):
        self.reasons = dict((name, None) for name in nodes)
        self.reasons.update((name, reason) for name, reason in nodes.items() if reason)
        self.race = race
        self.calls = []

    def get_bin_path(self, tool):
        return "/usr/bin/" + tool

    def run_command(self, argv, **_kwargs):
        if argv[0].endswith("/timeout"):  # the runner's time bound: timeout --kill-after=N Ns <command>
            argv = argv[3:]
        tool, args = argv[0].rsplit("/", 1)[-1], list(argv[1:])
        self.calls.append(" ".join([tool] + args))
        if tool == "scontrol" and args[:2] == ["show", "node"]:
            lines = []
            for name in args[3].split(","):
                reason = self.reasons[name]
                lines.append(LINE.format(name=name, state="IDLE+DRAIN" if reason else "IDLE",
                                         reason=" Reason=%s [root@2026-11-26T09:21:06]" % reason if reason else ""))
            return 0, "\n".join(lines) + "\n", ""
        if tool == "squeue":
            return 0, "", ""
        if tool == "scontrol" and args[0] == "update":
            names = args[1].split("=", 1)[1].split(",")
            for name in names:
                if args[2] == "State=DRAIN":
                    self.reasons[name] = args[3].split("=", 1)[1]
                    if self.race:
                        other, self.race = self.race, None
                        self.reasons[other] = "rdmaops.roce: link_reset: the other run's"
                elif args[2] == "State=RESUME":
                    self.reasons[name] = None
            return 0, "", ""
        raise AssertionError("unexpected %r" % argv)


class Module:
    def __init__(self, slurm, params):
        self.slurm, self.params, self.check_mode, self._diff = slurm, params, False, False

    def get_bin_path(self, tool):
        return self.slurm.get_bin_path(tool)

    def run_command(self, *args, **kwargs):
        return self.slurm.run_command(*args, **kwargs)

    def warn(self, msg):
        pass

    def exit_json(self, **result):
        raise Done(result)

    def fail_json(self, **result):
        raise AssertionError(result)


class Done(Exception):
    def __init__(self, result):
        super(Done, self).__init__("done")
        self.result = result


@pytest.fixture(autouse=True)
def no_jitter(monkeypatch):
    monkeypatch.setattr(engine_module.time, "sleep", lambda _s: None)


def drain(slurm, nodes, pool, limit):
    params = dict(action="drain", nodes=nodes, pool=pool, max_unavailable=limit, reason="link_reset: ring",
                  backend="slurm", commands=None, timeout=10, poll_interval=1)
    module = Module(slurm, params)
    with pytest.raises(Done) as info:
        run_module(module, SchedulerChange, Context(module, host=HostRoot("/")))
    return info.value.result


def test_two_runs_draining_at_once_the_second_to_read_steps_back():
    slurm = Racing({"vm1": None, "vm2": None}, race="vm2")
    result = drain(slurm, ["vm1"], ["vm1", "vm2"], 1)
    assert result["stepped_back"] == ["vm1"] and result["deferred"] == ["vm1"] and result["acted"] == []
    assert "2 node(s) of the pool out of service after the drain (vm1, vm2), more than max_unavailable 1" \
        in result["step_back_reason"]
    assert "drained for: rdmaops.roce: link_reset: ring" in result["step_back_reason"]
    assert result["changed"] is False
    # our drain is undone, the other run's stays
    assert slurm.reasons == {"vm1": None, "vm2": "rdmaops.roce: link_reset: the other run's"}
    assert slurm.calls.index("scontrol update NodeName=vm1 State=RESUME") > \
        slurm.calls.index("scontrol update NodeName=vm1 State=DRAIN Reason=rdmaops.roce: link_reset: ring")


def test_no_race_no_step_back():
    slurm = Racing({"vm1": None, "vm2": None})
    result = drain(slurm, ["vm1"], ["vm1", "vm2"], 1)
    assert result["acted"] == ["vm1"] and "stepped_back" not in result and result["changed"] is True
    assert slurm.reasons["vm1"] == "rdmaops.roce: link_reset: ring"


def test_an_admins_drain_counts_and_a_race_beside_it_steps_back_only_the_excess():
    # limit 3: the admin's node takes one; we drain two; the other run drains one at the same moment
    slurm = Racing({"a": None, "b": None, "c": None, "d": "disk replacement, ticket 4711"}, race="c")
    result = drain(slurm, ["a", "b"], ["a", "b", "c", "d"], 3)
    assert result["acted"] == ["a"] and result["stepped_back"] == ["b"]
    assert slurm.reasons["b"] is None and slurm.reasons["d"] == "disk replacement, ticket 4711"
    assert sum(1 for reason in slurm.reasons.values() if reason) == 3
