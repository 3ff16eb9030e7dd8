# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tuning layer of a host in one module run: the kernel parameter profile, the locked-memory
limit, the NIC knobs and the GPUDirect RDMA report.

The role called four modules for this (sysctl_profile, memlock, nic_ethtool, gpudirect_facts):
four round trips per host on every run, converged or not, which a fleet pays thousands of times
(docs/benchmarks.md). This engine runs the same engines those modules run (``SysctlProfileEngine``,
``MemlockEngine``, ``NicEthtoolEngine``) into one Plan, so check mode, the diff and the truth about
a part-way failure cover the whole layer (a change that fails to apply, a file that cannot be
written or a sysctl the kernel refuses, puts back what every part applied before it), and reads
the GPUDirect report last, after anything it applied (never on a failure). Each part's result is
what its fine-grained module returns, with its own ``changed`` (what is still applied) and
``changes`` (what it planned). A NIC knob the driver refuses is no such failure, as in nic_ethtool:
it is reported unsupported (``warn``), or fails the task after the rest is applied (``fail``).

The NIC knobs apply to the netdevs named, or, when none are named, to the host's RDMA netdevs as
sysfs lists them (no tool needed), so a play without the preflight's facts needs no extra call.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, VerifyError
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.ethtool import NicEthtoolEngine
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.memlock import MemlockEngine
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.sysctl import SysctlProfileEngine

# In the order they are planned and applied.
PARTS = (("sysctl", SysctlProfileEngine), ("memlock", MemlockEngine), ("nic", NicEthtoolEngine))


def rdma_netdevs(host):
    """The netdevs of the host's RDMA ports, from sysfs alone (the role passes them from the facts, and
    so does rdma_facts' ``plans`` from the state it has read: the facts reader reads every GID slot)."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
    return sorted(RdmaFacts(host, None, use_tools=False, gpu_topology=False).gather()["netdevs"])


class TuningLayer(Engine):
    """``rdmaops.roce.tuning_layer``: ``sysctl``, ``memlock`` and ``nic`` are the options of
    sysctl_profile, memlock and nic_ethtool (omitted: that part is left alone); ``gpudirect`` the
    options of gpudirect_facts (omitted: not read)."""

    commands_key = "commands"

    def __init__(self, ctx, params):
        super(TuningLayer, self).__init__(ctx, params)
        self.engines = []  # (part, engine), in PARTS order
        self.spans = {}  # part -> (first, end) index of its changes in the plan
        self.nic_skipped = None  # why the NIC part had nothing to do
        self.plan_ref = None
        self.gpudirect = None

    def validate(self):
        params = self.params
        asked = [name for name, _engine in PARTS if params.get(name) is not None]
        if not asked and params.get("gpudirect") is None:
            raise InputError("nothing to do: give at least one of sysctl, memlock, nic and gpudirect", option="sysctl")
        adopt = bool(params.get("adopt"))
        for name, engine_class in PARTS:
            options = params.get(name)
            if options is None:
                continue
            options = dict(options, adopt=adopt)
            if name == "nic" and not options.get("interfaces"):
                # Read-only: the names are needed to validate them with everything else.
                options["interfaces"] = rdma_netdevs(self.host)
                if not options["interfaces"]:
                    self.nic_skipped = "no RDMA netdev on this host and nic.interfaces names none"
                    continue
            self.engines.append((name, engine_class(self.ctx, options)))
        for name, engine in self.engines:
            try:
                engine.validate()
            except InputError as exc:
                # the part's own words, under the option as this module spells it
                option = exc.details.get("option")
                details = dict(exc.details, option="%s.%s" % (name, option) if option else name)
                raise InputError("%s: %s" % (name, exc.msg), **details)

    def read(self):
        for _name, engine in self.engines:
            engine.read()

    def plan(self, plan):
        self.plan_ref = plan
        for name, engine in self.engines:
            first = len(plan)
            engine.plan(plan)
            self.spans[name] = (first, len(plan))
        if not self.will_apply(plan):
            # Nothing will be applied (check mode, nothing to do, or held back by max_disruption):
            # the host as it is now is the host the run leaves.
            self._read_gpudirect()

    def verify(self):
        problems = []
        refused = None
        for name, engine in self.engines:
            try:
                problems.extend("%s: %s" % (name, problem) for problem in engine.verify())
            except VerifyError as exc:  # nic_ethtool's unsupported=fail: keep the other parts' problems
                refused = exc
        if refused is not None:
            if problems:
                refused.msg = "%s; and %s" % (refused.msg, "; ".join(problems))
            raise refused
        self._read_gpudirect()
        return problems

    def _read_gpudirect(self):
        """The GPUDirect report (read only), once the parts are applied; never on a failure."""
        if self.params.get("gpudirect") is not None:
            # GPU hosts only: the GPUDirect reader is loaded where it is asked for
            from ansible_collections.rdmaops.roce.plugins.module_utils._host import gpudirect
            self.gpudirect = gpudirect.gather(self.ctx, self.params["gpudirect"])["ansible_facts"]

    def _part_changed(self, name):
        """Predicted in check mode; otherwise whether any of the part's changes is still applied
        (a change put back by a rollback, or never reached, does not count)."""
        first, end = self.spans[name]
        if self.check_mode:
            return bool(self.plan_ref.descriptions(first, end))
        return any(change in self.plan_ref.applied for change in list(self.plan_ref)[first:end])

    def result(self):
        result = {}
        for name, engine in self.engines:
            part = engine.result()
            if self.plan_ref is not None and name in self.spans:
                part.update(changed=self._part_changed(name), changes=self.plan_ref.descriptions(*self.spans[name]),
                            disruption=self.plan_ref.disruption_of(*self.spans[name]))
            result[name] = part
        if self.nic_skipped:
            result["nic"] = dict(changed=False, changes=[], skipped=True, msg=self.nic_skipped,
                                 state={}, unsupported={})
        if self.gpudirect is not None:
            result["ansible_facts"] = self.gpudirect
        return result
