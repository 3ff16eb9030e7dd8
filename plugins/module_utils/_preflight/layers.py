# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml's preflight call: ``rdma_facts`` with the reads of later layers (``plans``).

A layer's module costs a round trip even when it finds nothing to do, and most of that cost is the
module's start, not its reads. The preflight therefore runs, in the call it makes anyway, each
named layer's own read with that layer's own argument spec and code:

``ofed_status``   as the module does (it only reads), with the stack the preflight has just read;
``tuning_layer``  the engine in check mode whatever the task's: it reads and plans, never applies.

Each result is what the module would return, with the ``params`` it ran with (defaults filled in),
or ``failed: true`` and ``msg`` where the module would fail. The role compares its own options
with those ``params`` (:mod:`plugins.filter.roce_layer_plan`) and leaves its module out only when
they are the same and the read found nothing to change; anything else runs the module as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import engine_read, read_only


def _ofed_status(facts):
    # Imported only when asked: every other rdma_facts run is spared the driver stack's code.
    from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import status

    def run(ctx, params):
        return status.gather(ctx, params, stack=facts.get("stack"))
    return run, None


def _as_given(options, _facts):
    return options


def _ofed_status_spec():
    from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import status

    return status.argument_spec()


def _tuning_layer(_facts):
    from ansible_collections.rdmaops.roce.plugins.module_utils._tuning.layer import TuningLayer

    return engine_read(TuningLayer), True


def _tuning_layer_options(options, facts):
    """``nic`` without ``interfaces`` means the host's RDMA netdevs, as the tuning role passes them from
    the facts (sorted): the preflight's options are made before there are facts, so this call, which
    has just read them, names them (the module's own listing would read every GID slot again)."""
    nic = options.get("nic")
    if isinstance(nic, Mapping) and not nic.get("interfaces"):
        options = dict(options, nic=dict(nic, interfaces=sorted(facts.get("netdevs") or {})))
    return options


def _tuning_layer_spec():
    from ansible_collections.rdmaops.roce.plugins.module_utils._tuning import specs

    return specs.layer_argument_spec()


# In the order the layers run in site.yml: name -> (its read, its options from the preflight's, its argument spec).
LAYERS = dict((("ofed_status", (_ofed_status, _as_given, _ofed_status_spec)),
               ("tuning_layer", (_tuning_layer, _tuning_layer_options, _tuning_layer_spec))))
# What a rollout's pass sets (how far this pass may go): not part of what the read found.
PASS_OPTIONS = ("max_disruption",)


def plan_layers(module, plans, facts, host=None, runner=None):
    """``{layer: result}`` for every layer of ``plans`` (``{layer: options}``) whose options are given;
    ``facts`` is the RDMA state this call has read from ``host``. Each read has its own command runner
    (its result lists the commands it ran), unless ``runner`` is given."""
    out = {}
    for name, (reader, complete, spec) in LAYERS.items():
        options = (plans or {}).get(name)
        if options is None:
            continue
        run, check_mode = reader(facts)
        out[name] = read_only(module, spec(), run, complete(options, facts) if isinstance(options, Mapping) else options,
                              check_mode=check_mode, host=host, runner=runner)
    return out


def _plain(value):
    """``value`` as plain dicts, lists, strings and numbers. On the controller a filter's arguments are
    ansible-core's lazy template containers, and the validator deep-copies its input: copying those
    copies their whole variable context (a second per host and call, where this takes milliseconds)."""
    if isinstance(value, Mapping):
        return dict((_plain(key), _plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _validated(spec, params):
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    if not isinstance(params, Mapping):
        return None
    spec = dict((key, value) for key, value in spec.items() if key not in PASS_OPTIONS)
    checked = ArgumentSpecValidator(spec).validate(dict((key, _plain(value)) for key, value in params.items()
                                                        if key not in PASS_OPTIONS))
    if checked.error_messages:
        return None
    return checked.validated_parameters


def reusable(plans, layer, params, unchanged=False):
    """The result of ``layer``'s read in ``plans`` (rdma_facts' ``plans``) when the role may use it
    instead of running the module: the read did not fail, ran with ``params`` (the options the role
    would pass, compared after the module's own argument spec has filled in defaults and converted
    types; a rollout pass's ``max_disruption`` aside) and, with ``unchanged``, found nothing to change
    or hold back. Otherwise an empty dict: the module runs."""
    if layer not in LAYERS or not isinstance(plans, Mapping):
        return {}
    read = plans.get(layer)
    if not isinstance(read, Mapping) or read.get("failed") is not False or not isinstance(read.get("params"), Mapping):
        return {}
    if unchanged and (read.get("changed") is not False or read.get("held_back") or read.get("pending")):
        return {}
    _reader, _complete, argument_spec = LAYERS[layer]
    spec = argument_spec()
    wanted = _validated(spec, params)
    if wanted is None or wanted != _validated(spec, read["params"]):
        return {}
    return dict(read)


def gather(ctx, params):
    """The rdma_facts module's result (``_host/rdma_facts.gather``) and, with ``plans`` (only in site.yml's
    preflight), each named layer's read of this host, made after the RDMA state it may need. The
    GPUDirect report of tuning_layer's read is a fact, as the module's own."""
    from ansible_collections.rdmaops.roce.plugins.module_utils._host import rdma_facts

    result = rdma_facts.gather(ctx, params)
    if params.get("plans"):
        facts = result["ansible_facts"]
        result["plans"] = plan_layers(ctx.module, params["plans"], facts["rdma"], host=ctx.host)
        gpudirect = (result["plans"].get("tuning_layer") or {}).get("ansible_facts", {}).get("gpudirect")
        if gpudirect is not None:
            facts["gpudirect"] = gpudirect
    return result
