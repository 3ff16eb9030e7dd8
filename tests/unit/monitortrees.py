"""The monitor's collector on recorded hosts: the lab's Soft-RoCE VM (rxe on virtio_net) and a ConnectX-7
tree with mlx5's published hw_counters names (fixtures/monitor), for the collector's, the rules' and the
dashboard's tests."""

import json
import os
import re
import sys

import hosttree
from fixtures.hosts import cx7_doca
from fixtures.monitor.counters import add_mlx5_counters
from fixtures.qos import trees

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._intent import resolve_intent
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import collector
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor.runtime import CollectorModule

UNIT = os.path.dirname(os.path.abspath(__file__))
ETHTOOL = os.path.join(UNIT, "fixtures", "tools", "ethtool")
DCB = os.path.join(UNIT, "fixtures", "tools", "dcb")
STANDINS = os.path.join(os.path.dirname(os.path.dirname(UNIT)), "tests", "tools", "qos_standins")
LAB_FABRIC = dict(preset="lossless", roce_dscp=26, roce_priority=3, cnp_dscp=48, cnp_priority=6, host_mtu=9000, switch_mtu=9216)


def _text(directory, name):
    with open(os.path.join(directory, name)) as handle:
        return handle.read()


def intent():
    # the snapshot is JSON: keys come back as strings, as on the host
    return json.loads(json.dumps(resolve_intent(dict(LAB_FABRIC))))


def rxe_host(tmp_path, tree="rxe_bookworm_mtu9000.json"):
    manifest = hosttree.load(tree)
    # virtio_net has no DCB ops: dcb's real answer for such a netdev, and its real ethtool -S
    manifest["commands"]["dcb -j pfc show dev ens4"] = dict(
        rc=1, stdout=_text(DCB, "real-iproute2-6.1-lo-unsupported.stdout"), stderr=_text(DCB, "real-iproute2-6.1-lo-unsupported.stderr"))
    manifest["commands"]["ethtool -S ens4"] = dict(rc=0, stdout=_text(ETHTOOL, "virtio_net-ethtool6.1-S.txt"), stderr="")
    root = tmp_path / "host"
    bindir = hosttree.materialize(manifest, root)
    return root, [bindir]


def mlx5_host(tmp_path):
    manifest = trees.cx7()
    add_mlx5_counters(manifest, cx7_doca.NIC0 + "/infiniband/mlx5_0/ports/1")
    manifest["commands"]["ethtool -S ens1f0np0"] = dict(rc=0, stdout=_text(ETHTOOL, "mlx5-composed-S.txt"), stderr="")
    manifest["commands"]["ethtool -S ens1f1np1"] = dict(rc=94, stdout="", stderr=_text(ETHTOOL, "lo-ethtool6.1-S-nostats.stderr"))
    root = tmp_path / "host"
    bindir = hosttree.materialize(manifest, root)
    standins = tmp_path / "standins"
    standins.mkdir()
    os.symlink(os.path.join(STANDINS, "dcb"), str(standins / "dcb"))
    state = tmp_path / "dcb-state.json"
    state.write_text("{}")
    os.environ["QOS_STANDIN_STATE"] = str(state)
    return root, [str(standins), bindir]


def collect(root, bindirs, snapshot=None):
    # the stand-ins are Python scripts: the interpreter and coreutils come after the tree's tools
    path = os.pathsep.join(bindirs + [os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    module = CollectorModule(environ=dict(os.environ, PATH=path), sbin=())
    ctx = Context(module, host=HostRoot(str(root)))
    run = collector.Collection(ctx, dict(intent=intent(), host="vm1", interval=15) if snapshot is None else snapshot,
                               clock=lambda: 1700000000.0)
    ok = run.collect()
    return ok, run.out.render(), run, ctx


def samples(text):
    """{(name, frozenset(labels)): value} of the exposition (the format checked by promtool below)."""
    out = {}
    for line in text.split("\n"):  # lines as Prometheus splits them (a \r in a help text is no line break)
        if line.startswith("#") or not line:
            continue
        match = re.fullmatch(r"([a-z0-9_:]+)(?:\{(.*)\})? (\S+)", line)
        assert match, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        out[(match.group(1), labels)] = float(match.group(3))
    return out


def metric_names(tmp_path):
    """Every metric name the collector writes on the rxe and the mlx5 tree."""
    names = set()
    for build in (rxe_host, mlx5_host):
        where = tmp_path / build.__name__
        where.mkdir()
        _ok, text, _run, _ctx = collect(*build(where))
        names.update(name for name, _labels in samples(text))
    return names
