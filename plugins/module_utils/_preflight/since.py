# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a layer of this run changed the host after the preflight read it.

The preflight's read (``rdma_facts``, with its ``plans``) stays true until a layer changes what it
read. Each step of site.yml that may leave its module out on that read (the RDMA core modules, the
facts read again after the driver stack, the tuning layer, nccl.conf, the closing facts play) asks
here, by its own name, whether a layer that runs before it changed the host in this run. The
layers' order and the variable each one leaves behind live only here; the controller calls this
through the ``rdmaops.roce.roce_changed_before`` lookup, with the task's variables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.module_utils.six.moves.collections_abc import Mapping, Sequence

# site.yml's host layers in the order they run; a name without a signal below changes nothing a
# later read depends on (firmware takes effect at the next boot; nccl.conf is read by NCCL only)
ORDER = ("ofed", "modules", "peermem", "firmware", "nic", "tuning", "nccl", "facts")


def _truthy(value):
    try:
        return boolean(value, strict=False)
    except TypeError:
        return False


def _result_changed(result):
    """As Ansible's ``changed`` test: the result's ``changed``, or any of its loop results'."""
    if not isinstance(result, Mapping):
        return False
    if _truthy(result.get("changed", False)):
        return True
    items = result.get("results")
    if isinstance(items, Sequence) and not isinstance(items, str):
        return any(isinstance(item, Mapping) and _truthy(item.get("changed", False)) for item in items)
    return False


def _ofed(get):
    # the stack installed, removed or upgraded, or a new one's modules reloaded (restart) or owed a reboot
    final = get("ofed__final")
    return _truthy(get("ofed__stack_changed")) or (isinstance(final, Mapping) and final.get("activation") in ("restart", "reboot"))


# each layer's signal, read through ``get`` (a variable's value, or None when it is not set)
SIGNALS = {
    "ofed": _ofed,
    "modules": lambda get: _result_changed(get("rdmaops_modules_result")),
    "peermem": lambda get: _result_changed(get("peermem_result")),
    "nic": lambda get: _result_changed(get("nic_layer_result")),
    "tuning": lambda get: _result_changed(get("tuning_layer_result")),
}


def changed_before(get, layer):
    """The layers that run before ``layer`` and changed the host in this run, in their order.
    ``get(name)`` returns a variable of the host (None when it is not set). Raises ValueError for
    a ``layer`` that is not one of ORDER."""
    if layer not in ORDER:
        raise ValueError('"%s" is not a layer of site.yml: use one of %s' % (layer, ", ".join(ORDER)))
    return [name for name in ORDER[:ORDER.index(layer)] if name in SIGNALS and SIGNALS[name](get)]
