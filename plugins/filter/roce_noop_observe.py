# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A no-op run's cheap checks, on the controller (see roce_noop_observe.yml, roce_noop_modules.yml,
roce_noop_nccl.yml, roce_monitor_scripts.yml and roce_noop_monitor.yml).

site.yml's preflight reads, in its one rdma_facts call, the files and units that the RDMA core
modules' task, nccl_conf and the monitor's collector own (``observe``), with the RDMA state. These filters compute what those
modules would write, with the modules' own functions, and say whether the host already has it:
only then is the module left out. Anything unexpected (an input the module would refuse, a path
not read, an interpreter not known) answers False, and the module runs and says what it says."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core import files as owned
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import SYSTEMD_DIR
from ansible_collections.rdmaops.roce.plugins.module_utils._kmod import engine as kmod
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import COLLECTION_VERSION, bundle
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import install as monitor
from ansible_collections.rdmaops.roce.plugins.module_utils._nccl import conf as nccl
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.intent import check_intent

KMOD_OWNER = "rdmaops.roce.kernel_modules"


def _sha(text):
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _monitor_paths(textfile_dir, service):
    unit = "%s/%s" % (SYSTEMD_DIR, monitor.TIMER)
    files = [monitor.SCRIPT_PATH, monitor.SNAPSHOT_PATH, "%s/%s" % (SYSTEMD_DIR, monitor.SERVICE), unit,
             "%s/%s" % (monitor.TIMER_WANTS, monitor.TIMER), textfile_dir]
    files += ["%s/%s" % (directory, service) for directory in monitor.UNIT_DIRS]
    files.append("%s/multi-user.target.wants/%s" % (SYSTEMD_DIR, service))
    return files, [monitor.TIMER, service]


def roce_noop_observe(monitor_on, textfile_dir=None, node_exporter_service=None, nccl_conf_path=None):
    """rdma_facts' ``observe``: the RDMA core modules' two files, NCCL's file and the default route,
    and the monitor's files and units when it is on."""
    files = [kmod.DEFAULT_MODULES_LOAD_FILE, kmod.DEFAULT_MODPROBE_FILE]
    nccl_path = nccl_conf_path or nccl.DEFAULT_PATH
    if isinstance(nccl_path, string_types) and nccl_path.startswith("/"):
        files.append(nccl_path)
    units = []
    if monitor_on:
        try:
            more, units = _monitor_paths(monitor.textfile_directory(textfile_dir),
                                         monitor.service_unit(node_exporter_service))
        except RdmaopsError:
            more, units = [], []  # the module refuses it and names the option
        files += more
    return dict(files=files, texts=[nccl.ROUTE_TABLE], units=units)


def _files(observed):
    if not isinstance(observed, Mapping) or not isinstance(observed.get("files"), Mapping):
        return None
    return observed["files"]


def _is_file(files, path, text):
    entry = files.get(path)
    if text is None:
        return isinstance(entry, Mapping) and entry.get("type") == "absent"
    return isinstance(entry, Mapping) and entry.get("type") == "file" and entry.get("sha256") == _sha(text)


def roce_noop_modules(observed, modules):
    """True when kernel_modules with its defaults would change nothing: rdma_cm, ib_uverbs and ib_umad
    loaded or built in (rdma_facts' ``modules``), the modules-load file holding exactly them and no
    options file."""
    files = _files(observed)
    if files is None or not isinstance(modules, Mapping):
        return False
    if not all(modules.get(name) is True for name in kmod.DEFAULT_NAMES):
        return False
    return (_is_file(files, kmod.DEFAULT_MODULES_LOAD_FILE, kmod.render_modules_load(KMOD_OWNER, list(kmod.DEFAULT_NAMES)))
            and _is_file(files, kmod.DEFAULT_MODPROBE_FILE, kmod.render_modprobe(KMOD_OWNER, {})))


def roce_monitor_scripts(pythons):
    """``{interpreter: SHA-256}`` of the collector script monitor_collector writes for each interpreter
    (rendered once per run: the script carries every module the collector imports)."""
    if isinstance(pythons, (string_types, Mapping)) or not hasattr(pythons, "__iter__"):
        raise AnsibleFilterError("roce_monitor_scripts expects a list of interpreter paths")
    out = {}
    for python in pythons:
        if isinstance(python, string_types) and python and python not in out:
            out[str(python)] = _sha(bundle.render_script(str(python), COLLECTION_VERSION))
    return out


def roce_noop_monitor(observed, settings, scripts):
    """True when monitor_collector (state present) would change nothing and report node_exporter
    installed, enabled and running (or monitor_install_node_exporter is off)."""
    files = _files(observed)
    if files is None or not isinstance(settings, Mapping) or not isinstance(scripts, Mapping):
        return False
    python = settings.get("python")
    if not isinstance(python, string_types) or python not in scripts:
        return False
    try:
        textfile_dir = monitor.textfile_directory(settings.get("textfile_dir"))
        service = monitor.service_unit(settings.get("node_exporter_service"))
        interval = settings.get("interval", 15)
        if isinstance(interval, bool) or not isinstance(interval, int) or not 1 <= interval <= 3600:
            return False
        # the module gets the intent as JSON (integer keys become strings): the snapshot is written from that
        intent = json.loads(json.dumps(settings.get("intent"), default=str))
        check_intent(intent)
        texts = monitor.wanted_texts(python, intent, settings.get("host_name"), interval, textfile_dir, script="")
    except (RdmaopsError, TypeError, ValueError):
        return False
    texts.pop(monitor.SCRIPT_PATH)
    script = files.get(monitor.SCRIPT_PATH)
    if not (isinstance(script, Mapping) and script.get("type") == "file" and script.get("sha256") == scripts[python]):
        return False
    if not all(_is_file(files, path, text) for path, text in texts.items()):
        return False
    wants = files.get("%s/%s" % (monitor.TIMER_WANTS, monitor.TIMER)) or {}
    if (files.get(textfile_dir) or {}).get("type") != "dir" or wants.get("target") != "%s/%s" % (SYSTEMD_DIR, monitor.TIMER):
        return False
    systemd = observed.get("systemd") is True
    units = observed.get("units") or {}
    if systemd and units.get(monitor.TIMER) != "active":
        return False
    if settings.get("install_node_exporter", True):
        installed = any((files.get("%s/%s" % (d, service)) or {"type": "absent"}).get("type") != "absent"
                        for d in monitor.UNIT_DIRS)
        enabled = (files.get("%s/multi-user.target.wants/%s" % (SYSTEMD_DIR, service)) or {"type": "absent"}).get("type") != "absent"
        if not (installed and enabled and (not systemd or units.get(service) == "active")):
            return False
    return True


class _Unread:
    """No host behind the engine: the no-op check gives it what the preflight read."""
    host = runner = None


def roce_noop_nccl(observed, rdma, params):
    """True when nccl_conf (state present) would change nothing: its file holds only our block, with the
    values the module computes from the RDMA state ``rdma`` and the default route the preflight read,
    and no port is left out (the module would warn about it)."""
    files = _files(observed)
    if files is None or not isinstance(rdma, Mapping) or not isinstance(params, Mapping):
        return False
    params = dict((key, value) for key, value in params.items() if value is not None)
    try:
        engine = nccl.NcclConf(_Unread(), params)
        engine.validate()
        if engine.state != "present":
            return False
        route = (observed.get("texts") or {}).get(nccl.ROUTE_TABLE)
        if not engine.socket_ifname and route is None:
            return False
        engine.wanted(rdma, None if engine.socket_ifname else nccl.route_interface(route))
    except (RdmaopsError, TypeError, ValueError, KeyError, AttributeError):
        return False
    if engine.skipped:
        return False
    text = owned.merge_block("", nccl.render_block(engine.settings, engine.extra), nccl.BLOCK)
    return _is_file(files, engine.path, text)


class FilterModule:
    def filters(self):
        return {"roce_noop_observe": roce_noop_observe, "roce_noop_modules": roce_noop_modules,
                "roce_monitor_scripts": roce_monitor_scripts, "roce_noop_monitor": roce_noop_monitor,
                "roce_noop_nccl": roce_noop_nccl}
