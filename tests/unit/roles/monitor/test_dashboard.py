"""The Grafana dashboard, structurally: current schema, the datasource a variable, the panels the issue asks
for, every query real PromQL (promtool parses each one as a recording rule) over metrics the collector
writes; and the alert rules reference only metrics the collector writes too."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

import rules
from monitortrees import metric_names

DASHBOARD = os.path.join(rules.ROLE, "files", "rdmaops-roce-dashboard.json")
# Grafana's variables, as a query would see them after interpolation
GRAFANA_VARS = (("$__rate_interval", "1m"), ("$instance", ".*"))


def dashboard():
    with open(DASHBOARD) as handle:
        return json.load(handle)


def queries():
    return [(panel["title"], target["expr"]) for panel in dashboard()["panels"] for target in panel.get("targets", [])]


def test_schema_and_datasource_variable():
    dash = dashboard()
    assert dash["schemaVersion"] >= 39 and dash["uid"] == "rdmaops-roce"
    variables = dict((var["name"], var) for var in dash["templating"]["list"])
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and all(target["datasource"]["uid"] == "${datasource}" for target in panel["targets"])
        assert panel["description"], panel["title"]


def test_the_panels_the_fabric_needs():
    exprs = " ".join(expr for _title, expr in queries())
    for metric in ("rdmaops_roce_pause_frames_received_total", "rdmaops_roce_pause_frames_sent_total",
                   "rdmaops_roce_hw_np_ecn_marked_roce_packets_total", "rdmaops_roce_hw_np_cnp_sent_total",
                   "rdmaops_roce_hw_rp_cnp_handled_total", "rdmaops_roce_hw_out_of_sequence_total",
                   "rdmaops_roce_hw_rcvd_seq_err_total", "rdmaops_roce_port_link_downed_total", "rdmaops_roce_intent_drift"):
        assert metric + "{" in exprs, metric
    assert "by (instance, netdev, priority)" in exprs  # pause frames per priority
    assert "max by (instance, check) (rdmaops_roce_intent_drift{" in exprs  # drift per host


def test_every_query_parses_as_promql(tmp_path):
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); the unit tier installs it")
    records = []
    for index, (title, expr) in enumerate(queries()):
        for var, value in GRAFANA_VARS:
            expr = expr.replace(var, value)
        assert "$" not in expr, (title, expr)
        records.append(dict(record="dashboard:query_%d" % index, expr=expr))
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(dict(groups=[dict(name="dashboard", rules=records)])))
    proc = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "SUCCESS: %d rules found" % len(records) in proc.stdout, proc.stdout + proc.stderr


def test_dashboard_and_rules_use_only_metrics_the_collector_writes(tmp_path):
    written = metric_names(tmp_path)
    with open(rules.RULES_FILE) as handle:
        rule_exprs = [rule["expr"] for rule in yaml.safe_load(handle)["groups"][0]["rules"]]
    for expr in [expr for _title, expr in queries()] + rule_exprs:
        for name in re.findall(r"rdmaops_roce_\w+", expr):
            assert name in written, (name, expr)
