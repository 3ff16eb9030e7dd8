"""A no-op's cheap checks: the preflight's read of the owned files (rdma_facts' observe) against what
kernel_modules, nccl_conf and monitor_collector would write, computed on the controller with the modules' own code.
Each test installs with the real engine into a host tree, reads it with the real observer, and then
drifts one thing: the check must say so, so that the module runs and puts it back."""

import copy
import os

import pytest

import hosttree
from fixtures.hosts import cx7_doca
from monitortrees import intent

from ansible_collections.rdmaops.roce.plugins.filter import roce_noop_observe as rc
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._host.observe import observe
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
from ansible_collections.rdmaops.roce.plugins.module_utils._kmod import engine as kmod
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import install
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule
from ansible_collections.rdmaops.roce.plugins.module_utils._nccl import conf as nccl

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
    assert set(read(host, monitor_on=False)["files"]) == {kmod.DEFAULT_MODULES_LOAD_FILE, kmod.DEFAULT_MODPROBE_FILE,
                                                          nccl.DEFAULT_PATH}
    assert read(host)["texts"] == {"/proc/net/route": None}


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


ROUTES = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "eno1\t00000000\t01000A0A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n")


class ReplayModule(hosttree.ReplayModule):
    def __init__(self, manifest, bindir):
        super(ReplayModule, self).__init__(manifest.get("commands", {}), bindir)
        self.check_mode = False
        self._diff = False


def both_ports_up(manifest):
    """mlx5_1's port up with 192.168.102.12 and its RoCE v1/v2 GIDs at 2 and 3, as mlx5_0's (see test_conf.py)."""
    port = cx7_doca.NIC1 + "/infiniband/mlx5_1/ports/1"
    manifest["entries"][port + "/state"] = {"type": "file", "content": "4: ACTIVE\n"}
    for index, kind in ((2, "IB/RoCE v1"), (3, "RoCE v2")):
        manifest["entries"]["%s/gids/%d" % (port, index)] = {"type": "file", "content": "0000:0000:0000:0000:0000:ffff:c0a8:660c\n"}
        manifest["entries"]["%s/gid_attrs/types/%d" % (port, index)] = {"type": "file", "content": kind + "\n"}


@pytest.fixture(name="gpu", params=["both ports", "one port down"])
def fixture_gpu(tmp_path, request):
    """The recorded ConnectX-7 host with a default route through eno1, and nccl_conf run on it once."""
    manifest = copy.deepcopy(cx7_doca.manifest())
    manifest["entries"]["/proc/net/route"] = {"type": "file", "content": ROUTES}
    if request.param == "both ports":
        both_ports_up(manifest)
    root = tmp_path / "cx7"
    bindir = hosttree.materialize(manifest, root)

    def run(**params):
        module = ReplayModule(manifest, bindir)
        ctx = Context(module, host=HostRoot(str(root)), runner=CommandRunner(module))
        return execute(nccl.NcclConf(ctx, dict(dict(tc=106), **params)))[0]

    def facts():
        module = ReplayModule(manifest, bindir)
        rdma = RdmaFacts(HostRoot(str(root)), CommandRunner(module)).gather()
        return observe(HostRoot(str(root)), None, rc.roce_noop_observe(False)), rdma

    assert run()["changed"] is True
    return root, run, facts


def test_the_nccl_check_holds_for_what_the_module_wrote_and_sees_each_drift(gpu):
    root, run, facts = gpu
    observed, rdma = facts()
    assert observed["texts"]["/proc/net/route"] == ROUTES
    if run()["skipped"]:
        # a port left out: the module warns about it on every run, so it runs
        assert rc.roce_noop_nccl(observed, rdma, dict(tc=106)) is False
        return
    assert rc.roce_noop_nccl(observed, rdma, dict(tc=106)) is True
    assert run()["changed"] is False
    # other options than the file was written with
    for params in (dict(tc=98), dict(tc=106, ib_retry_cnt=3), dict(tc=106, extra=dict(NCCL_DEBUG="WARN")),
                   dict(tc=106, socket_ifname="ens1f0np0"), dict(tc=106, state="absent"), dict(tc=999), dict()):
        assert rc.roce_noop_nccl(observed, rdma, params) is False, params
    # the default route moved to another interface
    other = dict(observed, texts={"/proc/net/route": ROUTES.replace("eno1", "eno2")})
    assert rc.roce_noop_nccl(other, rdma, dict(tc=106)) is False
    assert rc.roce_noop_nccl(dict(observed, texts={}), rdma, dict(tc=106)) is False
    # the RoCE v2 GID index the facts show is not the file's
    moved = copy.deepcopy(rdma)
    for device in moved["devices"].values():
        for port in device["ports"].values():
            if port.get("roce_v2_ipv4_gid_index") is not None:
                port["roce_v2_ipv4_gid_index"] += 1
    assert rc.roce_noop_nccl(observed, moved, dict(tc=106)) is False
    # a line of someone else's beside the block: the module runs (it judges and warns about such lines)
    path = root / "etc/nccl.conf"
    path.write_text("NCCL_DEBUG=INFO\n" + path.read_text())
    assert rc.roce_noop_nccl(facts()[0], rdma, dict(tc=106)) is False
    # an edited value in the block: judged changed, and the module puts it back
    path.write_text(path.read_text().replace("NCCL_DEBUG=INFO\n", "").replace("NCCL_IB_TIMEOUT=20", "NCCL_IB_TIMEOUT=22"))
    assert rc.roce_noop_nccl(facts()[0], rdma, dict(tc=106)) is False
    assert run()["changed"] is True
    assert rc.roce_noop_nccl(facts()[0], rdma, dict(tc=106)) is True
