"""Slurm's client tools read as data: every fixture was printed by Debian 12's slurm-wlm 22.05.8
(slurmctld and one slurmd on one machine, tests/unit/fixtures/slurm/slurm.conf.recorded;
vm2 points at a port nothing listens on, so Slurm reports it down)."""

import os
import re

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout import slurm
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import SchedulerUnavailable, select_nodes

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_an_idle_node_and_one_slurm_has_not_heard_from():
    nodes = slurm.parse_show_node(fixture("show_node_idle.txt"))
    assert set(nodes) == {"vm1", "vm2"}
    vm1, vm2 = nodes["vm1"], nodes["vm2"]
    assert (vm1.state, vm1.flags, vm1.busy, vm1.drained, vm1.out_of_service, vm1.reason) == ("IDLE", [], False, False, False, None)
    # a node that never registered is not in service: it counts against max_unavailable
    assert (vm2.state, vm2.out_of_service) == ("UNKNOWN", True)


def test_a_node_running_a_job_is_busy():
    nodes = slurm.parse_show_node(fixture("show_node_allocated.txt"))
    assert nodes["vm1"].state == "ALLOCATED" and nodes["vm1"].busy and not nodes["vm1"].drained
    assert slurm.parse_squeue(fixture("squeue_running.txt")) == [
        dict(id="1", state="RUNNING", nodes="vm1", user="root", name="wrap")]


def test_draining_is_drained_and_busy_with_our_reason_read_whole():
    vm1 = slurm.parse_show_node(fixture("show_node_draining.txt"))["vm1"]
    assert (vm1.state, vm1.flags) == ("ALLOCATED", ["DRAIN"])
    assert vm1.drained and vm1.busy and vm1.out_of_service and vm1.ours
    # the reason holds spaces and a colon; the [user@time] Slurm appends is not part of it
    assert vm1.reason == "rdmaops.roce: nic_layer: ens4: set mtu from 1500 to 9000"
    assert vm1.reason_user == "root"


def test_drained_and_idle_and_a_node_that_stopped_answering():
    nodes = slurm.parse_show_node(fixture("show_node_drained.txt"))
    assert (nodes["vm1"].state, nodes["vm1"].flags, nodes["vm1"].busy, nodes["vm1"].ours) == ("IDLE", ["DRAIN"], False, True)
    vm2 = nodes["vm2"]
    assert (vm2.state, vm2.flags, vm2.reason, vm2.reason_user) == ("DOWN", ["NOT_RESPONDING"], "Not responding", "slurm")
    assert vm2.out_of_service and not vm2.drained and not vm2.ours


def test_a_drain_by_someone_else_is_not_ours():
    vm1 = slurm.parse_show_node(fixture("show_node_drained_other.txt"))["vm1"]
    assert vm1.drained and not vm1.ours and vm1.reason == "disk replacement, ticket 4711"


def test_reboot_requested_flags():
    vm1 = slurm.parse_show_node(fixture("show_node_reboot_asap.txt"))["vm1"]
    assert "REBOOT_REQUESTED" in vm1.flags and vm1.drained and vm1.ours


def test_unknown_nodes_and_an_unreachable_controller_are_recognised():
    assert slurm.unknown_nodes(fixture("show_node_unknown.txt")) == ["vm9"]
    assert slurm.unknown_nodes(fixture("show_node_partly_unknown.txt")) == ["vm9"]
    assert slurm.unknown_nodes(fixture("squeue_unknown_node.txt")) == ["vm9"]
    assert slurm.is_unreachable(fixture("controller_down.txt"))
    assert slurm.is_unreachable(fixture("squeue_controller_down.txt"))
    assert not slurm.is_unreachable(fixture("update_unknown.txt"))


@pytest.mark.parametrize("text, names", [
    ("vm1", ["vm1"]),
    ("vm[1-3]", ["vm1", "vm2", "vm3"]),
    ("gpu[007-009,012],login1", ["gpu007", "gpu008", "gpu009", "gpu012", "login1"]),
    ("", []),
])
def test_node_lists_as_squeue_prints_them(text, names):
    assert slurm.expand_simple_list(text) == names


# -- the backend against a replay of those outputs ---------------------------------------------------
def unwrap(argv):
    """The command under the runner's time bound (``timeout --kill-after=N Ns <command>``) and
    the bound in seconds (None when it ran without one)."""
    if os.path.basename(argv[0]) == "timeout":
        return list(argv[3:]), int(argv[2].rstrip("s"))
    return list(argv), None


class Replay:
    """scontrol and squeue answering from the fixtures, in the order a rollout meets them."""

    def __init__(self, show, squeue="squeue_empty.txt", rc=0):
        self.show, self.squeue, self.rc, self.calls, self.bounds = show, squeue, rc, [], []

    def get_bin_path(self, tool):
        return "/usr/bin/" + tool

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True, **kwargs):
        argv, bound = unwrap(argv)
        self.bounds.append((bound, kwargs.get("errors")))
        tool = os.path.basename(argv[0])
        self.calls.append([tool] + list(argv[1:]))
        name = self.show if tool == "scontrol" and argv[1] == "show" else self.squeue if tool == "squeue" else None
        if name is None:
            return 0, "", ""
        text = fixture(name)
        rc = 1 if ("error" in text or "not found" in text) else 0
        return (rc, "", text) if rc else (0, text, "")


def backend(replay):
    return slurm.SlurmBackend(CommandRunner(replay))


def test_query_joins_jobs_to_nodes_and_asks_for_exactly_the_nodes():
    replay = Replay("show_node_allocated.txt", "squeue_running.txt")
    states = backend(replay).query(["vm1", "vm2"])
    assert states["vm1"].jobs == [dict(id="1", state="RUNNING", nodes="vm1", user="root", name="wrap")]
    assert replay.calls[0] == ["scontrol", "show", "node", "-o", "vm1,vm2"]
    assert replay.calls[1] == ["squeue", "-h", "-w", "vm1,vm2", "-o", slurm.SQUEUE_FORMAT]


def test_query_of_an_unknown_node_names_the_variable():
    with pytest.raises(InputError) as info:
        backend(Replay("show_node_partly_unknown.txt")).query(["vm1", "vm9"])
    assert "vm9" in info.value.msg and "rdmaops_slurm_node_name" in info.value.msg


def test_a_controller_that_does_not_answer_stops_before_anything():
    replay = Replay("controller_down.txt")
    with pytest.raises(SchedulerUnavailable) as info:
        backend(replay).query(["vm1"])
    assert "Unable to contact slurm controller" in info.value.msg and "nothing was drained" in info.value.msg
    assert [call[0] for call in replay.calls] == ["scontrol"]


def test_drain_resume_and_reboot_commands():
    replay = Replay("show_node_idle.txt")
    b = backend(replay)
    b.drain(["vm1"], "rdmaops.roce: x y")
    b.resume(["vm1"])
    b.reboot(["vm1"], "rdmaops.roce: mlxconfig")
    assert replay.calls == [
        ["scontrol", "update", "NodeName=vm1", "State=DRAIN", "Reason=rdmaops.roce: x y"],
        ["scontrol", "update", "NodeName=vm1", "State=RESUME"],
        ["scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=rdmaops.roce: mlxconfig", "vm1"],
    ]


@pytest.mark.parametrize("name", ["vm[1-2]", "vm1,vm2", "vm 1", "", "-vm1", "vm1\nState=DOWN", 7])
def test_node_names_that_would_address_other_nodes_are_refused(name):
    with pytest.raises(InputError) as info:
        backend(Replay("show_node_idle.txt")).drain([name], "rdmaops.roce: x")
    assert "not a node name" in info.value.msg


# -- output read defensively -------------------------------------------------------------------------
def recorded(fixture_name, node):
    """One recorded ``scontrol show node -o`` line."""
    return next(line for line in fixture(fixture_name).splitlines() if line.startswith("NodeName=%s " % node))


def with_state(line, state):
    return re.sub(r" State=\S+", " State=" + state, line)


def test_a_node_listed_twice_allocated_then_idle_is_busy():
    """scontrol lists a node once per name asked (``vm1,vm1`` gives two lines, as a node in two
    partitions does in sinfo): the later IDLE line must not make it idle."""
    text = recorded("show_node_allocated.txt", "vm1") + "\n" + recorded("show_node_idle.txt", "vm1") + "\n"
    vm1 = slurm.parse_show_node(text)["vm1"]
    assert vm1.busy and vm1.listed == 2
    # and the other way round
    text = recorded("show_node_idle.txt", "vm1") + "\n" + recorded("show_node_allocated.txt", "vm1") + "\n"
    assert slurm.parse_show_node(text)["vm1"].busy


def test_a_node_listed_twice_never_looks_drained_by_us_when_one_listing_says_otherwise():
    ours = recorded("show_node_drained.txt", "vm1")
    theirs = recorded("show_node_drained_other.txt", "vm1")
    for text in (ours + "\n" + theirs, theirs + "\n" + ours):
        vm1 = slurm.parse_show_node(text)["vm1"]
        assert vm1.reason == "disk replacement, ticket 4711" and not vm1.ours and vm1.foreign and vm1.busy


def test_a_reason_with_a_line_feed_cannot_forge_another_nodes_line():
    """A reason that holds a line feed (scontrol prints it raw) and a forged idle line for vm2:
    vm2 is then listed twice and is busy, never taken for idle and in service."""
    forged = recorded("show_node_drained_other.txt", "vm1").replace(
        "Reason=disk replacement, ticket 4711", "Reason=x\nNodeName=vm2 State=IDLE Reason=rdmaops.roce: forged")
    text = forged + "\n" + with_state(recorded("show_node_allocated.txt", "vm1").replace("NodeName=vm1", "NodeName=vm2"),
                                      "ALLOCATED") + "\n"
    vm2 = slurm.parse_show_node(text)["vm2"]
    assert vm2.busy and vm2.listed == 2 and not vm2.ours


@pytest.mark.parametrize("state", ["PLANNED", "IDLE+PLANNED", "IDLE+SOMETHING_NEW", "BLOCKED", "idle~", "", "IDLE+"])
def test_a_state_or_flag_we_do_not_know_is_never_idle(state):
    vm1 = slurm.parse_show_node(with_state(recorded("show_node_idle.txt", "vm1"), state))["vm1"]
    assert vm1.busy, state


def test_an_unknown_base_state_is_also_out_of_service_but_an_unknown_flag_alone_is_not():
    assert slurm.parse_show_node(with_state(recorded("show_node_idle.txt", "vm1"), "PLANNED"))["vm1"].out_of_service
    vm1 = slurm.parse_show_node(with_state(recorded("show_node_idle.txt", "vm1"), "IDLE+SOMETHING_NEW"))["vm1"]
    assert vm1.busy and not vm1.out_of_service


def test_a_line_without_a_state_is_not_idle():
    line = re.sub(r" State=\S+", "", recorded("show_node_idle.txt", "vm1"))
    assert slurm.parse_show_node(line)["vm1"].busy


@pytest.mark.parametrize("state, flags", [
    ("IDLE+NOT_RESPONDING", ["NOT_RESPONDING"]),
    ("IDLE+DRAIN+REBOOT_REQUESTED", ["DRAIN", "REBOOT_REQUESTED"]),
    ("IDLE+CLOUD+POWERING_UP", ["CLOUD", "POWERING_UP"]),
])
def test_known_quiet_flags_leave_an_idle_node_idle(state, flags):
    vm1 = slurm.parse_show_node(with_state(recorded("show_node_idle.txt", "vm1"), state))["vm1"]
    assert (vm1.state, vm1.flags, vm1.busy) == ("IDLE", flags, False)


def test_a_job_state_we_do_not_know_holds_the_node_and_an_ended_one_does_not():
    states = slurm.parse_show_node(fixture("show_node_idle.txt"))
    jobs = slurm.parse_squeue("7|RESIZING|vm1|root|x\n8|COMPLETED|vm2|root|y\n9|PENDING||root|z\n")
    slurm.attach_jobs(states, jobs)
    assert states["vm1"].busy and [job["id"] for job in states["vm1"].jobs] == ["7"]
    assert states["vm2"].jobs == []


@pytest.mark.parametrize("nodes, holding", [
    ("vm[1-2]", ["vm1", "vm2"]),
    ("vm[2]", ["vm2"]),
    ("rack[1-2]-n[01-04]", []),
    ("vm[1-2", ["vm1", "vm2"]),          # not a host list: holds every node asked about
    ("vm[9-1]", ["vm1", "vm2"]),
    ("vm[1-999999999999]", ["vm1", "vm2"]),  # answered without building the list
])
def test_node_lists_are_matched_without_expanding_and_an_unreadable_one_holds_all(nodes, holding):
    states = slurm.parse_show_node(fixture("show_node_idle.txt"))
    slurm.attach_jobs(states, [dict(id="1", state="RUNNING", nodes=nodes, user="u", name="n")])
    assert sorted(name for name, state in states.items() if state.jobs) == holding


def test_multi_dimensional_host_lists():
    assert slurm.node_list_members("rack[1-2]-n[01-04],login1", ["rack2-n03", "rack3-n01", "rack1-n5", "login1"]) \
        == ["rack2-n03", "login1"]
    assert slurm.node_list_members("gpu[007-009,012]", ["gpu008", "gpu8", "gpu012", "gpu010"]) == ["gpu008", "gpu012"]


def test_expanding_a_huge_range_stops_at_the_limit():
    assert len(slurm.expand_simple_list("n[0-999999999]")) == slurm.EXPAND_LIMIT
    assert slurm.expand_simple_list("n[1-3]", limit=2) == ["n1", "n2"]


def test_reading_every_node_once_and_picking_nodes_from_that_read():
    replay = Replay("show_node_allocated.txt", "squeue_running.txt")
    states = backend(replay).read()
    assert replay.calls == [["scontrol", "show", "node", "-o"], ["squeue", "-h", "-o", slurm.SQUEUE_FORMAT]]
    assert set(states) == {"vm1", "vm2"} and states["vm1"].jobs
    picked = select_nodes(states, ["vm2", "vm1"])
    assert list(picked) == ["vm2", "vm1"]
    with pytest.raises(InputError) as info:
        select_nodes(states, ["vm1", "vm9"])
    assert "vm9" in info.value.msg and info.value.details["unknown"] == ["vm9"]


def test_every_command_runs_under_the_time_bound_and_decodes_with_replacement():
    replay = Replay("show_node_idle.txt")
    b = slurm.SlurmBackend(CommandRunner(replay), timeout=7)
    b.query(["vm1"])
    b.drain(["vm1"], "rdmaops.roce: x")
    b.reboot(["vm1"], "rdmaops.roce: x")
    assert replay.bounds == [(7, "replace")] * 4
    b.query(["vm1"], timeout=3)
    assert replay.bounds[-2:] == [(3, "replace")] * 2
