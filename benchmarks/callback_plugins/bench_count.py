# Copyright: (c) 2026, rdmaops developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Counts, per host, what a run costs: task results, module executions and remote round trips.

Part of benchmarks/ (not of the collection's plugins): benchmarks/fleet.py enables it with
ANSIBLE_CALLBACKS_ENABLED=bench_count and ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins.

Task results arrive here as callback events. Module executions and the commands and file
transfers that carry them happen in the worker processes, which the callback never sees, so
this module wraps three ActionBase methods when it is imported (in the controller's main
process, before the workers are forked; the workers inherit the wrapped methods) and each
wrapped call appends one line to the file named by RDMAOPS_BENCH_EVENTS. Lines of a few dozen
bytes written with O_APPEND do not interleave between processes.

At the end of the run the callback writes RDMAOPS_BENCH_SUMMARY (JSON), per host:
tasks (results of any status, skipped ones included), skipped, changed, and from the workers'
lines: modules (module executions, by name) and round trips (remote commands + file transfers).
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter, defaultdict

from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: bench_count
type: aggregate
short_description: count tasks, module executions and round trips per host (benchmarks only)
description:
  - Writes per-host counts to the JSON file named by E(RDMAOPS_BENCH_SUMMARY).
requirements:
  - E(RDMAOPS_BENCH_EVENTS) names a file the worker processes append to.
"""

EVENTS_ENV = "RDMAOPS_BENCH_EVENTS"
SUMMARY_ENV = "RDMAOPS_BENCH_SUMMARY"


def _host_of(action):
    """The inventory name the action talks to (the benchmark's hosts have no ansible_host)."""
    connection = getattr(action, "_connection", None)
    try:
        return connection.get_option("remote_addr")
    except Exception:  # pylint: disable=broad-except
        return getattr(getattr(action, "_play_context", None), "remote_addr", None) or "?"


def _record(kind, action, name=""):
    path = os.environ.get(EVENTS_ENV)
    if not path:
        return
    line = ("%s\t%s\t%s\n" % (_host_of(action), kind, name)).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _wrap(method, kind, name_of=None):
    if getattr(method, "_bench_wrapped", False):
        return method

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        _record(kind, self, name_of(self, args, kwargs) if name_of else "")
        return method(self, *args, **kwargs)

    wrapper._bench_wrapped = True
    return wrapper


def _module_name(action, args, kwargs):
    name = kwargs.get("module_name", args[0] if args else None)
    return name or action._task.action


ActionBase._execute_module = _wrap(ActionBase._execute_module, "module", _module_name)
ActionBase._low_level_execute_command = _wrap(ActionBase._low_level_execute_command, "command")
ActionBase._transfer_data = _wrap(ActionBase._transfer_data, "transfer")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.results = defaultdict(Counter)

    def _count(self, result, status):
        host = result._host.get_name()
        self.results[host]["tasks"] += 1
        self.results[host][status] += 1
        if status == "ok" and result._result.get("changed"):
            self.results[host]["changed"] += 1

    def v2_runner_on_ok(self, result):
        self._count(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._count(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._count(result, "unreachable")

    def _summarize(self):
        hosts = defaultdict(lambda: dict(modules=Counter(), commands=0, transfers=0))
        path = os.environ.get(EVENTS_ENV)
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as events:
                for line in events:
                    host, kind, name = (line.rstrip("\n").split("\t") + ["", ""])[:3]
                    if kind == "module":
                        hosts[host]["modules"][name] += 1
                    elif kind == "command":
                        hosts[host]["commands"] += 1
                    elif kind == "transfer":
                        hosts[host]["transfers"] += 1
        summary = {}
        for host in sorted(set(hosts) | set(self.results)):
            counted = hosts[host]
            summary[host] = dict(
                tasks=self.results[host]["tasks"],
                skipped=self.results[host]["skipped"],
                changed=self.results[host]["changed"],
                failed=self.results[host]["failed"] + self.results[host]["unreachable"],
                modules=dict(sorted(counted["modules"].items())),
                module_executions=sum(counted["modules"].values()),
                round_trips=counted["commands"] + counted["transfers"],
            )
        return summary

    def _write(self):
        path = os.environ.get(SUMMARY_ENV)
        if path:
            with open(path, "w", encoding="utf-8") as out:
                json.dump(self._summarize(), out, indent=1, sort_keys=True)

    def v2_playbook_on_stats(self, stats):
        self._write()
