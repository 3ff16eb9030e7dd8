"""The nccl role and the nccl_conf module through ansible, against the Soft-RoCE lab VM as captured
(rxe0 on ens4, RoCE v2 GID 1 for 198.18.0.11), plus the lab image's default route on ens3."""

import os
import re

import ansiblerun
import hosttree

PLAYBOOK = """\
- name: NCCL role on the captured lab VM
  hosts: localhost
  gather_facts: false
  roles:
    - role: rdmaops.roce.nccl
"""
TASK = "NCCL's RoCE settings from this host's RoCE ports and the fabric intent, in /etc/nccl.conf"
# the lab VM's routes as /proc/net/route prints them: the default route through QEMU's 10.0.2.2 on ens3
ROUTES = "".join("%-127s\n" % line for line in (
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
    "ens3\t00000000\t0202000A\t0003\t0\t0\t0\t00000000\t0\t0\t0",
    "ens3\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
    "ens4\t000012C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
))


def lab_vm(tmp_path):
    root = tmp_path / "vm"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    (root / "proc/net").mkdir(parents=True, exist_ok=True)
    (root / "proc/net/route").write_text(ROUTES)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    return root, ansiblerun.tree_env(root, [bindir])


def play(tmp_path, env, extra_vars=None, check=False, diff=False):
    rc, tasks, stats = ansiblerun.playbook(tmp_path / "play.yml", env, extra_vars, check=check, diff=diff)
    return rc, stats, dict((name.split(" : ", 1)[-1], result) for name, result in tasks.items())


def nccl_env(root):
    """What NCCL would set from the file: NAME=VALUE lines, '#' in column 1 a comment, first one wins."""
    env = {}
    for line in (root / "etc/nccl.conf").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            env.setdefault(name, value)
    return env


def test_role_predicts_writes_and_repeats_without_change(tmp_path):
    root, env = lab_vm(tmp_path)
    rc, stats, tasks = play(tmp_path, env, check=True, diff=True)
    assert rc == 0 and stats["changed"] == 1, tasks
    assert "NCCL_IB_HCA==rxe0:1" in tasks[TASK]["diff"][0]["after"]
    assert not (root / "etc/nccl.conf").exists()

    rc, stats, tasks = play(tmp_path, env)
    assert rc == 0 and stats["changed"] == 1, tasks
    assert nccl_env(root) == {
        "NCCL_IB_HCA": "=rxe0:1",
        "NCCL_IB_GID_INDEX": "1",
        "NCCL_IB_TC": "106",  # the lossless preset's ToS: DSCP 26 << 2 | ECT(0)
        "NCCL_SOCKET_IFNAME": "=ens3",  # the default route's interface
        "NCCL_IB_TIMEOUT": "20",
        "NCCL_IB_RETRY_CNT": "7",
    }
    assert tasks[TASK]["socket_ifname_source"] == "default route"

    rc, stats, tasks = play(tmp_path, env)
    assert rc == 0 and stats["changed"] == 0, tasks


def test_role_follows_the_intent_and_its_variables(tmp_path):
    root, env = lab_vm(tmp_path)
    extra = dict(roce_fabric=dict(roce_dscp=24), nccl_socket_ifname="ens4", nccl_ib_gid_index=0, nccl_ib_timeout=22,
                 nccl_extra_settings=dict(NCCL_IB_QPS_PER_CONNECTION=4))
    rc, stats, tasks = play(tmp_path, env, extra)
    assert rc == 0, tasks
    conf = nccl_env(root)
    assert (conf["NCCL_IB_TC"], conf["NCCL_SOCKET_IFNAME"], conf["NCCL_IB_GID_INDEX"], conf["NCCL_IB_TIMEOUT"]) == (
        "98", "=ens4", "0", "22")
    assert conf["NCCL_IB_QPS_PER_CONNECTION"] == "4"


def test_role_refuses_a_file_it_did_not_write_and_keeps_it(tmp_path):
    root, env = lab_vm(tmp_path)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/nccl.conf").write_bytes(b"NCCL_DEBUG=WARN\n# caf\xe9\n")
    rc, stats, tasks = play(tmp_path, env)
    assert rc != 0 and stats["failures"] == 1
    msg = tasks[TASK]["msg"]
    assert "/etc/nccl.conf exists and was not written by rdmaops.roce" in msg and "adopt" in msg
    assert "Traceback" not in msg
    assert (root / "etc/nccl.conf").read_bytes() == b"NCCL_DEBUG=WARN\n# caf\xe9\n"
    rc, stats, tasks = play(tmp_path, env, dict(nccl_conf_adopt=True))
    assert rc == 0 and stats["changed"] == 1, tasks
    data = (root / "etc/nccl.conf").read_bytes()
    assert data.startswith(b"NCCL_DEBUG=WARN\n# caf\xe9\n") and b"NCCL_IB_GID_INDEX=1\n" in data


def test_module_names_bad_input_without_type_names(tmp_path):
    root, env = lab_vm(tmp_path)
    rc, result = ansiblerun.adhoc("rdmaops.roce.nccl_conf", "tc=107", env)
    assert rc != 0 and result["failed"]
    assert "tc=107 has both ECN bits set" in result["msg"]
    assert not re.search(r"\b(int|str|NoneType|dict|list|Traceback)\b", result["msg"])
    rc, result = ansiblerun.adhoc("rdmaops.roce.nccl_conf", "tc=106 ib_retry_cnt=9", env)
    assert rc != 0 and "ib_retry_cnt=9 must be an integer from 0 to 7" in result["msg"]
    assert not (root / "etc/nccl.conf").exists()


def test_site_runs_nccl_on_gpu_hosts_that_are_rdma_hosts(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    rdma_hosts:\n      hosts: {a: {}, b: {}}\n    gpu_hosts:\n      hosts: {b: {}, c: {}}\n")
    proc = ansiblerun.run("ansible-playbook", ["-i", inventory, os.path.join("playbooks", "site.yml"), "--list-hosts",
                                               "--tags", "nccl"])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    play = out[out.index("play #"):]
    nccl = [block for block in play.split("play #") if "NCCL configuration" in block]
    assert len(nccl) == 1
    hosts = nccl[0].split("hosts (", 1)[1].split("\n", 1)[1].split()
    assert hosts == ["b"]
