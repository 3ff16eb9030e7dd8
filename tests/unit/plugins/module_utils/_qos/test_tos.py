"""roce_tos's engine: rdma_cm configfs (a real Soft-RoCE capture and a ConnectX-7 tree in the
kernel's format) and the OFED traffic_class file."""

import os

import pytest

import hosttree
from fixtures.hosts import cx7_doca
from fixtures.qos import trees
from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import ApplyError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandResult
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import boot, tos

CM = "/sys/kernel/config/rdma_cm"
TC = cx7_doca.NIC0 + "/infiniband/mlx5_0/tc/1/traffic_class"


class FakeModule:
    def __init__(self, check_mode=False):
        self.check_mode = check_mode
        self._diff = False


class LiveRoot(HostRoot):
    """A tree that says it is the live host (to reach the mount path); paths still resolve under it."""

    @property
    def is_live(self):
        return False if self.root == "/" else True

    def path(self, host_path):
        return os.path.join(self.root, host_path.lstrip("/"))


class MountRunner:
    """``mount -t configfs``: records the argv and makes configfs (with rdma_cm loaded) appear."""

    def __init__(self, host):
        self.host = host
        self.calls = []
        self.commands = []

    def run(self, argv, check=True):
        self.calls.append(list(argv))
        self.commands.append(" ".join(argv))
        os.makedirs(self.host.path(CM))
        return CommandResult(argv, 0, "", "")


def engine(root, check_mode=False, host=None, runner=None, **params):
    params.setdefault("device", "mlx5_0")
    params.setdefault("port", 1)
    host = host or HostRoot(str(root))
    ctx = Context(FakeModule(check_mode), host=host, runner=runner or MountRunner(host))
    return tos.RoceTos(ctx, params)


def tree(tmp_path, manifest):
    hosttree.materialize(manifest, tmp_path)
    return tmp_path


def read(root, rel):
    with open(os.path.join(str(root), rel.lstrip("/"))) as handle:
        return handle.read()


def write(root, rel, text):
    with open(os.path.join(str(root), rel.lstrip("/")), "w") as handle:
        handle.write(text)


def snapshot(root):
    out = {}
    for base, dirs, names in os.walk(str(root)):
        for name in dirs + names:
            path = os.path.join(base, name)
            out[path] = open(path, "rb").read() if os.path.isfile(path) else None
    return out


@pytest.fixture
def kernel(monkeypatch):
    """configfs as the kernel does it: mkdir of a group adds ports/1 with the device's values, and
    traffic_class reads back in mlx5_ib's format (``Global tclass=N``)."""
    real_write = files.write_attribute
    kept = {"tos": "0\n", "mode": "RoCE v2\n"}  # the values live in the kernel, not in the group

    def make_dir(host, path, mode=0o755):
        os.mkdir(host.path(path), mode)
        os.makedirs(host.path(path + "/ports/1"))
        real_write_new(host, path + "/ports/1/default_roce_tos", kept["tos"])
        real_write_new(host, path + "/ports/1/default_roce_mode", kept["mode"])
        return True

    def real_write_new(host, path, text):
        with open(host.path(path), "w") as handle:
            handle.write(text)

    def remove_dir(host, path):
        import shutil
        shutil.rmtree(host.path(path))
        return True

    def write_attribute(host, path, text):
        if path.endswith("/traffic_class"):
            value = int(text)
            if value > 255:
                raise OSError(22, "Invalid argument")
            real_write(host, path, "" if value == -1 else "Global tclass=%d\n" % value)
            return
        real_write(host, path, text)

    monkeypatch.setattr(files, "make_dir", make_dir)
    monkeypatch.setattr(files, "remove_dir", remove_dir)
    monkeypatch.setattr(files, "write_attribute", write_attribute)
    return kept


# -- parsers --------------------------------------------------------------------------------------
def test_parsers_take_the_kernels_formats():
    assert tos.parse_tos("106") == 106 and tos.parse_tos("") is None and tos.parse_tos("0x6a") is None
    assert tos.parse_mode("RoCE v2") == "v2" and tos.parse_mode("IB/RoCE v1") == "v1" and tos.parse_mode("v2") is None
    assert tos.parse_traffic_class("") == {"global_tclass": None, "rules": []}
    assert tos.parse_traffic_class("Global tclass=106") == {"global_tclass": 106, "rules": []}
    assert tos.parse_traffic_class("Global tclass=106\ndst_ip=10.0.0.0/8,tclass=104") == {
        "global_tclass": 106, "rules": ["dst_ip=10.0.0.0/8,tclass=104"]}
    assert tos.parse_traffic_class("garbage") is None


# -- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("params, option", [
    (dict(device="mlx5_0\n", tos=106), "device"),
    (dict(device="-r", tos=106), "device"),
    (dict(device="..", tos=106), "device"),
    (dict(device="a/b", tos=106), "device"),
    (dict(device="x" * 64, tos=106), "device"),
    (dict(device="mlx5 0", tos=106), "device"),
    (dict(tos=107), "tos"),
    (dict(tos=256), "tos"),
    (dict(tos=True), "tos"),
    (dict(traffic_class=111), "traffic_class"),
    (dict(traffic_class=-2), "traffic_class"),
    (dict(roce_mode="RoCE v2"), "roce_mode"),
    (dict(port=0, tos=106), "port"),
    (dict(), "tos"),
])
def test_bad_input_is_refused_naming_the_option(params, option):
    params.setdefault("device", "mlx5_0")
    with pytest.raises(InputError) as info:
        tos.normalize(params)
    assert info.value.details["option"] == option


def test_ce_is_refused_with_the_ect0_fix():
    with pytest.raises(InputError) as info:
        tos.normalize(dict(device="mlx5_0", tos=107))
    assert "CE" in info.value.msg and "106 (DSCP 26 with ECT(0))" in info.value.msg


def test_63_byte_device_name_is_accepted():
    assert tos.normalize(dict(device="x" * 63, tos=106))["device"] == "x" * 63


def test_refusal_touches_nothing(tmp_path):
    root = tree(tmp_path, trees.cx7())
    before = snapshot(root)
    with pytest.raises(InputError):
        execute(engine(root, tos=107, traffic_class=106))
    assert snapshot(root) == before


# -- the real Soft-RoCE capture --------------------------------------------------------------------
def test_rxe_capture_set_and_repeat(tmp_path):
    root = tree(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))
    eng = engine(root, device="rxe0", tos=106, roce_mode="v2")
    result, _plan = execute(eng)
    assert result["before"] == {"tos": 0, "roce_mode": "v2"} and result["after"] == {"tos": 106, "roce_mode": "v2"}
    assert result["changes"] == ["set default_roce_tos of rxe0 port 1 to 106 (was 0)"]
    assert result["commands"] == [] and eng.runner.calls == []
    assert read(root, CM + "/rxe0/ports/1/default_roce_tos") == "106\n"
    result, _plan = execute(engine(root, device="rxe0", tos=106, roce_mode="v2"))
    assert result["changed"] is False


def test_check_mode_writes_nothing(tmp_path):
    root = tree(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))
    before = snapshot(root)
    result, _plan = execute(engine(root, check_mode=True, device="rxe0", tos=106, roce_mode="v1"))
    assert result["changed"] is True and result["after"] == {"tos": 106, "roce_mode": "v1"}
    assert snapshot(root) == before


def test_unknown_device_and_port(tmp_path):
    root = tree(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))
    with pytest.raises(RdmaopsError) as info:
        execute(engine(root, device="mlx5_0", tos=106))
    assert "mlx5_0 does not exist" in info.value.msg and "rxe0" in info.value.msg
    with pytest.raises(InputError) as info:
        execute(engine(root, device="rxe0", port=2, tos=106))
    assert "rxe0 has no such port (ports: 1)" in info.value.msg


def test_traffic_class_needs_ofed(tmp_path):
    root = tree(tmp_path, hosttree.load("rxe_bookworm_mtu1500.json"))
    before = snapshot(root)
    with pytest.raises(RefusedError) as info:
        execute(engine(root, device="rxe0", tos=106, traffic_class=106))
    assert "only with the MLNX_OFED / DOCA-OFED mlx5_ib" in info.value.msg
    assert snapshot(root) == before


# -- configfs group creation, mount ------------------------------------------------------------
def test_group_created_when_missing_and_repeat_is_idempotent(tmp_path, kernel):
    root = tree(tmp_path, trees.cx7(configfs=False))
    os.makedirs(os.path.join(str(root), CM.lstrip("/")))
    result, _plan = execute(engine(root, tos=106, roce_mode="v2"))
    assert result["group_created"] is True and result["changed"] is True
    assert result["before"] == {"tos": None, "roce_mode": None}
    assert result["after"] == {"tos": 106, "roce_mode": "v2"}
    # RoCE v2 was already the device's mode: that write was found unneeded and left out.
    assert result["changes"] == ["create /sys/kernel/config/rdma_cm/mlx5_0",
                                 "set default_roce_tos of mlx5_0 port 1 to 106 (current value unknown until the configfs group exists)"]
    result, _plan = execute(engine(root, tos=106, roce_mode="v2"))
    assert result["changed"] is False


def test_a_created_group_is_removed_when_a_write_fails(tmp_path, kernel, monkeypatch):
    root = tree(tmp_path, trees.cx7(configfs=False))
    os.makedirs(os.path.join(str(root), CM.lstrip("/")))
    patched = files.write_attribute

    def refuse_tos(host, path, text):
        if path.endswith("default_roce_tos"):
            raise OSError(22, "Invalid argument")
        patched(host, path, text)

    monkeypatch.setattr(files, "write_attribute", refuse_tos)
    with pytest.raises(ApplyError) as info:
        execute(engine(root, tos=106, roce_mode="v1"))
    assert info.value.applied == []
    assert info.value.details["rolled_back"][-1] == "create /sys/kernel/config/rdma_cm/mlx5_0"
    assert kernel["mode"] == "RoCE v2\n"
    assert not os.path.exists(os.path.join(str(root), CM.lstrip("/"), "mlx5_0"))


def test_configfs_is_mounted_only_on_the_live_host(tmp_path, kernel):
    root = tree(tmp_path, trees.cx7(configfs=False))
    os.makedirs(os.path.join(str(root), "sys/kernel/config"))
    before = snapshot(root)
    with pytest.raises(RefusedError) as info:
        execute(engine(root, tos=106))
    assert "mounted only on the live host" in info.value.msg
    assert snapshot(root) == before

    host = LiveRoot(str(root))
    runner = MountRunner(host)
    result, _plan = execute(engine(root, host=host, runner=runner, tos=106))
    assert runner.calls == [["mount", "-t", "configfs", "none", "/sys/kernel/config"]]
    assert result["configfs_mounted"] is False and result["group_created"] is True
    assert result["after"]["tos"] == 106


def test_check_mode_on_the_live_host_mounts_nothing(tmp_path, kernel):
    root = tree(tmp_path, trees.cx7(configfs=False))
    os.makedirs(os.path.join(str(root), "sys/kernel/config"))
    host = LiveRoot(str(root))
    runner = MountRunner(host)
    result, _plan = execute(engine(root, check_mode=True, host=host, runner=runner, tos=106))
    assert runner.calls == [] and result["changes"][0] == "mount configfs on /sys/kernel/config"


def test_rdma_cm_not_loaded(tmp_path):
    root = tree(tmp_path, trees.cx7(configfs=False))
    write_dir = os.path.join(str(root), "sys/kernel/config")
    os.makedirs(write_dir)
    os.makedirs(os.path.join(str(root), "proc"), exist_ok=True)
    write(root, "/proc/mounts", "configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0\n")
    with pytest.raises(RefusedError) as info:
        execute(engine(root, tos=106))
    assert "rdma_cm" in info.value.msg and "nothing was changed" in info.value.msg


# -- traffic_class ----------------------------------------------------------------------------------
def test_traffic_class_set_clear_and_repeat(tmp_path, kernel):
    root = tree(tmp_path, trees.cx7(traffic_class=""))
    result, _plan = execute(engine(root, traffic_class=106))
    assert result["before"] == {"traffic_class": None} and result["after"] == {"traffic_class": 106}
    assert read(root, TC) == "Global tclass=106\n"
    result, _plan = execute(engine(root, traffic_class=106))
    assert result["changed"] is False
    result, _plan = execute(engine(root, traffic_class=-1))
    assert result["changes"] == ["clear the global traffic class of mlx5_0 port 1 (was 106)"]
    assert read(root, TC) == ""


def test_traffic_class_not_read_unless_asked(tmp_path):
    root = tree(tmp_path, trees.cx7(traffic_class="Global tclass=96\n"))
    result, _plan = execute(engine(root, tos=106))
    assert "traffic_class" not in result["before"]
    assert read(root, TC) == "Global tclass=96\n"


def test_traffic_class_undone_when_the_tos_write_fails(tmp_path, kernel, monkeypatch):
    root = tree(tmp_path, trees.cx7(traffic_class="Global tclass=96\n"))
    patched = files.write_attribute

    def refuse_tos(host, path, text):
        if path.endswith("default_roce_tos"):
            raise OSError(13, "Permission denied")
        patched(host, path, text)

    monkeypatch.setattr(files, "write_attribute", refuse_tos)
    with pytest.raises(ApplyError):
        execute(engine(root, tos=106, traffic_class=106))
    assert read(root, TC) == "Global tclass=96\n"


# -- boot re-apply ------------------------------------------------------------------------------
def test_reapply_commands_and_their_script_lines():
    desired = tos.normalize(dict(device="mlx5_0", port=1, tos=106, roce_mode="v2", traffic_class=106))
    steps = tos.reapply_commands(desired)
    assert steps == [
        {"op": "run", "argv": ["mount", "-t", "configfs", "none", "/sys/kernel/config"], "unless_mounted": "/sys/kernel/config"},
        {"op": "mkdir", "path": "/sys/kernel/config/rdma_cm/mlx5_0"},
        {"op": "write", "path": "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "value": "RoCE v2\n"},
        {"op": "write", "path": "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "value": "106\n"},
        {"op": "write", "path": "/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "value": "106\n"},
    ]
    # the boot script renders them (tests/unit/plugins/module_utils/_qos/test_boot.py runs it)
    assert [boot.render_step(step) for step in steps] == [
        "  unless_mounted /sys/kernel/config mount -t configfs none /sys/kernel/config",
        "  makedir /sys/kernel/config/rdma_cm/mlx5_0",
        "  write /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode 'RoCE v2'",
        "  write /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos 106",
        "  write /sys/class/infiniband/mlx5_0/tc/1/traffic_class 106",
    ]
