"""fabric.svg: the report's picture from the lab's recorded validate run, parsed back as XML (SVG namespace),
linked from report.md under its summary line."""

import os
from xml.etree import ElementTree

# lab is a pytest fixture: imported to be used by name
from test_checks import INTENT, LAB_FRACTION, fabric_check, lab, rxe_facts  # noqa: F401 pylint: disable=unused-import

from ansible_collections.rdmaops.roce.plugins.module_utils._validate import picture, report

SVG = "{http://www.w3.org/2000/svg}"


def _svg(run_dir):
    root = ElementTree.parse(os.path.join(run_dir, picture.FILE_NAME)).getroot()
    assert root.tag == SVG + "svg"
    texts = ["".join(node.itertext()) for node in root.iter(SVG + "text")]
    bars = [(rect.get("fill"), "".join(rect.itertext())) for rect in root.iter(SVG + "rect") if rect.get("width") != "100%"]
    return root, texts, bars


def test_failing_fabric_picture(tmp_path, lab):  # noqa: F811
    lab["vm2"]["rdma"] = rxe_facts(tmp_path / "bad", "rxe_bookworm_mtu1500.json")
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    run_dir = report.write_report(str(tmp_path / "reports"), dict(result, intent=INTENT), now=1764050000)
    root, texts, bars = _svg(run_dir)
    assert texts[0] == "Fabric validation: FAILED"
    bw = [m for m in result["measurements"] if m["kind"] == "ib_write_bw"][0]
    label = "%s -> %s" % (bw["host"], bw["peer"])
    assert (picture.GREEN, "%s: %s Gb/s" % (label, picture._num(bw["value"]))) in bars
    # the threshold fabric_check used, drawn as a dashed line on the bandwidth bar
    thresholds = ["".join(line.itertext()) for line in root.iter(SVG + "line")]
    assert "threshold %s Gb/s" % picture._num(bw["detail"]["min_gbps"]) in thresholds
    assert any(text.startswith("%s -> " % bw["host"]) for text in texts)
    # failed checks per host: vm2 fails mtu (red bar), vm1 fails nothing
    assert (picture.RED, "vm2 (mtu): 1 failed") in bars or any(f == picture.RED and t.startswith("vm2 (mtu") for f, t in bars)
    assert "none failed" in texts
    md = open(os.path.join(run_dir, "report.md")).read().split("\n")
    at = next(i for i, line in enumerate(md) if line.startswith("Generated "))
    assert md[at + 2].startswith("![The fabric at a glance") and md[at + 2].endswith("(fabric.svg)")


def test_passing_fabric_picture_and_nothing_measured(tmp_path, lab):  # noqa: F811
    result = fabric_check(INTENT, lab, min_bw_fraction=LAB_FRACTION)
    run_dir = report.write_report(str(tmp_path / "reports"), dict(result, intent=INTENT), now=1764050000)
    _root, texts, bars = _svg(run_dir)
    assert texts[0] == "Fabric validation: PASSED" and all(fill == picture.GREEN for fill, _t in bars)
    empty = picture.render(dict(passed=True, findings=[], measurements=[]))
    assert ElementTree.fromstring(empty).tag == SVG + "svg" and "nothing measured" in empty
