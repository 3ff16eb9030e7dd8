# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rdmaops.roce.validate_probe does on a host: many reads and pings in one round trip.

Under emulation, or on a fleet, each module execution costs seconds; the validate role therefore
runs several of its steps on a host as one call of this engine instead of one task per command.
:func:`run_commands` runs commands one after another, each as the ``command`` module would
(``rc``, ``stdout`` and ``stderr`` with their trailing newlines cut, ``cmd`` the argv), with
Ansible's ``until``/``retries``/``delay`` rule when a command asks for it: run again after
``delay`` seconds until it exits 0, or exits 124 (``timeout``: it hung) after at least ``attempts``
runs, at most ``1 + retries`` runs.  :func:`run_concurrently` runs them all at once instead (the
perftest servers, which must all listen before the clients of another host start).

Nothing here changes the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time

TIMED_OUT = 124


def _cut(text):
    return (text or "").rstrip("\r\n")


def _run_one(run, command, sleep):
    """``command`` run as a task with ``until``/``retries``/``delay`` would run it; its result."""
    argv = [str(arg) for arg in command["argv"]]
    retries = max(int(command.get("retries") or 0), 0)
    attempts = max(int(command.get("attempts") or 1), 1)
    delay = max(int(command.get("delay") or 0), 0)
    runs = 1 + retries
    for attempt in range(1, runs + 1):
        rc, out, err = run(argv)
        if rc == 0 or (rc == TIMED_OUT and attempt >= attempts) or attempt == runs:
            break
        sleep(delay)
    result = dict(item=command.get("item"), cmd=argv, rc=rc, stdout=_cut(out), stderr=_cut(err))
    if retries:
        result["attempts"] = attempt
    return result


def run_commands(run, commands, sleep=time.sleep):
    """Run ``commands`` in order with ``run(argv) -> (rc, stdout, stderr)``; return one result per
    command: ``item`` (as given), ``cmd``, ``rc``, ``stdout``, ``stderr``, and ``attempts`` (how many
    runs) for a command with ``retries``."""
    return [_run_one(run, command, sleep) for command in commands]


def run_concurrently(run, commands, sleep=time.sleep):
    """As :func:`run_commands`, but every command (with its retries) in a thread of its own, all at
    once; the results in the order of ``commands``, when the last has finished.  A command whose
    ``run`` raised gets rc None and the error as its stderr (the others still finish)."""
    results = [None] * len(commands)

    def one(index, command):
        try:
            results[index] = _run_one(run, command, sleep)
        except Exception as error:  # a thread's error would otherwise vanish: it is this command's result
            results[index] = dict(item=command.get("item"), cmd=[str(arg) for arg in command["argv"]], rc=None,
                                  stdout="", stderr="%s" % (error,))
    threads = [threading.Thread(target=one, args=(index, command)) for index, command in enumerate(commands)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def failed_checks(commands, results):
    """The reads that had to exit 0 (``check``) and did not: one message each."""
    return ["%s exited %s: %s" % (" ".join(result["cmd"][:3]), result["rc"], (result["stderr"] or result["stdout"])[-200:])
            for command, result in zip(commands, results) if command.get("check") and result["rc"] != 0]
