# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collector script, generated from the collection's own code.

systemd runs the collector between Ansible runs, where no AnsiballZ payload exists, yet it must
read the host with the same readers and judge drift with the same checks as the modules do
(a copy would drift from them). So the script is generated from one source, as the NIC layer's
boot re-apply is: :func:`render_script` takes the source of :mod:`.collector` and of every
module it imports at module level, recursively (the collection's ``module_utils`` and the one
piece of ansible they use, ``ansible.module_utils.six``), and writes them into one Python file
with a small importer that serves them from memory. The sources are read through the import
system (``loader.get_source``), so the module gets them from its AnsiballZ zip on the host, and a
test gets them from the checkout: the same bytes either way, so a second run changes nothing.

Imports inside functions are not followed (``rdma_facts`` imports ansible's fact collectors
there, only for ``os_facts``, which the collector never asks for); a module-level import of any
other part of ansible is refused here, so the script never needs ansible on the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import hashlib
import importlib
import importlib.util
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError

COLLECTION = "ansible_collections.rdmaops.roce.plugins.module_utils"
ENTRY = COLLECTION + "._monitor.collector"
# ansible modules the bundle may carry (each must import nothing else of ansible at module level)
FOREIGN = ("ansible.module_utils.six",)
MARKER = "# Managed by rdmaops.roce (monitor): this whole file is rewritten on every run."

HEAD = '''#!%(python)s
%(marker)s
# rdmaops.roce %(version)s RoCE collector: reads the RDMA ports' counters, the state the fabric intent
# sets and the host's drift from it, and writes them for node_exporter's textfile collector
# (rdmaops-roce-monitor.timer runs it). Generated from the collection's own code (%(count)d modules,
# below), the same readers and checks the modules and fabric_check use; edit the collection, not this file.
# It only reads the host; its one write is the metrics file, replaced atomically.
import importlib.abc
import importlib.util
import linecache
import marshal
import os
import sys

'''

TAIL = '''
BUNDLE = "%(digest)s"


class _Bundled(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the modules above from memory; their parent packages are empty ones. The compiled code is
    kept in systemd's CacheDirectory (rdmaops-roce-monitor.service) per bundle and Python version, so a
    run after the first only loads it."""

    def __init__(self, cache_dir):
        self.cache = os.path.join(cache_dir, "%%s-%%s.marshal" %% (BUNDLE, sys.implementation.cache_tag)) if cache_dir else None
        self.codes = {}
        self.fresh = False
        if self.cache:
            try:
                with open(self.cache, "rb") as handle:
                    self.codes = marshal.load(handle)
            except (OSError, ValueError, EOFError, TypeError):
                self.codes = {}

    def find_spec(self, name, path=None, target=None):
        if name in SOURCES:
            return importlib.util.spec_from_loader(name, self, is_package=SOURCES[name][0])
        if any(other.startswith(name + ".") for other in SOURCES):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        # anything else: the next finder (six's own for six.moves); the empty parent packages
        # keep an ansible installed on the host out
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        is_package, source = SOURCES.get(module.__name__, (True, ""))
        if is_package:
            module.__path__ = []
        filename = "<rdmaops-roce-collector>/%%s.py" %% module.__name__.replace(".", "/")
        # tracebacks show the bundled lines
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        code = self.codes.get(module.__name__)
        if code is None:
            code = self.codes[module.__name__] = compile(source, filename, "exec")
            self.fresh = True
        exec(code, module.__dict__)

    def save(self):
        """Keep what this run compiled (atomically; older bundles' caches go)."""
        if not (self.cache and self.fresh):
            return
        directory = os.path.dirname(self.cache)
        try:
            for name in os.listdir(directory):
                if name.endswith(".marshal") and os.path.join(directory, name) != self.cache:
                    os.unlink(os.path.join(directory, name))
            tmp = "%%s.%%d.tmp" %% (self.cache, os.getpid())
            with open(tmp, "wb") as handle:
                marshal.dump(self.codes, handle)
            os.rename(tmp, self.cache)
        except OSError:
            pass  # no cache: the next run compiles again


_BUNDLED = _Bundled(os.environ.get("CACHE_DIRECTORY", "").split(":")[0])
sys.meta_path.insert(0, _BUNDLED)

if __name__ == "__main__":
    from %(entry)s import main

    # kept before the run: a slow first run (an emulated VM) still leaves the next one the compiled code
    _BUNDLED.save()
    sys.exit(main())
'''


def _source(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.loader is None:
        return None
    source = spec.loader.get_source(name)
    if source is None:
        raise RdmaopsError("the source of %s is not available to build the collector" % name)
    if isinstance(source, bytes):
        # ansible's collection loader on the controller answers bytes, zipimport on the host text:
        # the same script either way (the monitor role's no-op check renders it on the controller)
        source = source.decode("utf-8")
    return spec.submodule_search_locations is not None, source


def _module_level_imports(name, source, is_package):
    """The modules ``source`` imports outside functions and classes (absolute names)."""
    found = []
    package = name if is_package else name.rpartition(".")[0]

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                if base == "__future__":
                    continue
                found.append(base)
                found.extend("%s.%s" % (base, alias.name) for alias in node.names)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))
    visit(ast.parse(source).body)
    return found


def _ours(name):
    if name == COLLECTION or name.startswith(COLLECTION + "."):
        return name
    for foreign in FOREIGN:
        if name == foreign or name.startswith(foreign + "."):
            return foreign  # six.moves.* are served by six itself
    if name.split(".")[0] == "ansible":
        raise RdmaopsError("the collector imports %s at module level: it must run without ansible on the host "
                           "(import it inside the function that needs it, or add it to bundle.FOREIGN)" % name)
    return None


_CLOSURES = {}


def closure(entry=ENTRY):
    """``{module name: (is_package, source)}`` of ``entry`` and what it imports, recursively
    (computed once per process: the sources do not change under a running module)."""
    if entry not in _CLOSURES:
        _CLOSURES[entry] = _closure(entry)
    return _CLOSURES[entry]


def _closure(entry):
    modules = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in modules:
            continue
        found = _source(name)
        if found is None:
            continue  # "from package import attribute": the attribute is no module
        modules[name] = found
        for imported in _module_level_imports(name, found[1], found[0]):
            mapped = _ours(imported)
            if mapped and mapped not in modules:
                todo.append(mapped)
    return modules


# one bundled module in the script: "    'name': (is_package, 'source'),"
_SOURCE_LINE = re.compile(r"^    ('[^']*'): \((True|False), (.*)\),$")


def for_diff(script):
    """``script`` as a diff shows it: each bundled module's source (a few hundred kilobytes in all)
    as one line with its SHA-256 and size, so a diff names the modules that changed between two
    collection versions instead of printing them whole; any other text as it is."""
    if script is None:
        return None
    out = []
    for line in script.split("\n"):
        found = _SOURCE_LINE.match(line)
        if found:
            source = found.group(3).encode("utf-8", "surrogateescape")
            line = "    %s: source of %d bytes, sha256 %s%s" % (
                found.group(1), len(source), hashlib.sha256(source).hexdigest()[:16], " (package)" if found.group(2) == "True" else "")
        out.append(line)
    return "\n".join(out)


def render_script(python, version, entry=ENTRY):
    """The collector script, run by ``python``."""
    modules = closure(entry)
    lines = [HEAD % dict(python=python, marker=MARKER, version=version, count=len(modules)), "SOURCES = {"]
    for name in sorted(modules):
        is_package, source = modules[name]
        lines.append("    %r: (%r, %r)," % (name, is_package, source))
    lines.append("}")
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
    return "\n".join(lines) + TAIL % dict(entry=entry, digest=digest)
