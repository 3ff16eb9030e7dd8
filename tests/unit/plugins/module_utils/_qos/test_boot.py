"""The boot-time re-apply: the generated script run by the real sh, the unit checked by systemd-analyze."""

import os
import shutil
import stat
import subprocess

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._qos import boot

DEVICES = {
    "mlx5_0": [
        boot.run_step(["mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp"]),
        boot.run_step(["mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,1,0,0,0,0"]),
        {"op": "write", "path": "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3", "value": "1\n"},
        {"op": "run", "argv": ["mount", "-t", "configfs", "none", "/sys/kernel/config"],
         "unless_mounted": "/sys/kernel/config"},
        {"op": "mkdir", "path": "/sys/kernel/config/rdma_cm/mlx5_0"},
        {"op": "write", "path": "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "value": "106\n"},
    ],
    "rxe0": [{"op": "write", "path": "/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos", "value": "106\n"}],
}

RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$ARGV_LOG"
[ "$(basename "$0")" != failing ] || exit 3
"""


class NoRunner:
    def has(self, tool):
        return False


def tools(tmp_path, *names):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name in names:
        path = bindir / name
        path.write_text(RECORDER)
        path.chmod(0o755)
    return bindir


def run_script(tmp_path, script, *args, tool_names=("mlnx_qos",)):
    root = tmp_path / "root"
    for path in ("sys/class/net/ens1f0np0/ecn/roce_np/enable", "sys/kernel/config/rdma_cm/rxe0/ports/1"):
        (root / path).mkdir(parents=True, exist_ok=True)
    (root / "sys/class/net/ens1f0np0/ecn/roce_np/enable/3").write_text("0\n")
    (root / "sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").write_text("0\n")
    path = tmp_path / "reapply"
    path.write_text(script)
    path.chmod(0o755)
    env = dict(os.environ, RDMAOPS_HOST_ROOT=str(root), ARGV_LOG=str(tmp_path / "argv.log"),
               PATH="%s:%s" % (tools(tmp_path, *tool_names), os.environ["PATH"]))
    proc = subprocess.run(["sh", str(path)] + list(args), env=env, check=False, capture_output=True, text=True, timeout=30)
    log = (tmp_path / "argv.log").read_text().splitlines() if (tmp_path / "argv.log").exists() else []
    return proc, log, root


def test_the_script_runs_one_device_with_the_real_sh(tmp_path):
    # (the kernel fills a new rdma_cm device directory with ports/; a plain tree does not, so the
    # ToS write of mlx5_0 is left to the next test, where it fails and is reported)
    devices = dict(DEVICES, mlx5_0=DEVICES["mlx5_0"][:-1])
    proc, log, root = run_script(tmp_path, boot.render_script(devices), "mlx5_0")
    assert proc.returncode == 0, proc.stderr
    assert log == ["mlnx_qos -i ens1f0np0 --trust dscp", "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0"]
    assert (root / "sys/class/net/ens1f0np0/ecn/roce_np/enable/3").read_text() == "1\n"
    # the device directory is created under the host root, and its port attribute then written there
    assert (root / "sys/kernel/config/rdma_cm/mlx5_0").is_dir()
    assert (root / "sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").read_text() == "0\n"


def test_all_runs_every_device_and_a_second_run_gives_the_same_state(tmp_path):
    script = boot.render_script(DEVICES)
    first = run_script(tmp_path, script)
    second = run_script(tmp_path, script)
    # mlx5_0's ToS write fails (its port directory is not in the tree): reported, the rest still ran
    for proc, _log, root in (first, second):
        assert proc.returncode == 1
        assert "cannot write 106 to /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos" in proc.stderr
        assert (root / "sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").read_text() == "106\n"
    assert second[1] == first[1] * 2  # the log is appended: the same two commands again


def test_a_failing_command_is_reported_and_the_other_steps_still_run(tmp_path):
    devices = {"rxe0": [boot.run_step(["failing", "x"])] + DEVICES["rxe0"]}
    proc, log, root = run_script(tmp_path, boot.render_script(devices), "rxe0", tool_names=("failing",))
    assert proc.returncode == 1 and "failed: failing x" in proc.stderr
    assert log == ["failing x"]
    assert (root / "sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").read_text() == "106\n"


def test_a_device_without_settings_is_left_alone(tmp_path):
    proc, log, _root = run_script(tmp_path, boot.render_script(DEVICES), "mlx5_9")
    assert proc.returncode == 0 and "no settings for mlx5_9" in proc.stdout and log == []


def test_values_with_shell_characters_are_quoted(tmp_path):
    devices = {"rxe0": [{"op": "write", "path": "/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos",
                         "value": "$(touch pwned)"}]}
    proc, _log, root = run_script(tmp_path, boot.render_script(devices), "rxe0")
    assert proc.returncode == 0
    assert (root / "sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos").read_text() == "$(touch pwned)\n"
    assert not (tmp_path / "pwned").exists() and not os.path.exists("pwned")


@pytest.mark.parametrize("name", ["", "a/b", "mlx5 0", "x;reboot", "$(id)", "a" * 64])
def test_device_names_that_are_not_plain_are_refused(name):
    with pytest.raises(InputError):
        boot.render_script({name: [boot.run_step(["true"])]})


def test_plan_writes_three_files_once_and_removes_them_when_nothing_is_left(tmp_path):
    host = HostRoot(str(tmp_path))
    plan = Plan()
    paths = boot.plan_boot_reapply(plan, host, NoRunner(), DEVICES)
    assert [change.key for change in plan] == ["reapply_script", "reapply_unit", "reapply_udev_rule"]
    assert plan.steps() == ["systemctl daemon-reload", "udevadm control --reload"]
    plan.apply()
    script = tmp_path / paths[0].lstrip("/")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert 'ENV{SYSTEMD_WANTS}+="rdmaops-nic-qos@%k.service"' in (tmp_path / paths[2].lstrip("/")).read_text()
    again = Plan()
    boot.plan_boot_reapply(again, host, NoRunner(), DEVICES)
    assert not again.changed and again.steps() == []
    gone = Plan()
    boot.plan_boot_reapply(gone, host, NoRunner(), {"mlx5_0": []})
    assert [change.description for change in gone] == ["remove %s" % path for path in paths]
    gone.apply()
    assert not any((tmp_path / path.lstrip("/")).exists() for path in paths)


def test_a_script_we_did_not_write_is_refused_unless_adopted(tmp_path):
    host = HostRoot(str(tmp_path))
    script = tmp_path / boot.SCRIPT_PATH.lstrip("/")
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\necho the site's own script\n")
    with pytest.raises(RefusedError):
        boot.plan_boot_reapply(Plan(), host, NoRunner(), DEVICES)
    plan = Plan()
    boot.plan_boot_reapply(plan, host, NoRunner(), DEVICES, adopt=True)
    assert plan.changed


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit(tmp_path):
    unitdir = tmp_path / "units"
    unitdir.mkdir()
    (unitdir / boot.UNIT_NAME).write_text(boot.UNIT_TEXT % (boot.MARKER, "/bin/true"))
    instance = unitdir / "rdmaops-nic-qos@mlx5_0.service"
    instance.symlink_to(unitdir / boot.UNIT_NAME)
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", str(instance)], check=False,
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, SYSTEMD_UNIT_PATH="%s:" % unitdir))
    complaints = [line for line in (proc.stderr or "").splitlines() if "rdmaops-nic-qos" in line]
    assert complaints == [], proc.stderr
