"""kernel_modules run by ansible itself against a host tree whose modprobe/dmesg are simulated.

``RDMAOPS_HOST_ROOT=<tree> PATH=<stubs>:$PATH ansible localhost -m rdmaops.roce.kernel_modules``:
the stub modprobe creates /sys/module/<name> in the tree (taking options from the tree's
/etc/modprobe.d), so the module's own re-read of /sys/module decides success, as on a host.
"""

import pytest

import kmodsim
import ansiblerun

KERNEL = "6.1.0-18-amd64"
LOAD_FILE = "etc/modules-load.d/rdmaops-roce.conf"


@pytest.fixture
def host(tmp_path):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text(KERNEL + "\n")
    (tmp_path / "sys/module/ib_core").mkdir(parents=True)
    (tmp_path / "sys/module/ib_core/initstate").write_text("live\n")
    (tmp_path / "lib/modules" / KERNEL).mkdir(parents=True)
    (tmp_path / "lib/modules" / KERNEL / "modules.builtin").write_text("kernel/drivers/infiniband/core/ib_umad.ko\n")
    bindir = kmodsim.install_stubs(tmp_path / "simbin")
    return tmp_path, ansiblerun.tree_env(tmp_path, [bindir])


def test_load_persist_then_nothing_to_do(host):
    root, env = host
    rc, check = ansiblerun.adhoc("rdmaops.roce.kernel_modules", "", env, check=True, diff=True)
    assert rc == 0 and check["changed"] is True
    assert check["loaded_now"] == ["rdma_cm", "ib_uverbs"]
    assert not (root / LOAD_FILE).exists() and not (root / "sys/module/rdma_cm").exists()

    rc, first = ansiblerun.adhoc("rdmaops.roce.kernel_modules", "", env, diff=True)
    assert rc == 0, first
    assert first["changed"] is True
    assert first["loaded_now"] == ["rdma_cm", "ib_uverbs"]
    assert first["builtin"] == ["ib_umad"]
    assert first["changes"] == check["changes"] == ["load rdma_cm", "load ib_uverbs", "write /" + LOAD_FILE]
    assert (root / LOAD_FILE).read_text().endswith("rdma_cm\nib_uverbs\nib_umad\n")
    assert first["diff"][-1]["after_header"] == "/" + LOAD_FILE
    assert (root / "sys/module/rdma_cm/initstate").read_text() == "live\n"

    rc, second = ansiblerun.adhoc("rdmaops.roce.kernel_modules", "", env)
    assert rc == 0 and second["changed"] is False
    assert second["already_loaded"] == ["rdma_cm", "ib_uverbs"]


def test_options_reach_the_load(host):
    root, env = host
    rc, result = ansiblerun.adhoc(
        "rdmaops.roce.kernel_modules",
        '{"names": ["rdma_rxe"], "options": {"rdma_rxe": "max_ucontext=64"}, '
        '"modules_load_file": "/etc/modules-load.d/rdmaops-rxe.conf", "modprobe_file": "/etc/modprobe.d/rdmaops-rxe.conf"}',
        env,
    )
    assert rc == 0, result
    assert (root / "etc/modprobe.d/rdmaops-rxe.conf").read_text().endswith("options rdma_rxe max_ucontext=64\n")
    assert (root / "sys/module/rdma_rxe/parameters/max_ucontext").read_text() == "64\n"


def test_failed_load_reports_stderr_and_kernel_log(host):
    root, env = host
    kmodsim.Sim(root).configure(modules={"rdma_cm": {
        "rc": 1,
        "stderr": "modprobe: ERROR: could not insert 'rdma_cm': Invalid argument\n",
        "log": ["[  33.100000] rdma_cm: Unknown symbol ib_sa_unregister_client (err -22)"],
    }})
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", "", env)
    assert rc != 0 and result["failed"] is True
    assert result["msg"].startswith("modprobe rdma_cm failed (rc=1): modprobe: ERROR: could not insert 'rdma_cm': Invalid argument")
    assert result["kernel_log"] == ["[  33.100000] rdma_cm: Unknown symbol ib_sa_unregister_client (err -22)"]
    assert result["loaded_now"] == []
    assert not (root / LOAD_FILE).exists()


def test_bad_name_fails_before_touching_anything(host):
    root, env = host
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", '{"names": ["rdma_cm", "/tmp/evil.ko"]}', env)
    assert rc != 0
    assert "names: '/tmp/evil.ko' is not a kernel module name" in result["msg"]
    assert kmodsim.Sim(root).calls() == []


def test_a_load_failing_after_another_loaded_is_changed_and_names_what_stayed(host):
    # rdma_cm loads with the options file this run wrote; ib_uverbs fails.  The file is put back,
    # rdma_cm stays loaded (no safe undo), so the task failed *and* changed the host.
    root, env = host
    kmodsim.Sim(root).configure(modules={"ib_uverbs": {
        "rc": 1, "stderr": "modprobe: ERROR: could not insert 'ib_uverbs': Invalid argument\n"}})
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", '{"options": {"rdma_cm": "x=1"}}', env)
    assert rc != 0 and result["failed"] is True
    assert result["changed"] is True
    assert result["applied"] == ["load rdma_cm"]
    assert result["rolled_back"] == ["write /etc/modprobe.d/rdmaops-roce.conf"]
    assert result["not_applied"] == ["load ib_uverbs", "write /" + LOAD_FILE]
    assert result["loaded_now"] == ["rdma_cm"]
    assert (root / "sys/module/rdma_cm/initstate").read_text() == "live\n"
    assert not (root / "etc/modprobe.d/rdmaops-roce.conf").exists()
    assert not (root / LOAD_FILE).exists()


@pytest.mark.parametrize("args", [
    '{"names": ["-r"]}',
    '{"names": ["rdma_cm", "--help"]}',
    '{"names": ["rdma_cm\\n"]}',
    '{"options": {"--help": "x=1"}}',
])
def test_option_like_names_never_reach_modprobe(host, args):
    root, env = host
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", args, env)
    assert rc != 0 and result["failed"] is True and result["changed"] is False
    assert kmodsim.Sim(root).calls() == []
    assert not (root / LOAD_FILE).exists()


def test_a_file_we_did_not_write_is_refused_unless_adopted(host):
    root, env = host
    conf = root / "etc/modprobe.d/site.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("options rdma_cm x=0\n")
    args = '{"names": ["rdma_cm"], "options": {"rdma_cm": "x=1"}, "modprobe_file": "/etc/modprobe.d/site.conf"'
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", args + "}", env)
    assert rc != 0 and result["changed"] is False
    assert "/etc/modprobe.d/site.conf exists and was not written by rdmaops.roce" in result["msg"]
    assert conf.read_text() == "options rdma_cm x=0\n"
    assert [c for c in kmodsim.Sim(root).calls() if "--dry-run" not in c] == []
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", args + ', "adopt": true}', env)
    assert rc == 0 and result["changed"] is True
    assert conf.read_text().startswith("# Managed by rdmaops.roce")


def test_absent_does_not_remove_a_file_we_did_not_write(host):
    root, env = host
    conf = root / LOAD_FILE
    conf.parent.mkdir(parents=True)
    conf.write_text("rdma_cm\n")
    rc, result = ansiblerun.adhoc("rdmaops.roce.kernel_modules", '{"names": ["rdma_cm"], "state": "absent"}', env)
    assert rc != 0 and result["changed"] is False
    assert "was not written by rdmaops.roce" in result["msg"]
    assert conf.read_text() == "rdma_cm\n"
