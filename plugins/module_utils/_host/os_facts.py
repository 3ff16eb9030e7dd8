# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operating-system facts the collection's roles read, gathered inside rdma_facts.

site.yml's preflight ran ``setup`` (gather_subset min, network) and then ``rdma_facts``: two
module round trips per host, and ``setup`` was the slowest module of a no-op run (8 s of a 46 s
run on the soft-RoCE lab, where every module is a Python start under emulation). The roles read
only the distribution, the platform (kernel, architecture), the Python and the environment
(SSH_CONNECTION, for the management path), so ``rdma_facts(os_facts=true)`` runs exactly those
four of ansible-core's own fact collectors, the ones ``setup`` runs under the same names, and
returns their facts as ``setup`` would (``ansible_distribution`` ...). Only these four collector
modules are imported, so the module carries nothing else of ``setup``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import sys


def _facts_package_without_its_init():
    """Make ``ansible.module_utils.facts`` importable as a bare package. Its ``__init__`` imports
    ``compat``, which imports every fact collector of ansible-core (hardware, network, virtual ...):
    about 100 modules that a module run compiles from its payload, seconds on an emulated host, for
    four collectors. Where the package is already imported (a controller, a test) it is left as is."""
    name = "ansible.module_utils.facts"
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return  # not a package here: the plain imports below say what is wrong
    sys.modules[name] = importlib.util.module_from_spec(spec)


_facts_package_without_its_init()

# pylint: disable=wrong-import-position
from ansible.module_utils.facts import ansible_collector  # noqa: E402
from ansible.module_utils.facts.namespace import PrefixFactNamespace  # noqa: E402
from ansible.module_utils.facts.system.distribution import DistributionFactCollector  # noqa: E402
from ansible.module_utils.facts.system.env import EnvFactCollector  # noqa: E402
from ansible.module_utils.facts.system.platform import PlatformFactCollector  # noqa: E402
from ansible.module_utils.facts.system.python import PythonFactCollector  # noqa: E402

COLLECTORS = (DistributionFactCollector, PlatformFactCollector, PythonFactCollector, EnvFactCollector)
SUBSET = frozenset(collector.name for collector in COLLECTORS)


def gather(module, timeout=10):
    """``setup``'s facts of the four collectors, keyed as ``setup`` keys them."""
    collector = ansible_collector.get_ansible_collector(
        all_collector_classes=list(COLLECTORS),
        namespace=PrefixFactNamespace(namespace_name="ansible", prefix="ansible_"),
        filter_spec=[],
        gather_subset=["!all"],
        gather_timeout=timeout,
        minimal_gather_subset=SUBSET,
    )
    return collector.collect(module=module)
