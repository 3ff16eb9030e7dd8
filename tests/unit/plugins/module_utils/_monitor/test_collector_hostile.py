"""The collector against a hostile or broken host: names that are not UTF-8, counter files that hold no
counter, a snapshot with a wrong key, a metrics path through a symlink. The written file is checked
by the real promtool (Debian's prometheus), the parser node_exporter's format comes from."""

import json
import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitortrees import collect, intent, rxe_host, samples

from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import collector
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.exposition import Exposition, metric_name, utf8
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule

HW = "sys/devices/virtual/infiniband/rxe0/ports/1/hw_counters"
HW_PATH = "/sys/class/infiniband/rxe0/ports/1/hw_counters"
SNAPSHOT = "/etc/rdmaops/monitor-intent.json"
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"


def promtool(data):
    """promtool check metrics on the bytes as they would be written; its output."""
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); the unit tier installs it")
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")  # as _core.files writes text
    proc = subprocess.run(["promtool", "check", "metrics"], input=data, capture_output=True, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return proc


def errors_metric(text):
    return dict((dict(labels)["file"], dict(labels)["reason"]) for (name, labels), value in samples(text).items()
                if name == "rdmaops_roce_collector_errors" and value == 1)


# -- names that are not UTF-8 ---------------------------------------------------------------------
def test_a_device_name_with_a_byte_that_is_not_utf8_is_written_as_valid_utf8(tmp_path):
    root, bindirs = rxe_host(tmp_path)
    cls = root / "sys/class/infiniband"
    real = os.path.realpath(str(cls / "rxe0"))
    odd = os.fsencode(os.path.dirname(real)) + b"/rxe\xff"
    shutil.copytree(real, os.fsdecode(odd), symlinks=True)
    os.symlink(os.fsdecode(odd), os.fsdecode(os.fsencode(str(cls)) + b"/rxe\xff"))
    ok, text, run, _ctx = collect(root, bindirs)
    data = text.encode("utf-8", "surrogateescape")
    data.decode("utf-8")  # strict: every byte of the file is UTF-8
    promtool(data)
    assert 'rdmaops_roce_hw_sent_pkts_total{device="rxe\\\\xff",netdev="ens4",port="1"} 0' in text.splitlines()
    assert 'rdmaops_roce_hw_sent_pkts_total{device="rxe0",netdev="ens4",port="1"} 0' in text.splitlines()


LABEL_TEXT = st.text(st.characters(blacklist_categories=()), max_size=30) | st.binary(max_size=20).map(
    lambda data: data.decode("utf-8", "surrogateescape"))


@settings(max_examples=30, deadline=None)
@given(st.lists(LABEL_TEXT, min_size=1, max_size=6), LABEL_TEXT, LABEL_TEXT)
def test_any_label_help_or_comment_text_gives_a_file_promtool_accepts(values, help_text, comment):
    out = Exposition()
    out.comment(comment)
    for index, value in enumerate(values):
        out.add(metric_name("hw", "sent", "total"), "counter", "Help: " + help_text, index, device=value, file="/sys/" + value)
    text = out.render()
    text.encode("utf-8")  # strict: no surrogate left, so nothing but UTF-8 is written
    promtool(text)
    got = samples(text)
    assert len(got) == len(set(utf8(value) for value in values))  # one series per name as written


# -- counters that hold no counter ----------------------------------------------------------------
BAD_COUNTERS = [
    ("sent_pkts", "12abc\n", "malformed"),
    ("rcvd_pkts", "-5\n", "negative"),
    ("rcvd_seq_err", "", "empty"),
    ("ack_deferred", "N/A\n", "malformed"),
    ("duplicate_request", "%d\n" % (1 << 70), "out_of_range"),
    ("link_downed", "%d\n" % (1 << 64), "out_of_range"),
    ("out_of_seq_request", "7" * 5000 + "\n", "out_of_range"),
    ("completer_retry_err", " 12\n", "malformed"),
]


def test_bad_counters_are_named_by_a_metric_and_fail_the_collection(tmp_path):
    root, bindirs = rxe_host(tmp_path)
    counters = root / HW
    for name, content, _reason in BAD_COUNTERS:
        (counters / name).write_text(content)
    (counters / "retry_exceeded_err").write_text("18446744073709551615\n")  # 2**64-1: the largest u64, a counter
    ok, text, run, _ctx = collect(root, bindirs)
    promtool(text)
    assert not ok
    got = samples(text)
    assert got[("rdmaops_roce_collector_success", frozenset())] == 0
    assert errors_metric(text) == dict(("%s/%s" % (HW_PATH, name), reason) for name, _content, reason in BAD_COUNTERS)
    port = frozenset([("device", "rxe0"), ("port", "1"), ("netdev", "ens4")])
    for name, _content, _reason in BAD_COUNTERS:
        assert ("rdmaops_roce_hw_%s_total" % name, port) not in got
    assert got[("rdmaops_roce_hw_retry_exceeded_err_total", port)] == float((1 << 64) - 1)
    assert "rdmaops_roce_hw_retry_exceeded_err_total{device=\"rxe0\",netdev=\"ens4\",port=\"1\"} 18446744073709551615" in text
    assert "# error: counter %s/sent_pkts: malformed ('12abc' is not an unsigned decimal number)" % HW_PATH in text.splitlines()


def test_an_unreadable_counter_is_named(tmp_path):
    """A counter file the kernel refuses to read (EACCES, EIO, EOPNOTSUPP): a directory in its place
    reads as EISDIR for root too."""
    root, bindirs = rxe_host(tmp_path)
    (root / HW / "sent_pkts").unlink()
    (root / HW / "sent_pkts").mkdir()
    ok, text, run, _ctx = collect(root, bindirs)
    promtool(text)
    assert not ok and errors_metric(text) == {HW_PATH + "/sent_pkts": "unreadable"}
    assert "counter %s/sent_pkts: unreadable (EISDIR)" % HW_PATH in run.errors


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30) | st.integers(-(1 << 80), 1 << 80).map(lambda n: "%d\n" % n))
def test_a_counter_is_a_sample_or_an_error_never_both_nor_neither(content):
    value, why = collector._counter(content)
    assert (value is None) != (why is None)
    if value is not None:
        assert 0 <= value <= (1 << 64) - 1 and content.rstrip("\n") == str(value)
    else:
        assert why.split(" ", 1)[0] in ("empty", "malformed", "negative", "out_of_range")


# -- the snapshot and the metrics path ------------------------------------------------------------
def run_collector(tmp_path, monkeypatch, snapshot=None, capsys=None):
    root, bindirs = rxe_host(tmp_path)
    path = root / SNAPSHOT.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(snapshot if snapshot is not None else dict(intent=intent(), host="vm1", interval=15)))
    (root / TEXTFILE_DIR.lstrip("/")).mkdir(parents=True)
    monkeypatch.setenv("RDMAOPS_HOST_ROOT", str(root))
    monkeypatch.setattr(collector, "CollectorModule",
                        lambda: CollectorModule(environ=dict(os.environ, PATH=os.pathsep.join(bindirs)), sbin=()))
    return root


@pytest.mark.parametrize("snapshot, expected", [
    (dict(intent={}, host="vm1", interval="abc"),
     "interval is 'abc'; expected a whole number of seconds from 1 to 3600 (monitor_interval), such as 15"),
    (dict(intent={}, host="vm1", interval=True), "interval is true; expected a whole number of seconds"),
    (dict(intent={}, host="vm1", interval=0), "interval is 0; expected"),
    (dict(intent={}, host="vm1", interval=[15]), "interval is a list; expected"),
    (dict(intent={}, host=["vm1"], interval=15), "host is a list; expected the host's inventory name"),
    (dict(intent={}, host="vm1\n# HELP x", interval=15), "host is 'vm1\\n# HELP x'; expected the host's inventory name"),
])
def test_a_snapshot_with_a_wrong_key_keeps_the_old_file_and_names_the_key(tmp_path, monkeypatch, capsys, snapshot, expected):
    root = run_collector(tmp_path, monkeypatch, snapshot)
    old = root / TEXTFILE_DIR.lstrip("/") / "rdmaops_roce.prom"
    old.write_text("# the last good run\nrdmaops_roce_collector_success 1\n")
    assert collector.main(["--intent", SNAPSHOT, "--textfile-dir", TEXTFILE_DIR]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rdmaops-roce-collector: %s: %s" % (SNAPSHOT, expected)), err
    assert err.endswith("; the metrics file was left as it was\n") and "Traceback" not in err
    assert old.read_text() == "# the last good run\nrdmaops_roce_collector_success 1\n"


def test_a_snapshot_intent_that_is_not_numbers_is_a_failed_part_not_a_traceback(tmp_path, monkeypatch, capsys):
    root = run_collector(tmp_path, monkeypatch, dict(intent=dict(intent(), host_mtu="abc", roce_tos=[1]), host="vm1", interval=15))
    assert collector.main(["--intent", SNAPSHOT, "--textfile-dir", TEXTFILE_DIR]) == 0
    text = (root / TEXTFILE_DIR.lstrip("/") / "rdmaops_roce.prom").read_text()
    promtool(text)
    assert samples(text)[("rdmaops_roce_collector_success", frozenset())] == 0
    assert "# error: drift: rdmaops_roce_intent_host_mtu_bytes: the value 'abc' is not a number" in text


@pytest.mark.parametrize("link", ["/etc/passwd", "/nonexistent/x.prom", "/etc", "rdmaops_roce.prom"])
def test_a_metrics_path_through_a_symlink_is_refused_and_left_alone(tmp_path, monkeypatch, capsys, link):
    root = run_collector(tmp_path, monkeypatch)
    path = root / TEXTFILE_DIR.lstrip("/") / "rdmaops_roce.prom"
    os.symlink(link, str(path))
    assert collector.main(["--intent", SNAPSHOT, "--textfile-dir", TEXTFILE_DIR]) == 1
    err = capsys.readouterr().err
    assert err == ("rdmaops-roce-collector: %s/rdmaops_roce.prom is a symlink (to %s); the collector writes only a regular "
                   "file there: remove the link; the metrics file was left as it was\n" % (TEXTFILE_DIR, link)), err
    assert os.readlink(str(path)) == link


def test_a_directory_in_place_of_the_metrics_file_is_refused(tmp_path, monkeypatch, capsys):
    root = run_collector(tmp_path, monkeypatch)
    (root / TEXTFILE_DIR.lstrip("/") / "rdmaops_roce.prom").mkdir()
    assert collector.main(["--intent", SNAPSHOT, "--textfile-dir", TEXTFILE_DIR]) == 1
    assert "rdmaops_roce.prom is not a regular file" in capsys.readouterr().err


def test_a_good_run_still_writes(tmp_path, monkeypatch, capsys):
    root = run_collector(tmp_path, monkeypatch)
    assert collector.main(["--intent", SNAPSHOT, "--textfile-dir", TEXTFILE_DIR]) == 0
    text = (root / TEXTFILE_DIR.lstrip("/") / "rdmaops_roce.prom").read_text()
    promtool(text)
    assert samples(text)[("rdmaops_roce_collector_interval_seconds", frozenset())] == 15
