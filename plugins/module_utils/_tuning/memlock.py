# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The locked-memory limit RDMA needs, for logins and for services, in one module run.

RDMA registers (pins) its buffers; verbs applications fail with "Cannot allocate memory" under
the default locked-memory limit.  Two places give the limit: pam_limits (a limits.d file, for
logins) and systemd's manager (``DefaultLimitMEMLOCK`` in a system.conf.d drop-in, for services).
systemd reads the drop-in only when it re-executes, so the engine also compares the value systemd
reports (``systemctl show``) and re-executes it when that differs; afterwards the value must read
back, or a later drop-in that sets it again is named.  Both files carry our marker.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.validate import absolute_path

# "unlimited" or a size in KiB, matched whole.
LIMIT_RE = re.compile(r"unlimited|[1-9][0-9]*")
# A pam_limits domain: a user, @group, %group, *, or a uid/gid range; no whitespace.
DOMAIN_RE = re.compile(r"[A-Za-z0-9_@%*:.-]+")
OWNER = "Managed by rdmaops.roce (role tuning). Changes here are overwritten on the next run."


def limits_text(limit, domains):
    lines = [
        "# " + OWNER,
        "# RDMA registers (pins) its buffers; verbs applications fail with \"Cannot allocate memory\"",
        "# under the default locked-memory limit. The wildcard does not cover root, so root is listed.",
    ]
    for domain in domains:
        lines.append("%-16s soft    memlock    %s" % (domain, limit))
        lines.append("%-16s hard    memlock    %s" % (domain, limit))
    return "\n".join(lines) + "\n"


def systemd_value(limit):
    """DefaultLimitMEMLOCK as written in the drop-in, and as ``systemctl show`` prints it back."""
    if limit == "unlimited":
        return "infinity", "infinity"
    return "%sK" % limit, str(int(limit) * 1024)


def dropin_text(limit):
    return (
        "# " + OWNER + "\n"
        "# Services (including those that run RDMA jobs) get this locked-memory limit unless their unit sets LimitMEMLOCK.\n"
        "[Manager]\n"
        "DefaultLimitMEMLOCK=%s\n" % systemd_value(limit)[0]
    )


class MemlockEngine(Engine):
    """``rdmaops.roce.memlock``: the limits.d file, the systemd drop-in and systemd's running value."""

    # Set by validate and read; here so result() answers on a failure before them.
    limit = None
    systemd_before = None
    systemd_after = None

    def validate(self):
        params = self.params
        self.limit = str(params["limit"])
        if not LIMIT_RE.fullmatch(self.limit):
            raise InputError("limit=%s: use unlimited or a size in KiB (a whole number above 0)" % params["limit"],
                             option="limit")
        self.domains = params["domains"] or []
        if not self.domains:
            raise InputError("domains must list at least one pam_limits domain, e.g. ['*', root]", option="domains")
        bad = [domain for domain in self.domains if not DOMAIN_RE.fullmatch(domain)]
        if bad:
            raise InputError("domains: %s is not a pam_limits domain (a user, @group, * or a uid range, without spaces)"
                             % ", ".join(repr(domain) for domain in bad), option="domains")
        for option in ("limits_file", "systemd_dropin"):
            absolute_path(option, params[option])

    def _systemd_value(self):
        """What systemd gives services now, or None where systemd does not run this host (or a test tree)."""
        if not self.host.is_live or not self.host.isdir("/run/systemd/system") or not self.runner.has("systemctl"):
            return None
        result = self.runner.run(["systemctl", "show", "--property=DefaultLimitMEMLOCK", "--value"], check=False)
        return (result.stdout or "").strip() if result.rc == 0 else None

    def read(self):
        self.systemd_before = self._systemd_value()
        self.systemd_after = self.systemd_before

    def plan(self, plan):
        adopt = bool(self.params.get("adopt"))
        plan.file(self.host, self.params["limits_file"], limits_text(self.limit, self.domains), mode=0o644,
                  adopt=adopt, option="limits_file")
        plan.file(self.host, self.params["systemd_dropin"], dropin_text(self.limit), mode=0o644,
                  adopt=adopt, option="systemd_dropin")
        if self.systemd_before is None:
            return
        wanted = systemd_value(self.limit)[1]

        def reexec():
            self.runner.run(["systemctl", "daemon-reexec"])

        if plan.add("systemd", self.systemd_before, wanted, reexec,
                    "systemctl daemon-reexec: systemd gives services DefaultLimitMEMLOCK=%s (was %s)"
                    % (wanted, self.systemd_before)):
            self.systemd_after = wanted

    def verify(self):
        if self.systemd_before is None:
            return []
        self.systemd_after = self._systemd_value()
        wanted = systemd_value(self.limit)[1]
        if self.systemd_after != wanted:
            return ["systemd reports DefaultLimitMEMLOCK=%s after loading %s; expected %s. A later drop-in in "
                    "/etc/systemd/system.conf.d or /etc/systemd/system.conf may set it again"
                    % (self.systemd_after, self.params["systemd_dropin"], wanted)]
        return []

    def result(self):
        return dict(limit=self.limit, files=[self.params["limits_file"], self.params["systemd_dropin"]],
                    systemd=dict(before=self.systemd_before, after=self.systemd_after))
