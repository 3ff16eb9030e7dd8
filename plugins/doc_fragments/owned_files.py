# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The option of every module that writes whole files of its own."""

    DOCUMENTATION = r"""
options:
  adopt:
    description:
      - Take over files at the paths this module writes (unit, modprobe.d, sysctl.d, udev rules ...)
        that rdmaops.roce did not write.
      - By default such a file (one without a C(Managed by rdmaops.roce) line) is left alone and the
        module fails naming it, before anything is changed; files the collection wrote carry that line.
    type: bool
    default: false
attributes:
  action_group:
    description: Use C(group/rdmaops.roce.owned_files) in C(module_defaults) to set O(adopt) for every
      module that writes files of its own (C(group/rdmaops.roce.host), its name before 1.0.0, names the same group).
    support: full
    membership:
      - rdmaops.roce.owned_files
      - rdmaops.roce.host
notes:
  - Files are written atomically; a symlink is followed and kept, an existing file keeps its owner
    and mode, and bytes the module does not own are kept exactly (non-UTF-8 included).
"""
