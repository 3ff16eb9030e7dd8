"""monitor_collector's engine: the script, snapshot, units and timer link in one plan; idempotent, check mode, absent."""

import json
import os
import re

import pytest

from monitortrees import intent

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import install
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule


class Module(CollectorModule):
    def __init__(self, check_mode):
        super(Module, self).__init__(environ=dict(PATH="/nonexistent"), sbin=())
        self.check_mode = check_mode
        self._diff = True


def run(root, check_mode=False, **params):
    params.setdefault("intent", intent())
    params.setdefault("host_name", "vm1")
    params.setdefault("python", "/usr/bin/python3")
    ctx = Context(Module(check_mode), host=HostRoot(str(root)))
    result, _plan = execute(install.MonitorCollector(ctx, params), Plan())
    return result


def read(root, path):
    return (root / path.lstrip("/")).read_text()


def test_install_then_nothing_to_do(tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    result = run(root, interval=30)
    assert result["changed"] is True
    assert "create /var/lib/prometheus/node-exporter (node_exporter's textfile directory)" in result["changes"]
    service = read(root, "/etc/systemd/system/rdmaops-roce-monitor.service")
    assert ("ExecStart=/usr/bin/python3 /usr/local/sbin/rdmaops-roce-collector --intent /etc/rdmaops/monitor-intent.json "
            "--textfile-dir /var/lib/prometheus/node-exporter") in service
    assert "ReadWritePaths=/var/lib/prometheus/node-exporter" in service
    assert "OnUnitActiveSec=30s" in read(root, "/etc/systemd/system/rdmaops-roce-monitor.timer")
    assert os.readlink(str(root / "etc/systemd/system/timers.target.wants/rdmaops-roce-monitor.timer")) == \
        "/etc/systemd/system/rdmaops-roce-monitor.timer"
    snapshot = json.loads(read(root, install.SNAPSHOT_PATH))
    assert snapshot["intent"] == intent() and snapshot["host"] == "vm1" and snapshot["interval"] == 30
    assert os.stat(str(root / install.SCRIPT_PATH.lstrip("/"))).st_mode & 0o777 == 0o755
    assert result["node_exporter"] == dict(service="prometheus-node-exporter.service", installed=False, enabled=False, active=None)
    again = run(root, interval=30)
    assert again["changed"] is False and again["changes"] == []
    # a new intent rewrites the snapshot only
    changed = run(root, interval=30, intent=dict(intent(), host_mtu=4200))
    assert changed["changes"] == ["update %s" % install.SNAPSHOT_PATH]


def test_check_mode_predicts_and_writes_nothing(tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    result = run(root, check_mode=True)
    assert result["changed"] is True and len(result["changes"]) == 6
    assert [entry["after_header"] for entry in result["diff"] if "after_header" in entry] == [
        install.SCRIPT_PATH, install.SNAPSHOT_PATH, "/etc/systemd/system/rdmaops-roce-monitor.service",
        "/etc/systemd/system/rdmaops-roce-monitor.timer"]
    assert os.listdir(str(root)) == []


def test_the_scripts_diff_names_each_bundled_module_by_its_digest_not_its_source(tmp_path):
    """--diff on a new host printed the collector's bundled sources whole (420 KB in the lab's walk of
    adding a host); it shows one line per module, and a module changed by a new collection version is
    the one line that changes."""
    root = tmp_path / "host"
    root.mkdir()
    result = run(root, check_mode=True)
    (script,) = [entry for entry in result["diff"] if entry.get("after_header") == install.SCRIPT_PATH]
    written = install.wanted_texts("/usr/bin/python3", intent(), "vm1", 15, "/var/lib/prometheus/node-exporter")[install.SCRIPT_PATH]
    modules = re.findall(r"^    '([^']+)': \((?:True|False), ", written, re.M)
    assert len(modules) > 20 and script["before"] == ""
    assert len(script["after"]) < 20000 < len(written), len(script["after"])
    for name in modules:
        assert re.search(r"^    '%s': source of \d+ bytes, sha256 [0-9a-f]{16}( \(package\))?$" % re.escape(name), script["after"], re.M), name
    assert "def read_text(host, host_path)" in written and "def read_text" not in script["after"]
    assert script["after"].splitlines()[0] == written.splitlines()[0] and "BUNDLE = " in script["after"]
    # the installed script with one module's source edited: the diff's one changed line is that module's
    run(root)
    path = root / install.SCRIPT_PATH.lstrip("/")
    path.write_text(path.read_text().replace("def read_text(host, host_path):", "def read_text(host, host_path):  # edited", 1))
    again = run(root, check_mode=True)
    (script,) = [entry for entry in again["diff"] if entry.get("after_header") == install.SCRIPT_PATH]
    differ = [(old, new) for old, new in zip(script["before"].splitlines(), script["after"].splitlines()) if old != new]
    assert len(differ) == 1 and "_core.files'" in differ[0][0], differ
    assert len(script["before"].splitlines()) == len(script["after"].splitlines())


def test_absent_removes_everything_it_wrote(tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    run(root)
    (root / "var/lib/prometheus/node-exporter/rdmaops_roce.prom").write_text("# Managed by rdmaops.roce (monitor): x\n")
    (root / "var/lib/prometheus/node-exporter/apt.prom").write_text("apt_upgrades_pending 0\n")
    result = run(root, state="absent")
    assert result["changed"] is True
    for path in (install.SCRIPT_PATH, install.SNAPSHOT_PATH, "/etc/systemd/system/rdmaops-roce-monitor.timer",
                 "/etc/systemd/system/timers.target.wants/rdmaops-roce-monitor.timer",
                 "/var/lib/prometheus/node-exporter/rdmaops_roce.prom"):
        assert not os.path.lexists(str(root / path.lstrip("/"))), path
    assert (root / "var/lib/prometheus/node-exporter/apt.prom").exists()
    assert run(root, state="absent")["changed"] is False


def test_a_foreign_file_is_left_alone(tmp_path):
    root = tmp_path / "host"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system/rdmaops-roce-monitor.timer").write_text("[Timer]\nOnCalendar=daily\n")
    with pytest.raises(RefusedError):
        run(root)
    assert not (root / install.SCRIPT_PATH.lstrip("/")).exists()
    assert run(root, adopt=True)["changed"] is True


@pytest.mark.parametrize("params, option", [
    (dict(interval=0), "interval"),
    (dict(interval="15"), "interval"),
    (dict(textfile_dir="relative/dir"), "textfile_dir"),
    (dict(textfile_dir="/var/lib/node exporter"), "textfile_dir"),
    (dict(textfile_dir="/var/lib/../etc"), "textfile_dir"),
    (dict(intent=dict(host_mtu=9000)), "intent"),
    (dict(host_name=""), "host_name"),
    (dict(node_exporter_service="node exporter"), "node_exporter_service"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, params, option):
    root = tmp_path / "host"
    root.mkdir()
    with pytest.raises(InputError) as caught:
        run(root, **params)
    assert caught.value.details.get("option") == option
    assert os.listdir(str(root)) == []
