"""roce_ecn's engine against ECN sysfs trees in the kernel's format (fixtures/qos/trees.py)."""

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
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import ecn

IF = "ens1f0np0"
ECN = cx7_doca.NIC0 + "/net/ens1f0np0/ecn"


class FakeModule:
    def __init__(self, check_mode=False, diff=False):
        self.check_mode = check_mode
        self._diff = diff

    def get_bin_path(self, tool):
        return None


def engine(root, check_mode=False, **params):
    params.setdefault("interface", IF)
    ctx = Context(FakeModule(check_mode), host=HostRoot(str(root)))
    return ecn.RoceEcn(ctx, params)


def tree(tmp_path, **kwargs):
    hosttree.materialize(trees.cx7(**kwargs), tmp_path)
    return tmp_path


def snapshot(root):
    out = {}
    for base, _dirs, names in os.walk(str(root)):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as handle:
                out[path] = handle.read()
    return out


def read(root, rel):
    with open(os.path.join(str(root), rel.lstrip("/"))) as handle:
        return handle.read()


# -- parser -------------------------------------------------------------------------------------
def test_parse_value_is_the_drivers_format():
    assert ecn.parse_value("48") == 48
    assert ecn.parse_value("-1") == -1
    for bad in (None, "", " 48", "48 ", "0x30", "48\n1", "on"):
        assert ecn.parse_value(bad) is None


# -- validation, before anything is read --------------------------------------------------------
@pytest.mark.parametrize("params, option", [
    (dict(interface="ens1f0np0\n", priorities=[3]), "interface"),
    (dict(interface="../x", priorities=[3]), "interface"),
    (dict(priorities=[8]), "priorities"),
    (dict(priorities=[3, 3]), "priorities"),
    (dict(priorities=[True]), "priorities"),
    (dict(np_priorities=[-1]), "np_priorities"),
    (dict(cnp_dscp=64), "cnp_dscp"),
    (dict(cnp_802p_prio=8), "cnp_802p_prio"),
    (dict(rp_params=dict(rpg_min_dec_fac=0)), "rp_params"),
    (dict(rp_params=dict(no_such=1)), "rp_params"),
    (dict(exclusive=True), "exclusive"),
    (dict(), "priorities"),
    (dict(priorities=[3], unsupported="ignore"), "unsupported"),
])
def test_bad_input_is_refused_naming_the_option(params, option):
    params.setdefault("interface", IF)
    with pytest.raises(InputError) as info:
        ecn.normalize(params)
    assert info.value.details["option"].startswith(option)


def test_refused_input_reads_nothing(tmp_path):
    # The tree is not even there: validation comes first.
    eng = engine(tmp_path / "absent", cnp_dscp=99)
    with pytest.raises(InputError):
        execute(eng)


# -- read / plan / apply / re-read -------------------------------------------------------------
def test_read_reports_the_tree(tmp_path):
    eng = engine(tree(tmp_path), priorities=[3])
    eng.validate()
    eng.read()
    assert eng.supported is True and eng.bdf == "0000:3d:00.0"
    assert eng.current["np"] == dict(enabled=list(range(8)), cnp_dscp=48, cnp_802p_prio=6, min_time_between_cnps=4)
    assert eng.current["rp"]["enabled"] == list(range(8)) and eng.current["rp"]["initial_alpha_value"] == 1023


def test_check_mode_writes_nothing_and_predicts(tmp_path):
    root = tree(tmp_path)
    before = snapshot(root)
    result, plan = execute(engine(root, check_mode=True, priorities=[3], exclusive=True, cnp_dscp=46,
                                  rp_params=dict(rpg_ai_rate=10)))
    assert snapshot(root) == before
    assert result["changed"] is True
    assert result["after"]["np"]["enabled"] == [3] and result["after"]["rp"]["enabled"] == [3]
    assert result["after"]["np"]["cnp_dscp"] == 46 and result["after"]["rp"]["rpg_ai_rate"] == 10
    assert "disable ECN on ens1f0np0 notification point priority 0 from 1 to 0" in result["changes"]
    assert len(result["changes"]) == 2 + 7 * 2


def test_apply_then_second_run_changes_nothing(tmp_path):
    root = tree(tmp_path)
    params = dict(priorities=[3], exclusive=True, cnp_dscp=46, cnp_802p_prio=5)
    result, _plan = execute(engine(root, **params))
    assert result["changed"] is True
    assert read(root, ECN + "/roce_np/enable/0") == "0\n" and read(root, ECN + "/roce_np/enable/3") == "1\n"
    assert read(root, ECN + "/roce_np/cnp_dscp") == "46\n"
    assert result["after"]["np"]["enabled"] == [3] and result["after"]["np"]["cnp_802p_prio"] == 5
    result, _plan = execute(engine(root, **params))
    assert result["changed"] is False and result["changes"] == []


def test_only_the_differing_file_is_written(tmp_path):
    root = tree(tmp_path)
    result, _plan = execute(engine(root, priorities=[3], cnp_dscp=48, cnp_802p_prio=3))
    assert result["changes"] == ["set ens1f0np0 notification point cnp_802p_prio from 6 to 3"]


def test_a_refused_write_puts_the_old_values_back(tmp_path, monkeypatch):
    root = tree(tmp_path)
    real = files.write_attribute

    def kernel(host, path, text):
        if path.endswith("/cnp_dscp"):
            raise OSError(22, "Invalid argument")
        real(host, path, text)

    monkeypatch.setattr(files, "write_attribute", kernel)
    with pytest.raises(ApplyError) as info:
        execute(engine(root, cnp_dscp=46, cnp_802p_prio=5))
    assert "refused 46" in info.value.msg and "EINVAL" in info.value.msg
    assert info.value.applied == []
    assert info.value.details["rolled_back"] == ["set ens1f0np0 notification point cnp_802p_prio from 6 to 5"]
    assert read(root, ECN + "/roce_np/cnp_802p_prio") == "6\n"


def test_verify_reports_a_value_the_driver_did_not_keep(tmp_path, monkeypatch):
    root = tree(tmp_path)
    monkeypatch.setattr(files, "write_attribute", lambda host, path, text: None)  # accepted, ignored
    with pytest.raises(RdmaopsError) as info:
        execute(engine(root, cnp_dscp=46))
    assert "cnp_dscp reads 48 after 46 was written" in info.value.msg


# -- drivers without the tree -------------------------------------------------------------------
def test_inbox_driver_fails_before_anything_and_names_the_firmware_alternative(tmp_path):
    root = tree(tmp_path, ecn=False)
    before = snapshot(root)
    with pytest.raises(RefusedError) as info:
        execute(engine(root, priorities=[3], exclusive=True, cnp_dscp=48))
    assert snapshot(root) == before
    msg = info.value.msg
    assert msg.startswith("nothing was changed: ens1f0np0 has no ECN sysfs tree")
    assert "mlxconfig -y -d 0000:3d:00.0 set CNP_DSCP_P1=48 ROCE_CC_PRIO_MASK_P1=8" in msg
    assert "unsupported=warn" in msg
    assert info.value.details["firmware_alternative"]["params"] == {"ROCE_CC_PRIO_MASK_P1": 8, "CNP_DSCP_P1": 48}


def test_inbox_driver_with_warn_changes_nothing_and_warns_once(tmp_path):
    root = tree(tmp_path, ecn=False)
    eng = engine(root, priorities=[3], cnp_dscp=48, unsupported="warn")
    result, _plan = execute(eng)
    assert result["changed"] is False and result["supported"] is False
    assert result["unsupported"] == ["cnp_dscp", "priorities"]
    assert len(eng.ctx.warnings) == 1 and "ROCE_CC_PRIO_MASK_P1" in eng.ctx.warnings[0]
    assert "bitmask" in " ".join(result["firmware_alternative"]["notes"])


def test_second_port_maps_to_p2(tmp_path):
    desired = ecn.normalize(dict(interface="ens1f1np1", cnp_dscp=48))
    assert ecn.firmware_alternative(desired, "0000:3d:00.1")["params"] == {"CNP_DSCP_P2": 48}


def test_read_only_file_of_a_vf_is_unsupported_per_option(tmp_path):
    root = tree(tmp_path)
    os.chmod(os.path.join(str(root), (ECN + "/roce_np/cnp_dscp").lstrip("/")), 0o444)
    eng = engine(root, cnp_dscp=46, cnp_802p_prio=5, unsupported="warn")
    result, _plan = execute(eng)
    assert result["unsupported"] == ["cnp_dscp"]
    assert result["changes"] == ["set ens1f0np0 notification point cnp_802p_prio from 6 to 5"]
    assert read(root, ECN + "/roce_np/cnp_dscp") == "48\n"
    assert "read-only" in eng.ctx.warnings[0]


def test_missing_interface(tmp_path):
    with pytest.raises(RdmaopsError) as info:
        execute(engine(tree(tmp_path), interface="eth9", priorities=[3]))
    assert "eth9 does not exist" in info.value.msg


# -- boot re-apply ------------------------------------------------------------------------------
def test_reapply_commands_are_the_whole_desired_state(tmp_path):
    desired = ecn.normalize(dict(interface=IF, priorities=[3], cnp_dscp=48, rp_params=dict(rpg_ai_rate=None)))
    steps = ecn.reapply_commands(desired)
    assert steps == [
        {"op": "write", "path": "/sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp", "value": "48\n"},
        {"op": "write", "path": "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3", "value": "1\n"},
        {"op": "write", "path": "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/3", "value": "1\n"},
    ]
    # Run twice against a tree: the second run finds nothing to change.
    root = tree(tmp_path)
    host = HostRoot(str(root))
    for _round in range(2):
        for step in steps:
            files.write_attribute(host, step["path"], step["value"])
    result, _plan = execute(engine(root, priorities=[3], cnp_dscp=48))
    assert result["changed"] is False
