"""The shipped playbooks, run by ansible-playbook against this machine and recorded trees."""

import json
import os
import re
import sys

import pytest
import yaml

import ansiblerun


def run_playbook(playbook, inventory, extra_vars=None, check=True, env_extra=None, extra_args=()):
    argv = ["-i", inventory, os.path.join(ansiblerun.REPO, "playbooks", playbook)] + list(extra_args)
    if extra_vars:
        argv += ["-e", json.dumps(extra_vars)]
    if check:
        argv.append("--check")
    return ansiblerun.run("ansible-playbook", argv, env_extra=env_extra)


def write_inventory(tmp_path, roce_fabric):
    inventory = {
        "all": {
            "children": {
                "rdma_hosts": {
                    "hosts": {
                        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                        # Never contacted: the intent check must stop the run before any connection.
                        "gpu-far": {"ansible_host": "never-contacted.invalid", "ansible_connection": "ssh"},
                    }
                }
            },
            "vars": {"roce_fabric": roce_fabric},
        }
    }
    # YAML, as users write inventories: a key like 1 stays a number (JSON would make it text).
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


# What must never reach a user: a Python type name or a traceback (ansible-core 2.19 passes its own
# list/dict/int subclasses to filters, so a TypeError once surfaced as '_AnsibleLazyTemplateList').
PYTHON_WORDS = re.compile(r"\b(dict|str|int|bool|NoneType|unhashable|Traceback)\b|_Ansible|<class|expected str instance")


def host_tasks(out):
    """The tasks ansible-playbook started, other than resolving the intent."""
    return [name for name in re.findall(r"^TASK \[(.+?)\]", out, re.M) if not name.startswith("Resolve ")]


@pytest.mark.parametrize(
    "roce_fabric, message",
    [
        ({"preset": "lossless", "cnp_priority": 3}, "roce_fabric.cnp_priority=3 equals roce_priority"),
        ({"host_mtu": 9216, "switch_mtu": 9000}, "host_mtu=9216 is above switch_mtu=9000"),
        ({"preset": "lossy_ecn", "pfc_priorities": [3]}, "the lossy_ecn preset uses no PFC"),
        # Wrong kinds of value, as ansible-core hands them to the filter (lazy lists, tagged ints).
        ({"preset": ["lossless"]}, "roce_fabric.preset=[\"lossless\"]: choose one of lossless, lossy_ecn (e.g. preset: lossless), not a list"),
        ({1: 2}, "roce_fabric has key(s) 1 that are not names: write each key as a name such as preset or host_mtu"),
        ({"roce_dscp": {"value": 26}}, "roce_fabric.roce_dscp: must be an integer 0..63"),
        ({"host_mtu": True}, "roce_fabric.host_mtu=true: must be an integer 1280..9216 (9000 for jumbo RoCE), not a boolean"),
        ({"preset": "lossless\n"}, "choose one of lossless, lossy_ecn (e.g. preset: lossless); remove the whitespace around it"),
        ({"roce_tos": 107}, "roce_fabric.roce_tos=107 sets the ECN bits (the two low bits) to CE"),
    ],
    ids=repr,
)
def test_bad_intent_stops_before_any_host_is_contacted(tmp_path, roce_fabric, message):
    proc = run_playbook("site.yml", write_inventory(tmp_path, roce_fabric))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert message in out
    assert not PYTHON_WORDS.search(out), out
    assert "UNREACHABLE" not in out and "Could not resolve hostname" not in out
    assert "Read OS, kernel and Python" not in out  # the second play never started


@pytest.mark.parametrize(
    "playbook, tags",
    [
        ("site.yml", ["--skip-tags", "preflight"]),
        ("site.yml", ["--tags", "nic", "--skip-tags", "preflight"]),
        ("site.yml", ["--tags", "drivers,tuning"]),
        ("preflight.yml", ["--skip-tags", "preflight"]),
        ("validate.yml", ["--tags", "bandwidth"]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_bad_intent_is_refused_before_any_host_task_whatever_the_tags(tmp_path, playbook, tags):
    """--skip-tags preflight (or any --tags) must not let a host task run ahead of the intent check."""
    proc = run_playbook(playbook, write_inventory(tmp_path, {"cnp_priority": 3}), extra_args=tags)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "roce_fabric.cnp_priority=3 equals roce_priority" in out
    assert host_tasks(proc.stdout) == [], proc.stdout
    assert "UNREACHABLE" not in out and "Could not resolve hostname" not in out
    assert re.search(r"^localhost\s+: ok=0\s+changed=0\s.*failed=1", proc.stdout, re.M), proc.stdout


def local_inventory(tmp_path):
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"rdma_hosts": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    return inventory


def test_preflight_and_facts_in_check_mode_on_this_machine(tmp_path):
    proc = run_playbook("site.yml", local_inventory(tmp_path), extra_args=["--tags", "preflight,facts"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "intent lossless (RoCE DSCP 26 on priority 3, PFC 0,0,0,1,0,0,0,0, host MTU 9000)" in proc.stdout.replace("\n", " ").replace("        ", "")
    assert "changed=0" in proc.stdout


def test_site_check_mode_refuses_a_host_whose_kernel_has_no_rdma_modules(tmp_path):
    """Check mode predicts truthfully: where modprobe cannot find rdma_cm, it says so instead of 'changed'."""
    with open("/proc/sys/kernel/osrelease") as handle:
        kernel = handle.read().strip()
    if os.path.isdir("/lib/modules/%s/kernel/drivers/infiniband" % kernel):
        pytest.skip("this machine's kernel ships RDMA modules; the refusal needs one that does not")
    proc = run_playbook("site.yml", local_inventory(tmp_path))
    assert proc.returncode != 0
    out = proc.stdout.replace("\n        ", " ")
    # Without kmod there is no modprobe to ask; with it, modprobe --dry-run finds no rdma_cm.
    assert "modprobe was not found on PATH" in out or "rdma_cm cannot be loaded on kernel %s" % kernel in out, out
    assert "TASK [rdmaops.roce.nic" not in out  # the run stopped at the layer that cannot work


def test_unsupported_os_is_refused_with_the_matrix(tmp_path):
    proc = run_playbook("preflight.yml", local_inventory(tmp_path), extra_vars={"rdmaops_supported_platforms": {"Plan9": ["4"]}})
    assert proc.returncode != 0
    assert "supported are Plan9" in proc.stdout


def tree_inventory(tmp_path, capture):
    import hosttree

    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load(capture), root)
    env = {"RDMAOPS_HOST_ROOT": str(root), "PATH": bindir + os.pathsep + os.environ["PATH"]}
    return local_inventory(tmp_path), env


def validate_report(tmp_path, capture, check=False):
    """playbooks/validate.yml on localhost reading a recorded host; (process, report.json)."""
    inventory, env = tree_inventory(tmp_path, capture)
    reports = tmp_path / "reports"
    proc = run_playbook("validate.yml", inventory, extra_vars={"validate_report_dir": str(reports)}, check=check, env_extra=env)
    path = reports / "latest" / "report.json"
    return proc, (json.loads(path.read_text()) if path.exists() else None)


def test_validate_passes_on_a_host_at_the_intent(tmp_path):
    """The Soft-RoCE VM captured at MTU 9000 meets the lossless intent on every check a single host can make."""
    proc, report = validate_report(tmp_path, "rxe_bookworm_mtu9000.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["passed"] is True
    passed = set((f["check"], f["field"]) for f in report["findings"] if f["passed"] is True)
    assert {("mtu", "mtu"), ("mtu", "active_mtu"), ("gid", "roce_v2_ipv4_gid_index"), ("modules", "rdma_cm")} <= passed
    out = proc.stdout.replace("\n        ", " ")
    assert "fabric PASSED" in out
    assert re.search(r"^localhost\s+: ok=\d+\s+changed=0\s", proc.stdout, re.M), proc.stdout


def test_validate_names_the_port_below_the_intent(tmp_path):
    proc, report = validate_report(tmp_path, "rxe_bookworm_mtu1500.json")
    assert proc.returncode != 0
    bad = [(f["host"], f["device"], f["field"], f["expected"], f["actual"]) for f in report["findings"] if f["passed"] is False]
    assert bad == [("localhost", "rxe0/1", "mtu", 9000, 1500), ("localhost", "rxe0/1", "active_mtu", 4096, 1024)]
    assert "the fabric failed 2 check(s) on localhost" in proc.stdout.replace("\n        ", " ")


def test_validate_in_check_mode_changes_nothing_and_says_what_it_skipped(tmp_path):
    proc, report = validate_report(tmp_path, "rxe_bookworm_mtu9000.json", check=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^localhost\s+: ok=\d+\s+changed=0\s", proc.stdout, re.M), proc.stdout
    assert report["passed"] is True
