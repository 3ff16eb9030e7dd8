"""The monitor role's alert rules under Prometheus' own rule engine (promtool test rules): each alert fires
on the series it is for, with its host, device and what to do in the annotations, and stays silent below
its threshold, before its ``for`` and on the other series."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

import rules

ROLE_DEFAULTS = rules.defaults()
INTERVAL = ROLE_DEFAULTS["monitor_interval"]
HOST = "gpu01:9100"
PORT = dict(instance=HOST, job="node", device="mlx5_0", port="1", netdev="ens1f0np0")


def series(name, labels, values):
    return dict(series="%s{%s}" % (name, ",".join('%s="%s"' % item for item in sorted(labels.items()))), values=values)


def promtool():
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); the unit tier installs it")
    return "promtool"


def annotations(rule_file, alert, labels, value):
    """The annotations Prometheus renders for ``alert`` with ``labels`` and ``$value`` humanized as ``value``."""
    with open(rule_file) as handle:
        rule = next(r for r in yaml.safe_load(handle)["groups"][0]["rules"] if r["alert"] == alert)
    out = {}
    for key, text in rule["annotations"].items():
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), "<no value>"), text)
        out[key] = text.replace("{{ $value | humanize }}", value)
    return out


def expect(rule_file, alert, labels, value, severity="warning"):
    full = dict(labels, severity=severity)
    return dict(exp_labels=full, exp_annotations=annotations(rule_file, alert, labels, value))


def run_promtool(tmp_path, rule_file, groups):
    test_file = tmp_path / "rules_test.yml"
    test_file.write_text(yaml.safe_dump(dict(rule_files=[str(rule_file)], evaluation_interval="15s", tests=groups),
                                        sort_keys=False, width=1000))
    proc = subprocess.run([promtool(), "test", "rules", str(test_file)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def default_cases(rule_file):
    prio3 = dict(PORT, priority="3")
    prio0 = dict(PORT, priority="0")
    other = dict(PORT, device="mlx5_1", netdev="ens1f1np1")
    return [
        # 30000 pause frames every 15 s = 2000/s on priority 3 (above 1000/s); priority 0 at 10/s stays silent
        dict(interval="15s", input_series=[
            series("rdmaops_roce_pause_frames_received_total", prio3, "0+30000x40"),
            series("rdmaops_roce_pause_frames_received_total", prio0, "0+150x40"),
        ], alert_rule_test=[
            dict(eval_time="1m", alertname="RocePfcStorm", exp_alerts=[]),  # pending: not for 2m yet
            dict(eval_time="5m", alertname="RocePfcStorm", exp_alerts=[expect(rule_file, "RocePfcStorm", prio3, "2k", "critical")]),
        ]),
        # 100000 marks/s above 50000/s on mlx5_0; 100/s on mlx5_1 is normal congestion control at work
        dict(interval="15s", input_series=[
            series("rdmaops_roce_hw_np_ecn_marked_roce_packets_total", PORT, "0+1500000x60"),
            series("rdmaops_roce_hw_np_ecn_marked_roce_packets_total", other, "0+1500x60"),
        ], alert_rule_test=[
            dict(eval_time="4m", alertname="RoceEcnMarkingHigh", exp_alerts=[]),
            dict(eval_time="12m", alertname="RoceEcnMarkingHigh",
                 exp_alerts=[expect(rule_file, "RoceEcnMarkingHigh", PORT, "100k")]),
        ]),
        # 20000 CNPs/s handled by the reaction point; the notification point's 50/s is quiet
        dict(interval="15s", input_series=[
            series("rdmaops_roce_hw_rp_cnp_handled_total", PORT, "0+300000x60"),
            series("rdmaops_roce_hw_np_cnp_sent_total", other, "0+750x60"),
        ], alert_rule_test=[
            dict(eval_time="12m", alertname="RoceCnpRateHigh", exp_alerts=[expect(rule_file, "RoceCnpRateHigh", PORT, "20k")]),
        ]),
        # the port went down and up twice (4 state changes in 10 minutes); one down on the other port is no flap
        dict(interval="15s", input_series=[
            series("rdmaops_roce_port_active", PORT, "1 1 0 1 1 0 1 1x30"),
            series("rdmaops_roce_port_active", other, "1 1 0 1 1x30"),
        ], alert_rule_test=[
            dict(eval_time="3m", alertname="RoceLinkFlapping", exp_alerts=[expect(rule_file, "RoceLinkFlapping", PORT, "4")]),
        ]),
        # Soft-RoCE's rcvd_seq_err at 4/s fires; mlx5's out_of_sequence at 0.2/s does not
        dict(interval="15s", input_series=[
            series("rdmaops_roce_hw_rcvd_seq_err_total", dict(PORT, device="rxe0", netdev="ens4"), "0+60x60"),
            series("rdmaops_roce_hw_out_of_sequence_total", PORT, "0+3x60"),
        ], alert_rule_test=[
            dict(eval_time="12m", alertname="RoceSequenceErrors",
                 exp_alerts=[expect(rule_file, "RoceSequenceErrors", dict(PORT, device="rxe0", netdev="ens4"), "4")]),
        ]),
        # drift on mtu in two collections in a row fires; tos drift in one collection only does not
        dict(interval="15s", input_series=[
            series("rdmaops_roce_intent_drift", dict(instance="vm2:9100", job="node", check="mtu"), "0 0 1 1 1 1 1 1"),
            series("rdmaops_roce_intent_drift", dict(instance="vm2:9100", job="node", check="tos"), "0 0 1 0 0 0 0 0"),
            series("rdmaops_roce_intent_drift", dict(instance="vm1:9100", job="node", check="mtu"), "0 0 0 0 0 0 0 0"),
        ], alert_rule_test=[
            dict(eval_time="30s", alertname="RoceIntentDrift", exp_alerts=[]),  # seen in one collection so far
            dict(eval_time="45s", alertname="RoceIntentDrift", exp_alerts=[
                expect(rule_file, "RoceIntentDrift", dict(instance="vm2:9100", job="node", check="mtu"), "1")]),
        ]),
        # vm1's last collection failed; vm2's file stopped being rewritten (its timestamp froze); vm3 is fine
        dict(interval="15s", input_series=[
            series("rdmaops_roce_collector_success", dict(instance="vm1:9100", job="node"), "1 1 0 0 0 0 0 0 0 0"),
            series("rdmaops_roce_collector_last_run_timestamp_seconds", dict(instance="vm1:9100", job="node"), "0+15x10"),
            series("rdmaops_roce_collector_interval_seconds", dict(instance="vm1:9100", job="node"), "15x10"),
            series("rdmaops_roce_collector_success", dict(instance="vm2:9100", job="node"), "1x10"),
            series("rdmaops_roce_collector_last_run_timestamp_seconds", dict(instance="vm2:9100", job="node"), "0x10"),
            series("rdmaops_roce_collector_interval_seconds", dict(instance="vm2:9100", job="node"), "15x10"),
            series("rdmaops_roce_collector_success", dict(instance="vm3:9100", job="node"), "1x10"),
            series("rdmaops_roce_collector_last_run_timestamp_seconds", dict(instance="vm3:9100", job="node"), "0+15x10"),
            series("rdmaops_roce_collector_interval_seconds", dict(instance="vm3:9100", job="node"), "15x10"),
        ], alert_rule_test=[
            dict(eval_time="2m", alertname="RoceCollectorDown", exp_alerts=[
                expect(rule_file, "RoceCollectorDown", dict(instance="vm1:9100", job="node"), "0"),
                expect(rule_file, "RoceCollectorDown", dict(instance="vm2:9100", job="node"), "120")]),
        ]),
    ]


def test_the_shipped_rules_are_the_template_with_the_role_defaults():
    with open(rules.RULES_FILE) as handle:
        assert handle.read() == rules.render(), "run: python tests/unit/roles/monitor/rules.py"


def test_promtool_checks_the_rules():
    proc = subprocess.run([promtool(), "check", "rules", rules.RULES_FILE], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "SUCCESS: 7 rules found" in proc.stdout, proc.stdout + proc.stderr


def test_each_alert_fires_and_stays_silent_where_it_should(tmp_path):
    run_promtool(tmp_path, rules.RULES_FILE, default_cases(rules.RULES_FILE))


def test_thresholds_and_the_node_job_come_from_the_role_variables(tmp_path):
    rule_file = tmp_path / "custom.rules.yml"
    rule_file.write_text(rules.render(monitor_alert_pfc_pause_rate=5000, monitor_alert_node_job="node",
                                      monitor_interval=30))
    run_promtool(tmp_path, rule_file, [
        # 2000/s is below a 5000/s threshold
        dict(interval="15s", input_series=[
            series("rdmaops_roce_pause_frames_received_total", dict(PORT, priority="3"), "0+30000x40")],
            alert_rule_test=[dict(eval_time="5m", alertname="RocePfcStorm", exp_alerts=[])]),
        # two collections 30 s apart now (for: 30s): 15 s of drift is not enough, 30 s is
        dict(interval="15s", input_series=[
            series("rdmaops_roce_intent_drift", dict(instance="vm2:9100", job="node", check="mtu"), "1x10")],
            alert_rule_test=[
                dict(eval_time="15s", alertname="RoceIntentDrift", exp_alerts=[]),
                dict(eval_time="30s", alertname="RoceIntentDrift", exp_alerts=[
                    expect(str(rule_file), "RoceIntentDrift", dict(instance="vm2:9100", job="node", check="mtu"), "1")])]),
        # a node of the job with no rdmaops_roce metrics at all: the collector is missing there
        dict(interval="15s", input_series=[
            series("up", dict(instance="gpu07:9100", job="node"), "1x10"),
            series("up", dict(instance="gpu08:9100", job="node"), "1x10"),
            series("rdmaops_roce_collector_info", dict(instance="gpu08:9100", job="node", version="0.1.0"), "1x10"),
            series("rdmaops_roce_collector_success", dict(instance="gpu08:9100", job="node"), "1x10"),
            series("rdmaops_roce_collector_last_run_timestamp_seconds", dict(instance="gpu08:9100", job="node"), "0+15x10"),
            series("rdmaops_roce_collector_interval_seconds", dict(instance="gpu08:9100", job="node"), "30x10")],
            alert_rule_test=[dict(eval_time="2m", alertname="RoceCollectorDown", exp_alerts=[
                expect(str(rule_file), "RoceCollectorDown", dict(instance="gpu07:9100", job="node"), "1")])]),
    ])


def test_every_runbook_link_has_its_section_in_troubleshooting():
    with open(os.path.join(os.path.dirname(rules.ROLE), os.pardir, "docs", "troubleshooting.md")) as handle:
        headings = re.findall(r"^## (.+)$", handle.read(), re.M)
    anchors = set(re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-") for heading in headings)
    with open(rules.RULES_FILE) as handle:
        links = set(re.findall(r"troubleshooting\.md#([a-z0-9-]+)", handle.read()))
    assert len(links) == 6 and links <= anchors, links - anchors
