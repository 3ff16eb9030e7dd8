# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate CONFIG_DB tables against SONiC's own YANG models with libyang's ``yanglint``.

The models are sonic-net/sonic-buildimage src/sonic-yang-models, committed unmodified as test data
under tests/unit/fixtures/sonic_yang/<release>/ (no package registry ships them; see the README
there).  sonic-types and sonic-extension are jinja2 templates upstream; they are rendered here the
way sonic-yang-models' setup.py renders them for the non-CVL models.

CONFIG_DB is translated to YANG XML the way SONiC's sonic-yang-mgmt maps it: ``TABLE`` becomes
``<sonic-x><TABLE><TABLE_LIST>`` with the key split on ``|`` into the list's key leaves, and the
maps (``DSCP_TO_TC_MAP|name``'s ``{"26": "3"}``) become an inner list named like the table.  XML
needs no typed values (JSON would: uint64 as strings, booleans as literals), so the strings of
CONFIG_DB go in as they are and libyang checks their types, ranges, patterns, must and leafrefs.
Tables not listed in :data:`TABLES` are not validated (this oracle covers what switch_roce writes
and what it references).

Used by the unit tests and by the container stand-in of ``config apply-patch``.  Runs with the
Python 3 standard library plus jinja2; needs ``yanglint`` (Debian: libyang-tools).
"""

import os
import re
import shutil
import subprocess
import tempfile
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.environ.get("SONIC_YANG_MODELS") or os.path.join(
    os.path.dirname(os.path.dirname(HERE)), "unit", "fixtures", "sonic_yang")

# table: (module, key leaves, (inner list key, inner value) for map tables)
TABLES = {
    "DEVICE_METADATA": ("sonic-device_metadata", None, None),
    "PORT": ("sonic-port", ("name",), None),
    "BUFFER_POOL": ("sonic-buffer-pool", ("name",), None),
    "BUFFER_PROFILE": ("sonic-buffer-profile", ("name",), None),
    "BUFFER_PG": ("sonic-buffer-pg", ("port", "pg_num"), None),
    "BUFFER_QUEUE": ("sonic-buffer-queue", ("port", "qindex"), None),
    "DSCP_TO_TC_MAP": ("sonic-dscp-tc-map", ("name",), ("dscp", "tc")),
    "TC_TO_QUEUE_MAP": ("sonic-tc-queue-map", ("name",), ("tc", "qindex")),
    "TC_TO_PRIORITY_GROUP_MAP": ("sonic-tc-priority-group-map", ("name",), ("tc", "pg")),
    "MAP_PFC_PRIORITY_TO_QUEUE": ("sonic-pfc-priority-queue-map", ("name",), ("pfc_priority", "qindex")),
    "PORT_QOS_MAP": ("sonic-port-qos-map", ("ifname",), None),
    "WRED_PROFILE": ("sonic-wred-profile", ("name",), None),
    "SCHEDULER": ("sonic-scheduler", ("name",), None),
    "QUEUE": ("sonic-queue", ("ifname", "qindex"), None),
    "PFC_WD": ("sonic-pfcwd", ("ifname",), None),
}
# Models the top-level modules need (imports), loaded from the same directory.
NAMESPACE_RE = re.compile(r'^\s*namespace\s+"([^"]+)"', re.M)


def versions():
    return sorted(name for name in os.listdir(MODELS) if name.isdigit())


def _render_models(version, into):
    source = os.path.join(MODELS, version)
    for name in os.listdir(source):
        path = os.path.join(source, name)
        if name.endswith(".yang"):
            shutil.copy(path, into)
        elif name.endswith(".yang.j2"):
            import jinja2  # only the templated models need it
            env = jinja2.Environment(loader=jinja2.FileSystemLoader(source), trim_blocks=True)
            with open(os.path.join(into, name[:-3]), "w") as stream:
                stream.write(env.get_template(name).render(yang_model_type="py"))


def _namespace(models, module):
    with open(os.path.join(models, module + ".yang")) as stream:
        return NAMESPACE_RE.search(stream.read()).group(1)


def to_xml(config, models):
    """YANG XML of the CONFIG_DB tables this oracle knows."""
    out = []
    for table, rows in config.items():
        if table not in TABLES or not rows:
            continue
        module, keys, inner = TABLES[table]
        out.append('<%s xmlns="%s"><%s>' % (module, _namespace(models, module), table))
        if keys is None:
            for name, row in rows.items():
                out.append("<%s>%s</%s>" % (name, _leaves(row), name))
        else:
            for key, row in rows.items():
                parts = key.split("|", len(keys) - 1)
                if len(parts) != len(keys):
                    raise ValueError("%s key %r does not have the parts %s" % (table, key, "|".join(keys)))
                out.append("<%s_LIST>" % table)
                out.append("".join("<%s>%s</%s>" % (leaf, escape(part), leaf) for leaf, part in zip(keys, parts)))
                if inner:
                    for left, right in row.items():
                        out.append("<%s><%s>%s</%s><%s>%s</%s></%s>" % (
                            table, inner[0], escape(left), inner[0], inner[1], escape(right), inner[1], table))
                else:
                    out.append(_leaves(row))
                out.append("</%s_LIST>" % table)
        out.append("</%s></%s>" % (table, module))
    return "".join(out)


def _leaves(row):
    return "".join("<%s>%s</%s>" % (field, escape(value), field) for field, value in row.items())


def validate(config, version):
    """``[]`` when ``config`` (CONFIG_DB tables) is valid for ``version``'s models, else yanglint's errors."""
    work = tempfile.mkdtemp(prefix="sonic-yang-")
    try:
        models = os.path.join(work, "models")
        os.mkdir(models)
        _render_models(version, models)
        data = os.path.join(work, "config.xml")
        with open(data, "w") as stream:
            stream.write(to_xml(config, models))
        modules = sorted(os.path.join(models, name) for name in os.listdir(models))
        proc = subprocess.run(["yanglint", "-i", "-p", models, "-t", "config"] + modules + [data],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        if proc.returncode == 0:
            return []
        errors = [line for line in proc.stderr.splitlines() if line.startswith(("libyang err", "YANGLINT[E]"))]
        return errors or ["yanglint rc=%d: %s" % (proc.returncode, proc.stderr.strip())]
    finally:
        shutil.rmtree(work)
