"""The new core: plans that roll back or tell what stayed applied, the engine runner, files, validators."""

import os
import stat

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, Engine, run_facts, run_module
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import (
    InputError,
    RdmaopsError,
    RefusedError,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import (
    udev_rules_path,
    unit_name,
    valid_unit_name,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import (
    DISRUPTION_CLASSES,
    ApplyError,
    Plan,
    highest_disruption,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._core.redact import MASK
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import (
    absolute_path,
    file_name,
    full_match,
    not_option_like,
    require,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._host.names import check_ifname

OURS = "# Managed by rdmaops.roce\noptions mlx5_core x=1\n"
FOREIGN = "# written by the site admin\noptions mlx5_core x=0\n"


# -- a fake AnsibleModule ----------------------------------------------------------------------
class Exit(Exception):
    def __init__(self, kind, result):
        super(Exit, self).__init__(kind)
        self.kind = kind
        self.result = result


class FakeModule:
    """What run_module uses: params, modes, warn, exit_json/fail_json (which end the module), tools."""

    def __init__(self, params=None, check_mode=False, diff=False, answers=None):
        self.params = params or {}
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []
        self.answers = answers or {}

    def warn(self, message):
        self.warnings.append(message)

    def exit_json(self, **result):
        raise Exit("exit", result)

    def fail_json(self, **result):
        raise Exit("fail", result)

    def get_bin_path(self, tool):
        return "/usr/sbin/" + tool if tool in self.answers else None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=True):
        return self.answers[os.path.basename(argv[0])]


def run(engine_class, tmp_path, **module_kwargs):
    module = FakeModule(**module_kwargs)
    with pytest.raises(Exit) as info:
        run_module(module, engine_class, Context(module, host=HostRoot(str(tmp_path))))
    return info.value.kind, info.value.result, module


# -- a small engine: one owned file, one runtime value (with undo), optional extra steps ----------
class Box:
    """A runtime value that can be set (like an MTU)."""

    def __init__(self, value):
        self.value = value
        self.sets = []

    def set(self, value):
        self.sets.append(value)
        self.value = value


STATE = {}


class FileAndValue(Engine):
    """Writes /etc/modprobe.d/x.conf and sets a runtime value; ``params`` choose how it fails."""

    def validate(self):
        if self.params.get("bad"):
            raise InputError("value=%r is not a number: give an integer" % self.params["bad"], option="value")
        STATE["validated"] = True

    def read(self):
        STATE["read"] = True
        self.box = STATE["box"]
        self.before = self.box.value

    def plan(self, plan):
        plan.file(self.host, "/etc/modprobe.d/x.conf", self.params.get("text", OURS.replace("x=1", "x=2")),
                  adopt=self.params.get("adopt", False), option="path")
        before = self.box.value
        plan.add("value", before, self.params.get("value", 9000), lambda: self.box.set(self.params.get("value", 9000)),
                 "set value %s" % self.params.get("value", 9000),
                 undo=(lambda: self.box.set(before)) if not self.params.get("no_undo") else None,
                 disruption=self.params.get("value_class", "online"))
        if self.params.get("fail_change"):
            plan.add("later", 0, 1, self._fail, "a later change")
        if self.params.get("fail_step") is not None:
            plan.then("activate", self._fail, validates=self.params["fail_step"])
        if self.params.get("step_class"):
            plan.then("restart the driver", lambda: None, disruption=self.params["step_class"])

    def _fail(self):
        raise RdmaopsError("activation failed for https://user:tok3n@repo.example/x", hint="see the log")

    def verify(self):
        return self.params.get("problems", [])

    def result(self):
        return dict(before=self.before, after=self.box.value)


@pytest.fixture
def tree(tmp_path):
    STATE.clear()
    STATE["box"] = Box(1500)
    (tmp_path / "etc/modprobe.d").mkdir(parents=True)
    (tmp_path / "etc/modprobe.d/x.conf").write_text(OURS)
    return tmp_path


def conf(tree):
    return (tree / "etc/modprobe.d/x.conf").read_text()


# -- Plan.apply: roll back, or tell what stayed applied -------------------------------------------
def test_a_failing_later_change_rolls_back_file_and_runtime_changes(tree):
    host = HostRoot(str(tree))
    box = Box(1500)
    plan = Plan()
    plan.file(host, "/etc/modprobe.d/x.conf", "# Managed by rdmaops.roce\nnew\n")
    plan.add("mtu", 1500, 9000, lambda: box.set(9000), "set mtu 9000", undo=lambda: box.set(1500))

    plan.add("later", 0, 1, lambda: (item for item in ()).throw(RdmaopsError("later failed", rc=2)), "later change")
    with pytest.raises(ApplyError) as info:
        plan.apply()
    exc = info.value
    assert exc.applied == []
    assert exc.details["rolled_back"] == ["set mtu 9000", "update /etc/modprobe.d/x.conf"]  # newest first
    assert exc.details["not_applied"] == ["later change"]
    assert exc.details["rc"] == 2 and exc.msg == "later failed"
    assert conf(tree) == OURS and box.value == 1500 and box.sets == [9000, 1500]


def test_a_failing_validating_step_rolls_back_and_a_plain_one_does_not(tree):
    host = HostRoot(str(tree))
    for validates, left in ((True, OURS), (False, "# Managed by rdmaops.roce\nnew\n")):
        (tree / "etc/modprobe.d/x.conf").write_text(OURS)
        plan = Plan()
        plan.file(host, "/etc/modprobe.d/x.conf", "# Managed by rdmaops.roce\nnew\n")
        plan.then("netplan generate", lambda: (item for item in ()).throw(OSError(5, "EIO")), validates=validates)
        with pytest.raises(ApplyError) as info:
            plan.apply()
        assert conf(tree) == left
        if validates:
            assert info.value.applied == [] and info.value.details["rolled_back"] == ["update /etc/modprobe.d/x.conf"]
        else:
            assert info.value.applied == ["update /etc/modprobe.d/x.conf"] and info.value.details["rolled_back"] == []


def refused_plan(host, mtu, ring):
    plan = Plan()
    plan.add("mtu", 1500, 9000, lambda: plan.refuse("mtu"), "set mtu 9000", undo=lambda: mtu.set(1500))
    plan.add("ring", 512, 256, lambda: ring.set(256), "set ring 256", undo=lambda: ring.set(512))
    # Rendered when applied: only the refused change would have altered the file, so it is not written.
    plan.file(host, "/etc/modprobe.d/x.conf", OURS + "mtu 9000\n", render=lambda: OURS, key="rules")
    return plan


def test_a_change_the_host_refused_counts_as_no_change(tree):
    mtu, ring = Box(1500), Box(512)
    plan = refused_plan(HostRoot(str(tree)), mtu, ring)
    assert len(plan.descriptions()) == 3  # planned: all three
    assert plan.apply() == ["set ring 256"]
    assert plan.changed and plan.descriptions() == ["set ring 256"]
    assert plan.diff() == [dict(before={"ring": 512}, after={"ring": 256})]
    assert conf(tree) == OURS and mtu.sets == [] and ring.value == 256


def test_a_change_the_host_refused_is_never_undone(tree):
    mtu, ring = Box(1500), Box(512)
    plan = refused_plan(HostRoot(str(tree)), mtu, ring)
    plan.add("later", 0, 1, lambda: (item for item in ()).throw(RdmaopsError("no")), "later")
    with pytest.raises(ApplyError) as info:
        plan.apply()
    # Only the change that took is rolled back: undoing the refused MTU would set a value nobody changed.
    assert info.value.details["rolled_back"] == ["set ring 256"]
    assert info.value.applied == [] and info.value.details["not_applied"] == ["later"]
    assert mtu.sets == [] and ring.sets == [256, 512] and conf(tree) == OURS


def test_a_new_file_is_removed_again_on_rollback(tree):
    host = HostRoot(str(tree))
    plan = Plan()
    plan.file(host, "/etc/modules-load.d/new.conf", "# Managed by rdmaops.roce\nrdma_cm\n")
    plan.add("later", 0, 1, lambda: (item for item in ()).throw(RdmaopsError("no")), "later")
    with pytest.raises(ApplyError):
        plan.apply()
    assert not (tree / "etc/modules-load.d/new.conf").exists()


def test_rollback_of_a_file_through_a_link_keeps_the_link(tree):
    real = tree / "etc/modprobe.d/real.conf"
    real.write_text(OURS)
    (tree / "etc/modprobe.d/x.conf").unlink()
    os.symlink("real.conf", str(tree / "etc/modprobe.d/x.conf"))
    plan = Plan()
    plan.file(HostRoot(str(tree)), "/etc/modprobe.d/x.conf", "# Managed by rdmaops.roce\nnew\n")
    plan.add("later", 0, 1, lambda: (item for item in ()).throw(RdmaopsError("no")), "later")
    with pytest.raises(ApplyError):
        plan.apply()
    assert os.path.islink(str(tree / "etc/modprobe.d/x.conf")) and real.read_text() == OURS


def test_rollback_of_a_removed_symlink_puts_the_link_back(tree):
    real = tree / "etc/modprobe.d/real.conf"
    real.write_text(OURS)
    (tree / "etc/modprobe.d/x.conf").unlink()
    os.symlink("real.conf", str(tree / "etc/modprobe.d/x.conf"))
    plan = Plan()
    plan.file(HostRoot(str(tree)), "/etc/modprobe.d/x.conf", None)
    plan.add("later", 0, 1, lambda: (item for item in ()).throw(RdmaopsError("no")), "later")
    with pytest.raises(ApplyError) as info:
        plan.apply()
    assert info.value.details["rolled_back"] == ["remove /etc/modprobe.d/x.conf"]
    # it used to come back as a regular copy of real.conf, no longer a link
    assert os.readlink(str(tree / "etc/modprobe.d/x.conf")) == "real.conf"
    assert real.read_text() == OURS


def test_rollback_of_a_write_through_a_dangling_link_keeps_the_link(tree):
    (tree / "etc/modprobe.d/x.conf").unlink()
    os.symlink("real.conf", str(tree / "etc/modprobe.d/x.conf"))  # real.conf does not exist yet
    plan = Plan()
    plan.file(HostRoot(str(tree)), "/etc/modprobe.d/x.conf", OURS)
    plan.add("later", 0, 1, lambda: (item for item in ()).throw(RdmaopsError("no")), "later")
    with pytest.raises(ApplyError):
        plan.apply()
    # it used to remove the link and leave the file it had written behind
    assert os.readlink(str(tree / "etc/modprobe.d/x.conf")) == "real.conf"
    assert not (tree / "etc/modprobe.d/real.conf").exists()


def test_run_module_reports_rollback_as_failed_and_unchanged(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(fail_change=True))
    assert kind == "fail"
    assert result["changed"] is False
    assert result["applied"] == [] and result["not_applied"] == ["a later change"]
    assert result["rolled_back"] == ["set value 9000", "update /etc/modprobe.d/x.conf"]
    assert conf(tree) == OURS and STATE["box"].value == 1500
    assert result["hint"] == "see the log"
    assert result["before"] == 1500 and result["after"] == 1500  # result() is called on failure too


def test_a_change_without_undo_stays_applied_and_says_so(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(fail_change=True, no_undo=True))
    assert kind == "fail"
    assert result["changed"] is True
    assert result["applied"] == ["set value 9000"]
    assert result["rolled_back"] == ["update /etc/modprobe.d/x.conf"]
    assert result["not_applied"] == ["a later change"]
    assert STATE["box"].value == 9000 and conf(tree) == OURS


def test_a_failing_verify_reports_what_was_applied(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(problems=["value reads 1500, not 9000"]))
    assert kind == "fail" and result["changed"] is True
    assert result["msg"] == "after applying, the host does not report what was asked: value reads 1500, not 9000"
    assert result["applied"] == ["update /etc/modprobe.d/x.conf", "set value 9000"]


# -- run_module -------------------------------------------------------------------------------
def test_check_mode_runs_no_action_and_reports_the_changes(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(fail_change=True, fail_step=True), check_mode=True, diff=True)
    assert kind == "exit"
    assert result["changed"] is True
    assert result["changes"] == ["update /etc/modprobe.d/x.conf", "set value 9000", "a later change"]
    assert result["steps"] == ["activate"]
    assert STATE["box"].sets == [] and conf(tree) == OURS
    assert result["diff"][0] == {"before": {"value": 1500, "later": 0}, "after": {"value": 9000, "later": 1}}
    assert result["diff"][1]["before_header"] == "/etc/modprobe.d/x.conf"
    assert result["commands"] == []


def test_apply_and_nothing_to_do_the_second_time(tree):
    kind, result, _module = run(FileAndValue, tree)
    assert (kind, result["changed"], result["after"]) == ("exit", True, 9000)
    assert conf(tree) == OURS.replace("x=1", "x=2")
    STATE["box"] = Box(9000)
    kind, result, _module = run(FileAndValue, tree)
    assert (kind, result["changed"], result["changes"]) == ("exit", False, [])
    assert "steps" not in result


def test_input_error_comes_before_anything_is_read(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(bad="jumbo"))
    assert kind == "fail"
    assert result["msg"] == "value='jumbo' is not a number: give an integer"
    assert result["option"] == "value" and result["changed"] is False
    assert "read" not in STATE and "validated" not in STATE
    assert conf(tree) == OURS


def test_a_foreign_file_is_refused_before_anything_changes_unless_adopted(tree):
    (tree / "etc/modprobe.d/x.conf").write_text(FOREIGN)
    kind, result, _module = run(FileAndValue, tree)
    assert kind == "fail" and result["changed"] is False
    assert "/etc/modprobe.d/x.conf exists and was not written by rdmaops.roce" in result["msg"]
    assert "adopt: true" in result["msg"] and "name another file in path" in result["msg"]
    assert STATE["box"].sets == [] and conf(tree) == FOREIGN
    kind, result, _module = run(FileAndValue, tree, params=dict(adopt=True))
    assert kind == "exit" and result["changed"] is True
    assert conf(tree) == OURS.replace("x=1", "x=2")


class Chatty(Engine):
    def read(self):
        token = self.ctx.secret("s3cr3t-token")
        self.ctx.warn("repository https://ops:%s@repo.example/doca is slow" % token)
        self.ctx.warn("repository https://ops:%s@repo.example/doca is slow" % token)  # once only
        self.runner.run(["true"])
        self.url = "https://u:tok@h/"

    def plan(self, plan):
        plan.add("url", None, self.url, lambda: None, "set repository %s" % self.url)

    def verify(self):
        return []

    def result(self):
        return dict(url=self.url, token="s3cr3t-token", nested=[{"u": "see https://u:tok@h/ now"}])


class ChattyFailing(Chatty):
    def plan(self, plan):
        raise RdmaopsError("cannot reach https://u:tok@h/ with s3cr3t-token", url="https://u:tok@h/")


def test_warnings_reach_module_warn_and_secrets_are_redacted_everywhere(tree):
    kind, result, module = run(Chatty, tree, answers={"true": (0, "", "")})
    assert kind == "exit"
    assert module.warnings == ["repository https://%s@repo.example/doca is slow" % MASK]
    assert result["url"] == "https://%s@h/" % MASK
    assert result["token"] == MASK
    assert result["nested"] == [{"u": "see https://%s@h/ now" % MASK}]
    assert result["changes"] == ["set repository https://%s@h/" % MASK]
    assert result["commands"] == ["true"]
    assert ":tok@" not in repr(result) and "s3cr3t" not in repr(result)


def test_secrets_are_redacted_in_failures(tree):
    kind, result, module = run(ChattyFailing, tree, answers={"true": (0, "", "")})
    assert kind == "fail"
    assert result["msg"] == "cannot reach https://%s@h/ with %s" % (MASK, MASK)
    assert result["url"] == "https://%s@h/" % MASK
    assert module.warnings == ["repository https://%s@repo.example/doca is slow" % MASK]
    assert "tok@" not in repr(result) and "s3cr3t" not in repr(result)


def test_commands_key_none_reports_no_commands(tree):
    class Quiet(Chatty):
        commands_key = None

    kind, result, _module = run(Quiet, tree, answers={"true": (0, "", "")})
    assert kind == "exit" and "commands" not in result


def test_run_facts_success_and_failure(tree):
    module = FakeModule()

    def gather(ctx, params):
        ctx.warn("w https://a:b@c/")
        return dict(ansible_facts=dict(x=1))

    with pytest.raises(Exit) as info:
        run_facts(module, gather, Context(module, host=HostRoot(str(tree))))
    assert info.value.result == {"ansible_facts": {"x": 1}, "changed": False}
    assert module.warnings == ["w https://%s@c/" % MASK]

    def broken(ctx, params):
        raise RefusedError("no https://a:b@c/", path="/x")

    with pytest.raises(Exit) as info:
        run_facts(module, broken, Context(module, host=HostRoot(str(tree))))
    assert info.value.kind == "fail"
    assert info.value.result == {"msg": "no https://%s@c/" % MASK, "path": "/x", "changed": False}


# -- files -------------------------------------------------------------------------------------
def test_write_through_a_symlink_keeps_the_link_and_writes_the_target(tmp_path):
    host = HostRoot(str(tmp_path))
    (tmp_path / "etc/netplan").mkdir(parents=True)
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv/50-fabric.yaml").write_text("old\n")
    os.symlink("../../srv/50-fabric.yaml", str(tmp_path / "etc/netplan/50-fabric.yaml"))
    assert files.write_atomic(host, "/etc/netplan/50-fabric.yaml", "new\n") is True
    assert os.path.islink(str(tmp_path / "etc/netplan/50-fabric.yaml"))
    assert (tmp_path / "srv/50-fabric.yaml").read_text() == "new\n"
    assert sorted(os.listdir(str(tmp_path / "etc/netplan"))) == ["50-fabric.yaml"]


def test_a_link_out_of_the_host_root_is_refused(tmp_path):
    host = HostRoot(str(tmp_path / "root"))
    (tmp_path / "root/etc").mkdir(parents=True)
    (tmp_path / "outside.conf").write_text("x\n")
    os.symlink(str(tmp_path / "outside.conf"), str(tmp_path / "root/etc/a.conf"))
    with pytest.raises(RdmaopsError):
        files.write_atomic(host, "/etc/a.conf", "y\n")
    assert (tmp_path / "outside.conf").read_text() == "x\n"


def test_non_utf8_bytes_survive_read_text_then_write_atomic(tmp_path):
    host = HostRoot(str(tmp_path))
    raw = b"# caf\xe9 (latin-1)\nkey = \xff\xfe\n"
    (tmp_path / "a.conf").write_bytes(raw)
    text = files.read_text(host, "/a.conf")
    assert files.encode(text) == raw
    files.write_atomic(host, "/a.conf", text + "more = 1\n")
    assert (tmp_path / "a.conf").read_bytes() == raw + b"more = 1\n"
    assert files.for_display(text) == "# caf\ufffd (latin-1)\nkey = \ufffd\ufffd\n"


def test_owner_and_mode_are_kept(tmp_path):
    host = HostRoot(str(tmp_path))
    target = tmp_path / "a.conf"
    target.write_text("old\n")
    os.chmod(str(target), 0o640)
    if os.geteuid() == 0:
        os.chown(str(target), 4321, 4322)
    files.write_atomic(host, "/a.conf", "new\n", mode=0o644)
    info = target.stat()
    assert stat.S_IMODE(info.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (info.st_uid, info.st_gid) == (4321, 4322)


def test_check_owned(tmp_path):
    host = HostRoot(str(tmp_path))
    files.check_owned(host, "/absent.conf")
    (tmp_path / "ours.conf").write_text(OURS)
    files.check_owned(host, "/ours.conf")
    (tmp_path / "block.conf").write_text("x\n# BEGIN rdmaops.roce tuning\ny\n# END rdmaops.roce tuning\n")
    files.check_owned(host, "/block.conf")
    (tmp_path / "foreign.conf").write_text(FOREIGN)
    with pytest.raises(RefusedError) as info:
        files.check_owned(host, "/foreign.conf", option="unit")
    assert info.value.details == {"path": "/foreign.conf"}
    assert "name another file in unit" in info.value.msg
    files.check_owned(host, "/foreign.conf", adopt=True)
    with pytest.raises(RefusedError):
        Plan().file(host, "/foreign.conf", None)  # removing is refused too
    assert (tmp_path / "foreign.conf").read_text() == FOREIGN


@pytest.mark.parametrize("path", ["/etc/../etc/passwd", "/etc/modprobe.d/..", "/../x", "/etc/x\x00"])
def test_host_paths_with_dotdot_are_refused(tmp_path, path):
    host = HostRoot(str(tmp_path))
    for call in (lambda: files.read_text(host, path), lambda: files.write_atomic(host, path, "x\n"),
                 lambda: files.remove(host, path), lambda: files.check_owned(host, path)):
        with pytest.raises(InputError):
            call()


# -- validators ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "check",
    [
        lambda v: require("key", v, r"[a-z0-9_.]+", "a sysctl key"),
        lambda v: require("key", v, __import__("re").compile(r"[a-z0-9_.]+"), "a sysctl key"),
        lambda v: file_name("name", v),
        lambda v: file_name("name", v, suffix=".conf"),
        lambda v: absolute_path("path", "/etc/" + v),
        lambda v: check_ifname("interface", v),
        lambda v: unit_name("unit", v.replace(".conf", ".service")),
        lambda v: udev_rules_path(v.replace(".conf", ".rules")),
    ],
)
def test_a_trailing_newline_is_refused_by_every_validator(check):
    check("x.conf")  # the same value without the newline is fine
    with pytest.raises(InputError):
        check("x.conf\n")


def test_full_match_and_unit_names():
    assert full_match(r"[a-z]+", "abc") and not full_match(r"[a-z]+", "abc\n") and not full_match(r"[a-z]+", None)
    assert valid_unit_name("rdmaops-acs.service")
    for bad in ("rdmaops-acs.service\n", "a\nb.service", "-r.service", ".service", "x/y.service", "x.service "):
        assert not valid_unit_name(bad), bad


@pytest.mark.parametrize("value", ["-r", "--help", "-"])
def test_option_like_values_are_refused(value):
    with pytest.raises(InputError, match="starts with '-'"):
        not_option_like("name", value)
    with pytest.raises(InputError):
        file_name("name", value)
    assert not_option_like("name", "mlx5_core") == "mlx5_core"


@pytest.mark.parametrize("value", ["../x.conf", "..", ".", "a/b.conf", ".hidden.conf"])
def test_file_options_with_dotdot_or_directories_are_refused(value):
    with pytest.raises(InputError):
        file_name("name", value)


@pytest.mark.parametrize("value", ["/etc/modprobe.d/../x.conf", "/etc/modprobe.d/..", "/etc/modprobe.d/./x.conf",
                                   "etc/x.conf", "/etc/modprobe.d/", "/etc/x.conf"])
def test_path_options_with_dotdot_or_outside_their_directory_are_refused(value):
    with pytest.raises(InputError):
        absolute_path("path", value, under="/etc/modprobe.d")
    assert absolute_path("path", "/etc/modprobe.d/x.conf", under="/etc/modprobe.d") == "/etc/modprobe.d/x.conf"


# -- disruption classes and max_disruption ------------------------------------------------------
def test_disruption_is_the_highest_class_of_the_changes_in_check_mode(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(value_class="link_reset"), check_mode=True)
    assert kind == "exit"
    assert result["changed"] is True
    assert result["disruption"] == "link_reset"
    assert result["disruptive_changes"] == ["link_reset: set value 9000"]
    assert STATE["box"].sets == [] and conf(tree) == OURS


def test_a_step_counts_only_when_there_are_changes(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(value=1500, text=OURS, step_class="driver_restart"),
                                check_mode=True)
    assert (kind, result["changed"], result["disruption"], result["disruptive_changes"]) == ("exit", False, "none", [])
    kind, result, _module = run(FileAndValue, tree, params=dict(step_class="driver_restart"), check_mode=True)
    assert result["disruption"] == "driver_restart"
    assert result["disruptive_changes"] == ["driver_restart: restart the driver"]


def test_max_disruption_holds_a_more_disruptive_plan_back_whole(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(value_class="link_reset", max_disruption="online"))
    assert kind == "exit"
    # all or nothing: not even the file (an online change) is written
    assert conf(tree) == OURS and STATE["box"].sets == []
    assert result["changed"] is False and result["changes"] == []
    assert result["held_back"] is True
    assert result["disruption"] == "link_reset"
    assert result["pending"] == ["update /etc/modprobe.d/x.conf", "set value 9000"]


def test_max_disruption_at_or_above_the_plan_applies_it(tree):
    for limit in ("link_reset", "reboot"):
        STATE["box"] = Box(1500)
        (tree / "etc/modprobe.d/x.conf").write_text(OURS)
        kind, result, _module = run(FileAndValue, tree, params=dict(value_class="link_reset", max_disruption=limit))
        assert kind == "exit" and result["changed"] is True and "held_back" not in result
        assert STATE["box"].value == 9000


def test_max_disruption_online_applies_an_online_plan_in_place(tree):
    kind, result, _module = run(FileAndValue, tree, params=dict(max_disruption="online"))
    assert kind == "exit" and result["changed"] is True and result["disruption"] == "online"
    assert STATE["box"].value == 9000 and "held_back" not in result


def test_an_unknown_class_is_a_programming_error():
    with pytest.raises(ValueError):
        Plan().add("x", 0, 1, lambda: None, "x", disruption="sometimes")
    assert highest_disruption([]) == "none"
    assert highest_disruption(["online", "reboot", "link_reset"]) == "reboot"
    assert list(DISRUPTION_CLASSES) == ["none", "online", "link_reset", "driver_restart", "reboot"]
