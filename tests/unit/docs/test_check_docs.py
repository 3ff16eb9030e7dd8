"""scripts/check-docs.py: the docs tier's drift check, on small documents against the real tree."""

import importlib.util
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_spec = importlib.util.spec_from_file_location("check_docs", os.path.join(REPO, "scripts", "check-docs.py"))
check_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs)


@pytest.fixture(scope="module")
def code():
    return check_docs.Code(REPO)


def problems(code, text, path="docs/page.md"):
    checker = check_docs.Checker(code)
    checker.check_text(path, text)
    return checker.problems


def test_an_open_fence_is_reported_at_the_line_that_opened_it(code):
    text = "# Title\n\n```yaml\nroce_fabric: {}\n```\n\n```markdown\n# inside\n\nmore text\n"
    assert problems(code, text) == ["docs/page.md:7: the fence ``` opened here is never closed"]


def test_closed_fences_of_both_kinds_and_longer_closers_pass(code):
    text = "```bash\nls\n```\n\n~~~~\n```\nnot a closer of ~~~~\n~~~~~\n\n````\n```\n````\n"
    assert problems(code, text) == []


def test_an_unknown_variable_of_ours_is_named_with_file_and_line(code):
    assert problems(code, "one\nSet `rdmaops_max_unavialable: 2` to go faster.\n") == [
        "docs/page.md:2: `rdmaops_max_unavialable` is not a variable, option, return key or name the code has"]


def test_real_names_pass(code):
    text = ("`rdmaops_max_unavailable`, `roce_fabric.rails`, `nic_allow_management_change: true`, "
            "`max_disruption`, `held_back`, `validate_pairs`, `rdmaops.roce.nic_layer`, `rdmaops.roce.site`, "
            "`RoceIntentDrift`, `RDMAOPS_HOST_ROOT`, `playbooks/site.yml`, `ib_write_bw`\n")
    assert problems(code, text) == []


def test_a_module_return_key_and_an_option_are_known(code):
    # switch_roce's RETURN and link_mtu's options: read from DOCUMENTATION/RETURN, not guessed
    assert "left_changed" in code.names and "checkpoint_restored" in code.names
    assert "allow_management_change" in code.names


def test_an_unknown_fqcn_and_an_unknown_tag_fail(code):
    text = ("`rdmaops.roce.no_such_module`\n\n```bash\n"
            "ansible-playbook -i inv rdmaops.roce.site --tags nic,qos\n```\n")
    assert problems(code, text) == [
        "docs/page.md:1: `rdmaops.roce.no_such_module` is no module, filter, role, playbook or plugin",
        "docs/page.md:4: tag `qos` is set by no playbook"]


def test_names_inside_yaml_fences_are_checked(code):
    text = "```yaml\nall:\n  vars:\n    rdmaops_schedular: slurm\n    ansible_user: ops\n```\n"
    assert problems(code, text) == [
        "docs/page.md:4: `rdmaops_schedular` is not a variable, option, return key or name the code has"]


def test_an_alert_that_the_rules_do_not_have_fails(code):
    assert problems(code, "`RoceBufferOverflow` fires when ...\n") == [
        "docs/page.md:1: `RoceBufferOverflow` is not a variable, option, return key or name the code has"]


def test_a_snake_case_name_that_is_neither_ours_nor_allowed_fails(code):
    assert problems(code, "`made_up_knob`\n") == [
        "docs/page.md:1: `made_up_knob` is not a name the code has (nor in check-docs.py's ALLOWED list)"]


def test_files_are_checked_against_the_tree_and_a_role_readme_against_its_role(code):
    assert problems(code, "`playbooks/nope.yml`\n") == ["docs/page.md:1: file `playbooks/nope.yml` does not exist"]
    assert problems(code, "`tasks/mtu.yml`\n", path="roles/nic/README.md") == [
        "roles/nic/README.md:1: file `tasks/mtu.yml` does not exist"]
    assert problems(code, "`tasks/main.yml` and `meta/argument_specs.yml`\n", path="roles/nic/README.md") == []
    assert problems(code, "`inventories/<site>/group_vars/all.yml`\n") == []


def test_links_must_resolve_inside_the_repository(code):
    assert problems(code, "[ok](troubleshooting.md#x) [bad](../../shared/DESIGN.md) [web](https://x.org)\n",
                    path="docs/page.md") == [
        "docs/page.md:1: link `../../shared/DESIGN.md` points to no file of the collection"]


def test_the_tarball_and_the_version_range_follow_galaxy_yml(code):
    other = "9.9.9"
    assert other != code.version
    text = ("```bash\nansible-galaxy collection install rdmaops-roce-%s.tar.gz\n```\n"
            "```yaml\ncollections:\n  - name: rdmaops.roce\n    version: \">=0.1.0,<1.0.0\"\n```\n"
            "```yaml\n- role: rdmaops.roce.ofed\n  vars:\n    ofed_doca_version: \"3.2.1\"\n```\n") % other
    assert problems(code, text) == [
        "docs/page.md:2: tarball version %s differs from galaxy.yml's %s" % (other, code.version),
        "docs/page.md:7: version `>=0.1.0,<1.0.0` does not admit galaxy.yml's %s" % code.version]
    good = ("`rdmaops-roce-%s.tar.gz`\n```yaml\n- name: rdmaops.roce\n  version: \">=%s,<%d.0.0\"\n```\n"
            % (code.version, code.version, int(code.version.split(".")[0]) + 1))
    assert problems(code, good) == []


@pytest.mark.parametrize("spec, version, holds", [
    (">=1.0.0,<2.0.0", "1.1.0", True), (">=1.2.0", "1.1.0", False), ("1.1.0", "1.1.0", True),
    ("*", "3.0.0", True), ("<1.1.0", "1.1.0", False), ("!=1.1.0", "1.1.0", False)])
def test_version_ranges(spec, version, holds):
    assert check_docs._range_holds(spec, version) is holds


def test_the_shipped_docs_leave_out_build_ignore_and_the_generated_reference(code):
    shipped = code.shipped_docs()
    assert "README.md" in shipped and "docs/benchmarks.md" not in shipped
    assert not [path for path in shipped if path.startswith("docs/reference/")]
    assert "roles/nic/README.md" in shipped


def test_the_allow_list_holds_no_name_of_ours():
    assert not [name for name in check_docs.ALLOWED if name.startswith(check_docs.PREFIXES)]


def test_main_prints_file_line_and_name_and_fails(tmp_path, capsys):
    bad = tmp_path / "bad.md"
    bad.write_text("Use `rdmaops_no_such_thing`.\n", encoding="utf-8")
    assert check_docs.main([str(bad)]) == 1
    out = capsys.readouterr().out
    assert "bad.md:1: `rdmaops_no_such_thing` is not a variable" in out


def test_the_readme_keeps_short_cells_and_a_short_page(code):
    long_cell = "| layer | " + " ".join(["word"] * 41) + " |\n"
    assert problems(code, "| a | b |\n|---|---|\n" + long_cell, path="README.md") == [
        "README.md:3: a table cell of 41 words (at most 40): word word word word word word..."]
    assert problems(code, long_cell, path="docs/page.md") == []
    assert problems(code, "line\n" * 221, path="README.md") == [
        "README.md:221: the README has 221 lines (at most 220): move detail into docs/"]


@pytest.mark.parametrize("line, found", [
    ("Measured in the lab on 2026-11-28: 41 s.", "a date (`2026-11-28`)"),
    ("The soak ran in Nov 2026 on two cores.", "a date (`Nov 2026`)"),
    ("Seen on 28 November 2026 in CI.", "a date (`28 November 2026`)"),
    ("Seen on November 28, 2026 in CI.", "a date (`November 28, 2026`)"),
    ("```\n2026-11-27 09:17 UTC: vm2 stalled\n```", "a date (`2026-11-27`)"),
    ("The rollout of issue 30 drains in waves.", "an issue number or commit (`issue 30`)"),
    ("Fixed for the fleet (#30).", "an issue number or commit (`#30`)"),
    ("See Issue #12 and PR 7.", "an issue number or commit (`Issue #12`)"),
    ("[the bug](https://github.com/rdmaops/roce/issues/31)", "an issue number or commit (`rdmaops/roce/issues/31`)"),
    ("### after (commit 120d4bc)", "an issue number or commit (`commit 120d4bc`)"),
])
def test_a_planted_date_or_issue_number_fails(code, line, found):
    found_problems = problems(code, "# A guide\n\n" + line + "\n")
    assert any(problem.startswith("docs/page.md:3: " + found) or
               (line.startswith("```") and problem.startswith("docs/page.md:4: " + found))
               for problem in found_problems), found_problems


def test_versions_addresses_anchors_and_counts_are_no_dates_or_issues(code):
    text = ("DOCA 3.2.1 on kernel 6.1.0-50, 198.18.0.0/24 and 10.0.2.2, port 8765, 3 hosts, in May the\n"
            "[rollout](operations.md#the-rollout), `rdmaops.roce: gate failed`, ib_write_bw -n 5000,\n"
            "a 2026 kernel, issues to the tracker, slurm-wlm 22.05, firmware 28.39.1002\n")
    assert problems(code, text) == []


def test_the_shipped_docs_have_no_date_and_no_issue_number(code):
    checker = check_docs.Checker(code)
    for path in code.shipped_docs():
        checker.check_diary(path, 0, _read_doc(path))
    assert checker.problems == []


def _read_doc(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        return handle.read()
