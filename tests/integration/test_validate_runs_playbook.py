"""The validate role's run filters (roce_validate_rail_pings.py) in a real play: ansible-playbook hands them
``hostvars`` (Ansible's lazy HostVars, each host's inventory variables and facts), not the plain
mappings of the unit tests. For the captured fabric that covers the most (rail pings, ARP probes,
failed paths, perftest records, partners outside the batch), every host's commands and records must be
what the role's Jinja built before (tests/unit/fixtures/validate_probes/jinja.json). One fabric: each
ansible-playbook run costs seconds (4 s idle, up to 60 s on a loaded 2-core machine)."""

import json
import os
import sys

import pytest
import yaml

import ansiblerun

FIXTURE = os.path.join(ansiblerun.REPO, "tests", "unit", "fixtures", "validate_probes", "jinja.json")
NONCE = "0123456789abcdef0123456789abcdef"

PLAY = """
- hosts: batch
  gather_facts: false
  tasks:
    - name: The run-wide results
      ansible.builtin.set_fact:
        unreachable: "{{ hostvars | rdmaops.roce.roce_validate_unreachable_pairs(ansible_play_batch, nonce) }}"
        collected: "{{ hostvars | rdmaops.roce.roce_validate_hosts(all_hosts) }}"
      run_once: true

    - name: Each host's commands and records
      ansible.builtin.set_fact:
        got:
          rail_pings: "{{ hostvars | rdmaops.roce.roce_validate_rail_pings(pairs, inventory_hostname, ansible_play_batch) }}"
          path_checks: "{{ hostvars | rdmaops.roce.roce_validate_path_checks(pairs, inventory_hostname, nonce, host_mtu, path_script) }}"
          arp_probes: "{{ hostvars | rdmaops.roce.roce_validate_arp_probes(pairs, inventory_hostname, arp_script) }}"
          failed_senders: "{{ hostvars | rdmaops.roce.roce_validate_failed_senders(ansible_play_batch, inventory_hostname, nonce) }}"
          ping_records: "{{ hostvars | rdmaops.roce.roce_validate_ping_records(inventory_hostname, host_mtu, nonce) }}"
          rdma_records: >-
            {{ hostvars | rdmaops.roce.roce_validate_rdma_records(rdma_pairs, inventory_hostname, unreachable, roce_tos,
               validate_rdma_run, validate_rdma_why, validate_rdma and not check_mode) }}

    - name: Write them
      ansible.builtin.copy:
        content: >-
          {{ {'per_host': dict(ansible_play_batch | zip(ansible_play_batch | map('extract', hostvars, 'got'))),
              'unreachable_pairs': unreachable, 'hosts': collected} | to_json }}
        dest: "{{ out }}"
        mode: "0600"
      run_once: true
"""


def chosen():
    """The captured fabric with the most kinds of result, then the most hosts with rail pings."""
    with open(FIXTURE) as handle:
        fabrics = json.load(handle)["fabrics"]

    def score(case):
        per = case["jinja"]["per_host"].values()
        kinds = [any(host[key] for host in per) for key in ("rail_pings", "arp_probes", "failed_senders", "rdma_records")]
        partners = any(pair[1] in case["partners"] for pair in case["pairs"])
        return (sum(kinds) + partners, sum(1 for host in per if host["rail_pings"]), len(case["batch"]))
    return sorted(fabrics, key=score, reverse=True)[:1]


@pytest.mark.parametrize("case", chosen(), ids=lambda case: case["id"])
def test_the_filters_in_a_play_build_what_the_roles_jinja_built(tmp_path, case):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    batch = dict((name, dict(case["hosts"][name], **local)) for name in case["batch"])
    partners = dict((name, dict(case["hosts"][name], **local)) for name in case["partners"])
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"batch": {"hosts": batch}, "partners": {"hosts": partners}}}}, sort_keys=False))
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    out = tmp_path / "got.json"
    extra = {"pairs": case["pairs"], "rdma_pairs": case["rdma_pairs"], "nonce": NONCE, "host_mtu": case["host_mtu"],
             "roce_tos": case["roce_tos"], "check_mode": case["check_mode"], "all_hosts": case["all_hosts"],
             "path_script": "echo path-check", "arp_script": "echo arp", "out": str(out)}
    proc = ansiblerun.run("ansible-playbook", ["-i", inventory, play, "-e", json.dumps(extra)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got == case["jinja"]
