"""The module core: host-root seam, command runner, plans, atomic files."""

import os
import stat

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import (
    CommandError,
    CommandRunner,
    ToolNotFound,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import failure
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HOST_ROOT_ENV, HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan


# -- host root -------------------------------------------------------------------------------
def test_host_root_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(HOST_ROOT_ENV, str(tmp_path))
    host = HostRoot()
    assert host.path("/sys/class/net") == str(tmp_path / "sys/class/net")
    assert not host.is_live


def test_host_root_defaults_to_live(monkeypatch):
    monkeypatch.delenv(HOST_ROOT_ENV, raising=False)
    host = HostRoot()
    assert host.is_live
    assert host.path("/proc/sys/kernel/osrelease") == "/proc/sys/kernel/osrelease"


def test_host_root_rejects_relative_paths(tmp_path):
    with pytest.raises(ValueError):
        HostRoot(str(tmp_path)).path("sys/class")


def test_host_root_reads_and_resolves_inside_tree(tmp_path):
    (tmp_path / "sys/devices/virtual/net/lo").mkdir(parents=True)
    (tmp_path / "sys/devices/virtual/net/lo/mtu").write_text("65536\n")
    (tmp_path / "sys/class/net").mkdir(parents=True)
    os.symlink("../../devices/virtual/net/lo", str(tmp_path / "sys/class/net/lo"))
    host = HostRoot(str(tmp_path))
    assert host.read("/sys/class/net/lo/mtu") == "65536"
    assert host.read_int("/sys/class/net/lo/mtu") == 65536
    assert host.realpath("/sys/class/net/lo") == "/sys/devices/virtual/net/lo"
    assert host.readlink_name("/sys/class/net/lo") == "lo"
    assert host.listdir("/sys/class/net") == ["lo"]
    assert host.listdir("/sys/class/infiniband") == []
    assert host.read("/sys/class/net/lo/missing", "dflt") == "dflt"
    assert host.read_or_errno("/sys/class/net/lo/missing") == (None, "ENOENT")
    assert host.realpath("/sys/class/net/eth9") is None


# -- command runner --------------------------------------------------------------------------
class FakeModule:
    def __init__(self, answers, tools=("ip", "false")):
        self.answers = answers
        self.tools = tools
        self.calls = []
        self.failed = None

    def get_bin_path(self, tool):
        return "/usr/bin/" + tool if tool in self.tools else None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        self.calls.append(dict(argv=argv, env=environ_update, expand=expand_user_and_vars, check_rc=check_rc))
        return self.answers[tuple(argv)]

    def fail_json(self, **kwargs):
        self.failed = kwargs


def test_runner_resolves_binary_and_forces_c_locale():
    module = FakeModule({("/usr/bin/ip", "-j", "link"): (0, "[]", "")})
    result = CommandRunner(module).run(["ip", "-j", "link"])
    assert result.ok and result.stdout == "[]"
    call = module.calls[0]
    assert call["env"] == {"LANG": "C", "LC_ALL": "C", "LANGUAGE": "C"}
    assert call["expand"] is False and call["check_rc"] is False


def test_runner_error_carries_cmd_rc_stdout_stderr():
    module = FakeModule({("/usr/bin/false",): (1, "out", "err")})
    runner = CommandRunner(module)
    with pytest.raises(CommandError) as info:
        runner.run(["false"])
    # The engine turns the error's message and details into the failed result.
    assert failure(info.value, None, None) == {
        "msg": "command failed with rc=1: /usr/bin/false",
        "cmd": ["/usr/bin/false"],
        "rc": 1,
        "stdout": "out",
        "stderr": "err",
        "changed": False,
    }
    assert runner.run(["false"], check=False).rc == 1
    assert runner.run(["false"], ok_rcs=(0, 1)).rc == 1


def test_runner_refuses_shell_strings_and_missing_tools():
    runner = CommandRunner(FakeModule({}))
    with pytest.raises(TypeError):
        runner.run("ip link show")
    with pytest.raises(ToolNotFound) as info:
        runner.run(["mlnx_qos", "-i", "ens4"])
    assert "mlnx_qos was not found on PATH" in str(info.value)
    assert runner.run_optional(["mlnx_qos"]) is None


# -- plans -----------------------------------------------------------------------------------
def test_plan_only_records_differences_and_check_mode_acts_on_nothing():
    applied = []
    plan = Plan()
    assert plan.add("mtu", 9000, 9000, lambda: applied.append("mtu"), "set mtu") is False
    assert plan.add("tos", 0, 106, lambda: applied.append("tos"), "set default_roce_tos 106") is True
    plan.add("/etc/x.conf", "a\n", "b\n", lambda: applied.append("file"), "write /etc/x.conf", header="/etc/x.conf")
    assert plan.changed and len(plan) == 2
    assert plan.apply(check_mode=True) == []
    assert applied == []
    assert plan.apply(check_mode=False) == ["set default_roce_tos 106", "write /etc/x.conf"]
    assert applied == ["tos", "file"]


def test_plan_result_and_diff():
    plan = Plan()
    plan.add("tos", 0, 106, lambda: None, "set tos")
    plan.add("/etc/x.conf", None, "b\n", lambda: None, "write", header="/etc/x.conf")
    result = plan.result(check_mode=True, diff_mode=True)
    assert result["changed"] is True
    assert result["changes"] == ["set tos", "write"]
    assert result["diff"] == [
        {"before": {"tos": 0}, "after": {"tos": 106}},
        {"before": "", "after": "b\n", "before_header": "/etc/x.conf", "after_header": "/etc/x.conf"},
    ]
    assert result["disruption"] == "online"
    assert result["disruptive_changes"] == []
    empty = Plan().result(check_mode=False, diff_mode=True)
    assert empty == {"changed": False, "changes": [], "diff": [], "disruption": "none", "disruptive_changes": []}


# -- files -----------------------------------------------------------------------------------
def test_write_atomic_creates_with_mode_and_is_idempotent(tmp_path):
    host = HostRoot(str(tmp_path))
    (tmp_path / "etc/modules-load.d").mkdir(parents=True)
    assert files.write_atomic(host, "/etc/modules-load.d/rdma.conf", "rdma_cm\n", mode=0o640) is True
    target = tmp_path / "etc/modules-load.d/rdma.conf"
    assert target.read_text() == "rdma_cm\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert files.write_atomic(host, "/etc/modules-load.d/rdma.conf", "rdma_cm\n") is False
    assert os.listdir(str(tmp_path / "etc/modules-load.d")) == ["rdma.conf"]  # no temp files left


def test_write_atomic_keeps_existing_mode(tmp_path):
    host = HostRoot(str(tmp_path))
    target = tmp_path / "sysctl.conf"
    target.write_text("old\n")
    os.chmod(str(target), 0o600)
    inode = target.stat().st_ino
    assert files.write_atomic(host, "/sysctl.conf", "new\n", mode=0o644) is True
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.stat().st_ino != inode  # replaced by rename, never rewritten in place


def test_write_atomic_makedirs(tmp_path):
    host = HostRoot(str(tmp_path))
    with pytest.raises(OSError):
        files.write_atomic(host, "/etc/new.d/a.conf", "x\n")
    assert files.write_atomic(host, "/etc/new.d/a.conf", "x\n", makedirs=True) is True


def test_merge_block_keeps_foreign_lines():
    existing = "# site settings\nvm.swappiness = 10\n"
    merged = files.merge_block(existing, ["net.core.rmem_max = 4194304"], "tuning")
    assert merged == (
        "# site settings\nvm.swappiness = 10\n\n"
        "# BEGIN rdmaops.roce tuning\nnet.core.rmem_max = 4194304\n# END rdmaops.roce tuning\n"
    )
    assert files.read_block(merged, "tuning") == ["net.core.rmem_max = 4194304"]
    updated = files.merge_block(merged + "kernel.pid_max = 99\n", ["net.core.rmem_max = 1"], "tuning")
    assert updated.startswith("# site settings\nvm.swappiness = 10\n")
    assert updated.endswith("# END rdmaops.roce tuning\nkernel.pid_max = 99\n")
    assert files.read_block(updated, "tuning") == ["net.core.rmem_max = 1"]
    removed = files.merge_block(updated, [], "tuning")
    assert "rdmaops.roce" not in removed and "kernel.pid_max = 99" in removed
    assert files.merge_block("", [], "tuning") == ""
    assert files.read_block("x\n", "tuning") is None
