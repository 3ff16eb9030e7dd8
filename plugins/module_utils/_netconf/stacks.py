# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The network stacks the MTU and rail engines persist through, as a module's ``backend`` option names them.

Kept apart from :mod:`.backends` (every stack's engine and configuration formats) so that a module's
argument spec names them without loading the engines: nic_layer reading QoS only never needs them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

BACKENDS = ("netplan", "networkmanager", "networkd", "ifupdown", "ifcfg")
#: what a module's ``backend`` option accepts: a stack, ``auto`` (detect it) or ``runtime`` (persist nothing)
BACKEND_CHOICES = ("auto",) + BACKENDS + ("runtime",)
