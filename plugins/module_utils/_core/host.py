# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-root seam: every /sys, /proc and /etc path a module touches goes through here.

Modules never open kernel or configuration paths directly.  They ask a :class:`HostRoot`,
which resolves an absolute host path under the directory named by the environment
variable ``RDMAOPS_HOST_ROOT`` (default ``/``).  Tests, and anyone debugging a host that
was captured with ``tests/tools/capture_host_tree.py``, point that variable at a recorded
tree and the module reads it exactly as it would read the live kernel.

This is a testing seam, not a user feature: it only moves file paths.  External tools are
still looked up on ``PATH`` (see ``command.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError

HOST_ROOT_ENV = "RDMAOPS_HOST_ROOT"


class HostRoot:
    """Resolve and read host paths under a root directory."""

    def __init__(self, root=None):
        if root is None:
            root = os.environ.get(HOST_ROOT_ENV) or "/"
        self.root = os.path.abspath(root)

    @property
    def is_live(self):
        """True when paths resolve against the running host, not a recorded tree."""
        return self.root == "/"

    def path(self, host_path):
        """Return the real filesystem path for an absolute host path."""
        if not host_path.startswith("/"):
            raise ValueError("host paths must be absolute, got %r" % (host_path,))
        # '..' would climb out of a recorded tree (and means nothing good on a live host).
        if ".." in host_path.split("/") or "\x00" in host_path:
            raise InputError("host paths may not contain '..' or NUL, got %r" % (host_path,))
        if self.is_live:
            return host_path
        return os.path.join(self.root, host_path.lstrip("/"))

    def to_host(self, real_path):
        """Turn a real filesystem path back into the host path it stands for."""
        if self.is_live:
            return real_path
        rel = os.path.relpath(real_path, self.root)
        if rel == ".":
            return "/"
        if rel.startswith(".."):
            raise ValueError("%s lies outside the host root %s" % (real_path, self.root))
        return "/" + rel

    def read(self, host_path, default=None):
        """Read a small text file (sysfs attribute, config file) without its trailing newline.

        Any OS error gives ``default``: sysfs answers EINVAL for empty GID slots, ENOENT for
        attributes an older kernel lacks, EOPNOTSUPP for optional driver attributes.  Callers
        that must tell those apart use :meth:`read_or_errno`.
        """
        value, _err = self.read_or_errno(host_path)
        return default if value is None else value

    def read_or_errno(self, host_path):
        """Return ``(text, None)`` or ``(None, errno_name)``."""
        try:
            with open(self.path(host_path), "rb") as handle:
                data = handle.read()
        except (IOError, OSError) as exc:
            return None, errno.errorcode.get(exc.errno, str(exc.errno))
        return data.decode("utf-8", "replace").rstrip("\n"), None

    def read_int(self, host_path, default=None):
        text = self.read(host_path)
        if text is None:
            return default
        try:
            return int(text.strip(), 0)
        except ValueError:
            return default

    def exists(self, host_path):
        return os.path.lexists(self.path(host_path))

    def isdir(self, host_path):
        return os.path.isdir(self.path(host_path))

    def listdir(self, host_path):
        """Sorted entries of a directory; an empty list when it does not exist."""
        try:
            return sorted(os.listdir(self.path(host_path)))
        except (IOError, OSError):
            return []

    def readlink_name(self, host_path):
        """Last component of a symlink's target (``device/driver`` -> ``mlx5_core``), or None."""
        try:
            return os.path.basename(os.readlink(self.path(host_path)).rstrip("/"))
        except (IOError, OSError):
            return None

    def realpath(self, host_path):
        """Canonical host path of ``host_path`` with every symlink resolved, or None."""
        real = self.path(host_path)
        if not os.path.lexists(real):
            return None
        try:
            return self.to_host(os.path.realpath(real))
        except ValueError:
            return None
