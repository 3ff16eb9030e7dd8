# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate report on the controller: ``<dir>/<UTC timestamp>/`` with ``report.md`` for people,
``report.json`` for tools (``{"passed", "findings", "measurements"}``, shape in
roles/validate/files/report.schema.json) and ``junit.xml`` for CI (one testcase per check and host:
failure when a finding of it failed, skipped when none of it could be checked), and ``<dir>/latest``
pointing at the newest run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
import time
from collections import OrderedDict
from xml.etree import ElementTree

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import picture

SUITE = "rdmaops.roce validate"


def _write(path, text):
    """Write ``text`` to ``path`` at once (a reader never sees half a report)."""
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _show(value):
    if value is None:
        return "-"
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return "%s" % (value,)


def testcases(findings):
    """Findings grouped per (check, host), in order: ``[(check, host, [findings])]``."""
    groups = OrderedDict()
    for item in findings:
        groups.setdefault((item["check"], item["host"]), []).append(item)
    return [(check, host, items) for (check, host), items in groups.items()]


def _where(item):
    parts = [item["device"] or "", ("-> %s" % item["peer"]) if item["peer"] else ""]
    return " ".join(part for part in parts if part)


def to_json(report):
    return json.dumps(dict(passed=report["passed"], generated=report.get("generated"), intent=report.get("intent"),
                           summary=report.get("summary"), findings=report["findings"], measurements=report["measurements"]),
                      indent=2, sort_keys=False) + "\n"


def verdict(report):
    """PASSED, FAILED (a check failed) or NOT PROVEN (nothing failed, but a part was not checked at all)."""
    if report["passed"]:
        return "PASSED"
    return "FAILED" if any(f["passed"] is False for f in report["findings"]) else "NOT PROVEN"


def to_junit(report):
    """JUnit XML (the schema CI servers read: testsuites/testsuite/testcase with failure or skipped).
    What kept the verdict from passing without a failing check (``summary.unproven``) is one more
    testcase, ``coverage``, failed: a CI reading only junit.xml must not pass a run that proved nothing."""
    cases = testcases(report["findings"])
    unproven = (report.get("summary") or {}).get("unproven") or []
    failures = sum(1 for _c, _h, items in cases if any(i["passed"] is False for i in items)) + (1 if unproven else 0)
    skipped = sum(1 for _c, _h, items in cases if all(i["passed"] is None for i in items))
    total = len(cases) + (1 if unproven else 0)
    suites = ElementTree.Element("testsuites", name=SUITE, tests=str(total), failures=str(failures), errors="0")
    suite = ElementTree.SubElement(suites, "testsuite", name=SUITE, tests=str(total), failures=str(failures),
                                   errors="0", skipped=str(skipped), timestamp=report.get("generated") or "")
    if unproven:
        case = ElementTree.SubElement(suite, "testcase", classname="validate.coverage", name="coverage")
        element = ElementTree.SubElement(case, "failure", type="not proven", message="not proven: %s" % "; ".join(unproven))
        element.text = "\n".join(unproven)
    for check, host, items in cases:
        case = ElementTree.SubElement(suite, "testcase", classname="validate.%s" % check, name="%s %s" % (check, host))
        failed = [i for i in items if i["passed"] is False]
        if failed:
            element = ElementTree.SubElement(case, "failure", type="finding",
                                             message="; ".join("%s %s: expected %s, got %s" % (
                                                 _where(i), i["field"], _show(i["expected"]), _show(i["actual"])) for i in failed))
            element.text = "\n".join("%s %s: %s" % (_where(i), i["field"], i["hint"]) for i in failed)
        elif all(i["passed"] is None for i in items):
            ElementTree.SubElement(case, "skipped", message="; ".join("%s: %s" % (i["field"], i["hint"]) for i in items))
        out = ElementTree.SubElement(case, "system-out")
        out.text = "\n".join("%s %s %s: expected %s, actual %s" % (
            {True: "PASS", False: "FAIL", None: "NOT CHECKED"}[i["passed"]], _where(i), i["field"], _show(i["expected"]), _show(i["actual"]))
            for i in items)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


def _cell(value):
    return _show(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(report):
    summary = report.get("summary") or {}
    lines = ["# Fabric validation: %s" % verdict(report), ""]
    intent = report.get("intent") or {}
    if intent:
        lines.append("Intent: preset %s, RoCE DSCP %s on priority %s (ToS %s), CNP DSCP %s on priority %s, PFC on %s, host MTU %s, "
                     "switch MTU %s." % (intent.get("preset"), intent.get("roce_dscp"), intent.get("roce_priority"), intent.get("roce_tos"),
                                         intent.get("cnp_dscp"), intent.get("cnp_priority"), intent.get("pfc_priorities"),
                                         intent.get("host_mtu"), intent.get("switch_mtu")))
    lines.append("Generated %s: %s checks passed, %s failed, %s not checked." % (
        report.get("generated"), summary.get("checked", 0) - summary.get("failed", 0), summary.get("failed", 0), summary.get("not_checked", 0)))
    unproven = summary.get("unproven") or []
    if unproven:
        lines += ["", "## Not proven", "", "Nothing of these could be checked, so the validation does not pass:", ""]
        lines += ["- %s" % part.replace("\n", " ") for part in unproven]
    failed = [f for f in report["findings"] if f["passed"] is False]
    header = ["| check | host | peer | device | field | expected | actual | hint |", "|---|---|---|---|---|---|---|---|"]
    if failed:
        lines += ["", "## Failed", ""] + header
        lines += ["| %s |" % " | ".join(_cell(f[key]) for key in ("check", "host", "peer", "device", "field", "expected", "actual", "hint"))
                  for f in failed]
    measured = [m for m in report["measurements"] if m["kind"] in ("ib_write_bw", "ib_write_lat", "ping")]
    if measured:
        lines += ["", "## Measurements", "", "| test | host | peer | device | value |", "|---|---|---|---|---|"]
        lines += ["| %s | %s | %s | %s | %s %s |" % (m["kind"], m["host"], _cell(m["peer"]), _cell(m["device"]), _cell(m["value"]), m["unit"])
                  for m in measured]
    counters = [m for m in report["measurements"] if m["kind"] == "counter"]
    if counters:
        available = [m for m in counters if m["detail"].get("available")]
        missing = sorted(set("%s %s" % (m["host"], m["name"]) for m in counters if not m["detail"].get("available")))
        lines += ["", "## Counters (delta across the tests)"]
        if available:
            lines += ["", "| host | device | counter | delta |", "|---|---|---|---|"]
            lines += ["| %s | %s | %s | %s |" % (m["host"], m["device"], m["name"], m["value"]) for m in available]
        if missing:
            lines += ["", "Not exposed by the driver (not available): %s." % ", ".join(missing)]
    unchecked = [f for f in report["findings"] if f["passed"] is None]
    if unchecked:
        lines += ["", "## Not checked", ""]
        lines += ["- %s: %s" % (" ".join(part for part in (f["check"], f["host"], _where(f), f["field"]) if part), f["hint"])
                  for f in unchecked]
    passed = [f for f in report["findings"] if f["passed"] is True]
    if passed:
        lines += ["", "## Passed", "", "| check | host | peer | device | field | actual |", "|---|---|---|---|---|---|"]
        lines += ["| %s |" % " | ".join(_cell(f[key]) for key in ("check", "host", "peer", "device", "field", "actual")) for f in passed]
    return "\n".join(lines) + "\n"


def write_report(report_dir, report, now=None):
    """Write the three files into ``report_dir/<UTC timestamp>/`` and point ``report_dir/latest`` at it.
    Returns the run's directory."""
    now = time.gmtime(now if now is not None else time.time())
    stamp = time.strftime("%Y%m%dT%H%M%SZ", now)
    report = dict(report, generated=report.get("generated") or time.strftime("%Y-%m-%dT%H:%M:%SZ", now))
    try:
        os.makedirs(report_dir, exist_ok=True)
        run_dir = os.path.join(report_dir, stamp)
        suffix = 1
        while True:
            try:
                os.mkdir(run_dir)
                break
            except FileExistsError:
                # two runs in one second: the second gets its own directory
                suffix += 1
                run_dir = os.path.join(report_dir, "%s-%d" % (stamp, suffix))
        _write(os.path.join(run_dir, "report.json"), to_json(report))
        _write(os.path.join(run_dir, "report.md"), picture.with_picture(run_dir, report, to_markdown(report), _write))
        _write(os.path.join(run_dir, "junit.xml"), to_junit(report))
        latest = os.path.join(report_dir, "latest")
        tmp_link = os.path.join(report_dir, ".latest.%d" % os.getpid())
        if os.path.lexists(tmp_link):
            os.unlink(tmp_link)
        os.symlink(os.path.basename(run_dir), tmp_link)
        os.rename(tmp_link, latest)
    except OSError as exc:
        raise RdmaopsError("cannot write the validate report under %s: %s (set validate_report_dir to a writable directory)"
                           % (report_dir, exc.strerror or exc))
    return run_dir
