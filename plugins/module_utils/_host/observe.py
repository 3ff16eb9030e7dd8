# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the files and systemd units a layer owns look like now, read in the preflight's call.

``rdma_facts`` with ``observe`` reports, for each path asked for, what is there (a file's SHA-256,
a symlink's target, a directory) and, where systemd runs, each unit's ``is-active`` state, in
one ``systemctl`` call. A layer whose module would find everything as wanted (the controller
computes what it would write, :mod:`plugins.filter.roce_noop_observe`) is then not run on the host:
the read already made in the run is the cheap check. Nothing here changes the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core import files
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError

_MAX = 64


def _entry(host, path):
    real = host.path(path)
    if os.path.islink(real):
        try:
            return dict(type="link", target=os.readlink(real))
        except OSError:
            return dict(type="other")
    if os.path.isdir(real):
        return dict(type="dir")
    if os.path.isfile(real):
        digest = files.sha256(host, path)
        return dict(type="file", sha256=digest) if digest else dict(type="other")
    return dict(type="absent") if not os.path.lexists(real) else dict(type="other")


def _text(host, path):
    """A small file's text (/proc/net/route), None when absent, unreadable or over 64 KiB."""
    data = files.read_bytes(host, path)
    if data is None or len(data) > _MAX * 1024:
        return None
    return files.decode(data)


def observe(host, runner, spec):
    """``{files: {path: {type, sha256 | target}}, texts: {path: text | None}, systemd: bool,
    units: {unit: state | None}}``."""
    spec = spec or {}
    paths = list(spec.get("files") or [])
    texts = list(spec.get("texts") or [])
    units = list(spec.get("units") or [])
    if len(paths) > _MAX or len(units) > _MAX or len(texts) > _MAX:
        raise InputError("observe: at most %d files, texts and units each" % _MAX, option="observe")
    for path in paths + texts:
        if not isinstance(path, str) or not path.startswith("/"):
            raise InputError("observe.files: %r is not an absolute path" % (path,), option="observe")
    for unit in units:
        if not isinstance(unit, str) or not unit or unit.startswith("-") or "/" in unit or any(c.isspace() for c in unit):
            raise InputError("observe.units: %r is not a systemd unit name" % (unit,), option="observe")
    out = dict(files=dict((path, _entry(host, path)) for path in paths),
               texts=dict((path, _text(host, path)) for path in texts))
    live = host.is_live and host.isdir("/run/systemd/system") and runner is not None and runner.has("systemctl")
    out["systemd"] = bool(live)
    states = {}
    if live and units:
        # one call for every unit: is-active prints one state per unit (rc 3 when any is not active)
        result = runner.run(["systemctl", "is-active"] + units, check=False)
        words = (result.stdout or "").split()
        if len(words) == len(units):
            states = dict(zip(units, words))
    out["units"] = dict((unit, states.get(unit) if live else None) for unit in units)
    return out
