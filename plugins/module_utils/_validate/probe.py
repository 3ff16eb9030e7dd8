# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rdmaops.roce.validate_probe does on a host: many reads and measurements in one round trip.

Under emulation, or on a fleet, each module execution costs seconds; the validate role therefore
runs each of its steps on a host as one call of this engine instead of one task per command:

* :func:`run_commands` runs commands one after another, each as the ``command`` module would
  (``rc``, ``stdout`` and ``stderr`` with their trailing newlines cut, ``cmd`` the argv), with
  Ansible's ``until``/``retries``/``delay`` rule when a command asks for it: run again after
  ``delay`` seconds until it exits 0, or exits 124 (``timeout``: it hung) after at least
  ``attempts`` runs, at most ``1 + retries`` runs (a perftest client that finds its server not
  listening yet is refused at once and tries again);
* :func:`start_jobs` starts the perftest servers detached (a session of their own, no terminal,
  no output kept), each through :data:`SERVER_LOOP`, and records each job's process id;
* :func:`stop_jobs` waits for the servers that served their client to finish and ends the ones
  nobody came to (their pair did not reach each other, or the client's host failed): every process
  of the job's session, so a ``timeout`` inside the loop (a process group of its own) ends too.

Nothing here changes the host's configuration; the job directory holds only process ids.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import signal
import subprocess
import time

# A perftest server serves one client run and exits. Started through this loop (sh -c LOOP
# perftest-server ATTEMPTS ARGV...), it listens again after a run that failed or hung, up to
# ATTEMPTS runs, so that the client's next attempt has a server; it stops at the first run that
# succeeded. A run that timed out (124) with no client connected ("local address" is what
# perftest prints once a client has connected) is not an attempt: the server was started before
# its client's turn came and listens again, until stop_jobs ends it or the job's deadline passes.
SERVER_LOOP = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do out=$("$@" 2>&1); rc=$?; [ "$rc" -eq 0 ] && exit 0; '
    'if [ "$rc" -ne 124 ]; then n=$((n - 1)); else case $out in *"local address"*) n=$((n - 1)) ;; esac; fi; done; exit 1'
)
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
TIMED_OUT = 124


class ProbeError(Exception):
    """A request the engine refuses (a bad job name), before anything runs."""


def _cut(text):
    return (text or "").rstrip("\r\n")


def run_commands(run, commands, sleep=time.sleep):
    """Run ``commands`` in order with ``run(argv) -> (rc, stdout, stderr)``; return one result per
    command: ``item`` (as given), ``cmd``, ``rc``, ``stdout``, ``stderr``, and ``attempts`` (how many
    runs) for a command with ``retries``."""
    results = []
    for command in commands:
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
        results.append(result)
    return results


def failed_checks(commands, results):
    """The reads that had to exit 0 (``check``) and did not: one message each."""
    return ["%s exited %s: %s" % (" ".join(result["cmd"][:3]), result["rc"], (result["stderr"] or result["stdout"])[-200:])
            for command, result in zip(commands, results) if command.get("check") and result["rc"] != 0]


def check_names(jobs):
    for job in jobs:
        if not isinstance(job.get("name"), str) or not JOB_NAME.fullmatch(job["name"]):
            raise ProbeError("start/stop: a job name is 1-100 of A-Z a-z 0-9 _ . - starting with a letter or digit "
                             "(given %r); the role names them after the run's nonce and the test" % (job.get("name"),))


def _pid_file(job_dir, name):
    return os.path.join(job_dir, name + ".pid")


def start_jobs(jobs, job_dir, deadline):
    """Start each job (``name``, ``argv``, ``attempts``) detached, through :data:`SERVER_LOOP`, for at
    most ``deadline`` seconds; return their names."""
    check_names(jobs)
    if jobs and not os.path.isdir(job_dir):
        os.makedirs(job_dir, 0o700)
    started = []
    for job in jobs:
        argv = ["timeout", str(int(deadline)), "sh", "-c", SERVER_LOOP, "perftest-server", str(max(int(job.get("attempts") or 1), 1))]
        argv += [str(arg) for arg in job["argv"]]
        with open(os.devnull, "r+b") as null:
            proc = subprocess.Popen(argv, stdin=null, stdout=null, stderr=null, close_fds=True, start_new_session=True)
        path = _pid_file(job_dir, job["name"])
        with open(path + ".tmp", "w") as handle:
            handle.write("%d\n" % proc.pid)
        os.rename(path + ".tmp", path)
        started.append(job["name"])
    return started


def _stat(pid):
    """``(state, session id)`` of a process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            text = handle.read()
    except (IOError, OSError):
        return None
    fields = text[text.rfind(")") + 2:].split()
    return fields[0], int(fields[3])


def session_members(sid):
    """The live (not zombie) processes of session ``sid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            read = _stat(int(entry))
            if read is not None and read[1] == sid and read[0] != "Z":
                members.append(int(entry))
    return members


def _end(sid, sleep):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, sig)
            except OSError:  # gone meanwhile
                pass
        for _tick in range(20):
            if not session_members(sid):
                return
            sleep(0.1)


def stop_jobs(jobs, job_dir, grace, sleep=time.sleep, clock=time.time):
    """``{name: "exited" | "stopped" | "not started"}``: each job (``name``, ``wait``) with ``wait``
    gets up to ``grace`` seconds (shared) to finish by itself; what is left of any job is ended."""
    check_names(jobs)
    out = {}
    until = clock() + max(grace, 0)
    for job in jobs:
        path = _pid_file(job_dir, job["name"])
        try:
            with open(path) as handle:
                sid = int(handle.read().strip())
        except (IOError, OSError, ValueError):
            out[job["name"]] = "not started"
            continue
        if job.get("wait", True):
            while session_members(sid) and clock() < until:
                sleep(0.5)
        if session_members(sid):
            _end(sid, sleep)
            out[job["name"]] = "stopped"
        else:
            out[job["name"]] = "exited"
        os.remove(path)
    if jobs and os.path.isdir(job_dir) and not os.listdir(job_dir):
        os.rmdir(job_dir)
    return out
