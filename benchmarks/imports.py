#!/usr/bin/env python
"""What each module of the collection pays, on the host, to import its own code.

    .venv/bin/python benchmarks/imports.py [--runs N] [--module NAME ...] [--json FILE] [--markdown]

Ansible ships a module to the host in an AnsiballZ payload: the module and every module_utils file
its imports name, found by scanning the sources statically (ansible's ``ModuleDepFinder``: every
``import`` and ``from ... import``, imports inside functions included), zipped as source. On the
host Python imports them from that zip, so each one is compiled from source on every run: that,
and running the module-level code, is what this benchmark times.

For each module under plugins/modules it

* builds the payload's share that is ours: the module and the collection's module_utils files the
  static scan finds (column ``shipped``), in a zip laid out as AnsiballZ lays it out;
* runs ``python -X importtime -c 'import ansible.module_utils.basic; import <module>'`` with that
  zip first on ``sys.path``, ``--runs`` times (default 7), and reads from each run the module's
  cumulative import time (what the module adds to ansible's own ``basic``, which every module
  imports: ansible's start-up is not ours to cut), the CPU time the same import took, and the
  collection's module_utils files imported (column ``imported``, and their source in KiB: a file
  shipped but imported only inside a function is not counted, and costs its import when the run
  calls that function);
* does the same from the checkout, where the compiled code is cached (column ``cached``), for
  comparison with a controller-side ``python -X importtime``.

Times are medians in milliseconds on whatever machine runs it: compare rows of one run, not runs
on different machines or loads. On a shared machine the wall times swing with the load; the CPU
times less, and the file counts and KiB not at all.
"""

from __future__ import print_function

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PREFIX = "ansible_collections.rdmaops.roce"
MODULE_UTILS = PREFIX + ".plugins.module_utils"
LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def _collections_root():
    sys.path.insert(0, os.path.join(REPO, "tests"))
    import conftest  # noqa: E402  (links the checkout into an ansible_collections tree)
    return conftest.COLLECTIONS_ROOT


def _path_of(parts):
    """The checkout's file for the dotted ``parts`` below ``ansible_collections.rdmaops.roce``:
    ``(path, is_package)``, or None when no such module exists (an attribute)."""
    base = os.path.join(REPO, *parts)
    if os.path.isfile(base + ".py"):
        return base + ".py", False
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py"), True
    if os.path.isdir(base):
        return None, True  # a namespace package (module_utils itself has no __init__.py)
    return None


def shipped(module):
    """``{dotted name: (path or None, is_package)}``: the module and every file of ours the AnsiballZ
    builder puts in its payload (ansible's own scanner, followed the way the builder follows it)."""
    from ansible.executor.module_common import ModuleDepFinder

    name = "%s.plugins.modules.%s" % (PREFIX, module)
    path = os.path.join(REPO, "plugins", "modules", module + ".py")
    found = {name: (path, False)}
    todo = [(name, path, False)]
    while todo:
        fqn, file_path, is_package = todo.pop()
        with open(file_path, "rb") as handle:
            tree = ast.parse(handle.read(), file_path)
        for parts in ModuleDepFinder(fqn, tree, is_package).submodules:
            dotted = ".".join(parts)
            if not dotted.startswith(MODULE_UTILS):
                continue
            rel = parts[3:]
            hit = _path_of(rel)
            if hit is None:  # "from package import attribute"
                rel = rel[:-1]
                hit = _path_of(rel)
            if hit is None:
                raise SystemExit("%s imports %s, which is not in the checkout" % (fqn, dotted))
            for depth in range(len(rel) - 1, 0, -1):  # the packages above it
                package = ".".join((PREFIX,) + rel[:depth])
                if package not in found:
                    found[package] = _path_of(rel[:depth])
            dotted = ".".join((PREFIX,) + rel)
            if dotted not in found:
                found[dotted] = hit
                if hit[0]:
                    todo.append((dotted, hit[0], hit[1]))
    return found


def build_payload(module, directory):
    """A zip of our share of ``module``'s payload, as AnsiballZ lays it out; returns (zip path,
    number of module_utils files in it)."""
    files = shipped(module)
    target = os.path.join(directory, "%s_payload.zip" % module)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zf:
        written = set()
        for dotted, (path, is_package) in sorted(files.items()):
            rel = dotted.split(".")
            arcname = "/".join(rel) + ("/__init__.py" if is_package else ".py")
            if path:
                zf.write(path, arcname)
                written.add(arcname)
        # the packages AnsiballZ writes empty: ansible_collections, the namespace, the collection,
        # plugins, plugins/modules and module_utils (which has no __init__.py of its own)
        parts = PREFIX.split(".") + ["plugins"]
        for depth in range(1, len(parts) + 1):
            for extra in ([], ["modules"], ["module_utils"]) if depth == len(parts) else ([],):
                arcname = "/".join(parts[:depth] + extra) + "/__init__.py"
                if arcname not in written:
                    zf.writestr(arcname, b"")
                    written.add(arcname)
    ours = sum(1 for dotted, (path, _pkg) in files.items() if dotted.startswith(MODULE_UTILS + ".") and path)
    return target, ours


def parse_importtime(stderr, module):
    """``(cumulative microseconds of the module's import, [our module_utils imported])``."""
    total = None
    ours = []
    name = "%s.plugins.modules.%s" % (PREFIX, module)
    for line in stderr.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        imported = match.group(4)
        if imported == name:
            total = int(match.group(2))
        elif imported.startswith(MODULE_UTILS + "."):
            ours.append(imported)
    if total is None:
        raise RuntimeError("no import time for %s in:\n%s" % (name, stderr[-3000:]))
    return total, ours


def time_import(module, path_entry, runs, env=None):
    """Median milliseconds, and our module_utils imported, of ``runs`` fresh interpreters."""
    code = ("import sys, time; sys.path.insert(0, %r); import ansible.module_utils.basic; start = time.process_time(); "
            "import %s.plugins.modules.%s; print(time.process_time() - start)" % (path_entry, PREFIX, module))
    times = []
    cpu = []
    imported = None
    for _run in range(runs):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, env=env, cwd=tempfile.gettempdir(), check=False)
        if proc.returncode != 0:
            raise RuntimeError("importing %s failed:\n%s" % (module, proc.stderr[-3000:]))
        micros, ours = parse_importtime(proc.stderr, module)
        times.append(micros / 1000.0)
        cpu.append(float(proc.stdout.split()[-1]) * 1000.0)
        imported = sorted(set(ours))
    return round(statistics.median(times), 1), round(statistics.median(cpu), 1), imported


def source_kib(names):
    """KiB of source of the module_utils ``names`` (what the host compiles when it imports them)."""
    total = 0
    for name in names:
        hit = _path_of(tuple(name.split(".")[3:]))
        if hit and hit[0]:
            total += os.path.getsize(hit[0])
    return round(total / 1024.0, 1)


def count_only(modules):
    """The files shipped and imported, without timing (one import each; deterministic)."""
    root = _collections_root()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rdmaops-imports-") as directory:
        for module in modules:
            payload, count = build_payload(module, directory)
            try:
                _ms, _cpu, imported = time_import(module, payload, 1)
            except RuntimeError as exc:
                rows.append(dict(module=module, shipped=count, error=str(exc).strip().splitlines()[-1]))
                continue
            rows.append(dict(module=module, shipped=count, imported=len(imported), source_kib=source_kib(imported), modules=imported))
    del root
    return rows


def measure(modules, runs):
    root = _collections_root()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="rdmaops-imports-") as directory:
        for module in modules:
            payload, count = build_payload(module, directory)
            try:
                payload_ms, payload_cpu_ms, imported = time_import(module, payload, runs, env)
            except RuntimeError as exc:
                # a module that cannot be imported from its payload is a finding of its own: say it, go on
                print("%-20s NOT IMPORTABLE from its payload: %s" % (module, str(exc).strip().splitlines()[-1]), file=sys.stderr)
                rows.append(dict(module=module, shipped=count, error=str(exc).strip().splitlines()[-1]))
                continue
            time_import(module, root, 1, env)  # compiles the checkout's cache once
            cached_ms, _cpu, _imported = time_import(module, root, runs, env)
            rows.append(dict(module=module, shipped=count, imported=len(imported), source_kib=source_kib(imported),
                             payload_ms=payload_ms, payload_cpu_ms=payload_cpu_ms, cached_ms=cached_ms, modules=imported))
            print("%-20s shipped %3d  imported %3d (%6.1f KiB)  payload %7.1f ms (CPU %7.1f ms)  cached %7.1f ms"
                  % (module, count, len(imported), rows[-1]["source_kib"], payload_ms, payload_cpu_ms, cached_ms), file=sys.stderr)
    return rows


def markdown(rows):
    lines = ["| module | files shipped | files imported | source imported, KiB | import from the payload, ms | CPU, ms | "
             "import, compiled code cached, ms |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    if rows and all("payload_ms" not in row for row in rows):
        lines = ["| module | files shipped | files imported | source imported, KiB |", "|---|---:|---:|---:|"]
        for row in rows:
            lines.append("| %s | %d | %s | %s |" % (
                row["module"], row["shipped"], row.get("imported", "not importable"), row.get("source_kib", "")))
        return "\n".join(lines)
    for row in rows:
        if "error" in row:
            lines.append("| %s | %d | not importable: %s | | | | |" % (row["module"], row["shipped"], row["error"].replace("|", "/")))
            continue
        lines.append("| %s | %d | %d | %.1f | %.1f | %.1f | %.1f |" % (
            row["module"], row["shipped"], row["imported"], row["source_kib"], row["payload_ms"], row["payload_cpu_ms"], row["cached_ms"]))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=7, help="interpreters per module and way (the median is kept)")
    parser.add_argument("--module", action="append", help="only this module (repeatable)")
    parser.add_argument("--json", help="also write the rows, with the names of the files imported, to this file")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--count-only", action="store_true", help="files and KiB only, no timing (quick, load-independent)")
    args = parser.parse_args()
    modules = args.module or sorted(name[:-3] for name in os.listdir(os.path.join(REPO, "plugins", "modules"))
                                    if name.endswith(".py") and not name.startswith("_"))
    rows = count_only(modules) if args.count_only else measure(modules, args.runs)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1, sort_keys=True)
    if args.markdown:
        print(markdown(rows))
    else:
        for row in rows:
            print(json.dumps(dict((k, v) for k, v in row.items() if k != "modules"), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
