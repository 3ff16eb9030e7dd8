"""The collection's metadata agrees with itself: one version everywhere, the action group as the
modules document it, the execution environment definition naming the release's tarball."""

import ast
import glob
import importlib
import os

import yaml
from ansible.module_utils.compat.version import LooseVersion

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _documentation(path):
    """The DOCUMENTATION of a plugin (.py) or of a filter's sidecar (.yml)."""
    if path.endswith(".yml"):
        return _load(path)["DOCUMENTATION"]
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    return None


def _plugins():
    paths = glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
    paths += glob.glob(os.path.join(REPO, "plugins", "httpapi", "*.py"))
    paths += glob.glob(os.path.join(REPO, "plugins", "lookup", "*.py"))
    paths += glob.glob(os.path.join(REPO, "plugins", "filter", "*.yml"))
    return sorted(p for p in paths if not os.path.basename(p).startswith("_"))


def test_every_plugin_was_added_in_a_release_or_comes_in_the_next():
    releases = sorted((_load("changelogs/changelog.yaml").get("releases") or {}), key=LooseVersion)
    galaxy = str(_load("galaxy.yml")["version"])
    assert releases and LooseVersion(galaxy) >= LooseVersion(releases[-1])
    wrong = {}
    for path in _plugins():
        added = str(_documentation(path)["version_added"])
        # A released version, or one after the last release (the plugin ships in the next one).
        if added not in releases and LooseVersion(added) <= LooseVersion(releases[-1]):
            wrong[os.path.relpath(path, REPO)] = added
    assert not wrong, "version_added that names no release (releases: %s): %s" % (releases, wrong)


def test_the_owned_files_group_is_exactly_the_modules_that_take_adopt():
    group = set(_load("meta/runtime.yml")["action_groups"]["owned_files"])
    documented = set()
    for path in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")):
        if "rdmaops.roce.owned_files" in (_documentation(path).get("extends_documentation_fragment") or []):
            documented.add(os.path.basename(path)[:-3])
    assert group == documented


def test_the_name_before_1_0_0_still_names_the_same_group():
    """group/rdmaops.roce.host (the 0.x name) extends owned_files, so module_defaults written for it work."""
    groups = _load("meta/runtime.yml")["action_groups"]
    assert groups["host"] == [{"metadata": {"extend_group": ["rdmaops.roce.owned_files"]}}]


def test_the_execution_environment_builds_this_release():
    version = _load("galaxy.yml")["version"]
    ee = _load("docs/execution-environment.yml")
    tarball = "rdmaops-roce-%s.tar.gz" % version
    assert [f["src"] for f in ee["additional_build_files"]] == [tarball]
    assert ee["dependencies"]["galaxy"]["collections"] == [{"name": "collections/" + tarball, "type": "file"}]


def test_requires_ansible_is_the_lowest_core_tested():
    pinned = set()
    for name in ("requirements-consumer216.txt", "requirements-core216.txt"):
        with open(os.path.join(REPO, name), encoding="utf-8") as handle:
            pinned |= {line.split("==")[1].strip() for line in handle if line.startswith("ansible-core==")}
    assert len(pinned) == 1, pinned  # the consumer and core216 tiers test the same release
    lowest = ".".join(pinned.pop().split(".")[:2])
    assert _load("meta/runtime.yml")["requires_ansible"] == ">=%s.0" % lowest


def test_each_filter_file_is_named_after_a_filter_it_holds_and_each_filter_has_its_documentation():
    """ansible-doc takes a filter file's name for a plugin of that name: a file named after none of its
    filters is an undocumented filter to a consumer (the consumer tier's ansible-doc fails on it)."""
    for path in sorted(glob.glob(os.path.join(REPO, "plugins", "filter", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name.startswith("_") or name == "__init__":
            continue
        module = importlib.import_module("ansible_collections.rdmaops.roce.plugins.filter." + name)
        filters = sorted(module.FilterModule().filters())
        assert name in filters, "plugins/filter/%s.py holds %s: name the file after one of them" % (name, filters)
        for each in filters:
            sidecar = os.path.join(REPO, "plugins", "filter", each + ".yml")
            assert os.path.exists(sidecar), "filter %s (in %s.py) has no %s.yml" % (each, name, each)
            assert _documentation(sidecar)["name"] == each
