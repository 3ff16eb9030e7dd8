"""Why a task of the rollout's second pass failed, in one line for the drained host's reason: read
from the tool's own words in the failed task's result."""

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.filter.roce_rollout import roce_rollout_failure

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "rollout")


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def test_a_failed_dkms_postinst_names_the_build_and_the_package():
    # the apt task's real result on a lab VM: the message names only apt's command and dpkg's rc;
    # doca-ofed, left unconfigured by its dependency, is not the cause and is not named
    result = load("apt-dkms-postinst-failed.json")
    assert roce_rollout_failure(result) == \
        "DKMS build failed on 6.1.0-50-amd64; mlnx-ofed-kernel-dkms postinst failed (exit status 10)"


def test_older_dpkg_names_the_package_on_the_line_before():
    result = dict(msg="'/usr/bin/apt-get -y install mlnx-ofed-kernel-dkms' failed: E: Sub-process /usr/bin/dpkg returned an "
                      "error code (1)",
                  stdout="dpkg: error processing package mlnx-ofed-kernel-dkms (--configure):\n subprocess installed "
                         "post-installation script returned error exit status 1\ndpkg: error processing package doca-ofed (--configure):"
                         "\nErrors were encountered while processing:\n")
    assert roce_rollout_failure(result) == "mlnx-ofed-kernel-dkms not configured; doca-ofed not configured"
    result["stdout"] += " new mlnx-ofed-kernel-dkms package pre-removal script subprocess returned error exit status 2\n"
    assert roce_rollout_failure(result) == "mlnx-ofed-kernel-dkms prerm failed (exit status 2)"


def test_rpm_scriptlets_and_modprobe_are_named():
    result = dict(msg="Error unpacking rpm package", results=[
        dict(failed=True, msg="Error in POSTIN scriptlet in rpm package kmod-mlnx-ofed-kernel\n"),
        dict(failed=False, msg="ok"),
    ])
    assert roce_rollout_failure(result) == "kmod-mlnx-ofed-kernel POSTIN scriptlet failed"
    result = dict(msg="modprobe failed", stderr="modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")
    assert roce_rollout_failure(result) == "modprobe nvidia_peermem: Invalid argument"
    result = dict(stderr="modprobe: FATAL: Module rdma_cm not found in directory /lib/modules/6.1.0-50-amd64\n")
    assert roce_rollout_failure(result) == "modprobe rdma_cm: module not found"


def test_otherwise_apt_errors_or_the_first_line_of_the_message():
    assert roce_rollout_failure(dict(msg="'/usr/bin/apt-get install x' failed: \nE: Unable to locate package x\n")) == \
        "E: Unable to locate package x"
    assert roce_rollout_failure(dict(msg="\n\nrdmaops.roce ofed: the stack needs a reboot\nmore")) == \
        "rdmaops.roce ofed: the stack needs a reboot"
    # a loop: the first failed item's message, not "One or more items failed"
    assert roce_rollout_failure(dict(msg="One or more items failed", results=[dict(failed=True, msg="ens4: no such device")])) == \
        "ens4: no such device"


def test_one_line_of_at_most_150_characters_without_control_characters():
    finding = roce_rollout_failure(dict(msg="\x1b[31mred\x1b[0m " + "x" * 400 + "\nsecond"))
    assert len(finding) == 150 and finding.endswith("...") and "\x1b" not in finding and "\n" not in finding


def test_anything_that_is_not_a_result_is_a_plain_failure():
    for value in (None, "", [], 3, "text"):
        assert roce_rollout_failure(value) == "the task failed"
    assert roce_rollout_failure({}) == "the task failed"


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["msg", "stdout", "stderr", "results", "failed", "rc"]), inner,
                                      max_size=5), max_leaves=20))
def test_any_result_gives_one_short_printable_line(result):
    finding = roce_rollout_failure(result)
    assert isinstance(finding, str) and 0 < len(finding) <= 150
    assert not any(ord(char) < 32 or 127 <= ord(char) <= 159 for char in finding)
