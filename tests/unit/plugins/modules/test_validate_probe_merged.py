"""validate_probe's merged steps: the nic layer's check-mode read (nic_read) and the wait for the perftest
servers' asynchronous job (wait_jobs), made in the call that reads the counters after the tests.

The nic read runs rdmaops.roce.nic_layer's engine in this call with check mode forced, whatever the task's
(the role runs validate_probe with check_mode false): on real host trees (the lab's Soft-RoCE VM, a
ConnectX-7 with the dcb stand-in that keeps its state) its result is nic_layer's own check-mode result,
and a read whose intent differs from the host changes nothing. A read nic_layer would fail is a result
(failed, msg), not a failure of the call."""

import hashlib
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

import conftest
import hosttree
import monitortrees

from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import ports_from_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import probe
from ansible_collections.rdmaops.roce.plugins.modules import nic_layer, validate_probe

# what both results carry and the role or fabric_check reads (ports, rails) or the play shows
COMPARED = ("ports", "rails", "unsupported", "changes", "disruption", "disruptive_changes", "boot_reapply", "link_mtu")


def call(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def tree_state(root, *extra):
    """Every file under ``root`` (and the ``extra`` files) with its content's digest: what a read must leave."""
    state = {}
    for directory, _dirs, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                with open(path, "rb") as handle:
                    state[path] = hashlib.sha256(handle.read()).hexdigest()
    for path in extra:
        with open(path, "rb") as handle:
            state[path] = hashlib.sha256(handle.read()).hexdigest()
    return state


@pytest.fixture
def host(tmp_path, monkeypatch):
    """Build a host tree with one of monitortrees' builders; point the modules at it."""
    monkeypatch.setenv("QOS_STANDIN_STATE", str(tmp_path / "unused"))  # restored after the test

    def build(builder):
        root, bindirs = builder(tmp_path)
        monkeypatch.setenv("RDMAOPS_HOST_ROOT", str(root))
        # the stand-ins are Python scripts: the interpreter and coreutils come after the tree's tools
        monkeypatch.setenv("PATH", os.pathsep.join(bindirs + [os.path.dirname(sys.executable), "/usr/bin", "/bin"]))
        return root
    return build


def nic_options(capsys):
    """The options the role gives: every RoCE port of the host's facts (read by validate_probe's first
    call, as the role reads them) with the lab fabric's QoS."""
    facts = call(validate_probe, {"rdma_facts": True}, capsys)
    ports = ports_from_intent(facts["ansible_facts"]["rdma"], monitortrees.intent(), [p["netdev"] for p in facts["ports"]])
    assert ports, facts["ports"]
    return dict(ports=ports, boot_reapply=False, unsupported="warn")


@pytest.mark.parametrize("builder", [monitortrees.rxe_host, monitortrees.mlx5_host], ids=["rxe-virtio", "cx7-dcb-standin"])
def test_the_nic_read_is_nic_layers_check_mode_result_and_changes_nothing(host, builder, capsys, monkeypatch):
    root = host(builder)
    options = nic_options(capsys)
    seen = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning, **kwargs: seen.append(warning))
    alone = call(nic_layer, dict(options, _ansible_check_mode=True), capsys)
    warned_alone, seen[:] = list(seen), []
    before = tree_state(root, os.environ["QOS_STANDIN_STATE"]) if builder is monitortrees.mlx5_host else tree_state(root)
    # not in check mode, as the role runs it: the nic read is in check mode all the same
    merged = call(validate_probe, {"commands": [{"argv": ["true"], "check": True}], "nic_read": options}, capsys)
    after = tree_state(root, os.environ["QOS_STANDIN_STATE"]) if builder is monitortrees.mlx5_host else tree_state(root)
    assert "failed" not in merged and merged["changed"] is False and merged["results"][0]["rc"] == 0
    nic = merged["nic"]
    assert nic["failed"] is False and "failed" not in alone
    assert dict((key, nic.get(key)) for key in COMPARED) == dict((key, alone.get(key)) for key in COMPARED)
    assert seen == warned_alone  # the driver's limits said once per host, as nic_layer says them
    assert after == before
    if builder is monitortrees.mlx5_host:
        # the stand-in's NIC is not at the lab fabric's QoS: nic_layer would change it, and the read did not
        assert nic["changes"] and nic["ports"][0]["qos"]["before"]["trust"] == "pcp", nic["changes"]
    else:
        # virtio_net has no DCB: not applied, said once, the ports' other parts still read
        assert nic["unsupported"]["qos"] == {"ens4": nic["unsupported"]["qos"]["ens4"]} and seen


def rxe_dcb_fails(tmp_path):
    """The lab's VM where dcb fails otherwise than for a netdev without DCB ops: nic_layer fails the read."""
    manifest = hosttree.load("rxe_bookworm_mtu9000.json")
    manifest["commands"]["dcb -j pfc show dev ens4"] = dict(rc=1, stdout="", stderr="Error: Attribute read: No such device\n")
    root = tmp_path / "host"
    return root, [hosttree.materialize(manifest, root)]


def test_a_nic_read_that_nic_layer_would_fail_is_a_result_with_its_message(host, capsys):
    host(rxe_dcb_fails)
    options = nic_options(capsys)
    got = call(validate_probe, {"commands": [{"argv": ["true"], "check": True}], "nic_read": options}, capsys)
    assert "failed" not in got and got["results"][0]["rc"] == 0
    assert got["nic"]["failed"] is True
    assert got["nic"]["msg"] == "ens4: dcb -j pfc show failed: Error: Attribute read: No such device", got["nic"]
    alone = call(nic_layer, dict(options, _ansible_check_mode=True), capsys)
    assert alone["failed"] is True and alone["msg"] == got["nic"]["msg"]


@pytest.mark.parametrize("options, message", [
    ({"ports": [{"interface": "ens4;reboot", "device": "rxe0"}]}, "ports[0].interface"),
    ({"ports": [{"interface": "ens4"}]}, "missing required arguments: device found in ports"),
    ({"ports": [{"interface": "ens4", "device": "rxe0"}], "unsupported": "ignore"}, "unsupported must be one of: warn, fail"),
    ({"rails": {"links": [{"interface": "ens4", "address": "198.18.0.11", "prefix": 24}]}}, "missing required arguments: table"),
    ({"boot_reapply": False}, "nothing to do"),
])
def test_bad_nic_read_options_are_nic_layers_messages_and_nothing_is_read(host, capsys, options, message, monkeypatch):
    host(monitortrees.rxe_host)
    ran = []
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kwargs: ran.append(argv) or (0, "", ""))
    got = call(validate_probe, {"nic_read": options}, capsys)
    assert "failed" not in got and got["nic"]["failed"] is True
    assert message in got["nic"]["msg"], got["nic"]["msg"]
    assert "<class" not in got["nic"]["msg"] and "Traceback" not in got["nic"]["msg"]
    assert ran == []


def test_the_probe_alone_loads_no_nic_engine():
    """The calls without a nic read import what they did before: the QoS engines only when asked."""
    code = ("import sys; import ansible_collections.rdmaops.roce.plugins.modules.validate_probe; "
            "print([m for m in sys.modules if '_nic_layer' in m or '._qos.' in m or '_netconf' in m])")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=conftest.COLLECTIONS_ROOT),
                         capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout


# -- the wait for asynchronous jobs ----------------------------------------------------------------

def jwrite(path, info):
    """As ansible's async_wrapper writes a job's file: to a .tmp, then renamed."""
    with open(path + ".tmp", "w") as handle:
        handle.write(json.dumps(info))
    os.rename(path + ".tmp", path)


def test_a_job_is_waited_for_until_its_file_says_it_finished(tmp_path):
    path = str(tmp_path / "j123.456")
    jwrite(path, {"started": True, "finished": False, "ansible_job_id": "j123.456"})

    def finish():
        time.sleep(0.5)
        jwrite(path, {"changed": False, "results": [{"rc": 1, "cmd": ["ib_write_bw"]}]})
    thread = threading.Thread(target=finish)
    thread.start()
    start = time.monotonic()
    (job,) = probe.wait_for_jobs([dict(jid="j123.456", results_file=path, seconds=30)], poll=0.1)
    thread.join()
    assert time.monotonic() - start >= 0.5
    # the server's failure is in the job's result, as async_status returns it
    assert job == {"changed": False, "results": [{"rc": 1, "cmd": ["ib_write_bw"]}], "ansible_job_id": "j123.456", "finished": True}


def test_a_job_that_does_not_finish_in_time_and_a_job_that_is_gone(tmp_path):
    running = str(tmp_path / "j1.2")
    jwrite(running, {"started": True, "finished": False, "ansible_job_id": "j1.2"})
    killed = str(tmp_path / "j3.4")
    jwrite(killed, {"msg": "Timeout exceeded", "failed": True, "child_pid": 99})  # async_wrapper, at its limit
    start = time.monotonic()
    got = probe.wait_for_jobs([dict(jid="j1.2", results_file=running, seconds=1), dict(jid="j3.4", results_file=killed, seconds=1),
                               dict(jid="j5.6", results_file=str(tmp_path / "j5.6"), seconds=1)], poll=0.1)
    assert 1 <= time.monotonic() - start < 5  # one limit for all, counted from the start
    assert got[0] == {"ansible_job_id": "j1.2", "finished": False, "results_file": running}
    assert got[1] == {"msg": "Timeout exceeded", "failed": True, "child_pid": 99, "ansible_job_id": "j3.4", "finished": True}
    assert got[2]["failed"] is True and got[2]["finished"] is True and "could not find job j5.6" in got[2]["msg"]


@pytest.mark.parametrize("job, message", [
    (dict(jid="../../etc/passwd", results_file="/etc/passwd"), "wait_jobs[0].jid must be an asynchronous job's id"),
    (dict(jid="j1.2; rm -rf /", results_file="/root/.ansible_async/j1.2"), "wait_jobs[0].jid must be"),
    (dict(jid="j1.2", results_file=".ansible_async/j1.2"), "wait_jobs[0].results_file must be the job's results file"),
    (dict(jid="j1.2", results_file="/etc/shadow"), "ending in its id j1.2"),
    (dict(jid="j1.2", results_file="/root/.ansible_async/j1.2\n"), "wait_jobs[0].results_file"),
])
def test_a_job_that_is_not_one_is_refused_before_anything_runs(tmp_path, capsys, job, message):
    marker = tmp_path / "ran"
    got = call(validate_probe, {"wait_jobs": [dict(job, seconds=5)], "commands": [{"argv": ["touch", str(marker)]}]}, capsys)
    assert got["failed"] is True and message in got["msg"], got["msg"]
    assert not marker.exists()


def test_the_wait_comes_before_the_commands(tmp_path, capsys):
    path = str(tmp_path / "j7.8")
    jwrite(path, {"started": True, "finished": False, "ansible_job_id": "j7.8"})
    marker = tmp_path / "finished-before-the-read"
    timer = threading.Timer(0.5, jwrite, (path, {"changed": False, "results": []}))
    timer.start()
    got = call(validate_probe, {"wait_jobs": [dict(jid="j7.8", results_file=path, seconds=30)],
                                "commands": [{"argv": ["sh", "-c", "grep -q results %s && touch %s" % (path, marker)], "check": True}]}, capsys)
    timer.join()
    assert "failed" not in got and got["jobs"][0]["finished"] is True and marker.exists()
