"""kernel_modules and peermem main(): an argument spec and one run_module call, in-process."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

import gputree
import kmodsim

from ansible_collections.rdmaops.roce.plugins.modules import kernel_modules, peermem

KERNEL = "6.1.0-18-amd64"


def call(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def kmod_env(tmp_path, monkeypatch):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text(KERNEL + "\n")
    (tmp_path / "lib/modules" / KERNEL).mkdir(parents=True)
    (tmp_path / "lib/modules" / KERNEL / "modules.builtin").write_text("")
    monkeypatch.setenv("RDMAOPS_HOST_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", kmodsim.install_stubs(tmp_path / "simbin"))
    return tmp_path


def test_kernel_modules_main_loads_and_reports(kmod_env, capsys):
    result = call(kernel_modules, {"names": ["rdma_cm"]}, capsys)
    assert "failed" not in result and result["changed"] is True
    assert result["loaded_now"] == ["rdma_cm"]
    assert result["commands"] == ["modprobe --dry-run rdma_cm", "dmesg", "modprobe rdma_cm", "dmesg"]
    assert (kmod_env / "sys/module/rdma_cm/initstate").read_text() == "live\n"


def test_kernel_modules_main_fails_with_the_truth(kmod_env, capsys):
    kmodsim.Sim(kmod_env).configure(modules={"ib_uverbs": {"rc": 1, "stderr": "Invalid argument\n"}})
    result = call(kernel_modules, {"names": ["rdma_cm", "ib_uverbs"]}, capsys)
    assert result["failed"] is True and result["changed"] is True
    assert result["applied"] == ["load rdma_cm"] and result["loaded_now"] == ["rdma_cm"]


def test_kernel_modules_main_refuses_an_option_like_name(kmod_env, capsys):
    result = call(kernel_modules, {"names": ["-r"]}, capsys)
    assert result["failed"] is True and result["changed"] is False and result["option"] == "names"
    assert kmodsim.Sim(kmod_env).calls() == []


def test_peermem_main_skips_a_host_without_gpu(tmp_path, monkeypatch, capsys):
    bindirs = gputree.no_gpu_host(tmp_path)
    monkeypatch.setenv("RDMAOPS_HOST_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", ":".join(str(b) for b in bindirs))
    result = call(peermem, {"rdma_stack": {"flavor": "none"}}, capsys)
    assert result["skipped"] is True and result["changed"] is False
    assert result["peermem"]["action"] == "skip"
