"""What a module imports on the host: only what its run uses, and still everything its run may use in
its AnsiballZ payload (benchmarks/imports.py measures the cost; these tests hold the lines)."""

import ast
import json
import os
import subprocess
import sys

import conftest
from ansible.executor.module_common import ModuleDepFinder

from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import bundle

MU = "ansible_collections.rdmaops.roce.plugins.module_utils"
PLUGINS = os.path.join(conftest.REPO_ROOT, "plugins")


def imported_by(statement):
    """Our module_utils a fresh interpreter has loaded after ``statement``."""
    code = "import json, sys; %s; print(json.dumps(sorted(m[%d:] for m in sys.modules if m.startswith(%r))))" % (
        statement, len(MU) + 1, MU + ".")
    env = dict(os.environ, PYTHONPATH=conftest.COLLECTIONS_ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd="/")
    return set(json.loads(out.stdout))


def test_monitor_collector_loads_neither_the_collector_nor_the_checks_nor_the_nic_engines():
    loaded = imported_by("import ansible_collections.rdmaops.roce.plugins.modules.monitor_collector")
    assert "_monitor.install" in loaded and "_validate.intent" in loaded
    engines = ("_validate.verdict", "_validate.host", "_validate.findings", "_validate.rails", "_validate.inputs",
               "_nic_layer", "_qos.nic_qos", "_qos.ecn", "_qos.tos", "_netconf", "_host.rdma_facts", "_monitor.collector")
    assert not [name for name in loaded if name.startswith(engines)], sorted(loaded)


def test_nic_layer_loads_the_mtu_and_rail_engines_only_for_links_and_rails():
    loaded = imported_by("from ansible_collections.rdmaops.roce.plugins.module_utils._nic_layer import NicLayer")
    assert "_qos.nic_qos" in loaded and "_qos.ecn" in loaded and "_qos.tos" in loaded
    assert not [name for name in loaded if name.startswith(("_netconf.", "_host.rdma_facts", "_intent"))], sorted(loaded)
    # the module's argument spec names the network stacks without loading their engines
    loaded = imported_by("from ansible_collections.rdmaops.roce.plugins.modules import nic_layer; nic_layer.argument_spec()")
    assert "_netconf.stacks" in loaded
    assert not [name for name in loaded if name.startswith(("_netconf.backends", "_netconf.formats", "_netconf.mtu", "_netconf.rails"))], sorted(loaded)


def test_tuning_layer_loads_the_facts_and_gpudirect_readers_only_when_asked():
    loaded = imported_by("import ansible_collections.rdmaops.roce.plugins.modules.tuning_layer")
    assert "_tuning.sysctl" in loaded and "_tuning.ethtool" in loaded
    assert "_host.rdma_facts" not in loaded and "_host.gpudirect" not in loaded


def test_the_collector_script_carries_no_mtu_engine():
    """The collector reads the QoS state through nic_layer with no link to set: the MTU engines, which
    nic_layer imports where a link is asked for, are not in the script."""
    modules = bundle.closure()
    assert "%s._nic_layer" % MU in modules
    assert not [name for name in modules if name.startswith(MU + "._netconf")]


def _function_level_imports(tree):
    """The collection's module_utils imported inside a function or class of ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith(MU):
                    found.extend((inner.module, alias.name) for alias in inner.names)
    return found


def test_every_import_inside_a_function_is_still_shipped_in_the_payload():
    """AnsiballZ's builder ships what ansible's ModuleDepFinder finds; an import made lazy must still be
    found (inside functions too), or the module fails on the host when the run reaches it."""
    lazy = 0
    for directory, _dirs, files in os.walk(os.path.join(PLUGINS, "module_utils")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, PLUGINS)[:-3].replace(os.sep, ".")
            fqn = "ansible_collections.rdmaops.roce.plugins." + (rel[:-len(".__init__")] if rel.endswith(".__init__") else rel)
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            found = ModuleDepFinder(fqn, tree, name == "__init__.py").submodules
            for module, alias in _function_level_imports(tree):
                lazy += 1
                assert tuple(module.split(".")) + (alias,) in found, (path, module, alias)
    assert lazy >= 6  # nic_layer's MTU and rail engines, tuning_layer's readers, monitor_collector's payload line


def test_the_preflights_os_facts_load_four_of_ansibles_fact_collectors_not_all():
    # ansible.module_utils.facts' __init__ imports every collector of ansible-core (hardware, network,
    # virtual ...): the preflight's run would compile them all from its payload for four
    code = ("import json, sys; from ansible_collections.rdmaops.roce.plugins.module_utils._host import os_facts; "
            "from ansible.module_utils.basic import AnsibleModule; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ansible.module_utils.facts'))))")
    env = dict(os.environ, PYTHONPATH=conftest.COLLECTIONS_ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd="/")
    loaded = json.loads(out.stdout)
    assert "ansible.module_utils.facts.system.distribution" in loaded and "ansible.module_utils.facts.system.env" in loaded
    assert not [name for name in loaded if name.startswith(("ansible.module_utils.facts.hardware", "ansible.module_utils.facts.network",
                                                            "ansible.module_utils.facts.virtual"))], loaded
    assert "ansible.module_utils.facts.default_collectors" not in loaded and "ansible.module_utils.facts.compat" not in loaded


def test_the_preflights_os_facts_are_the_same_with_ansibles_whole_facts_package():
    def gathered(first):
        code = ("import json; %s; from ansible_collections.rdmaops.roce.plugins.module_utils._host import os_facts\n"
                "class Module:\n    params = {}\n    def get_bin_path(self, *a, **k): return None\n"
                "    def run_command(self, *a, **k): return 1, '', ''\n"
                "facts = os_facts.gather(Module()); facts.pop('ansible_env'); print(json.dumps(facts, sort_keys=True))" % first)
        env = dict(os.environ, PYTHONPATH=conftest.COLLECTIONS_ROOT)
        return json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                                         cwd="/").stdout)

    ours = gathered("pass")
    assert ours["ansible_distribution"] and ours["ansible_python"]["executable"] == sys.executable
    assert ours == gathered("import ansible.module_utils.facts")
