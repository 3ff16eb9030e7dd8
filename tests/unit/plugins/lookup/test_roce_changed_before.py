"""The roce_changed_before lookup in real ansible-playbook runs: what earlier plays of the run left
(set_fact, a registered module result, a skipped task), read by a later play as site.yml's layers
read it, and a bad layer name refused with the names to use."""

import json
import sys

import ansiblerun

PLAYBOOK = """
- name: The earlier layers
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The driver stack did not change
      ansible.builtin.set_fact:
        ofed__stack_changed: "{{ false }}"
        ofed__final: {activation: none}
    - name: A module that changed the host (the RDMA core modules)
      ansible.builtin.command: "true"
      register: rdmaops_modules_result
    - name: Peer memory, skipped
      ansible.builtin.command: "true"
      register: peermem_result
      when: false
    - name: The NIC layer, unchanged
      ansible.builtin.command: "true"
      changed_when: false
      register: nic_layer_result

- name: A later layer asks
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Record what each layer sees
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ seen | to_json }}"
        mode: "0600"
      vars:
        seen:
          modules: "{{ lookup('rdmaops.roce.roce_changed_before', 'modules') }}"
          peermem: "{{ lookup('rdmaops.roce.roce_changed_before', 'peermem') }}"
          nccl: "{{ lookup('rdmaops.roce.roce_changed_before', 'nccl') }}"
    - name: In a condition, as the roles use it
      ansible.builtin.command: "true"
      register: guarded
      changed_when: false
      when: rdmaops__preflight_rdma is not defined and lookup('rdmaops.roce.roce_changed_before', 'tuning')
    - name: Not run when nothing before it changed
      ansible.builtin.command: "true"
      register: unguarded
      changed_when: false
      when: lookup('rdmaops.roce.roce_changed_before', 'modules')
    - name: Record the conditions
      ansible.builtin.copy:
        dest: "{{ out }}.when"
        content: "{{ {'guarded': guarded is not skipped, 'unguarded': unguarded is not skipped} | to_json }}"
        mode: "0600"
"""


def test_a_later_play_sees_what_the_earlier_layers_changed(tmp_path):
    book = tmp_path / "site.yml"
    book.write_text(PLAYBOOK)
    out = tmp_path / "seen.json"
    proc = ansiblerun.run("ansible-playbook", ["-i", "localhost,", "-c", "local", str(book), "-e", "out=%s" % out,
                                               "-e", "ansible_python_interpreter=" + sys.executable])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the RDMA core modules changed the host: not a change before themselves, one for every later layer
    assert json.loads(out.read_text()) == {"modules": False, "peermem": True, "nccl": True}
    assert json.loads((tmp_path / "seen.json.when").read_text()) == {"guarded": True, "unguarded": False}


def test_an_unknown_layer_fails_the_task_naming_the_layers(tmp_path):
    book = tmp_path / "bad.yml"
    book.write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "{{ lookup('rdmaops.roce.roce_changed_before', 'switch') }}"
""")
    proc = ansiblerun.run("ansible-playbook", ["-i", "localhost,", "-c", "local", str(book)])
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert '"switch" is not a layer of site.yml: use one of ofed, modules, peermem, firmware, nic, tuning, nccl, facts' in text
    assert "Traceback" not in text and "<class" not in text and "Error was a" not in text
