#!/usr/bin/env python
"""Fail when the shipped docs say something the code does not have.

The shipped docs are README.md, docs/**/*.md (less galaxy.yml's build_ignore and the generated
docs/reference/) and roles/*/README.md. In each, outside and inside fenced blocks:

- every fence is closed (an open ``` turns the rest of the page into code on Galaxy and GitHub);
- a release tarball or version range in an example (``rdmaops-roce-X.Y.Z.tar.gz``,
  ``version: ">=A,<B"``) agrees with galaxy.yml's version;
- a backticked name the collection would own exists in the code:
  * ``rdmaops.roce.NAME``: a module, filter, role, playbook, httpapi plugin or the action group;
  * an identifier with one of the collection's prefixes (``rdmaops_``, ``roce_``, ``nic_`` ...,
    see PREFIXES), an alert name (``Roce...``) or ``RDMAOPS_...``: a role variable (defaults,
    vars, meta/argument_specs.yml), a module option or return key (DOCUMENTATION, RETURN and
    their doc fragments), a filter's, or a name the collection's code reads or writes;
  * any other snake_case identifier: the same, or ALLOWED (names that belong to Linux, Slurm,
    NVIDIA's tools, Prometheus ... and legitimately appear in the docs);
  * a relative path (``playbooks/site.yml``, ``tasks/main.yml`` in a role's README) or a file
    name (``validate.yml``): a file or directory of the repository;
  * ``--tags``/``--skip-tags`` values: tags the playbooks set;
- every relative Markdown link resolves to a file of the repository;
- the README stays a README: at most README_LINES lines, no table cell over CELL_WORDS words;
- no line speaks of the collection's own development: no date (``2026-11-28``, ``Nov 2026``,
  ``28 November 2026``), no issue or pull request number (``issue 30``, ``#30``, ``PR 12``) and
  no commit (``commit a960e1b``).
  The shipped docs are guides for users; dated runs, measurements and work items belong in
  CONTRIBUTING.md or tests/**/README.md, which are not in the tarball.

Each problem is printed as ``file:line: message`` naming the name; the exit status is 1 when
there is any.

    python scripts/check-docs.py            # check the shipped docs
    python scripts/check-docs.py FILE...    # check these files (README rules for README.md)
"""

import ast
import fnmatch
import glob
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Identifiers with these prefixes are the collection's own: each must exist in the code.
PREFIXES = ("rdmaops_", "roce_", "nic_", "ofed_", "peermem_", "tuning_", "nccl_", "switch_",
            "validate_", "monitor_", "rollout_", "firmware_", "kernel_modules_", "RDMAOPS_")

# Names the docs legitimately use that are not the collection's: kernel, tools, other projects.
# Keep this short; a name of ours never belongs here.
ALLOWED = {
    "br_default",        # Cumulus' default bridge (NVUE)
    "network_cli",       # Ansible's CLI connection, which SONiC does not use
    "save_when",         # the vendors' config modules' option (EOS, NX-OS)
    "install_requires",  # Python packaging (sonic-utilities brings jsonpatch)
}

README_LINES = 220
CELL_WORDS = 40

# Paths the docs name that are examples, not files of this repository.
PLACEHOLDER = re.compile(r"[<>{}*$]|\.\.\.|example\.com")
TOP_DIRS = ("playbooks/", "roles/", "plugins/", "docs/", "inventories/", "meta/", "tests/",
            "scripts/", "molecule/", "changelogs/", "benchmarks/")
ROLE_DIRS = ("tasks/", "defaults/", "meta/", "files/", "templates/", "vars/", "handlers/")
FILE_EXT = re.compile(r"^[A-Za-z0-9_.-]+\.(yml|yaml|py|md|j2|sh|json|txt|cfg|rst|ini|svg|png)$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FQCN = re.compile(r"\brdmaops\.roce\.([a-z0-9_]+)")
TAGS = re.compile(r"--(?:skip-)?tags[ =]+([\"']?)([A-Za-z0-9_,]+)\1")
TARBALL = re.compile(r"rdmaops-roce-(\d+\.\d+\.\d+)\.tar\.gz")
RANGE = re.compile(r"version:\s*[\"']?([^\"'\n]*\d[^\"'\n]*)[\"']?")
YAML_KEY = re.compile(r"^\s*(?:-\s+)?([A-Za-z_][A-Za-z0-9_]*):(?:\s|$)")
ASSIGN = re.compile(r"(?:^|[\s,{(])(?:-e\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
CODE_DIRS = ("plugins", "roles", "playbooks", "meta", "inventories/example", "scripts")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SKIP_DIRS = (".git", ".venv", "build", "__pycache__", ".pytest_cache", ".hypothesis", ".ansible", "node_modules")
# Dates and work-item numbers: the shipped docs are not a diary (see the module docstring).
MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
         r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
DATE = re.compile(r"(?<![\w.-])(?:(?:19|20)\d\d-[01]\d-[0-3]\d|(?:[0-3]?\d(?:st|nd|rd|th)?\s+)?" + MONTH
                  + r"\.?(?:\s+[0-3]?\d(?:st|nd|rd|th)?,?)?\s+(?:19|20)\d\d)(?![\w-])")
ISSUE = re.compile(r"(?i:\b(?:issues?|pull requests?|PRs?|work items?|tickets?)\s*(?:no\.?\s*)?#?\d+\b)"
                   r"|(?<![\w&#/])#\d+\b|rdmaops/roce/(?:issues|pull)/\d+"
                   r"|(?i:\bcommit\s+[0-9a-f]{7,40}\b)")
METRIC = "rdmaops_roce_"
METRIC_PARTS = ("port_", "hw_", "intent_", "rdma_cm_")


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _yaml(path):
    try:
        return yaml.safe_load(_read(path))
    except (OSError, yaml.YAMLError):
        return None


def _python_docs(path):
    """The YAML strings (DOCUMENTATION, RETURN, fragments' attributes) a plugin file assigns."""
    try:
        tree = ast.parse(_read(path))
    except SyntaxError:
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper():
            try:
                found[node.targets[0].id] = yaml.safe_load(node.value.value)
            except yaml.YAMLError:
                pass
    return found


def _keys(tree, into, nested=("suboptions", "contains", "options")):
    """Every key of an options/return mapping, nested ones included."""
    if not isinstance(tree, dict):
        return
    for key, value in tree.items():
        into.add(str(key))
        if isinstance(value, dict):
            for sub in nested:
                _keys(value.get(sub), into, nested)


def _all_keys(tree, into):
    if isinstance(tree, dict):
        for key, value in tree.items():
            if isinstance(key, str):
                into.add(key)
            _all_keys(value, into)
    elif isinstance(tree, list):
        for item in tree:
            _all_keys(item, into)


def _tags(tree, into):
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "tags":
                for tag in value if isinstance(value, list) else str(value).split(","):
                    into.add(str(tag).strip())
            else:
                _tags(value, into)
    elif isinstance(tree, list):
        for item in tree:
            _tags(item, into)


class Code:
    """What the collection has: its plugins, roles, playbooks, names, tags and files."""

    def __init__(self, repo=REPO):
        self.repo = repo
        self.fqcn = {"owned_files"}
        self.names = set()      # documented names: options, return keys, role variables
        self.words = set()      # every identifier of the code
        self.tags = {"always", "never", "all", "tagged", "untagged"}
        for path in glob.glob(os.path.join(repo, "plugins", "*", "*.py")):
            kind = os.path.basename(os.path.dirname(path))
            name = os.path.basename(path)[:-3]
            if kind in ("modules", "action", "httpapi", "filter") and name != "__init__":
                self.fqcn.add(name)
        # the network OS names switch_roce takes in ansible_network_os (rdmaops.roce.sonic, ...)
        for path in glob.glob(os.path.join(repo, "plugins", "module_utils", "_switch", "*.py")):
            self.fqcn.update(re.findall(r"[\"']rdmaops\.roce\.([a-z0-9_]+)[\"']", _read(path)))
        for path in glob.glob(os.path.join(repo, "plugins", "*", "*.py")):
            docs = _python_docs(path)
            for key in ("DOCUMENTATION", "RETURN") + tuple(k for k in docs if k not in ("EXAMPLES",)):
                _keys(docs.get(key, {}).get("options") if key != "RETURN" and isinstance(docs.get(key), dict)
                      else docs.get(key), self.names)
        for path in glob.glob(os.path.join(repo, "plugins", "filter", "*.yml")):
            doc = _yaml(path) or {}
            self.fqcn.add(os.path.basename(path)[:-4])
            _keys((doc.get("DOCUMENTATION") or {}).get("options"), self.names)
            _keys(doc.get("RETURN"), self.names)
        for role in glob.glob(os.path.join(repo, "roles", "*", "")):
            self.fqcn.add(os.path.basename(os.path.dirname(role)))
            for sub in ("defaults", "vars"):
                for path in glob.glob(os.path.join(role, sub, "*.yml")):
                    doc = _yaml(path)
                    if isinstance(doc, dict):
                        self.names.update(doc)
            specs = _yaml(os.path.join(role, "meta", "argument_specs.yml")) or {}
            for entry in (specs.get("argument_specs") or {}).values():
                _keys((entry or {}).get("options"), self.names)
        for path in glob.glob(os.path.join(repo, "playbooks", "*.yml")):
            self.fqcn.add(os.path.basename(path)[:-4])
        for path in glob.glob(os.path.join(repo, "playbooks", "**", "*.yml"), recursive=True) + \
                glob.glob(os.path.join(repo, "roles", "*", "tasks", "*.yml")):
            _tags(_yaml(path), self.tags)
        self.files = set()
        for root, dirs, files in os.walk(repo):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            rel = os.path.relpath(root, repo)
            for name in files + dirs:
                self.files.add(os.path.normpath(os.path.join(rel, name)))
            if rel.split(os.sep)[0] in ("plugins", "roles", "playbooks", "meta", "scripts") or \
                    rel.startswith(os.path.join("inventories", "example")):
                for name in files:
                    if name == os.path.basename(__file__):
                        continue  # its own allow-list is not the code
                    if name.endswith((".py", ".yml", ".yaml", ".j2", ".sh", ".json", ".txt", ".cfg")):
                        self.words.update(WORD.findall(_read(os.path.join(root, name))))
        self.words.update(WORD.findall(_read(os.path.join(repo, "galaxy.yml"))))
        self.version = str((_yaml(os.path.join(repo, "galaxy.yml")) or {}).get("version"))
        self.build_ignore = (_yaml(os.path.join(repo, "galaxy.yml")) or {}).get("build_ignore") or []

    def knows(self, name):
        if name in self.names or name in self.words:
            return True
        if name.startswith(METRIC):
            # the collector builds metric names from the counters' names: rdmaops_roce_port_<counter>_total
            rest = name[len(METRIC):]
            for prefix in METRIC_PARTS:
                rest = rest[len(prefix):] if rest.startswith(prefix) else rest
            for suffix in ("_total", "_bytes", "_seconds", "_info"):
                rest = rest[:-len(suffix)] if rest.endswith(suffix) else rest
            return rest in self.words or any(rest in word for word in self.words if len(word) > len(rest))
        return False

    def shipped_docs(self):
        paths = ["README.md"] + sorted(glob.glob("roles/*/README.md", root_dir=self.repo))
        for path in sorted(glob.glob("docs/**/*.md", root_dir=self.repo, recursive=True)):
            if path.startswith("docs/reference/"):
                continue
            if any(fnmatch.fnmatch(path, pattern) or path.startswith(pattern.rstrip("/") + "/")
                   for pattern in self.build_ignore):
                continue
            paths.append(path)
        return paths


def _version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _range_holds(spec, version):
    """Whether a version range (">=1.0.0,<2.0.0", "1.1.0", "*") admits version."""
    have = _version_tuple(version)
    for part in spec.split(","):
        part = part.strip()
        match = re.match(r"^(>=|<=|==|!=|>|<|=)?\s*(\d+(?:\.\d+){0,2})$", part)
        if part in ("*", "") or not match:
            continue
        op, want = match.group(1) or "==", _version_tuple(match.group(2))
        want = want + (0,) * (3 - len(want))
        if not {"==": have == want, "=": have == want, "!=": have != want, ">=": have >= want,
                "<=": have <= want, ">": have > want, "<": have < want}[op]:
            return False
    return True


class Checker:
    def __init__(self, code):
        self.code = code
        self.problems = []

    def report(self, path, line, message):
        problem = "%s:%d: %s" % (path, line, message)
        if problem not in self.problems:
            self.problems.append(problem)

    # -- names ---------------------------------------------------------------------------------
    def check_identifier(self, path, line, name):
        if not IDENT.match(name) or name.startswith("_") or name.endswith("_") or "__" in name:
            return  # private names, and prefixes (`rdmaops_`) spoken of as such
        ours = name.startswith(PREFIXES) or re.match(r"^(Roce|Rdmaops)[A-Z][A-Za-z]+$", name)
        if ours:
            if not self.code.knows(name):
                self.report(path, line, "`%s` is not a variable, option, return key or name the code has" % name)
        elif "_" in name.strip("_") and name.lower() == name:
            if not self.code.knows(name) and name not in ALLOWED:
                self.report(path, line, "`%s` is not a name the code has (nor in check-docs.py's ALLOWED list)" % name)

    def check_path(self, path, line, token):
        token = token.strip().rstrip("/.,:;")
        if not token or PLACEHOLDER.search(token) or token.startswith(("/", "~", "http")) or " " in token:
            return
        candidates = []
        if token.startswith(TOP_DIRS):
            candidates.append(token)
        elif path.startswith("roles/") and token.startswith(ROLE_DIRS):
            candidates.append(os.path.join(os.path.dirname(path), token))
        else:
            return
        for candidate in candidates:
            if os.path.normpath(candidate) not in self.code.files and \
                    os.path.normpath(os.path.join(os.path.dirname(path), token)) not in self.code.files:
                self.report(path, line, "file `%s` does not exist" % token)

    def check_code_text(self, path, line, text, fenced=False):
        for match in FQCN.finditer(text):
            if match.group(1) not in self.code.fqcn:
                self.report(path, line, "`rdmaops.roce.%s` is no module, filter, role, playbook or plugin"
                            % match.group(1))
        for match in TAGS.finditer(text):
            for tag in match.group(2).split(","):
                if tag and tag not in self.code.tags:
                    self.report(path, line, "tag `%s` is set by no playbook" % tag)
        for match in ASSIGN.finditer(text):
            self.check_identifier(path, line, match.group(1))
        key = YAML_KEY.match(text)
        if key:
            self.check_identifier(path, line, key.group(1))
        if not fenced:
            stripped = text.strip()
            token = stripped.split(":")[0].strip() if ": " in stripped else stripped
            if IDENT.match(token):
                self.check_identifier(path, line, token)
            elif "." in token and IDENT.match(token.split(".")[0]) and not FQCN.match(token) \
                    and not FILE_EXT.match(token) and re.match(r"^[A-Za-z0-9_.]+$", token):
                # roce_fabric.rails, ansible_facts.rdma...: the first part is a name
                self.check_identifier(path, line, token.split(".")[0])
            else:
                self.check_path(path, line, token)
                for word in re.split(r"[\s|,()\[\]]+", stripped):
                    if word.startswith(PREFIXES) and IDENT.match(word):
                        self.check_identifier(path, line, word)

    def check_versions(self, path, line, text, previous=""):
        for match in TARBALL.finditer(text):
            if match.group(1) != self.code.version:
                self.report(path, line, "tarball version %s differs from galaxy.yml's %s"
                            % (match.group(1), self.code.version))
        if "rdmaops.roce" not in previous and "rdmaops.roce" not in text:
            return
        for match in RANGE.finditer(text):
            spec = match.group(1).strip()
            if re.match(r"^[<>=!*,.\d\s]+$", spec) and not _range_holds(spec, self.code.version):
                self.report(path, line, "version `%s` does not admit galaxy.yml's %s" % (spec, self.code.version))

    def check_links(self, path, line, text):
        for match in LINK.finditer(text):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            file_part = target.split("#")[0]
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if resolved.startswith("..") or resolved not in self.code.files:
                self.report(path, line, "link `%s` points to no file of the collection" % target)

    def check_diary(self, path, line, text):
        for match in DATE.finditer(text):
            self.report(path, line, "a date (`%s`) in a shipped doc: dated runs and measurements belong in "
                        "CONTRIBUTING.md or tests/**/README.md" % match.group(0))
        for match in ISSUE.finditer(text):
            self.report(path, line, "an issue number or commit (`%s`) in a shipped doc: say what the collection "
                        "does, not which work item made it" % match.group(0))

    # -- a document ----------------------------------------------------------------------------
    def check_text(self, path, text):
        fence = None
        fence_line = 0
        previous = ""
        number = 0
        for number, line in enumerate(text.splitlines(), 1):
            self.check_diary(path, number, line)
            match = FENCE.match(line)
            if fence is None and match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                fence, fence_line = match.group(1), number
                continue
            if fence is not None:
                if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                        and not match.group(2).strip():
                    fence = None
                    continue
                self.check_code_text(path, number, line, fenced=True)
                self.check_versions(path, number, line, previous)
                previous = line
                continue
            self.check_versions(path, number, line, previous)
            previous = line
            self.check_links(path, number, line)
            if os.path.basename(path) == "README.md" and "/" not in path and line.lstrip().startswith("|"):
                for cell in line.strip().strip("|").split("|"):
                    if len(cell.split()) > CELL_WORDS:
                        self.report(path, number, "a table cell of %d words (at most %d): %s..."
                                    % (len(cell.split()), CELL_WORDS, " ".join(cell.split()[:6])))
            for span in CODE_SPAN.finditer(line):
                self.check_code_text(path, number, span.group(2))
        if fence is not None:
            self.report(path, fence_line, "the fence %s opened here is never closed" % fence)
        if path == "README.md" and number > README_LINES:
            self.report(path, number, "the README has %d lines (at most %d): move detail into docs/" % (number, README_LINES))

    def check_file(self, path):
        self.check_text(path, _read(os.path.join(self.code.repo, path)))


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    code = Code()
    checker = Checker(code)
    paths = [os.path.relpath(os.path.abspath(p), REPO) for p in args] or code.shipped_docs()
    for path in paths:
        checker.check_file(path)
    for problem in checker.problems:
        print(problem)
    print("check-docs: %d files, %d problems" % (len(paths), len(checker.problems)),
          file=sys.stderr if checker.problems else sys.stdout)
    return 1 if checker.problems else 0


if __name__ == "__main__":
    sys.exit(main())
