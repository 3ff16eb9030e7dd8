# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Monitoring: the RoCE collector node_exporter's textfile collector reads, and its installer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The collection's version, exported as rdmaops_roce_collector_info{version=...}; a unit test
# keeps it equal to galaxy.yml's.
COLLECTION_VERSION = "0.1.0"
# The file the collector writes in node_exporter's textfile directory (monitor_collector removes it
# with state=absent; it does not import the collector to know its name).
TEXTFILE_NAME = "rdmaops_roce.prom"
