# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ECN codepoints of a ToS byte (RFC 3168): the two low bits; the intent's ToS is DSCP << 2 | ECN bits.

Kept apart from :mod:`.._intent` (the controller's intent resolver) so that the RDMA-CM ToS engine
checks a ToS on the host without loading the resolver.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

NOT_ECT = 0  # not ECN-capable
ECT1 = 1  # ECN-capable transport, codepoint 1
ECT0 = 2  # ECN-capable transport codepoint the NICs set on RoCE packets
CE = 3  # congestion experienced: set by a switch, never by a sender
ECN_MASK = 3
