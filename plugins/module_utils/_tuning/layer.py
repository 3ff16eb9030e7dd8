# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tuning layer of a host in one module run: the kernel parameter profile, the locked-memory
limit, the NIC knobs and the GPUDirect RDMA report.

The role called four modules for this (sysctl_profile, memlock, nic_ethtool, gpudirect_facts):
four round trips per host on every run, converged or not, which a fleet pays thousands of times
(docs/benchmarks.md). This engine runs the same engines those modules run (``SysctlProfileEngine``,
``MemlockEngine``, ``NicEthtoolEngine``) into one Plan, so check mode, the diff and the truth about
a part-way failure cover the whole layer (a NIC knob that fails puts the sysctl values and files
back too), and reads the GPUDirect report last, after anything it applied. Each part's result is
what its fine-grained module returns, with its own ``changed`` and ``changes``.

The NIC knobs apply to the netdevs named, or, when none are named, to the host's RDMA netdevs as
sysfs lists them (no tool needed), so a play without the preflight's facts needs no extra call.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Engine
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError
from ansible_collections.rdmaops.roce.plugins.module_utils._host import gpudirect
from ansible_collections.rdmaops.roce.plugins.module_utils._host.rdma_facts import RdmaFacts
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.ethtool import NicEthtoolEngine
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.memlock import MemlockEngine
from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.sysctl import SysctlProfileEngine

# In the order they are planned and applied.
PARTS = (("sysctl", SysctlProfileEngine), ("memlock", MemlockEngine), ("nic", NicEthtoolEngine))


def rdma_netdevs(host):
    """The netdevs of the host's RDMA ports, from sysfs alone."""
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
        for _name, engine in self.engines:
            engine.validate()

    def read(self):
        for _name, engine in self.engines:
            engine.read()

    def plan(self, plan):
        self.plan_ref = plan
        for name, engine in self.engines:
            first = len(plan)
            engine.plan(plan)
            self.spans[name] = (first, len(plan))

    def verify(self):
        problems = []
        for name, engine in self.engines:
            problems.extend("%s: %s" % (name, problem) for problem in engine.verify())
        return problems

    def result(self):
        result = {}
        for name, engine in self.engines:
            part = engine.result()
            if self.plan_ref is not None and name in self.spans:
                changes = self.plan_ref.descriptions(*self.spans[name])
                part.update(changed=bool(changes), changes=changes)
            result[name] = part
        if self.nic_skipped:
            result["nic"] = dict(changed=False, changes=[], skipped=True, msg=self.nic_skipped,
                                 state={}, unsupported={})
        if self.params.get("gpudirect") is not None and self.gpudirect is None:
            # After applying: the report describes the host as the run leaves it.
            self.gpudirect = gpudirect.gather(self.ctx, self.params["gpudirect"])["ansible_facts"]
        if self.gpudirect is not None:
            result["ansible_facts"] = self.gpudirect
        return result
