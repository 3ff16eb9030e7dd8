# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error family of the collection.

Every failure a module can report is an :class:`RdmaopsError`: a message written for the person
running the playbook, plus ``details`` that become keys of the failed result.  The engine
(``engine.py``) is the only place that turns one into ``fail_json``; it adds what the plan had
applied, rolled back or left undone, so no module writes its own try/except tail.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class RdmaopsError(Exception):
    """A failure with a message for people and ``details`` for the result."""

    def __init__(self, msg, **details):
        super(RdmaopsError, self).__init__(msg)
        self.msg = msg
        self.details = details


class InputError(RdmaopsError):
    """A parameter is wrong: refused before anything on the host is touched."""


class RefusedError(RdmaopsError):
    """A change that would be unsafe (the management path, a file we do not own) was refused."""


class ToolNotFound(RdmaopsError):
    """A required executable is not on PATH."""

    def __init__(self, tool):
        super(ToolNotFound, self).__init__(
            "%s was not found on PATH (nor in /sbin, /usr/sbin, /usr/local/sbin); install the "
            "package that provides it or make it reachable" % tool,
            tool=tool,
        )
        self.tool = tool


class CommandError(RdmaopsError):
    """A command exited with a status the caller did not accept."""

    def __init__(self, result, msg=None):
        super(CommandError, self).__init__(
            msg or "command failed with rc=%d: %s" % (result.rc, " ".join(result.cmd)),
            cmd=result.cmd,
            rc=result.rc,
            stdout=result.stdout,
            stderr=result.stderr,
        )
        self.result = result

    def output(self):
        """What the tool said about its failure, stderr first."""
        return ((self.result.stderr or "").strip() or (self.result.stdout or "").strip())


class VerifyError(RdmaopsError):
    """After applying, the host does not report what was asked (the re-read step)."""
