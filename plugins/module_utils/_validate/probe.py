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
perftest servers, which must all listen before the clients of another host start), and
:func:`wait_for_jobs` waits for asynchronous jobs as ``async_status`` with ``until: finished`` would
(the perftest servers, waited for in the call that reads the counters after the tests).

Nothing here changes the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import threading
import time

TIMED_OUT = 124
# an asynchronous job's id as ansible names it (j, a random number, a dot, async_wrapper's pid)
JOB_ID = re.compile(r"j?[0-9]{1,20}\.[0-9]{1,10}")


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


def check_jobs(jobs):
    """The messages for ``jobs`` (``{jid, results_file, seconds}``) that are not an asynchronous
    job's id and its results file as ansible's async_wrapper names them: checked before anything
    is read."""
    bad = []
    for index, job in enumerate(jobs):
        jid = "%s" % (job.get("jid"),)
        path = "%s" % (job.get("results_file"),)
        if not JOB_ID.fullmatch(jid):
            bad.append("wait_jobs[%d].jid must be an asynchronous job's id (j, digits, a dot, digits: the ansible_job_id "
                       "of the task started with async), got %s" % (index, json.dumps(jid[:40])))
        elif not os.path.isabs(path) or os.path.basename(path) != jid:
            bad.append("wait_jobs[%d].results_file must be the job's results file (an absolute path ending in its id %s: the "
                       "results_file of the task started with async), got %s" % (index, jid, json.dumps(path[:200])))
    return bad


def _job_state(path, jid):
    """The job's result when it has finished, None while it runs (as async_status reads it)."""
    try:
        with open(path) as handle:
            data = json.loads(handle.read())
    except (IOError, OSError):
        return dict(ansible_job_id=jid, finished=True, failed=True, msg="could not find job %s (%s)" % (jid, path))
    except ValueError:
        return None  # not written yet
    if not isinstance(data, dict):
        return dict(ansible_job_id=jid, finished=True, failed=True, msg="could not read the result of job %s" % jid)
    if data.get("started") and not data.get("finished"):
        return None
    data.update(ansible_job_id=jid, finished=True)
    return data


def wait_for_jobs(jobs, sleep=time.sleep, clock=time.monotonic, poll=1):
    """Wait for each asynchronous job of ``jobs`` (``{jid, results_file, seconds}``, checked by
    :func:`check_jobs`) until its results file says it finished, at most ``seconds`` from now (after
    which async_wrapper has killed it); return one result each, in order: the job's own result with
    ``finished: true``, or ``{ansible_job_id, finished: false}`` when it had not finished in time."""
    results = []
    start = clock()
    for job in jobs:
        jid = "%s" % job["jid"]
        deadline = start + max(int(job.get("seconds") or 0), 0)
        while True:
            state = _job_state(job["results_file"], jid)
            if state is not None:
                break
            if clock() >= deadline:
                state = dict(ansible_job_id=jid, finished=False, results_file=job["results_file"])
                break
            sleep(poll)
        results.append(state)
    return results
