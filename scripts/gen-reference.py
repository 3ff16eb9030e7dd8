#!/usr/bin/env python
"""Generate docs/reference/ from the collection's own documentation.

Every module option, filter, lookup and role variable is documented once, in the module's
DOCUMENTATION, the filter's YAML or the role's meta/argument_specs.yml.  This script renders
those (through ``ansible-doc --json``, so doc fragments are merged exactly as users see them)
into Markdown under docs/reference/.

    python scripts/gen-reference.py           # rewrite docs/reference/
    python scripts/gen-reference.py --check   # fail if docs/reference/ is out of date (CI)
"""

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "docs", "reference")
COLLECTION = "rdmaops.roce"
KINDS = (("module", "Modules"), ("filter", "Filters"), ("lookup", "Lookup plugins"), ("httpapi", "HttpApi plugins"), ("role", "Roles"))

_MARKUP = [
    # RV( before the one-letter forms, and those at a word start, or RV(x) would render as R`x`
    (re.compile(r"\bRV\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"L\(([^,)]+),\s*([^)]+)\)"), r"[\1](\2)"),
    (re.compile(r"U\(([^)]+)\)"), r"<\1>"),
    (re.compile(r"\b[CVOE]\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"I\(([^)]*)\)"), r"*\1*"),
    (re.compile(r"B\(([^)]*)\)"), r"**\1**"),
    (re.compile(r"M\(([^)]*)\)"), r"`\1`"),
]


def markup(text):
    if isinstance(text, list):
        text = " ".join(str(item) for item in text)
    text = str(text or "")
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text.replace("|", "\\|").replace("\n", " ")


def ansible_doc(kind, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        ["ansible-doc", "-t", kind, "--json"] + list(args),
        env=env, capture_output=True, text=True, check=False, cwd=REPO,
    )
    if proc.returncode != 0:
        sys.exit("ansible-doc -t %s %s failed:\n%s" % (kind, " ".join(args), proc.stderr))
    return json.loads(proc.stdout or "{}")


def option_rows(options, prefix=""):
    rows = []
    for name in sorted(options or {}):
        spec = options[name] or {}
        default = spec.get("default")
        choices = spec.get("choices")
        kind = spec.get("type", "str")
        if kind == "list" and spec.get("elements"):
            kind = "list of %s" % spec["elements"]
        rows.append(
            "| `%s%s` | %s | %s | %s | %s |"
            % (
                prefix,
                name,
                kind,
                "yes" if spec.get("required") else "",
                "" if default is None else "`%s`" % json.dumps(default),
                markup(spec.get("description"))
                + (" Choices: %s." % ", ".join("`%s`" % c for c in choices) if choices else ""),
            )
        )
        sub = spec.get("suboptions") or spec.get("options")
        if sub:
            rows.extend(option_rows(sub, prefix="%s%s." % (prefix, name)))
    return rows


def options_table(options):
    if not options:
        return ["This takes no options.", ""]
    return [
        "| option | type | required | default | description |",
        "|---|---|---|---|---|",
    ] + option_rows(options) + [""]


def render_plugin(kind, name, data):
    doc = data.get("doc", {})
    lines = ["# %s" % name, "", markup(doc.get("short_description")), ""]
    lines += [markup(doc.get("description")), ""]
    lines += ["## Options", ""] + options_table(doc.get("options"))
    attributes = doc.get("attributes") or {}
    if attributes:
        lines += ["## Attributes", "", "| attribute | support | description |", "|---|---|---|"]
        for attr in sorted(attributes):
            spec = attributes[attr]
            lines.append("| %s | %s | %s |" % (attr, spec.get("support", ""), markup(spec.get("description"))))
        lines.append("")
    if doc.get("notes"):
        lines += ["## Notes", ""] + ["- " + markup(note) for note in doc["notes"]] + [""]
    returns = data.get("return") or {}
    if returns:
        lines += ["## Returns", ""]
        for key in sorted(returns):
            lines.append("- `%s`: %s" % (key, markup(returns[key].get("description"))))
        lines.append("")
    if data.get("examples"):
        lines += ["## Examples", "", "```yaml", data["examples"].strip("\n"), "```", ""]
    return "\n".join(lines)


def render_role(name, data):
    lines = ["# %s" % name, ""]
    for entry, spec in sorted((data.get("entry_points") or {}).items()):
        lines += ["## Entry point `%s`" % entry, "", markup(spec.get("short_description")), ""]
        if spec.get("description"):
            lines += [markup(spec.get("description")), ""]
        lines += options_table(spec.get("options"))
    return "\n".join(lines)


def generate(out):
    os.makedirs(out)
    index = [
        "# rdmaops.roce reference",
        "",
        "Generated by `scripts/gen-reference.py` from the module documentation and role",
        "argument specs; do not edit by hand.",
        "",
    ]
    for kind, title in KINDS:
        names = sorted(ansible_doc(kind, "-l", COLLECTION))
        if not names:
            continue
        index += ["## %s" % title, ""]
        os.makedirs(os.path.join(out, kind + "s"))
        docs = ansible_doc(kind, *names)  # one ansible-doc run per kind, not one per plugin
        for full in names:
            data = docs[full]
            text = render_role(full, data) if kind == "role" else render_plugin(kind, full, data)
            short = full.split(".")[-1]
            with open(os.path.join(out, kind + "s", short + ".md"), "w") as handle:
                handle.write(text.rstrip("\n") + "\n")
            summary = ""
            if kind == "role":
                entries = data.get("entry_points", {})
                summary = (entries.get("main") or {}).get("short_description", "")
                if not summary:  # a role of several entry points (rollout: start, drain, finish)
                    summary = "; ".join("`%s`: %s" % (name, (spec or {}).get("short_description", ""))
                                        for name, spec in entries.items())
            else:
                summary = data.get("doc", {}).get("short_description", "")
            index.append("- [%s](%ss/%s.md): %s" % (full, kind, short, markup(summary)))
        index.append("")
    with open(os.path.join(out, "README.md"), "w") as handle:
        handle.write("\n".join(index).rstrip("\n") + "\n")


def differences(left, right):
    cmp = filecmp.dircmp(left, right)
    found = ["only in %s: %s" % (cmp.left, n) for n in cmp.left_only]
    found += ["only in %s: %s" % (cmp.right, n) for n in cmp.right_only]
    found += ["differs: %s" % os.path.join(cmp.left, n) for n in cmp.diff_files]
    for sub in cmp.common_dirs:
        found += differences(os.path.join(left, sub), os.path.join(right, sub))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when docs/reference is out of date")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    try:
        fresh = os.path.join(tmp, "reference")
        generate(fresh)
        if args.check:
            if not os.path.isdir(OUT):
                sys.exit("docs/reference is missing: run python scripts/gen-reference.py")
            diff = differences(OUT, fresh)
            if diff:
                sys.exit("docs/reference is out of date (run python scripts/gen-reference.py):\n  " + "\n  ".join(diff))
            print("docs/reference matches the code")
        else:
            shutil.rmtree(OUT, ignore_errors=True)
            shutil.copytree(fresh, OUT)
            print("wrote %s" % os.path.relpath(OUT, REPO))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
