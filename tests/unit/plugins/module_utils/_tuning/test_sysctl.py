"""sysctl profiles against host trees: keys, values, the plan, apply, re-read, boot order."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import sysctl
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import Plan
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.sysctl import (
    NOT_PRESENT,
    READ_ONLY,
    SysctlProfile,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError

# Running values read from a Debian 12 test machine (kernel 6.18, initial network namespace),
# byte for byte: the kernel separates tcp_rmem/tcp_wmem fields with tabs.
LIVE_6_18 = {
    "net/core/rmem_max": "4194304\n",
    "net/core/wmem_max": "4194304\n",
    "net/core/rmem_default": "212992\n",
    "net/core/wmem_default": "212992\n",
    "net/core/optmem_max": "131072\n",
    "net/core/netdev_max_backlog": "1000\n",
    "net/ipv4/tcp_rmem": "4096\t131072\t33554432\n",
    "net/ipv4/tcp_wmem": "4096\t16384\t4194304\n",
    "net/ipv4/tcp_timestamps": "1\n",
    "net/ipv4/tcp_sack": "1\n",
}

# The role's default profile (NVIDIA sysctl_perf_tuning values).
NVIDIA = {
    "net.ipv4.tcp_timestamps": 0,
    "net.ipv4.tcp_sack": 1,
    "net.core.netdev_max_backlog": 250000,
    "net.core.rmem_max": 4194304,
    "net.core.wmem_max": 4194304,
    "net.core.rmem_default": 4194304,
    "net.core.wmem_default": 4194304,
    "net.core.optmem_max": 4194304,
    "net.ipv4.tcp_rmem": "4096 87380 4194304",
    "net.ipv4.tcp_wmem": [4096, 65536, 4194304],
}

PATH = "/etc/sysctl.d/90-rdmaops-roce.conf"

EXPECTED_FILE = (
    "# Managed by rdmaops.roce (test). Changes here are overwritten on the next run.\n"
    "# Put local overrides in a file that sorts after this one, e.g. 99-local.conf.\n"
    "net.core.netdev_max_backlog = 250000\n"
    "net.core.optmem_max = 4194304\n"
    "net.core.rmem_default = 4194304\n"
    "net.core.rmem_max = 4194304\n"
    "net.core.wmem_default = 4194304\n"
    "net.core.wmem_max = 4194304\n"
    "net.ipv4.tcp_rmem = 4096 87380 4194304\n"
    "net.ipv4.tcp_sack = 1\n"
    "net.ipv4.tcp_timestamps = 0\n"
    "net.ipv4.tcp_wmem = 4096 65536 4194304\n"
)


def make_tree(root, proc=None, files=None):
    for rel, content in (LIVE_6_18 if proc is None else proc).items():
        path = root / "proc/sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (root / "etc/sysctl.d").mkdir(parents=True, exist_ok=True)
    for host_path, content in (files or {}).items():
        path = root / host_path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return HostRoot(str(root))


def proc(root, rel):
    return (root / "proc/sys" / rel).read_text()


def planned(profile):
    plan = Plan()
    profile.plan(plan)
    return plan


# -- keys and values -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key, path, canonical",
    [
        ("net.core.rmem_max", "/proc/sys/net/core/rmem_max", "net.core.rmem_max"),
        ("net/core/rmem_max", "/proc/sys/net/core/rmem_max", "net.core.rmem_max"),
        # sysctl.d(5): with a dot first, "/" is a literal dot inside a component (VLAN netdevs).
        ("net.ipv4.conf.eth0/100.rp_filter", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter", "net.ipv4.conf.eth0/100.rp_filter"),
        ("net/ipv4/conf/eth0.100/rp_filter", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter", "net.ipv4.conf.eth0/100.rp_filter"),
    ],
)
def test_keys_follow_sysctl_d(key, path, canonical):
    assert sysctl.proc_path(key) == path
    assert sysctl.canonical_key(key) == canonical


@pytest.mark.parametrize("key", ["", "net", "net..core", "../etc/passwd", "net.core.rmem max", "net.core.", "/net/core"])
def test_bad_keys_are_refused_by_name(key):
    with pytest.raises(InputError) as err:
        sysctl.proc_path(key)
    assert repr(key) in str(err.value)


@pytest.mark.parametrize(
    "value, text",
    [(4194304, "4194304"), ("4096\t87380  4194304", "4096 87380 4194304"), ([4096, "87380", 4194304], "4096 87380 4194304"), (True, "1"), (False, "0")],
)
def test_values_normalize_like_the_kernel_prints_them(value, text):
    assert sysctl.normalize_value("k.k", value) == text


@pytest.mark.parametrize("value", [None, "", "   ", 1.5, [], {"a": 1}])
def test_bad_values_name_the_key(value):
    with pytest.raises(InputError) as err:
        sysctl.normalize_value("net.core.rmem_max", value)
    assert "net.core.rmem_max" in str(err.value)


def test_the_same_key_twice_is_refused():
    with pytest.raises(InputError) as err:
        sysctl.normalize_settings({"net.core.rmem_max": 1, "net/core/rmem_max": 2})
    assert "given twice" in str(err.value)


def test_path_must_be_a_conf_file(tmp_path):
    host = make_tree(tmp_path)
    for bad in ("/etc/sysctl.d/90-rdmaops", "etc/sysctl.d/x.conf"):
        with pytest.raises(InputError):
            SysctlProfile(host, bad, NVIDIA)


# -- plan, check mode, apply, re-read ----------------------------------------------------------
def test_plan_lists_the_file_and_only_the_keys_that_differ(tmp_path):
    host = make_tree(tmp_path)
    profile = SysctlProfile(host, PATH, NVIDIA, owner="test")
    plan = planned(profile)
    keys = [change.key for change in plan]
    # rmem_max, wmem_max and tcp_sack already have the profile's values.
    assert keys == [
        "file",
        "sysctl net.core.netdev_max_backlog",
        "sysctl net.core.optmem_max",
        "sysctl net.core.rmem_default",
        "sysctl net.core.wmem_default",
        "sysctl net.ipv4.tcp_rmem",
        "sysctl net.ipv4.tcp_timestamps",
        "sysctl net.ipv4.tcp_wmem",
    ]
    rmem = [change for change in plan if change.key == "sysctl net.ipv4.tcp_rmem"][0]
    assert (rmem.before, rmem.after) == ("4096 131072 33554432", "4096 87380 4194304")
    assert profile.unapplied == {}
    diff = plan.diff()
    assert diff[0]["before"]["sysctl net.ipv4.tcp_timestamps"] == "1"
    assert diff[1]["after"] == EXPECTED_FILE and diff[1]["before"] == ""


def test_check_mode_touches_nothing(tmp_path):
    host = make_tree(tmp_path)
    plan = planned(SysctlProfile(host, PATH, NVIDIA, owner="test"))
    assert plan.apply(check_mode=True) == []
    assert not (tmp_path / PATH.lstrip("/")).exists()
    assert proc(tmp_path, "net/ipv4/tcp_rmem") == LIVE_6_18["net/ipv4/tcp_rmem"]


def test_apply_writes_file_and_values_then_nothing_is_left_to_do(tmp_path):
    host = make_tree(tmp_path)
    profile = SysctlProfile(host, PATH, NVIDIA, owner="test")
    plan = planned(profile)
    plan.apply(check_mode=False)
    assert profile.verify() == {}
    written = tmp_path / PATH.lstrip("/")
    assert written.read_text() == EXPECTED_FILE
    assert oct(os.stat(str(written)).st_mode & 0o777) == "0o644"
    assert proc(tmp_path, "net/ipv4/tcp_rmem") == "4096 87380 4194304\n"
    assert proc(tmp_path, "net/core/netdev_max_backlog") == "250000\n"
    again = SysctlProfile(host, PATH, NVIDIA, owner="test")
    assert len(planned(again)) == 0


def test_kernel_tabs_match_the_profile_spaces(tmp_path):
    host = make_tree(tmp_path, proc=dict(LIVE_6_18, **{"net/ipv4/tcp_rmem": "4096\t87380\t4194304\n"}))
    plan = planned(SysctlProfile(host, PATH, {"net.ipv4.tcp_rmem": "4096 87380 4194304"}, owner="test"))
    assert [change.key for change in plan] == ["file"]


def test_foreign_file_content_is_replaced_and_its_mode_kept(tmp_path):
    host = make_tree(tmp_path, files={PATH: "net.core.rmem_max = 1\n"})
    os.chmod(str(tmp_path / PATH.lstrip("/")), 0o600)
    profile = SysctlProfile(host, PATH, {"net.core.rmem_max": 4194304}, owner="test", adopt=True)
    plan = planned(profile)
    assert plan.diff()[0]["before"] == "net.core.rmem_max = 1\n"
    plan.apply(check_mode=False)
    written = tmp_path / PATH.lstrip("/")
    assert written.read_text().endswith("net.core.rmem_max = 4194304\n")
    assert oct(os.stat(str(written)).st_mode & 0o777) == "0o600"


def test_runtime_can_be_left_alone(tmp_path):
    host = make_tree(tmp_path)
    plan = planned(SysctlProfile(host, PATH, NVIDIA, apply_runtime=False, owner="test"))
    assert [change.key for change in plan] == ["file"]


def test_state_absent_removes_only_an_existing_file(tmp_path):
    host = make_tree(tmp_path, files={PATH: EXPECTED_FILE})
    profile = SysctlProfile(host, PATH, None, state="absent")
    plan = planned(profile)
    assert [change.key for change in plan] == ["file"]
    plan.apply(check_mode=False)
    assert profile.verify() == {}
    assert not (tmp_path / PATH.lstrip("/")).exists()
    assert proc(tmp_path, "net/ipv4/tcp_rmem") == LIVE_6_18["net/ipv4/tcp_rmem"]
    assert len(planned(SysctlProfile(host, PATH, None, state="absent"))) == 0


# -- keys that cannot be applied here --------------------------------------------------------
# In a container's network namespace (captured with the molecule image on kernel 6.18)
# net.core.netdev_max_backlog does not exist and the other net.core keys are read-only.
CONTAINER_6_18 = dict(
    (rel, value) for rel, value in LIVE_6_18.items() if rel != "net/core/netdev_max_backlog"
)


def test_missing_key_is_reported_not_planned(tmp_path):
    host = make_tree(tmp_path, proc=CONTAINER_6_18)
    profile = SysctlProfile(host, PATH, NVIDIA, owner="test")
    plan = planned(profile)
    assert "sysctl net.core.netdev_max_backlog" not in [change.key for change in plan]
    assert profile.unapplied == {
        "net.core.netdev_max_backlog": {"want": "250000", "have": None, "reason": NOT_PRESENT},
    }
    # The file still carries the key: on a real host's next boot it applies.
    assert "net.core.netdev_max_backlog = 250000" in plan.diff()[1]["after"]


def test_read_only_key_is_reported_not_planned(tmp_path, monkeypatch):
    host = make_tree(tmp_path, proc=CONTAINER_6_18)
    # The kernel's own permission check (proc_sys_permission) is what os.access consults on a
    # real /proc; a tree file is always writable for root, so the answer is given here.
    real = sysctl.RuntimeKey.writable
    monkeypatch.setattr(sysctl.RuntimeKey, "writable", lambda self: False if self.key.startswith("net.core.") else real(self))
    profile = SysctlProfile(host, PATH, NVIDIA, owner="test")
    keys = [change.key for change in planned(profile)]
    assert keys == ["file", "sysctl net.ipv4.tcp_rmem", "sysctl net.ipv4.tcp_timestamps", "sysctl net.ipv4.tcp_wmem"]
    assert sorted(profile.unapplied) == [
        "net.core.netdev_max_backlog",
        "net.core.optmem_max",
        "net.core.rmem_default",
        "net.core.wmem_default",
    ]
    assert profile.unapplied["net.core.rmem_default"] == {"want": "4194304", "have": "212992", "reason": READ_ONLY}
    # Equal values need no write, so a read-only key that already matches is not a problem.
    assert "net.core.rmem_max" not in profile.unapplied


def test_refused_write_is_recorded_and_the_rest_applied(tmp_path, monkeypatch):
    host = make_tree(tmp_path)
    real = sysctl.RuntimeKey.write
    monkeypatch.setattr(
        sysctl.RuntimeKey,
        "write",
        lambda self, value: "the kernel rejected the value" if self.key == "net.core.optmem_max" else real(self, value),
    )
    profile = SysctlProfile(host, PATH, NVIDIA, owner="test")
    planned(profile).apply(check_mode=False)
    assert profile.failed_writes() == {"net.core.optmem_max"}
    assert profile.verify() == {}
    assert profile.unapplied["net.core.optmem_max"]["reason"] == "the kernel rejected the value"
    assert proc(tmp_path, "net/core/optmem_max") == "131072\n"
    assert proc(tmp_path, "net/ipv4/tcp_wmem") == "4096 65536 4194304\n"


def test_value_the_kernel_does_not_keep_is_caught_on_re_read(tmp_path, monkeypatch):
    host = make_tree(tmp_path)

    def clamping_write(self, value):
        with open(host.path(self.path), "w") as handle:
            handle.write("2147483647\n" if self.key == "net.core.netdev_max_backlog" else value + "\n")

    monkeypatch.setattr(sysctl.RuntimeKey, "write", clamping_write)
    profile = SysctlProfile(host, PATH, NVIDIA, owner="test")
    planned(profile).apply(check_mode=False)
    assert profile.verify() == {}
    assert profile.unapplied["net.core.netdev_max_backlog"]["have"] == "2147483647"
    assert "after '250000' was written" in profile.unapplied["net.core.netdev_max_backlog"]["reason"]


def test_real_write_errors_are_classified(tmp_path):
    host = make_tree(tmp_path)
    entry = sysctl.RuntimeKey(host, "net.ipv4.no_such_key")
    assert entry.read() == (None, NOT_PRESENT)
    os.makedirs(host.path("/proc/sys/net/ipv4/tcp_dir"))
    assert sysctl.RuntimeKey(host, "net.ipv4.tcp_dir").write("1").startswith("write failed")


# -- boot order: who wins at the next boot ---------------------------------------------------
def test_boot_order_follows_systemd_sysctl(tmp_path):
    host = make_tree(
        tmp_path,
        files={
            "/usr/lib/sysctl.d/50-pid-max.conf": "kernel.pid_max = 4194304\n",
            "/usr/lib/sysctl.d/99-protect-links.conf": "fs.protected_fifos = 1\n",
            "/etc/sysctl.d/99-protect-links.conf": "# local copy hides /usr/lib's\n",
            "/run/sysctl.d/95-run.conf": "",
            "/etc/sysctl.conf": "#\n",
            "/etc/sysctl.d/README.sysctl": "not a .conf file\n",
        },
    )
    os.symlink("../sysctl.conf", str(tmp_path / "etc/sysctl.d/99-sysctl.conf"))
    assert sysctl.boot_order(host) == [
        "/usr/lib/sysctl.d/50-pid-max.conf",
        "/run/sysctl.d/95-run.conf",
        "/etc/sysctl.d/99-protect-links.conf",
        "/etc/sysctl.d/99-sysctl.conf",
    ]
    (tmp_path / "etc/sysctl.d/99-sysctl.conf").unlink()
    assert sysctl.boot_order(host)[-1] == "/etc/sysctl.conf"


def test_later_files_that_win_are_reported(tmp_path):
    host = make_tree(
        tmp_path,
        files={
            "/etc/sysctl.d/10-early.conf": "net.core.rmem_max = 1\n",
            "/etc/sysctl.d/99-local.conf": "# site\nnet.core.rmem_max=8388608\n-net/ipv4/tcp_sack = 1\n; x = 2\n",
            "/etc/sysctl.conf": "net.ipv4.tcp_timestamps = 1\n",
        },
    )
    settings = sysctl.normalize_settings(NVIDIA)
    found = sysctl.later_overrides(host, PATH, settings)
    assert found == [
        {"key": "net.core.rmem_max", "file": "/etc/sysctl.d/99-local.conf", "value": "8388608", "ours": "4194304"},
        {"key": "net.ipv4.tcp_timestamps", "file": "/etc/sysctl.conf", "value": "1", "ours": "0"},
    ]


def test_parse_conf_reads_both_key_forms():
    text = "a.b = 1\n  # c\n-net/ipv4/conf/eth0.5/rp_filter=2\nbroken line\nnet.x =  1\t2 \n"
    assert sysctl.parse_conf(text) == [
        ("a.b", "1"),
        ("net.ipv4.conf.eth0/5.rp_filter", "2"),
        ("net.x", "1 2"),
    ]


# -- the engine: validation before anything is touched, ownership, refused writes ------------
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, run_module  # noqa: E402
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RefusedError  # noqa: E402


class Exit(Exception):
    pass


class FakeModule:
    def __init__(self, params, check_mode=False, diff=False):
        self.params = params
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)

    def exit_json(self, **result):
        raise Exit(dict(result, failed=False))

    def fail_json(self, **result):
        raise Exit(dict(result, failed=True))


def module_run(host, check_mode=False, **params):
    full = dict(settings=None, path=PATH, state="present", apply_runtime=True, runtime_errors="fail", adopt=False)
    full.update(params)
    module = FakeModule(full, check_mode=check_mode)
    with pytest.raises(Exit) as done:
        run_module(module, sysctl.SysctlProfileEngine, ctx=Context(module, host=host))
    return done.value.args[0], module.warnings


@pytest.mark.parametrize("key", ["net.core.rmem_max\n", "net.core.rmem_max\nkernel.panic", "net.core.rmem_max "])
def test_key_that_is_not_all_sysctl_charset_is_refused_before_writing(tmp_path, key):
    # re.match(...$) let "net.core.rmem_max\n" through: the file got a broken line and rc was 0.
    host = make_tree(tmp_path)
    with pytest.raises(InputError) as err:
        SysctlProfile(host, PATH, {key: 1}, apply_runtime=False, owner="test")
    assert repr(key) in str(err.value)
    result, _warnings = module_run(host, settings={key: 1}, apply_runtime=False)
    assert result["failed"] and result["changed"] is False and "invalid sysctl key" in result["msg"]
    assert not (tmp_path / PATH.lstrip("/")).exists()


@pytest.mark.parametrize("value", ["1\nkernel.panic = 1", "4096 87380\r4194304", ["4096", "1\n2"]])
def test_value_with_a_line_break_is_refused(tmp_path, value):
    host = make_tree(tmp_path)
    with pytest.raises(InputError) as err:
        SysctlProfile(host, PATH, {"net.core.rmem_max": value}, apply_runtime=False)
    assert "line break" in str(err.value) and "net.core.rmem_max" in str(err.value)
    assert not (tmp_path / PATH.lstrip("/")).exists()


@pytest.mark.parametrize(
    "path",
    [
        "/etc/profile.d/evil.conf",  # outside /etc/sysctl.d: the old module wrote it
        "/etc/sysctl.d/../cron.d/x.conf",
        "/etc/sysctl.d/../../../escape.conf",
        "/etc/sysctl.d/sub/x.conf",
        "/etc/sysctl.d/.hidden.conf",
        "/etc/sysctl.d/x.conf\n",
    ],
)
def test_path_outside_sysctl_d_is_refused_and_nothing_is_written(tmp_path, path):
    root = tmp_path / "root"
    host = make_tree(root)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    result, _warnings = module_run(host, settings={"net.core.rmem_max": 4194304}, path=path)
    assert result["failed"] and result["changed"] is False
    assert result["msg"].startswith("path=%r must be a file directly in /etc/sysctl.d" % path)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_default_and_other_sysctl_d_paths_are_accepted(tmp_path):
    host = make_tree(tmp_path)
    for path in (PATH, "/etc/sysctl.d/99-rdmaops_local.conf"):
        assert SysctlProfile(host, path, NVIDIA).path == path


def test_file_without_our_marker_is_refused_unless_adopted(tmp_path):
    theirs = "# the site's own settings\nnet.core.rmem_max = 1\n"
    host = make_tree(tmp_path, files={PATH: theirs})
    with pytest.raises(RefusedError) as err:
        planned(SysctlProfile(host, PATH, {"net.core.rmem_max": 4194304}, owner="test"))
    assert "adopt" in str(err.value) and PATH in str(err.value)
    result, _warnings = module_run(host, settings={"net.core.rmem_max": 4194304})
    assert result["failed"] and result["changed"] is False and "adopt: true" in result["msg"]
    assert (tmp_path / PATH.lstrip("/")).read_text() == theirs
    assert proc(tmp_path, "net/core/rmem_max") == LIVE_6_18["net/core/rmem_max"]
    # state=absent does not delete it either
    result, _warnings = module_run(host, state="absent")
    assert result["failed"] and (tmp_path / PATH.lstrip("/")).read_text() == theirs

    result, _warnings = module_run(host, settings={"net.core.rmem_max": 4194304}, adopt=True)
    assert not result["failed"] and result["changed"] is True
    assert (tmp_path / PATH.lstrip("/")).read_text().startswith("# Managed by rdmaops.roce (rdmaops.roce.sysctl_profile)")
    # the file is ours now: no adopt needed any more
    result, _warnings = module_run(host, state="absent")
    assert not result["failed"] and result["changes"] == ["remove " + PATH]


def refuse_optmem(monkeypatch):
    real = sysctl.RuntimeKey.write
    monkeypatch.setattr(
        sysctl.RuntimeKey,
        "write",
        lambda self, value: "the kernel rejected the value" if self.key == "net.core.optmem_max" else real(self, value),
    )


def test_refused_write_with_warn_is_reported_not_counted(tmp_path, monkeypatch):
    refuse_optmem(monkeypatch)
    host = make_tree(tmp_path, files={PATH: sysctl.render({"net.core.optmem_max": "4194304"}, "rdmaops.roce.sysctl_profile")})
    result, warnings = module_run(host, settings={"net.core.optmem_max": 4194304}, runtime_errors="warn")
    # the file already holds the profile and the only write was refused: nothing changed
    assert not result["failed"] and result["changed"] is False and result["changes"] == []
    assert result["runtime"] == {}
    assert result["unapplied"]["net.core.optmem_max"]["reason"] == "the kernel rejected the value"
    assert warnings == ["sysctl net.core.optmem_max not applied at runtime (want 4194304, have 131072): the kernel rejected the value"]

    result, warnings = module_run(host, settings=dict(NVIDIA, **{"net.core.rmem_max": 8388608}), runtime_errors="warn")
    assert result["changed"] is True
    assert "set net.core.optmem_max from '131072' to '4194304' at runtime" not in result["changes"]
    assert "set net.ipv4.tcp_rmem from '4096 131072 33554432' to '4096 87380 4194304' at runtime" in result["changes"]
    assert "net.core.optmem_max" not in result["runtime"] and "net.ipv4.tcp_rmem" in result["runtime"]


def test_refused_write_with_fail_puts_everything_back(tmp_path, monkeypatch):
    refuse_optmem(monkeypatch)
    host = make_tree(tmp_path)
    result, _warnings = module_run(host, settings=NVIDIA)
    assert result["failed"] and result["changed"] is False
    assert result["msg"].startswith("the kernel refused these keys: net.core.optmem_max (want 4194304, have 131072)")
    assert result["applied"] == [] and "write " + PATH in result["rolled_back"]
    assert "set net.core.netdev_max_backlog from '1000' to '250000' at runtime" in result["rolled_back"]
    assert "set net.ipv4.tcp_rmem from '4096 131072 33554432' to '4096 87380 4194304' at runtime" in result["not_applied"]
    assert not (tmp_path / PATH.lstrip("/")).exists()
    assert proc(tmp_path, "net/core/netdev_max_backlog") == "1000\n"
