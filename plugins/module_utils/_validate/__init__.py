# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proving the fabric: the checks of rdmaops.roce.fabric_check (``checks``), the parsers of what the
validate role measured (``measure``) and the report writers (``report``). Pure logic: nothing here
reads a host; the action plugin hands it what the role gathered."""
