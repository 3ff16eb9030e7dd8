#!/usr/bin/env python
"""Build the collection's docsite into build/docsite/html, offline, warnings as errors.

The way the Ansible ecosystem builds a collection's docs: ``antsibull-docs collection
--use-current --squash-hierarchy`` renders every plugin and role from the installed collection
into RST, and Sphinx (configuration from ``antsibull-docs sphinx-init``, kept in
scripts/docsite/) renders that, the guides (the shipped Markdown under docs/, read by
myst_parser) and CHANGELOG.rst into HTML. Then every internal link of the HTML (href, src and
its #anchor) is checked against the files written.

Links in the guides are rewritten for the site: a link to another guide stays a link between
pages, a link into docs/reference/ goes to the plugin's or role's page that antsibull-docs
wrote, and a link to any other file of the repository goes to the repository's web view, once
that file is known to exist in the checkout (so that links are checked offline, too).

    python scripts/build-docsite.py [--build-dir build]
"""

import argparse
import html.parser
import os
import re
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONF_DIR = os.path.join(REPO, "scripts", "docsite")
WEB = "https://github.com/rdmaops/roce/blob/main/"
DEPENDENCIES = ("ansible.netcommon", "ansible.utils")

# Guide pages, in the order of the site's table of contents: (repository path, site path).
# The site path is relative to the Sphinx source directory.
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
REFERENCE = re.compile(r"docs/reference/(modules|filters|roles|httpapis)/([a-z0-9_]+)\.md$")
REFERENCE_KIND = {"modules": "module", "filters": "filter", "roles": "role", "httpapis": "httpapi"}


class Failure(Exception):
    pass


def guides():
    """The shipped Markdown guides (repository path, site path) in the site's order: the README,
    the tutorial, the how-to guides, then the explanations and the rest."""
    found = []
    docs = os.path.join(REPO, "docs")
    for root, dirs, files in os.walk(docs):
        dirs[:] = sorted(d for d in dirs if d != "reference")
        for name in sorted(files):
            if name.endswith(".md"):
                path = os.path.relpath(os.path.join(root, name), REPO)
                found.append((path, "guides/" + os.path.relpath(path, "docs")))
    order = {"docs/tutorial.md": 0}
    found.sort(key=lambda page: (order.get(page[0], 1 if page[0].startswith("docs/how-to/") else 2), page[0]))
    return [("README.md", "guides/overview.md")] + found


def rewrite_links(text, repo_path, site_path, site_of, problems):
    """The Markdown of one guide with its links pointing where they point on the site."""
    def replace(match):
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, anchor = target.partition("#")[::2]
        repo_target = os.path.normpath(os.path.join(os.path.dirname(repo_path), path))
        if repo_target.startswith(".."):
            problems.append("%s: link %s leaves the repository" % (repo_path, target))
            return match.group(0)
        if not os.path.exists(os.path.join(REPO, repo_target)):
            problems.append("%s: link %s: no such file %s" % (repo_path, target, repo_target))
            return match.group(0)
        ref = REFERENCE.match(repo_target)
        if repo_target in site_of:
            new = site_of[repo_target]
        elif ref:
            new = "%s_%s.rst" % (ref.group(2), REFERENCE_KIND[ref.group(1)])
        elif repo_target == "docs/reference/README.md":
            new = "index.rst"
        elif repo_target.startswith("docs/") and repo_target.endswith((".png", ".svg")):
            new = "guides/" + os.path.relpath(repo_target, "docs")
        else:
            return match.group(1) + WEB + repo_target + ("#" + anchor if anchor else "") + match.group(3)
        rel = os.path.relpath(new, os.path.dirname(site_path))
        return match.group(1) + rel + ("#" + anchor if anchor else "") + match.group(3)
    return LINK.sub(replace, text)


def run(cmd, env=None, cwd=None):
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    if proc.returncode:
        raise Failure("%s failed (rc=%d):\n%s" % (" ".join(cmd[:3]), proc.returncode, proc.stdout))
    return proc.stdout


def collections_root(build):
    root = os.path.join(build, "docsite", "collections")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "ansible_collections", "rdmaops"))
    os.symlink(REPO, os.path.join(root, "ansible_collections", "rdmaops", "roce"))
    for fqcn in DEPENDENCIES:
        namespace, name = fqcn.split(".")
        module = __import__("ansible_collections.%s.%s" % (namespace, name), fromlist=["x"])
        os.makedirs(os.path.join(root, "ansible_collections", namespace), exist_ok=True)
        os.symlink(list(module.__path__)[0], os.path.join(root, "ansible_collections", namespace, name))
    return root


class _Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key == "id" and value:
                self.ids.add(value)
            if key in ("href", "src") and value and tag in ("a", "img", "link", "script"):
                self.links.append(value)


def check_html(html_dir):
    """Every internal href/src of the built site resolves to a file, and its #anchor to an id."""
    pages, problems = {}, []
    for root, _dirs, files in os.walk(html_dir):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(root, name)
                parser = _Anchors()
                with open(path, encoding="utf-8") as handle:
                    parser.feed(handle.read())
                pages[os.path.normpath(path)] = parser
    checked = 0
    for path, parser in sorted(pages.items()):
        for link in parser.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", link) or link.startswith("//"):
                continue
            target, anchor = link.partition("#")[::2]
            full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            checked += 1
            if not os.path.exists(full.split("?")[0]):
                problems.append("%s: link %s: no such file" % (os.path.relpath(path, html_dir), link))
            elif anchor and full in pages and anchor not in pages[full].ids:
                problems.append("%s: link %s: no anchor #%s" % (os.path.relpath(path, html_dir), link, anchor))
    return checked, problems


def build(build_dir):
    build = os.path.abspath(build_dir)
    docsite = os.path.join(build, "docsite")
    src = os.path.join(docsite, "src")
    html_dir = os.path.join(docsite, "html")
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(html_dir, ignore_errors=True)
    os.makedirs(src, mode=0o755)
    os.chmod(src, 0o755)  # antsibull-docs wants its destination writable by its owner only
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_root(build),
               ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="0", ANSIBLE_NOCOLOR="1")
    started = time.time()
    run(["antsibull-docs", "--config-file", os.path.join(CONF_DIR, "antsibull-docs.cfg"), "collection",
         "--use-current", "--squash-hierarchy", "--fail-on-error", "--dest-dir", src, "rdmaops.roce"], env=env)
    rendered = time.time()

    pages = guides()
    site_of = dict(pages)
    problems = []
    for repo_path, site_path in pages:
        with open(os.path.join(REPO, repo_path), encoding="utf-8") as handle:
            text = handle.read()
        os.makedirs(os.path.dirname(os.path.join(src, site_path)), exist_ok=True)
        with open(os.path.join(src, site_path), "w", encoding="utf-8") as handle:
            handle.write(rewrite_links(text, repo_path, site_path, site_of, problems))
    for name in os.listdir(os.path.join(REPO, "docs")):
        if name.endswith((".png", ".svg")):
            shutil.copy(os.path.join(REPO, "docs", name), os.path.join(src, "guides", name))
    if problems:
        raise Failure("links in the guides:\n" + "\n".join(problems))
    shutil.copy(os.path.join(REPO, "CHANGELOG.rst"), os.path.join(src, "changelog.rst"))
    with open(os.path.join(src, "index.rst"), "a", encoding="utf-8") as handle:
        handle.write("\n\nGuides\n------\n\n.. toctree::\n    :maxdepth: 1\n\n")
        for _repo_path, site_path in pages:
            handle.write("    %s\n" % site_path[:-3])
        handle.write("\nRelease notes\n-------------\n\n.. toctree::\n    :maxdepth: 1\n\n    changelog\n")

    run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-c", CONF_DIR,
         src, html_dir], env=env)
    built = time.time()
    checked, problems = check_html(html_dir)
    if problems:
        raise Failure("internal links of the built site:\n" + "\n".join(problems))
    print("docsite: %d guides, plugins and roles rendered in %.0fs, Sphinx %.0fs, %d internal links checked: %s"
          % (len(pages), rendered - started, built - rendered, checked, os.path.relpath(html_dir, REPO)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--build-dir", default=os.environ.get("RDMAOPS_BUILD_DIR", os.path.join(REPO, "build")))
    args = parser.parse_args(argv)
    try:
        build(args.build_dir)
    except Failure as exc:
        print("docsite: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
