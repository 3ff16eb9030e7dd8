"""playbooks/validate.yml reads the switches itself: a Cumulus leaf (the NVUE API stand-in on
127.0.0.1) holding PFC on a second priority fails validate with the switch's finding, and one
holding the intent passes; the leaf is read (switch_roce gathered), never written."""

import json
import os
import sys

import yaml

import ansiblerun
import hosttree
import nvuesite
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._switch import nvue
from ansible_collections.rdmaops.roce.plugins.module_utils._switch.profile import fabric_profile


def applied_config(**changes):
    """The NVUE configuration a leaf holds once switch_roce wrote the lossless profile, with ``changes``."""
    profile = fabric_profile(resolve_intent({}))
    profile.update(switch_mtu=9216, **changes)
    return nvue.render(profile, ["swp1", "swp2"], nvue.VERSIONS[-1])


def validate(tmp_path, switch):
    root = tmp_path / "host"
    bindir = hosttree.materialize(hosttree.load("rxe_bookworm_mtu9000.json"), root)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "rdma_hosts": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}},
        "leaf_switches": {"hosts": {"leaf01": nvuesite.host_vars(switch)}},
    }}}))
    reports = tmp_path / "reports"
    argv = ["-i", str(inventory), os.path.join(ansiblerun.REPO, "playbooks", "validate.yml"),
            "-e", json.dumps({"validate_report_dir": str(reports)})]
    env = {"RDMAOPS_HOST_ROOT": str(root), "PATH": bindir + os.pathsep + os.environ["PATH"],
           "ANSIBLE_PERSISTENT_CONTROL_PATH_DIR": str(tmp_path / "pc")}
    proc = ansiblerun.run("ansible-playbook", argv, env_extra=env, timeout=300)
    report = json.loads((reports / "latest" / "report.json").read_text())
    return proc, [f for f in report["findings"] if f["host"] == "leaf01"]


def test_validate_gathers_the_switch_and_names_its_pfc(tmp_path):
    with nvuesite.standin(nvue.VERSIONS[-1], applied=applied_config(pfc_priorities=[3, 4])) as switch:
        proc, findings = validate(tmp_path, switch)
        assert proc.returncode != 0
        failed = [(f["field"], f["expected"], f["actual"]) for f in findings if f["passed"] is False]
        assert failed == [("pfc_priorities", [3], [3, 4])], findings
        assert not nvuesite.revisions_created(switch)  # read, never written


def test_validate_passes_a_switch_at_the_intent(tmp_path):
    with nvuesite.standin(nvue.VERSIONS[-1], applied=applied_config()) as switch:
        proc, findings = validate(tmp_path, switch)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert findings and all(f["passed"] is not False for f in findings)
        assert any(f["field"] == "pfc_priorities" and f["passed"] is True for f in findings)
