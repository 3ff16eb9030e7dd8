# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place where rdmaops.roce modules run external commands.

Rules every caller gets for free:

* argv lists only, never a shell string, so no quoting bugs and no injection;
* the binary is resolved with ``AnsibleModule.get_bin_path`` (PATH plus the sbin
  directories), so tests put recorded tools first on PATH;
* the C locale, so parsers see the output format they were written against;
* a failure is a :class:`CommandError` (the collection's one error family) that carries cmd,
  rc, stdout and stderr, which the engine puts into the failed result;
* on request (``timeout=``), a time bound: the command runs under coreutils ``timeout`` in a
  process group of its own, which is killed whole when the time is up (:class:`CommandTimeout`);
  and (``errors="replace"``) output that is not UTF-8 decoded with U+FFFD in place of the bad
  bytes, for text that only goes into results (a reason someone typed), never back into a command.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import (  # noqa: F401 (re-exported)
    CommandError,
    ToolNotFound,
)

C_LOCALE = {"LANG": "C", "LC_ALL": "C", "LANGUAGE": "C"}
# After the time bound, a command that ignores SIGTERM gets SIGKILL this many seconds later.
KILL_AFTER = 2
# coreutils timeout's exit status when it stopped the command (TERM, or KILL after KILL_AFTER).
TIMEOUT_RCS = (124, 137)


class CommandTimeout(CommandError):
    """A command ran past its time bound and was killed with its process group."""

    def __init__(self, result, timeout):
        super(CommandTimeout, self).__init__(
            result, "%s did not finish within %s s and was killed" % (" ".join(result.cmd), timeout))
        self.timeout = timeout
        self.details["timeout"] = timeout
        self.details["timed_out"] = True


class CommandResult:
    __slots__ = ("cmd", "rc", "stdout", "stderr")

    def __init__(self, cmd, rc, stdout, stderr):
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    @property
    def ok(self):
        return self.rc == 0

    def as_dict(self):
        return dict(cmd=self.cmd, rc=self.rc, stdout=self.stdout, stderr=self.stderr)


class CommandRunner:
    """Run argv lists through ``module.run_command`` with the collection's rules."""

    def __init__(self, module):
        self.module = module
        self._paths = {}
        self.history = []
        # What ran, as people read it (tool names without their directory), for results.
        self.commands = []

    def find(self, tool):
        """Absolute path of ``tool`` or None; looked up once per run."""
        if tool not in self._paths:
            self._paths[tool] = self.module.get_bin_path(tool)
        return self._paths[tool]

    def has(self, tool):
        return self.find(tool) is not None

    def run(self, argv, check=True, ok_rcs=(0,), data=None, timeout=None, errors=None, environ=None):
        """Run ``argv``; raise :class:`CommandError` unless rc is in ``ok_rcs`` (or check=False).

        ``timeout`` (seconds): the command and everything it started are killed when it runs
        longer, and :class:`CommandTimeout` is raised whatever ``check`` says.  ``errors``: how
        undecodable output is decoded (``"replace"``; default Ansible's, surrogate escapes).
        ``environ``: extra environment variables (the C locale is always set)."""
        if isinstance(argv, str) or not argv:
            raise TypeError("CommandRunner.run takes a non-empty argv list, got %r" % (argv,))
        argv = [str(arg) for arg in argv]
        binary = self.find(argv[0])
        if binary is None:
            raise ToolNotFound(argv[0])
        full = [binary] + argv[1:]
        spawn = full
        if timeout is not None:
            killer = self.find("timeout")
            if killer is None:
                raise ToolNotFound("timeout")
            # timeout puts itself and the command in a new process group and signals the group
            spawn = [killer, "--kill-after=%d" % KILL_AFTER, "%ds" % timeout] + full
        env = dict(C_LOCALE)
        env.update(environ or {})
        extra = dict(errors=errors) if errors else {}
        started = time.time()
        rc, stdout, stderr = self.module.run_command(
            spawn,
            check_rc=False,
            data=data,
            environ_update=env,
            expand_user_and_vars=False,
            **extra
        )
        result = CommandResult(full, rc, stdout, stderr)
        self.history.append(full)
        self.commands.append(" ".join(argv))
        if timeout is not None and rc in TIMEOUT_RCS and time.time() - started >= timeout:
            raise CommandTimeout(result, timeout)
        if check and rc not in ok_rcs:
            raise CommandError(result)
        return result

    def run_optional(self, argv):
        """Run a tool that only adds facts: None when it is missing or fails."""
        if not self.has(argv[0]):
            return None
        result = self.run(argv, check=False)
        return result if result.ok else None

    def run_json_list(self, argv):
        """The JSON list a read-only tool prints (``ip -j ...``), or [] when it is missing, fails
        or prints anything else: such tools only add facts."""
        result = self.run_optional(argv)
        if result is None:
            return []
        try:
            data = json.loads(result.stdout or "[]")
        except ValueError:
            return []
        return data if isinstance(data, list) else []
