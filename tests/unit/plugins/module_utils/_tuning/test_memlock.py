"""The memlock engine against a host tree: both files written once with our marker, a repeat run
plans nothing, check mode writes nothing, foreign files refused unless adopted, bad input named
before anything is read. (systemd's running value and daemon-reexec run for real in the molecule
tuning scenario: a test tree is never the live host.)"""

import os

import pytest

import hosttree
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.memlock import MemlockEngine

LIMITS = "/etc/security/limits.d/90-rdmaops-roce-memlock.conf"
DROPIN = "/etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf"
DEFAULTS = dict(limit="unlimited", domains=["*", "root"], limits_file=LIMITS, systemd_dropin=DROPIN, adopt=False)

# What the role's templates wrote before this module (hosts converged by an earlier release).
TEMPLATE_LIMITS = (
    "# Managed by rdmaops.roce (role tuning). Changes here are overwritten on the next run.\n"
    "# RDMA registers (pins) its buffers; verbs applications fail with \"Cannot allocate memory\"\n"
    "# under the default locked-memory limit. The wildcard does not cover root, so root is listed.\n"
    "*                soft    memlock    unlimited\n"
    "*                hard    memlock    unlimited\n"
    "root             soft    memlock    unlimited\n"
    "root             hard    memlock    unlimited\n"
)
TEMPLATE_DROPIN = (
    "# Managed by rdmaops.roce (role tuning). Changes here are overwritten on the next run.\n"
    "# Services (including those that run RDMA jobs) get this locked-memory limit unless their unit sets LimitMEMLOCK.\n"
    "[Manager]\n"
    "DefaultLimitMEMLOCK=infinity\n"
)


def run(root, check_mode=False, **params):
    module = hosttree.ReplayModule({}, str(root))
    module.check_mode = check_mode
    module._diff = True
    ctx = Context(module, host=HostRoot(str(root)), runner=CommandRunner(module))
    result, _plan = execute(MemlockEngine(ctx, dict(DEFAULTS, **params)))
    return result


def read(root, path):
    with open(os.path.join(str(root), path.lstrip("/"))) as handle:
        return handle.read()


def write(root, path, text):
    real = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, "w") as handle:
        handle.write(text)


def test_first_run_writes_what_the_role_templates_wrote_and_a_repeat_changes_nothing(tmp_path):
    result = run(tmp_path)
    assert result["changed"] and result["changes"] == ["write %s" % LIMITS, "write %s" % DROPIN]
    assert read(tmp_path, LIMITS) == TEMPLATE_LIMITS and read(tmp_path, DROPIN) == TEMPLATE_DROPIN
    assert result["systemd"] == {"before": None, "after": None}  # not the live host
    assert run(tmp_path)["changed"] is False


def test_a_host_converged_by_the_templates_is_left_alone(tmp_path):
    write(tmp_path, LIMITS, TEMPLATE_LIMITS)
    write(tmp_path, DROPIN, TEMPLATE_DROPIN)
    assert run(tmp_path)["changed"] is False


def test_check_mode_predicts_and_writes_nothing(tmp_path):
    result = run(tmp_path, check_mode=True, limit="67108864", domains=["@rdma"])
    assert result["changed"] and not os.path.exists(os.path.join(str(tmp_path), "etc"))
    after = "".join(entry["after"] for entry in result["diff"] if entry.get("after_header") == DROPIN)
    assert "DefaultLimitMEMLOCK=67108864K\n" in after


def test_a_size_in_kib(tmp_path):
    run(tmp_path, limit="67108864", domains=["@rdma"])
    assert "@rdma            hard    memlock    67108864\n" in read(tmp_path, LIMITS)
    assert read(tmp_path, DROPIN).endswith("DefaultLimitMEMLOCK=67108864K\n")


def test_a_foreign_file_is_refused_unless_adopted(tmp_path):
    write(tmp_path, LIMITS, "* hard memlock 1024\n")
    with pytest.raises(RefusedError):
        run(tmp_path)
    assert read(tmp_path, LIMITS) == "* hard memlock 1024\n"
    run(tmp_path, adopt=True)
    assert read(tmp_path, LIMITS) == TEMPLATE_LIMITS


@pytest.mark.parametrize("params, option", [
    (dict(limit="0"), "limit"),
    (dict(limit="unlimited\n"), "limit"),
    (dict(limit="64G"), "limit"),
    (dict(domains=[]), "domains"),
    (dict(domains=["bad user"]), "domains"),
    (dict(limits_file="limits.conf"), "limits_file"),
    (dict(systemd_dropin="/etc/systemd/../x.conf"), "systemd_dropin"),
])
def test_bad_input_is_named_before_anything_is_touched(tmp_path, params, option):
    with pytest.raises(InputError) as err:
        run(tmp_path, **params)
    assert err.value.details.get("option") == option
    assert not os.path.exists(os.path.join(str(tmp_path), "etc"))
