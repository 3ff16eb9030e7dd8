# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collector has instead of AnsibleModule when systemd runs it outside Ansible.

The engines and readers it reuses talk to a module through three things only: ``get_bin_path``
and ``run_command`` (through :class:`CommandRunner`) and ``check_mode``. This stand-in gives
them the same meaning: tools on PATH plus the sbin directories, argv lists without a shell,
the environment updates the runner asks for (the C locale), and always check mode, so an engine
built here can only read. A tool that hangs is killed after ``timeout`` seconds (rc 124, as
timeout(1) reports it), so one stuck driver query cannot pile up runs behind the timer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

SBIN = ("/sbin", "/usr/sbin", "/usr/local/sbin")
TIMEOUT_RC = 124


class CollectorModule:
    check_mode = True  # the collector reads; an engine must never apply a plan here
    _diff = False

    def __init__(self, timeout=10, environ=None, sbin=SBIN):
        self.timeout = timeout
        self.sbin = tuple(sbin)
        self.environ = dict(os.environ if environ is None else environ)
        self.no_log_values = set()

    def get_bin_path(self, tool):
        dirs = [d for d in self.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if d]
        for directory in dirs + [d for d in self.sbin if d not in dirs]:
            path = os.path.join(directory, tool)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
        return None

    def run_command(self, argv, check_rc=False, data=None, environ_update=None, expand_user_and_vars=False):
        env = dict(self.environ)
        env.update(environ_update or {})
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, close_fds=True)
        except OSError as exc:
            return 127, "", str(exc)
        try:
            out, err = proc.communicate(input=data.encode() if isinstance(data, str) else data, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return TIMEOUT_RC, out.decode("utf-8", "replace"), "killed after %ss" % self.timeout
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def warn(self, message):
        pass
