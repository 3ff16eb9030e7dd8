# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eos driver of switch_roce (see resource.py for the driver contract): being written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

NAME = "eos"
VERSIONS = ()
