"""docs/architecture.md names what the tree has: every module_utils package and module, every
plugin, role and playbook, and exactly the import arrows between the packages that the code has
(its mermaid import graph), each sideways arrow explained in its table."""

import ast
import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
UTILS = os.path.join(REPO, "plugins", "module_utils")
PAGE = os.path.join(REPO, "docs", "architecture.md")
# The layers every engine package may import downwards without an explanation.
BASE = ("_core", "_parsers", "_host")


def _page():
    with open(PAGE, encoding="utf-8") as handle:
        return handle.read()


def _unit(path):
    """The package (``_mtu``) or top-level module (``_intent``) a module_utils file belongs to."""
    parts = os.path.relpath(path, UTILS).split(os.sep)
    return parts[0][:-3] if len(parts) == 1 else parts[0]


def code_edges():
    """{(from, to)}: a module_utils package or module importing another one."""
    edges = set()
    for path in glob.glob(os.path.join(UTILS, "**", "*.py"), recursive=True):
        source = _unit(path)
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + ["%s.%s" % (node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if "plugins.module_utils." in name:
                    target = name.split("plugins.module_utils.")[1].split(".")[0]
                    if target != source:
                        edges.add((source, target))
    return edges


def page_edges(text):
    """The arrows of the page's mermaid import graph: ``mtu --> core`` is (_mtu, _core)."""
    block = re.search(r"```mermaid\n(flowchart[^\n]*\n(?:(?!```).*\n)*?)```", text.split("## The import graph", 1)[1])
    assert block, "docs/architecture.md: no mermaid block under '## The import graph'"
    return {("_" + a, "_" + b) for a, b in re.findall(r"^\s*(\w+)\s*-->\s*(\w+)\s*$", block.group(1), re.M)}


def sideways_rows(text):
    """The arrows the page's sideways table explains: rows starting with `_a` → `_b`."""
    return set(re.findall(r"^\|\s*`(_\w+)`\s*→\s*`(_\w+)`\s*\|", text, re.M))


def test_every_import_arrow_is_drawn_and_no_other():
    drawn, real = page_edges(_page()), code_edges()
    missing = ["    %s --> %s" % (a[1:], b[1:]) for a, b in sorted(real - drawn)]
    extra = ["    %s --> %s" % (a[1:], b[1:]) for a, b in sorted(drawn - real)]
    assert not missing and not extra, (
        "docs/architecture.md's import graph differs from the code.\nadd:\n%s\nremove:\n%s"
        % ("\n".join(missing), "\n".join(extra)))


def test_every_sideways_arrow_is_explained():
    real = {edge for edge in code_edges() if edge[1] not in BASE}
    rows = sideways_rows(_page())
    missing = sorted(real - rows)
    extra = sorted(rows - real)
    assert not missing and not extra, (
        "docs/architecture.md's sideways arrows: explain %s; remove %s"
        % (", ".join("`%s` → `%s`" % edge for edge in missing) or "none",
           ", ".join("`%s` → `%s`" % edge for edge in extra) or "none"))


def _package_rows(text):
    return {m.group(1): m.group(0) for m in re.finditer(r"^\|\s*`(_\w+)(?:/|\.py)`.*$", text, re.M)}


def test_every_package_and_module_is_named_in_its_row():
    rows = _package_rows(_page())
    problems = []
    for path in sorted(glob.glob(os.path.join(UTILS, "*"))):
        name = os.path.basename(path)
        if name.startswith("__") or not (name.endswith(".py") or os.path.isdir(path)):
            continue
        unit = name[:-3] if name.endswith(".py") else name
        if unit not in rows:
            problems.append("no row for `%s`" % name)
            continue
        if os.path.isdir(path):
            for module in sorted(glob.glob(os.path.join(path, "*.py"))):
                base = os.path.basename(module)
                if base != "__init__.py" and "`%s`" % base not in rows[unit]:
                    problems.append("`%s/%s` is not named in the row of `%s/`" % (unit, base, unit))
    assert not problems, "docs/architecture.md:\n" + "\n".join(problems)


@pytest.mark.parametrize("kind, pattern", [
    ("module", "plugins/modules/*.py"), ("action plugin", "plugins/action/*.py"),
    ("filter", "plugins/filter/*.yml"), ("httpapi plugin", "plugins/httpapi/*.py"),
    ("doc fragment", "plugins/doc_fragments/*.py"), ("role", "roles/*/"),
    ("playbook", "playbooks/*.yml"), ("task file", "playbooks/tasks/*.yml")])
def test_every_plugin_role_and_playbook_is_named(kind, pattern):
    text = _page()
    names = sorted(os.path.basename(path.rstrip("/")) for path in glob.glob(os.path.join(REPO, pattern)))
    if kind in ("module", "action plugin", "httpapi plugin", "doc fragment"):
        names = [name[:-3] for name in names if name != "__init__.py"]
    elif kind == "filter":
        names = [name[:-4] for name in names]
    assert names
    prefix = "tasks/" if kind == "task file" else ""
    missing = [name for name in names if not re.search(r"`%s%s`" % (prefix, re.escape(name)), text)]
    assert not missing, "docs/architecture.md does not name the %s(s) %s" % (kind, ", ".join(missing))


def test_the_page_links_only_inside_the_repository():
    for target in re.findall(r"\]\(([^)#]+)", _page()):
        if not re.match(r"^[a-z]+:", target):
            assert os.path.exists(os.path.normpath(os.path.join(REPO, "docs", target))), target
