"""The lab's Slurm controller (tests/lab/slurmlab.py) without VMs: the slurm.conf it writes for the host
and the VMs, and Debian's real slurmctld and munged started from it, answering sinfo with the lab's
partition, then stopped. The VMs' side (slurmd over QEMU's user-mode network) is proven by the lab tier."""

import os
import random
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests", "lab"))

import lab  # noqa: E402  pylint: disable=wrong-import-position
import slurmlab  # noqa: E402  pylint: disable=wrong-import-position


def test_slurm_runs_over_the_management_network_with_a_port_per_node():
    host = slurmlab.render_conf(2230, "/run/lab/slurm", "ctl", "host", "/run/lab-munge/munge.socket")
    vm = slurmlab.render_conf(2230, "/run/lab/slurm", "ctl", "vm")
    # the host's tools reach the controller on loopback, the VMs at QEMU's address for it
    assert "SlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort=6230\n" in host
    assert "SlurmctldHost=ctl(10.0.2.2)\nSlurmctldPort=6230\n" in vm
    for index in range(1, 5):
        line = "NodeName=vm%d NodeAddr=127.0.0.1 Port=%d CPUs=1 State=UNKNOWN" % (index, 6230 + index)
        assert line in host and line in vm
    assert "TreeWidth=65533" in host  # no node forwards to another (127.0.0.1 would be itself)
    assert "PartitionName=rdma Nodes=vm1,vm2,vm3,vm4 " in host
    # the host's tools talk to the lab's own munged; the VMs use their distribution's
    assert "AuthInfo=socket=/run/lab-munge/munge.socket" in host and "AuthInfo" not in vm
    assert "StateSaveLocation=/run/lab/slurm/state" in host


def test_each_vms_slurmd_port_is_forwarded_from_the_host():
    plan = lab.plan_lab("/run/rdmaops-lab-test", 2, base_port=2230)
    argv = lab.qemu_argv(plan["vms"]["vm2"], "/img", "/vm2", 1024, "id")
    mgmt = argv[argv.index("-netdev") + 1]
    assert "hostfwd=tcp:127.0.0.1:6232-:6232" in mgmt
    assert slurmlab.slurmd_port(2230, 2) == 6232


def test_the_vm_script_installs_the_lab_key_and_conf_only_when_they_differ(tmp_path):
    cluster = slurmlab.SlurmLab(str(tmp_path), 2230, print)
    os.makedirs(os.path.join(cluster.dir, "key"))
    with open(cluster.key, "wb") as handle:
        handle.write(b"k" * 1024)
    with open(cluster.vm_conf, "w", encoding="utf-8") as handle:
        handle.write(slurmlab.render_conf(2230, cluster.dir, "ctl", "vm"))
    script = cluster.vm_script()
    assert "/etc/munge/munge.key" in script and "systemctl restart slurmd" in script
    assert "kkkk" not in script  # the key travels base64-encoded inside the command, never echoed
    proc = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the Slurm daemons need root")
@pytest.mark.skipif(bool(slurmlab.SlurmLab.missing_tools()),
                    reason="Debian's slurmctld, slurm-client and munge are not installed (the unit tier installs them)")
def test_a_real_slurmctld_answers_and_stops(tmp_path):
    base = random.randint(20000, 30000)  # a lab of our own: ports clear of any running lab's
    cluster = slurmlab.SlurmLab(str(tmp_path), base, print)
    try:
        cluster.ensure_controller()
        cluster.ensure_controller()  # a second call finds both daemons running and starts nothing
        assert oct(os.stat(cluster.key).st_mode & 0o777) == "0o400"
        states = cluster.node_states()
        # no slurmd anywhere: the four nodes are known, in partition rdma, and not responding
        assert sorted(states) == ["vm1", "vm2", "vm3", "vm4"], states
        assert all(state.startswith(("unk", "down")) for state in states.values()), states
        ping = cluster.run(["scontrol", "ping"])
        assert "is UP" in ping.stdout, ping.stdout + ping.stderr
        assert slurmlab.port_in_use(slurmlab.controller_port(base))
    finally:
        cluster.stop()
    assert not slurmlab._pid_alive(os.path.join(cluster.dir, "slurmctld.pid"), "slurmctld")  # pylint: disable=protected-access
    assert not slurmlab._pid_alive(os.path.join(cluster.dir, "key", "munged.pid"), "munged")  # pylint: disable=protected-access
    assert not os.path.exists(cluster.socket_dir)
    assert shutil.which("sinfo")
