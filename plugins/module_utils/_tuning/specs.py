# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument specs of the tuning parts, shared by each part's own module and by tuning_layer
(where each is a sub-option), so a part takes the same options and defaults either way."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._core.plan import max_disruption_spec

SYSCTL = dict(
    settings=dict(type="dict"),
    path=dict(type="path", default="/etc/sysctl.d/90-rdmaops-roce.conf"),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    apply_runtime=dict(type="bool", default=True),
    runtime_errors=dict(type="str", choices=["fail", "warn"], default="fail"),
)

MEMLOCK = dict(
    limit=dict(type="str", default="unlimited"),
    domains=dict(type="list", elements="str", default=["*", "root"]),
    limits_file=dict(type="path", default="/etc/security/limits.d/90-rdmaops-roce-memlock.conf"),
    systemd_dropin=dict(type="path", default="/etc/systemd/system.conf.d/90-rdmaops-roce-memlock.conf"),
)

# nic_ethtool requires interfaces; tuning_layer defaults them to the host's RDMA netdevs.
NIC_KNOBS = dict(
    global_pause=dict(type="bool"),
    rings=dict(type="dict"),
    adaptive_rx=dict(type="bool"),
    adaptive_tx=dict(type="bool"),
    persist=dict(type="bool", default=True),
    unsupported=dict(type="str", choices=["warn", "fail"], default="warn"),
)

GPUDIRECT_FACTS = dict(use_lspci=dict(type="bool", default=True))

ADOPT = dict(adopt=dict(type="bool", default=False))


def layer_argument_spec():
    """``tuning_layer``'s options (each part's spec as a sub-option), also checked where another module
    runs its read (rdmaops.roce.rdma_facts' ``plans``)."""
    return dict(
        max_disruption=max_disruption_spec(),
        sysctl=dict(type="dict", options=SYSCTL),
        memlock=dict(type="dict", options=MEMLOCK),
        nic=dict(type="dict", options=dict(NIC_KNOBS, interfaces=dict(type="list", elements="str", default=[]))),
        gpudirect=dict(type="dict", options=GPUDIRECT_FACTS),
        **ADOPT
    )
