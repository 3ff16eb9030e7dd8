"""The firmware role through ansible-playbook: the ConnectX-7 host tree under RDMAOPS_HOST_ROOT and the
mlxconfig/mstconfig stand-ins first on PATH (they print the tools' table, keep Default/Current/Next Boot
in a state file and log every argv). No ConnectX exists here or in the VM lab."""

import json

import ansiblerun
import hosttree
import mlxcfgsim
from fixtures.hosts import cx7_doca

DEV = "0000:3d:00.0"
PLAYBOOK = """\
- name: Firmware role
  hosts: localhost
  gather_facts: false
  roles:
    - role: rdmaops.roce.firmware
"""
TASK = "Firmware values from the fabric intent and the allow-list"
REPORT = "Say what the firmware layer found"


def setup(tmp_path):
    tree = tmp_path / "host"
    bindir = hosttree.materialize(cx7_doca.manifest(), str(tree))
    (tree / "proc/sys/kernel/random").mkdir(parents=True)
    (tree / "proc/sys/kernel/random/boot_id").write_text("boot-1\n")
    env = ansiblerun.tree_env(tree, [mlxcfgsim.STANDINS, bindir])
    env.update(mlxcfgsim.environment(tmp_path))
    (tmp_path / "play.yml").write_text(PLAYBOOK)

    def play(extra_vars=None, check=False, diff=False):
        rc, tasks, stats = ansiblerun.playbook(tmp_path / "play.yml", env, extra_vars, check=check, diff=diff)
        return rc, stats, dict((name.split(" : ", 1)[-1], result) for name, result in tasks.items())

    def sets():
        path = tmp_path / "argv.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [argv for argv in (json.loads(line) for line in lines) if "set" in argv]

    play.sets = sets
    play.reboot = lambda boot_id: (mlxcfgsim.reboot(env), (tree / "proc/sys/kernel/random/boot_id").write_text(boot_id))
    return play


def test_intent_values_check_mode_apply_repeat_and_reboot(tmp_path):
    play = setup(tmp_path)
    fabric = {"roce_fabric": {"cnp_dscp": 46}, "firmware_settings": {"ATS_ENABLED": True}}
    rc, stats, tasks = play(fabric, check=True, diff=True)
    assert rc == 0 and stats["changed"] == 1, tasks
    assert play.sets() == []
    assert tasks[TASK]["diff"][0]["after"] == {"mlxconfig %s" % DEV: {
        "CNP_DSCP_P1": "46", "ROCE_CC_PRIO_MASK_P1": "8", "ATS_ENABLED": "1"}}

    rc, stats, tasks = play(fabric)
    assert rc == 0 and stats["changed"] == 1, tasks
    assert play.sets() == [["mlxconfig", "-d", DEV, "-y", "set", "CNP_DSCP_P1=46", "ROCE_CC_PRIO_MASK_P1=8", "ATS_ENABLED=1"]]
    assert tasks[TASK]["disruption"] == "reboot"
    assert tasks[REPORT]["msg"].startswith("a reboot activates: %s ATS_ENABLED" % DEV)

    rc, stats, tasks = play(fabric)
    assert rc == 0 and stats["changed"] == 0, tasks
    assert len(play.sets()) == 1 and tasks[TASK]["reboot_required"] is True

    play.reboot("boot-2")
    rc, stats, tasks = play(fabric)
    assert rc == 0 and stats["changed"] == 0, tasks
    assert tasks[REPORT]["msg"] == "firmware values as asked and running"


def test_a_pending_reboot_is_held_back_in_a_capped_run(tmp_path):
    play = setup(tmp_path)
    assert play()[0] == 0
    rc, stats, tasks = play({"rdmaops_max_disruption": "link_reset"})
    assert rc == 0 and stats["changed"] == 0, tasks
    assert tasks[TASK]["held_back"] is True and tasks[TASK]["disruption"] == "reboot"
    assert tasks[REPORT]["msg"].startswith("held back for a drain: reboot: firmware next-boot values not running yet")


def test_a_key_outside_the_allow_list_is_refused_naming_it(tmp_path):
    play = setup(tmp_path)
    rc, stats, tasks = play({"firmware_settings": {"PCI_ATOMIC_MODE": 4}})
    assert rc != 0 and "PCI_ATOMIC_MODE" in tasks[TASK]["msg"] and "firmware_extra" in tasks[TASK]["msg"], tasks
    assert "Traceback" not in json.dumps(tasks[TASK])
    assert play.sets() == []


def test_the_lab_vm_reports_no_device_and_runs_no_module(tmp_path):
    """The soft-RoCE lab VM as captured: rdma_facts lists rxe0 only, so no firmware module runs."""
    root = tmp_path / "vm"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    env = ansiblerun.tree_env(root, [mlxcfgsim.STANDINS, bindir])
    env.update(mlxcfgsim.environment(tmp_path))
    (tmp_path / "play.yml").write_text(PLAYBOOK.replace("  roles:", "  pre_tasks:\n    - name: RDMA facts\n"
                                                                    "      rdmaops.roce.rdma_facts:\n  roles:"))
    rc, tasks, stats = ansiblerun.playbook(tmp_path / "play.yml", env)
    tasks = dict((name.split(" : ", 1)[-1], result) for name, result in tasks.items())
    assert rc == 0 and stats["changed"] == 0, tasks
    assert tasks[TASK].get("skipped") is True
    assert tasks[REPORT]["msg"].startswith("no device")
    assert not (tmp_path / "argv.log").exists()


def test_a_host_without_a_card_and_without_facts_asks_the_module(tmp_path):
    setup(tmp_path)  # writes the playbook
    bare = tmp_path / "bare"
    (bare / "sys/bus/pci/devices").mkdir(parents=True)
    env = ansiblerun.tree_env(bare, [mlxcfgsim.STANDINS])
    rc, tasks, stats = ansiblerun.playbook(tmp_path / "play.yml", env)
    tasks = dict((name.split(" : ", 1)[-1], result) for name, result in tasks.items())
    assert rc == 0 and stats["changed"] == 0, tasks
    assert tasks[TASK]["no_device"] is True and tasks[REPORT]["msg"].startswith("no device")
