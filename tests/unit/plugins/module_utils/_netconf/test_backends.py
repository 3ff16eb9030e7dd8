"""One backend per network stack: every stack the modules' ``backend`` option names is one class with
the whole protocol (detect, the MTU, the rails), and the engines that decide what a link needs name
no stack (how a stack writes it is the backend's). The behaviour of each backend is tested through
the engines in test_link_mtu.py, test_rail_links.py and test_hostile_names.py."""

import ast
import inspect

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._netconf import backends, mtu, rails, stacks

PROTOCOL = ("find", "plan_mtu", "read_mtu", "plan_rails", "read_rails")


def test_every_stack_the_option_names_has_one_backend():
    assert sorted(backends.CLASSES) == sorted(stacks.BACKENDS)
    assert [cls.name for cls in backends.CLASSES.values()] == list(backends.CLASSES)


@pytest.mark.parametrize("name", stacks.BACKENDS)
def test_each_backend_implements_the_whole_protocol(name):
    cls = backends.CLASSES[name]
    missing = [method for method in PROTOCOL if getattr(cls, method) is getattr(backends.Backend, method)]
    assert not missing, "%s does not implement %s" % (cls.__name__, ", ".join(missing))


@pytest.mark.parametrize("module", [mtu, rails], ids=["mtu", "rails"])
def test_the_engines_name_no_stack(module):
    tree = ast.parse(inspect.getsource(module))
    names = set()
    strings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
    classes = set(cls.__name__ for cls in backends.CLASSES.values())
    assert not names & classes, sorted(names & classes)
    assert not strings & set(stacks.BACKENDS), sorted(strings & set(stacks.BACKENDS))
