"""The report files: report.json against the schema in the repo (jsonschema), junit.xml read by a
JUnit parser (junitparser), report.md, and the latest link."""

import json
import os

import jsonschema
import junitparser
import pytest

# lab is a pytest fixture: imported to be used by name
from test_checks import INTENT, LAB_FRACTION, fabric_check, lab, rxe_facts  # noqa: F401 pylint: disable=unused-import

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import report

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 5))
SCHEMA = os.path.join(REPO, "roles", "validate", "files", "report.schema.json")


def schema():
    with open(SCHEMA) as handle:
        return json.load(handle)


def test_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def write(tmp_path, result, now=1764050000):
    run_dir = report.write_report(str(tmp_path / "reports"), dict(result, intent=INTENT), now=now)
    return run_dir


def test_failing_report_in_all_three_formats(tmp_path, lab):  # noqa: F811
    lab["vm2"]["rdma"] = rxe_facts(tmp_path / "bad", "rxe_bookworm_mtu1500.json")
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    run_dir = write(tmp_path, result)
    assert os.path.basename(run_dir) == "20251125T055320Z"
    data = json.load(open(os.path.join(run_dir, "report.json")))
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    assert data["passed"] is False and data["findings"] == result["findings"]
    assert any(m["kind"] == "ib_write_bw" for m in data["measurements"])

    xml = junitparser.JUnitXml.fromfile(os.path.join(run_dir, "junit.xml"))
    cases = [case for suite in xml for case in suite]
    groups = set((f["check"], f["host"]) for f in result["findings"])
    assert len(cases) == len(groups)
    failing = sorted(case.name for case in cases if any(isinstance(r, junitparser.Failure) for r in case.result))
    assert failing == ["mtu vm2"]
    skipped = [case.name for case in cases if any(isinstance(r, junitparser.Skipped) for r in case.result)]
    assert "switch switches" in skipped
    mtu = [case for case in cases if case.name == "mtu vm2"][0]
    assert "expected 9000, got 1500" in mtu.result[0].message

    md = open(os.path.join(run_dir, "report.md")).read()
    assert md.startswith("# Fabric validation: FAILED")
    assert "| mtu | vm2 | - | rxe0/1 | mtu | 9000 | 1500 |" in md
    assert os.readlink(str(tmp_path / "reports" / "latest")) == "20251125T055320Z"


def test_second_run_in_the_same_second_gets_its_own_directory_and_latest(tmp_path, lab):  # noqa: F811
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    first = write(tmp_path, result)
    second = write(tmp_path, result)
    assert first != second and os.path.basename(second) == "20251125T055320Z-2"
    assert os.readlink(str(tmp_path / "reports" / "latest")) == "20251125T055320Z-2"
    data = json.load(open(os.path.join(second, "report.json")))
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    assert data["passed"] is True


def test_schema_rejects_a_finding_without_its_fields(tmp_path, lab):  # noqa: F811
    data = json.loads(report.to_json(dict(fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION), intent=INTENT)))
    del data["findings"][0]["hint"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)


def test_unwritable_report_dir_says_what_to_do(tmp_path, lab):  # noqa: F811
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RdmaopsError, match="validate_report_dir"):
        report.write_report(str(blocker / "reports"), fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION))
