# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver-stack versions: what a wanted version accepts, and what ``ofed_info -s`` says is installed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.ofed_info import parse_ofed_info


def version_matches(installed, wanted):
    """Whether an installed version satisfies a wanted one.

    ``wanted`` empty: anything installed matches.  A wanted value with ``*``/``?`` is a glob
    (``3.2.1*``).  Otherwise the installed version must equal it or continue it after a
    ``-``, ``+`` or ``~`` separator: ``3.2.1`` matches ``3.2.1-044000`` and
    ``3.2.1-044000-25.10-ubuntu2404`` but not ``3.2.10``; ``24.10-1.1.4.0`` matches
    ``24.10-1.1.4.0`` only.
    """
    if not wanted:
        return installed is not None
    if installed is None:
        return False
    if "*" in wanted or "?" in wanted:
        return fnmatch.fnmatchcase(installed, wanted)
    if installed == wanted:
        return True
    return installed.startswith(wanted) and installed[len(wanted)] in "-+~"


def release_numbers(version):
    """The numbers of a version's release part, up to its first ``-``/``+``/``~`` (``3.2.1-044000`` ->
    ``(3, 2, 1)``; ``24.10-1.1.4.0`` -> ``(24, 10)``); a glob's numbers before its first wildcard."""
    text = re.split(r"[*?]", version or "", maxsplit=1)[0]
    text = re.split(r"[-+~]", text, maxsplit=1)[0]
    return tuple(int(part) for part in re.findall(r"[0-9]+", text))


def is_downgrade(installed, wanted):
    """Whether going from ``installed`` to ``wanted`` goes back to an older release.

    The release parts are compared number by number, as far as the wanted one goes (``3.2`` is
    not older than ``3.2.1-044000``); a wanted version that only differs after the release part
    (an exact package build) is compared whole when both give one.
    """
    if not installed or not wanted:
        return False
    have, want = release_numbers(installed), release_numbers(wanted)
    if not want or not have:
        return False
    if have[:len(want)] != want:
        return have[:len(want)] > want
    if "*" in wanted or "?" in wanted or len(want) < len(have):
        return False
    have_all = tuple(int(part) for part in re.findall(r"[0-9]+", installed))
    want_all = tuple(int(part) for part in re.findall(r"[0-9]+", wanted))
    return have_all[:len(want_all)] > want_all


def versions_agree(module_version, ofed_version):
    """``/sys/module/mlx5_core/version`` against ``ofed_info -s``: one may be the other's prefix."""
    if not module_version or not ofed_version:
        return False
    return module_version.startswith(ofed_version) or ofed_version.startswith(module_version)


def installed_ofed_version(runner):
    """The version ``ofed_info -s`` reports (``24.10-1.1.4.0``), or None without OFED."""
    result = runner.run_optional(["ofed_info", "-s"])
    info = parse_ofed_info(result.stdout) if result else None
    return info["version"] if info else None
