"""A no-op's cheap checks: the preflight's read of the owned files (rdma_facts' observe) against what
kernel_modules and monitor_collector would write, computed on the controller with the modules' own code.
Each test installs with the real engine into a host tree, reads it with the real observer, and then
drifts one thing: the check must say so, so that the module runs and puts it back."""

import os

import pytest

from monitortrees import intent

from ansible_collections.rdmaops.roce.plugins.filter import roce_current as rc
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._host.observe import observe
from ansible_collections.rdmaops.roce.plugins.module_utils._kmod import engine as kmod
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import install
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule

PYTHON = "/usr/bin/python3"
LOADED = dict(rdma_cm=True, ib_uverbs=True, ib_umad=True, mlx5_core=False)


class Module(CollectorModule):
    def __init__(self):
        super(Module, self).__init__(environ=dict(PATH="/nonexistent"), sbin=())
        self.check_mode = False
        self._diff = False


def install_monitor(root, **params):
    params = dict(dict(intent=intent(), host_name="vm1", python=PYTHON, interval=15), **params)
    result, _plan = execute(install.MonitorCollector(Context(Module(), host=HostRoot(str(root))), params), Plan())
    return result


def settings(**changes):
    out = dict(python=PYTHON, intent=intent(), host_name="vm1", interval=15, textfile_dir=None,
               node_exporter_service=None, install_node_exporter=False)
    out.update(changes)
    return out


def read(root, monitor_on=True):
    return observe(HostRoot(str(root)), None, rc.roce_noop_observe(monitor_on))


@pytest.fixture(name="host")
def fixture_host(tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    install_monitor(root)
    (root / "etc/modules-load.d").mkdir(parents=True)
    (root / "etc/modules-load.d/rdmaops-roce.conf").write_text(
        kmod.render_modules_load(rc.KMOD_OWNER, list(kmod.DEFAULT_NAMES)))
    return root


SCRIPTS = {}


def scripts():
    if not SCRIPTS:
        SCRIPTS.update(rc.roce_monitor_scripts([PYTHON, PYTHON, ""]))
    return SCRIPTS


def test_the_observer_reports_files_links_directories_and_absence(host):
    observed = read(host)
    files = observed["files"]
    assert files[kmod.DEFAULT_MODPROBE_FILE] == dict(type="absent")
    assert files[kmod.DEFAULT_MODULES_LOAD_FILE]["type"] == "file" and len(files[kmod.DEFAULT_MODULES_LOAD_FILE]["sha256"]) == 64
    assert files["/etc/systemd/system/timers.target.wants/rdmaops-roce-monitor.timer"] == dict(
        type="link", target="/etc/systemd/system/rdmaops-roce-monitor.timer")
    assert files["/var/lib/prometheus/node-exporter"] == dict(type="dir")
    # a recorded tree is not a running systemd: no unit is asked
    assert observed["systemd"] is False and observed["units"] == {
        "rdmaops-roce-monitor.timer": None, "prometheus-node-exporter.service": None}
    assert set(read(host, monitor_on=False)["files"]) == {kmod.DEFAULT_MODULES_LOAD_FILE, kmod.DEFAULT_MODPROBE_FILE}


@pytest.mark.parametrize("spec", [dict(files=["etc/x"]), dict(units=["-H host"]), dict(units=["a b"]),
                                  dict(files=["/x"] * 65)])
def test_the_observer_refuses_what_is_not_a_path_or_a_unit(tmp_path, spec):
    with pytest.raises(InputError) as err:
        observe(HostRoot(str(tmp_path)), None, spec)
    assert err.value.details.get("option") == "observe" or "observe" in err.value.msg


def test_the_modules_check_holds_only_for_the_exact_file_and_every_module_loaded(host):
    assert rc.roce_noop_modules(read(host), LOADED) is True
    assert rc.roce_noop_modules(read(host), dict(LOADED, ib_umad=False)) is False
    assert rc.roce_noop_modules(None, LOADED) is False and rc.roce_noop_modules(read(host), None) is False
    path = host / "etc/modules-load.d/rdmaops-roce.conf"
    wanted = path.read_text()
    path.write_text(wanted + "rdma_rxe\n")
    assert rc.roce_noop_modules(read(host), LOADED) is False
    path.unlink()
    assert rc.roce_noop_modules(read(host), LOADED) is False
    path.write_text(wanted)
    (host / "etc/modprobe.d").mkdir(parents=True)
    (host / "etc/modprobe.d/rdmaops-roce.conf").write_text("options ib_uverbs foo=1\n")
    assert rc.roce_noop_modules(read(host), LOADED) is False


def test_the_monitor_check_holds_for_what_the_module_just_wrote(host):
    assert set(scripts()) == {PYTHON}
    assert rc.roce_noop_monitor(read(host), settings(), scripts()) is True
    # the module agrees: nothing to do
    assert install_monitor(host)["changed"] is False


@pytest.mark.parametrize("drift", ["script", "snapshot", "timer", "link", "textfile_dir"])
def test_the_monitor_check_sees_each_drift_and_the_module_puts_it_back(host, drift):
    if drift == "script":
        path = host / install.SCRIPT_PATH.lstrip("/")
        path.write_text(path.read_text() + "# edited\n")
    elif drift == "snapshot":
        path = host / install.SNAPSHOT_PATH.lstrip("/")
        path.write_text(path.read_text().replace('"vm1"', '"vm9"'))
    elif drift == "timer":
        (host / "etc/systemd/system/rdmaops-roce-monitor.timer").unlink()
    elif drift == "link":
        (host / "etc/systemd/system/timers.target.wants/rdmaops-roce-monitor.timer").unlink()
    else:
        os.rmdir(str(host / "var/lib/prometheus/node-exporter"))
    assert rc.roce_noop_monitor(read(host), settings(), scripts()) is False
    assert install_monitor(host)["changed"] is True
    assert rc.roce_noop_monitor(read(host), settings(), scripts()) is True


@pytest.mark.parametrize("changes", [dict(interval=30), dict(host_name="vm2"), dict(python="/usr/bin/python3.11"),
                                     dict(intent=dict(intent(), host_mtu=4200)), dict(textfile_dir="/srv/textfiles"),
                                     dict(interval=0), dict(textfile_dir="relative"), dict(intent={"preset": 1}),
                                     dict(install_node_exporter=True)])
def test_other_settings_or_input_the_module_refuses_make_the_module_run(host, changes):
    assert rc.roce_noop_monitor(read(host), settings(**changes), scripts()) is False


def test_node_exporter_and_the_timer_must_run_where_systemd_runs(host):
    observed = read(host)
    unit_dir = "/lib/systemd/system/prometheus-node-exporter.service"
    observed["files"][unit_dir] = dict(type="file", sha256="0" * 64)
    observed["files"]["/etc/systemd/system/multi-user.target.wants/prometheus-node-exporter.service"] = dict(
        type="link", target=unit_dir)
    assert rc.roce_noop_monitor(observed, settings(install_node_exporter=True), scripts()) is True
    observed.update(systemd=True, units={"rdmaops-roce-monitor.timer": "active", "prometheus-node-exporter.service": "active"})
    assert rc.roce_noop_monitor(observed, settings(install_node_exporter=True), scripts()) is True
    for unit in observed["units"]:
        stopped = dict(observed, units=dict(observed["units"], **{unit: "inactive"}))
        assert rc.roce_noop_monitor(stopped, settings(install_node_exporter=True), scripts()) is False
