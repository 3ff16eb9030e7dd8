# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``rdmaops.roce.monitor_collector``: the collector, its timer and the intent snapshot in one call.

Five files, each written only when its text differs, and the timer's state:

* ``/usr/local/sbin/rdmaops-roce-collector``: the collector script, generated from the
  collection's own code (:mod:`.bundle`), run by the interpreter Ansible uses on the host;
* ``/etc/rdmaops/monitor-intent.json``: the resolved fabric intent the drift checks compare with,
  the host's inventory name (the findings' words) and the interval;
* ``rdmaops-roce-monitor.service`` (oneshot, read-only file system but the textfile directory)
  and ``rdmaops-roce-monitor.timer`` (every ``interval`` seconds), enabled through
  ``timers.target.wants`` and started when systemd runs;
* the textfile directory, created when absent (node_exporter's package creates it too).

It also reports, without changing it, whether node_exporter is installed, enabled and running,
so the role installs the package only where it is missing: a no-op run is this one call.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.persistence import SYSTEMD_DIR, daemon_reload, set_link
from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import COLLECTION_VERSION, TEXTFILE_NAME, bundle
from ansible_collections.rdmaops.roce.plugins.module_utils._validate.intent import check_intent

SCRIPT_PATH = "/usr/local/sbin/rdmaops-roce-collector"
SNAPSHOT_PATH = "/etc/rdmaops/monitor-intent.json"
SERVICE = "rdmaops-roce-monitor.service"
TIMER = "rdmaops-roce-monitor.timer"
TIMER_WANTS = SYSTEMD_DIR + "/timers.target.wants"
UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
MARKER = "# Managed by rdmaops.roce (monitor): this whole file is rewritten on every run."
_DIR = re.compile(r"/[A-Za-z0-9._@+/-]*")
_UNIT = re.compile(r"[A-Za-z0-9:_.@-]+\.service")

SERVICE_TEXT = """%(marker)s
[Unit]
Description=rdmaops.roce RoCE metrics for node_exporter's textfile collector
Documentation=https://github.com/rdmaops/roce/blob/main/docs/monitoring.md
After=systemd-modules-load.service rdma-load-modules@rdma.service openibd.service

[Service]
Type=oneshot
ExecStart=%(python)s %(script)s --intent %(snapshot)s --textfile-dir %(textfile_dir)s
# it reads the host and writes one file
Nice=10
ProtectSystem=strict
ReadWritePaths=%(textfile_dir)s
ProtectHome=yes
# the collector keeps its compiled code here ($CACHE_DIRECTORY): a run after the first only loads it
CacheDirectory=rdmaops-roce-collector
PrivateTmp=yes
NoNewPrivileges=yes
# a run takes a fraction of a second on a server, tens of seconds in an emulated VM; the timer never
# starts a second one while one runs
TimeoutStartSec=%(timeout)ds
"""

TIMER_TEXT = """%(marker)s
[Unit]
Description=Run the rdmaops.roce RoCE collector every %(interval)ds
Documentation=https://github.com/rdmaops/roce/blob/main/docs/monitoring.md

[Timer]
OnActiveSec=1s
OnUnitActiveSec=%(interval)ds
AccuracySec=1s

[Install]
WantedBy=timers.target
"""


def textfile_directory(path):
    """node_exporter's textfile directory as the module writes it into the service unit."""
    path = path or "/var/lib/prometheus/node-exporter"
    if not _DIR.fullmatch(path) or ".." in path.split("/") or path == "/":
        raise InputError("textfile_dir=%r must be an absolute directory path of letters, digits and ._@+- (no '..', no "
                         "spaces: it goes into a systemd unit), e.g. /var/lib/prometheus/node-exporter" % (path,),
                         option="textfile_dir")
    return path.rstrip("/")


def service_unit(service):
    """node_exporter's unit name as the module reads it (``.service`` added when left out)."""
    service = service or "prometheus-node-exporter.service"
    if not service.endswith(".service"):
        service += ".service"
    if not _UNIT.fullmatch(service):
        raise InputError("node_exporter_service=%r is not a systemd service name" % (service,), option="node_exporter_service")
    return service


def wanted_texts(python, intent, host_name, interval, textfile_dir, script=None):
    """``{path: text}`` of the four files ``state=present`` writes (the script rendered unless given):
    the module plans with it, and the monitor role's no-op check (roce_monitor_current) compares
    the preflight's read of the host with it on the controller."""
    snapshot = {"_comment": MARKER.lstrip("# "), "collection_version": COLLECTION_VERSION, "host": host_name,
                "interval": interval, "intent": intent}
    return {
        SCRIPT_PATH: script if script is not None else bundle.render_script(python, COLLECTION_VERSION),
        SNAPSHOT_PATH: json.dumps(snapshot, indent=1, sort_keys=True, default=str) + "\n",
        "%s/%s" % (SYSTEMD_DIR, SERVICE): SERVICE_TEXT % dict(
            marker=MARKER, python=python, script=SCRIPT_PATH, snapshot=SNAPSHOT_PATH,
            textfile_dir=textfile_dir, timeout=max(120, 8 * interval)),
        "%s/%s" % (SYSTEMD_DIR, TIMER): TIMER_TEXT % dict(marker=MARKER, interval=interval),
    }


def _payload():
    """Never called. The module writes the collector from the sources of the collector and of what it
    imports (:mod:`.bundle` reads them through the import system, without running them); Ansible's
    AnsiballZ builder puts a module_utils file in the module's payload only when an import names it,
    wherever the import is, so this one does."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._monitor import collector  # noqa: F401 pylint: disable=unused-import


class MonitorCollector(Engine):
    commands_key = "commands"

    def __init__(self, ctx, params):
        super(MonitorCollector, self).__init__(ctx, params)
        self.state = None
        self.textfile_dir = None
        self.interval = None
        self.live = False
        self.active = {}
        self.node_exporter = None
        self.texts = {}

    # validate -------------------------------------------------------------------------------
    def validate(self):
        params = self.params
        self.state = params.get("state") or "present"
        if self.state not in ("present", "absent"):
            raise InputError("state must be present or absent, got %r" % (self.state,), option="state")
        self.textfile_dir = textfile_directory(params.get("textfile_dir"))
        self.node_exporter = dict(service=service_unit(params.get("node_exporter_service")))
        if self.state == "absent":
            return
        interval = params.get("interval", 15)
        if isinstance(interval, bool) or not isinstance(interval, int) or not 1 <= interval <= 3600:
            raise InputError("interval=%r must be a whole number of seconds from 1 to 3600 (monitor_interval, default 15)"
                             % (interval,), option="interval")
        self.interval = interval
        check_intent(params.get("intent"))
        host = params.get("host_name")
        if not isinstance(host, str) or not host.strip() or "\n" in host:
            raise InputError("host_name must be the host's inventory name (inventory_hostname)", option="host_name")

    # read -----------------------------------------------------------------------------------
    def read(self):
        self.live = self.host.is_live and self.host.isdir("/run/systemd/system") and self.runner.has("systemctl")
        units = [TIMER, self.node_exporter["service"]]
        if self.live:
            # one call for both: is-active prints one state per unit, rc 3 when any is not active
            result = self.runner.run(["systemctl", "is-active"] + units, check=False)
            states = (result.stdout or "").split()
            if len(states) == len(units):
                self.active = dict(zip(units, states))
        service = self.node_exporter["service"]
        self.node_exporter.update(
            installed=any(self.host.exists("%s/%s" % (d, service)) for d in UNIT_DIRS),
            enabled=self.host.exists("%s/multi-user.target.wants/%s" % (SYSTEMD_DIR, service)),
            active=self.active.get(service) == "active" if self.live else None)

    # plan -----------------------------------------------------------------------------------
    def plan(self, plan):
        present = self.state == "present"
        if present:
            python = self.params.get("python") or sys.executable
            self.texts = wanted_texts(python, self.params["intent"], self.params["host_name"], self.interval,
                                      self.textfile_dir)
            if not self.host.isdir(self.textfile_dir):
                plan.add("textfile_dir", None, self.textfile_dir, self._make_textfile_dir,
                         "create %s (node_exporter's textfile directory)" % self.textfile_dir)
        adopt = bool(self.params.get("adopt"))
        for path, mode in ((SCRIPT_PATH, 0o755), (SNAPSHOT_PATH, 0o644), ("%s/%s" % (SYSTEMD_DIR, SERVICE), 0o644),
                           ("%s/%s" % (SYSTEMD_DIR, TIMER), 0o644)):
            plan.file(self.host, path, self.texts.get(path), mode=mode, adopt=adopt, option="monitor_collector",
                      shown=bundle.for_diff if path == SCRIPT_PATH else None)
        if not present:
            plan.file(self.host, "%s/%s" % (self.textfile_dir, TEXTFILE_NAME), None, option="textfile_dir")
        units_changed = any(change.key in ("%s/%s" % (SYSTEMD_DIR, SERVICE), "%s/%s" % (SYSTEMD_DIR, TIMER)) for change in plan)
        wants = "%s/%s" % (TIMER_WANTS, TIMER)
        before = self._link(wants)
        after = "%s/%s" % (SYSTEMD_DIR, TIMER) if present else None
        plan.add("timer_enabled", before, after, lambda: set_link(self.host, wants, after),
                 "%s %s" % ("enable" if present else "disable", TIMER), undo=lambda: set_link(self.host, wants, before))
        if not self.live:
            return
        active = self.active.get(TIMER) == "active"
        if present and not active:
            # systemd must know the new or changed units before the timer starts: the reload is part of the start
            plan.add("timer_active", "inactive", "active", lambda: self._start(units_changed), "start %s" % TIMER,
                     undo=lambda: self._systemctl("stop", TIMER))
        elif present and units_changed:
            plan.then("systemctl daemon-reload", lambda: daemon_reload(self.host, self.runner))
            plan.then("systemctl restart %s" % TIMER, lambda: self._systemctl("restart", TIMER))
        elif not present and active:
            plan.add("timer_active", "active", "inactive", lambda: self._systemctl("stop", TIMER), "stop %s" % TIMER)
        if not present and units_changed:
            plan.then("systemctl daemon-reload", lambda: daemon_reload(self.host, self.runner))
        if present and plan.changed:
            # collect once now, so the metrics follow the new intent without waiting for the timer
            plan.then("systemctl start --no-block %s" % SERVICE, lambda: self._systemctl("start", "--no-block", SERVICE))

    def _make_textfile_dir(self):
        os.makedirs(self.host.path(self.textfile_dir), 0o755)

    def _link(self, path):
        try:
            return os.readlink(self.host.path(path))
        except OSError:
            return None

    def _start(self, reload_first):
        if reload_first:
            daemon_reload(self.host, self.runner)
        self._systemctl("start", TIMER)

    def _systemctl(self, *args):
        self.runner.run(["systemctl"] + list(args))

    # result ---------------------------------------------------------------------------------
    def result(self):
        return dict(
            state=self.state,
            paths=dict(script=SCRIPT_PATH, snapshot=SNAPSHOT_PATH, service="%s/%s" % (SYSTEMD_DIR, SERVICE),
                       timer="%s/%s" % (SYSTEMD_DIR, TIMER), textfile="%s/%s" % (self.textfile_dir, TEXTFILE_NAME)),
            interval=self.interval,
            timer=dict(enabled=self._link("%s/%s" % (TIMER_WANTS, TIMER)) is not None,
                       active=(self.active.get(TIMER) == "active") if self.live else None),
            node_exporter=self.node_exporter,
        )
