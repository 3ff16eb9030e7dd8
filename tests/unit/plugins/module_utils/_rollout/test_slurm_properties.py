"""Property-based tests (hypothesis) of the scheduler parsers: whatever Slurm's client tools or a
site's commands print - any bytes, any lines, any node states and flags, any reasons, job states and
node lists - the parsers never raise, a node listed more than once is never idle, a state or flag
they do not know is never idle, and what they return encodes as UTF-8 (what Ansible's controller
insists on in a module's result).

Bounded and deterministic for CI (derandomize, no example database, no deadline; a few seconds on
one core); RDMAOPS_PROPERTY_SCALE=20 runs a longer, random hunt by hand."""

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout import slurm
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.command import CommandBackend
from ansible_collections.rdmaops.roce.plugins.module_utils._rollout.common import NodeState

SCALE = int(os.environ.get("RDMAOPS_PROPERTY_SCALE", "1"))


def bounded(examples):
    return settings(max_examples=examples * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
                    suppress_health_check=list(HealthCheck))


# What scontrol prints, as bytes, decoded the way the runner asks Ansible to (errors="replace").
def decoded(data):
    return data.decode("utf-8", "replace")


NAMES = st.sampled_from(["vm1", "vm2", "gpu017", "n1", "x"])
KNOWN_WORDS = list(slurm.KNOWN_STATES + slurm.KNOWN_FLAGS)
WORDS = st.one_of(st.sampled_from(KNOWN_WORDS),
                  st.sampled_from(["PLANNED", "BLOCKED", "EXTERNAL", "idle", "IDLE*", "", "+", "DRAIN*"]),
                  st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_*~#!%$@^-+ ", max_size=12))
REASONS = st.one_of(st.none(), st.text(max_size=40), st.sampled_from([
    "rdmaops.roce: link_reset: ens4: set rx ring", "disk replacement, ticket 4711", "Not responding",
    "x\nNodeName=vm2 State=IDLE", "a\x85NodeName=vm1 State=IDLE", " Reason=rdmaops.roce: y", "[root@now]",
    "rdmaops.roce: z [root@2026-11-26T09:21:06]"]))
EXTRA = st.text(alphabet="abcXYZ=+ []@:,\t\x00\x0b\r", max_size=20)


@st.composite
def show_node_lines(draw):
    """``scontrol show node -o`` lines, well formed or not, with the states and reasons drawn."""
    name = draw(NAMES)
    words = draw(st.lists(WORDS, min_size=0, max_size=4))
    line = "NodeName=%s Arch=x86_64 %sCPUTot=1" % (name, draw(EXTRA))
    if words or draw(st.booleans()):
        line += " State=" + "+".join(words)
    line += " " + draw(EXTRA)
    reason = draw(REASONS)
    if reason is not None:
        line += " Reason=%s" % reason + draw(st.sampled_from(["", " [root@2026-11-26T09:21:06]", " [", "]"]))
    return name, words, line


def _check_states(states):
    for name, state in states.items():
        assert isinstance(state, NodeState) and state.name == name and name
        json.dumps(state.as_dict()).encode("utf-8")
        state.as_dict()["reason"] is None or state.as_dict()["reason"].encode("utf-8")


@bounded(400)
@given(st.binary(max_size=400))
def test_any_bytes_parse_without_a_traceback(data):
    text = decoded(data)
    _check_states(slurm.parse_show_node(text))
    _check_states(slurm.parse_show_node("NodeName=" + text))
    jobs = slurm.parse_squeue(text)
    assert all(set(job) == {"id", "state", "nodes", "user", "name"} for job in jobs)
    slurm.unknown_nodes(text)
    slurm.is_unreachable(text)


@bounded(250)
@given(st.lists(show_node_lines(), min_size=1, max_size=6), st.sampled_from(["\n", "\r\n"]))
def test_duplicates_and_unknown_states_are_never_idle(lines, newline):
    text = newline.join(line for _name, _words, line in lines) + newline
    states = slurm.parse_show_node(text)
    _check_states(states)
    counted = {}
    for name, _words, line in lines:
        # a reason may itself carry a line feed and a forged line: count what scontrol's reader sees
        for piece in line.split("\n"):
            if piece.startswith("NodeName=") and piece.split()[0][len("NodeName="):]:
                forged = piece.split()[0][len("NodeName="):]
                counted[forged] = counted.get(forged, 0) + 1
    for name, count in counted.items():
        assert name in states
        if count > 1:
            assert states[name].busy, (name, text)
    for name, words, line in lines:
        if counted.get(name) != 1 or "\n" in line:
            continue
        state = states[name]
        words = as_read(words, line)
        known = bool(words) and words[0] in slurm.KNOWN_STATES and all(w in slurm.KNOWN_FLAGS for w in words[1:])
        if not known:
            assert state.busy, (line, state.as_dict())
        if words and words[0] not in slurm.IDLE_STATES + slurm.BUSY_STATES:
            assert state.out_of_service, (line, state.as_dict())


def as_read(words, line):
    """The state words as scontrol's reader takes them: the State= token up to white space, in
    capitals, without the trailing "*" sinfo-style not-responding mark; none without a State=."""
    if " State=" not in line.partition(" Reason=")[0]:
        return []
    token = ("State=" + "+".join(words)).split()[0][len("State="):].upper().rstrip("*")
    return token.split("+") if token else []


@bounded(150)
@given(st.lists(show_node_lines(), min_size=1, max_size=4))
def test_a_node_is_ours_only_when_every_listing_says_so(lines):
    states = slurm.parse_show_node("\n".join(line for _name, _words, line in lines))
    for name, state in states.items():
        if state.ours:
            assert state.reason.startswith("rdmaops.roce:") and state.drained
        if state.listed > 1:
            assert state.busy


JOB_STATES = st.one_of(st.sampled_from(list(slurm.ENDED_JOB_STATES + slurm.HOLDING_JOB_STATES)),
                       st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_ ", max_size=10))
NODE_LISTS = st.one_of(
    st.sampled_from(["vm1", "vm[1-2]", "vm[2]", "gpu[007-009,012],x", "rack[1-2]-n[01-04]", "vm[1-999999999999]",
                     "vm[", "vm]1", "[1-2]", "vm[a-b]", "vm[2-1]", "vm[" + "9" * 5000 + "]", ""]),
    st.text(alphabet="vmgpu0123456789[]-,", max_size=24))


@bounded(200)
@given(st.lists(st.tuples(st.text(alphabet="0123456789", min_size=1, max_size=4), JOB_STATES, NODE_LISTS,
                          st.text(max_size=8), st.text(max_size=12)), max_size=6))
def test_jobs_attach_without_a_traceback_and_unknown_job_states_hold(rows):
    text = "\n".join("|".join(row) for row in rows)
    jobs = slurm.parse_squeue(text)
    states = slurm.parse_show_node("NodeName=vm1 State=IDLE\nNodeName=vm2 State=IDLE\n")
    slurm.attach_jobs(states, jobs)
    for job in jobs:
        members = slurm.node_list_members(job["nodes"], list(states))
        held = list(states) if members is None else members
        for name in held:
            if job["state"] not in slurm.ENDED_JOB_STATES:
                assert job in states[name].jobs and states[name].busy


@bounded(300)
@given(st.text(alphabet="abgpuvm-", min_size=1, max_size=4), st.integers(0, 120), st.integers(0, 40),
       st.integers(1, 3))
def test_node_list_matching_agrees_with_expanding(prefix, low, span, width):
    text = "%s[%0*d-%0*d]" % (prefix, width, low, width, low + span)
    names = ["%s%0*d" % (prefix, width, number) for number in range(max(0, low - 3), low + span + 4)]
    names += ["%s%d" % (prefix, low), prefix, prefix + "x"]
    assert slurm.node_list_members(text, names) == [name for name in names if name in slurm.expand_simple_list(text)]


class Printing:
    """A module whose commands print ``outputs[key]`` (bytes, decoded as Ansible would)."""

    def __init__(self, outputs):
        self.outputs = outputs

    def get_bin_path(self, tool):
        return "/usr/bin/" + tool.rsplit("/", 1)[-1]

    def run_command(self, argv, errors="surrogateescape", **kwargs):
        line = argv[-1]
        key = "busy" if line == "BUSY" else "state"
        return 0, self.outputs[key].decode("utf-8", errors), ""


@bounded(300)
@given(st.binary(max_size=80), st.one_of(st.binary(max_size=80), st.sampled_from([
    b"available", b"drained", b"down", b"drained disk \xff\xfe replacement", b"drained rdmaops.roce: x",
    b"DRAINED x", b"drained\nNodeName", b"\n\ndown  x", b"available\xff"]).map(bytes)))
def test_the_sites_commands_output_is_read_or_refused_never_a_traceback(busy, state):
    backend = CommandBackend(CommandRunner(Printing(dict(busy=busy, state=state))),
                             dict(busy="BUSY", drain="true", resume="true", state="STATE"))
    try:
        result = backend.query(["gpu1"])
    except RdmaopsError as exc:
        assert "state command printed" in exc.msg and "Traceback" not in exc.msg
        exc.msg.encode("utf-8")
        return
    _check_states(result)
    node = result["gpu1"]
    assert node.busy == bool(decoded(busy).strip())
    if node.drained and node.reason and not node.reason.startswith("rdmaops.roce:"):
        assert node.foreign
