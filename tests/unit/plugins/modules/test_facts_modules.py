"""rdma_facts and gpudirect_facts main(): an argument spec and one run_facts call."""

import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

import hosttree
from fixtures.hosts import cx7_doca

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.modules import gpudirect_facts, rdma_facts


def call(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def cx7_env(tmp_path, monkeypatch):
    bindir = hosttree.materialize(cx7_doca.manifest(), tmp_path)
    monkeypatch.setenv("RDMAOPS_HOST_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", bindir)
    return tmp_path


def test_rdma_facts_main(cx7_env, capsys):
    result = call(rdma_facts, {"gpu_topology": False}, capsys)
    assert result["changed"] is False and "failed" not in result
    assert sorted(result["ansible_facts"]["rdma"]["devices"]) == ["mlx5_0", "mlx5_1"]
    assert "gpus" not in result["ansible_facts"]["rdma"]


def test_gpudirect_facts_main(cx7_env, capsys):
    result = call(gpudirect_facts, {"use_lspci": False}, capsys)
    facts = result["ansible_facts"]["gpudirect"]
    assert result["changed"] is False and facts["applicable"] is True
    assert facts["acs"]["status"] == "unknown"


def test_an_error_of_the_family_becomes_a_failed_result(cx7_env, capsys, monkeypatch):
    def broken(ctx, params):
        ctx.warn("partial read of %s" % cx7_env)
        raise RdmaopsError("cannot read https://u:pw@mirror/x", path="/sys/class/infiniband")

    monkeypatch.setattr(rdma_facts, "gather", broken)
    # where the warning ends up depends on ansible-core (result key, or the display once the
    # process has loaded controller code): record what reaches AnsibleModule.warn instead
    seen = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning, **kwargs: seen.append(warning))
    result = call(rdma_facts, {}, capsys)
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"] == "cannot read https://********@mirror/x"
    assert result["path"] == "/sys/class/infiniband"
    assert seen == ["partial read of %s" % cx7_env]
