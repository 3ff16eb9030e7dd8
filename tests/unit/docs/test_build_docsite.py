"""scripts/build-docsite.py: the guides' links as the site needs them, and the built site's
internal links checked offline (Sphinx itself runs in the docs tier)."""

import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_spec = importlib.util.spec_from_file_location("build_docsite", os.path.join(REPO, "scripts", "build-docsite.py"))
build_docsite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_docsite)


def _rewrite(text, repo_path="docs/how-to/add-a-host.md"):
    pages = dict(build_docsite.guides())
    problems = []
    out = build_docsite.rewrite_links(text, repo_path, pages[repo_path], pages, problems)
    return out, problems


def test_the_guides_are_the_shipped_markdown_without_the_reference():
    pages = dict(build_docsite.guides())
    assert pages["README.md"] == "guides/overview.md"
    assert pages["docs/how-to/add-a-host.md"] == "guides/how-to/add-a-host.md"
    assert not [path for path in pages if path.startswith("docs/reference/")]


def test_links_between_guides_stay_relative_pages():
    out, problems = _rewrite("[a](../troubleshooting.md#intent-drift) [b](write-a-site-inventory.md)")
    assert out == "[a](../troubleshooting.md#intent-drift) [b](write-a-site-inventory.md)"
    assert problems == []
    out = _rewrite("[t](docs/tutorial.md)", repo_path="README.md")[0]
    assert out == "[t](tutorial.md)"


def test_reference_links_go_to_the_plugin_pages_and_other_files_to_the_web_view():
    out, problems = _rewrite("[n](../reference/roles/nic.md) [m](../reference/modules/link_mtu.md) "
                             "[r](../reference/README.md) [i](../../inventories/example/hosts.yml)")
    assert problems == []
    assert out == ("[n](../../nic_role.rst) [m](../../link_mtu_module.rst) [r](../../index.rst) "
                   "[i](https://github.com/rdmaops/roce/blob/main/inventories/example/hosts.yml)")


def test_a_link_to_nothing_or_out_of_the_repository_is_a_problem():
    problems = _rewrite("[x](../nope.md) [y](../../../shared/DESIGN.md)")[1]
    assert problems == ["docs/how-to/add-a-host.md: link ../nope.md: no such file docs/nope.md",
                        "docs/how-to/add-a-host.md: link ../../../shared/DESIGN.md leaves the repository"]


def test_check_html_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "guides").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="guides/a.html#there">ok</a> <a href="guides/a.html#gone">bad anchor</a> '
        '<a href="missing.html">bad page</a> <a href="https://example.org/x">external</a> '
        '<a href="#top" id="top">self</a>', encoding="utf-8")
    (tmp_path / "guides" / "a.html").write_text('<h1 id="there">A</h1><img src="../img.png">', encoding="utf-8")
    checked, problems = build_docsite.check_html(str(tmp_path))
    assert checked == 5
    assert sorted(problems) == ["guides/a.html: link ../img.png: no such file",
                                "index.html: link guides/a.html#gone: no anchor #gone",
                                "index.html: link missing.html: no such file"]
