# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing configuration files safely.

* :func:`write_atomic` writes through a temporary file in the same directory and renames it
  over the target, so a reader (or a crash) never sees half a file.  An existing file keeps
  its owner, group and mode; a new one gets the mode asked for.
* :func:`merge_block` keeps everything in a file that the collection does not own and
  replaces only the block between its ``BEGIN``/``END`` markers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile

MARKER_BEGIN = "# BEGIN rdmaops.roce %s"
MARKER_END = "# END rdmaops.roce %s"


def read_text(host, host_path):
    """A whole text file exactly as it is on disk (unlike HostRoot.read, the trailing newline
    is kept), or None when it does not exist or cannot be read."""
    try:
        with open(host.path(host_path), "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def write_atomic(host, host_path, content, mode=0o644, makedirs=False):
    """Write ``content`` (text) to ``host_path`` under ``host`` if it differs.

    Return True when the file was written, False when it already had that content.
    """
    real = host.path(host_path)
    directory = os.path.dirname(real) or "."
    data = content.encode("utf-8")
    try:
        with open(real, "rb") as handle:
            if handle.read() == data:
                return False
        stat = os.stat(real)
        keep = (stat.st_mode & 0o7777, stat.st_uid, stat.st_gid)
    except (IOError, OSError):
        keep = None
    if makedirs and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(real) + ".", suffix=".rdmaops", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if keep is None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, keep[0])
            if (keep[1], keep[2]) != (os.geteuid(), os.getegid()):
                os.chown(tmp, keep[1], keep[2])
        os.rename(tmp, real)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)
    return True


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def merge_block(existing, block_lines, name):
    """Return ``existing`` text with our block ``name`` set to ``block_lines``.

    Lines outside the markers are kept byte for byte.  An empty ``block_lines`` removes the
    block (markers included).  A missing block is appended at the end.
    """
    begin, end = MARKER_BEGIN % name, MARKER_END % name
    lines = existing.splitlines() if existing else []
    try:
        start = lines.index(begin)
        stop = lines.index(end, start)
    except ValueError:
        start = stop = None
    new_block = [begin] + list(block_lines) + [end] if block_lines else []
    if start is None:
        if not new_block:
            return existing or ""
        if lines and lines[-1].strip():
            lines.append("")
        merged = lines + new_block
    else:
        merged = lines[:start] + new_block + lines[stop + 1:]
    return "\n".join(merged) + "\n" if merged else ""


def read_block(existing, name):
    """The lines of block ``name`` in ``existing``, or None when there is no such block."""
    begin, end = MARKER_BEGIN % name, MARKER_END % name
    lines = existing.splitlines() if existing else []
    try:
        start = lines.index(begin)
        stop = lines.index(end, start)
    except ValueError:
        return None
    return lines[start + 1:stop]
