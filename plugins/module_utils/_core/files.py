# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that writes and removes host files.

Rules every caller gets:

* **atomic**: a temporary file in the target's directory, fsync, rename, fsync of the directory;
  a reader (or a crash) never sees half a file;
* **symlinks followed and kept**: writing ``/etc/netplan/x.yaml`` that is a link writes the file
  it points to (inside the host root), so the link stays a link;
* **owner and mode kept** for an existing file; a new file gets the mode asked for;
* **every byte we do not own kept**: text is decoded with ``surrogateescape``, so bytes that are
  not UTF-8 survive an edit unchanged;
* **ownership**: a whole file is written or removed only when it is absent, carries our marker
  (``Managed by rdmaops.roce`` or a ``BEGIN rdmaops.roce`` block), or the user named it as ours
  (``adopt``).  Anything else is refused with a message that says so.

``merge_block`` keeps everything in a user's file and replaces only our marked block.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import tempfile

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RefusedError

MARKER_BEGIN = "# BEGIN rdmaops.roce %s"
MARKER_END = "# END rdmaops.roce %s"
OWNERSHIP_MARKERS = ("Managed by rdmaops.roce", "BEGIN rdmaops.roce")
ENCODING = "utf-8"
ERRORS = "surrogateescape"  # undecodable bytes round-trip unchanged


def decode(data):
    return data.decode(ENCODING, ERRORS)


def encode(text):
    return text.encode(ENCODING, ERRORS)


def for_display(text):
    """Text safe to put in a result or diff (undecodable bytes shown as U+FFFD, never raw)."""
    if text is None:
        return None
    return encode(text).decode(ENCODING, "replace")


def read_bytes(host, host_path):
    """A file's exact bytes, or None when it does not exist or cannot be read."""
    try:
        with open(host.path(host_path), "rb") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def read_text(host, host_path):
    """A whole text file exactly as it is on disk (trailing newline kept, foreign bytes kept
    through surrogateescape), or None when it does not exist or cannot be read."""
    data = read_bytes(host, host_path)
    return None if data is None else decode(data)


def is_ours(text):
    """True when ``text`` (a file's content) carries the collection's marker."""
    return text is not None and any(marker in text for marker in OWNERSHIP_MARKERS)


def check_owned(host, host_path, adopt=False, option=None):
    """Refuse to replace or remove ``host_path`` unless it is absent, ours, or adopted."""
    text = read_text(host, host_path)
    if text is None or adopt or is_ours(text):
        return
    raise RefusedError(
        "%s exists and was not written by rdmaops.roce (it has no 'Managed by rdmaops.roce' line), so it "
        "was left alone: %s, or move the file away, or set adopt: true to let the collection take it over"
        % (host_path, "name another file in %s" % option if option else "name another file"),
        path=host_path,
    )


def resolve_target(host, host_path):
    """The real path to write for ``host_path``: the end of its symlink chain, inside the host root."""
    real = host.path(host_path)
    if not os.path.islink(real):
        return real
    target = os.path.realpath(real)
    try:
        host.to_host(target)  # raises when the link leaves a recorded tree
    except ValueError:
        raise RefusedError("%s is a symlink that leads out of the host root %s; it was left alone" % (host_path, host.root),
                           path=host_path)
    return target


def write_atomic(host, host_path, content, mode=0o644, makedirs=False):
    """Write ``content`` (text or bytes) to ``host_path`` if it differs; return whether it was written."""
    real = resolve_target(host, host_path)
    directory = os.path.dirname(real) or "."
    data = content if isinstance(content, bytes) else encode(content)
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


def remove(host, host_path):
    """Remove ``host_path`` (the link itself when it is one); return whether something was removed."""
    real = host.path(host_path)
    if not os.path.lexists(real):
        return False
    os.unlink(real)
    _fsync_dir(os.path.dirname(real))
    return True


def file_mode(host, host_path):
    """Permission bits of ``host_path`` (of its symlink target), or None when it does not exist."""
    try:
        return os.stat(host.path(host_path)).st_mode & 0o7777
    except (IOError, OSError):
        return None


def set_mode(host, host_path, mode):
    """``chmod`` ``host_path`` (its symlink target, inside the host root)."""
    os.chmod(resolve_target(host, host_path), mode)


def sha256(host, host_path, chunk=1024 * 1024):
    """SHA-256 (hex) of a file of any size, read in chunks; None when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with open(host.path(host_path), "rb") as handle:
            for block in iter(lambda: handle.read(chunk), b""):
                digest.update(block)
    except (IOError, OSError):
        return None
    return digest.hexdigest()


def write_attribute(host, host_path, text):
    """Write ``text`` to an existing kernel attribute (a /proc/sys or /sys file) in one write.

    procfs and sysfs allow no temporary file and rename, so this is the one in-place write; the
    attribute is never created (O_TRUNC, as the shell's ``>`` does, so a recorded tree's plain file
    holds exactly the new value).  An OSError (EINVAL, EACCES, EROFS, ENOENT ...) is raised as is,
    for the caller to say what the kernel refused.
    """
    fd = os.open(host.path(host_path), os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, encode(text))
    finally:
        os.close(fd)


def make_dir(host, host_path, mode=0o755):
    """``mkdir`` one directory (its parent must exist), as a configfs group is created; return
    whether it was created (False when it already was there)."""
    try:
        os.mkdir(host.path(host_path), mode)
    except OSError as exc:
        if os.path.isdir(host.path(host_path)) and not os.path.islink(host.path(host_path)):
            return False
        raise exc
    return True


def remove_dir(host, host_path):
    """``rmdir`` one empty directory (a configfs group: the kernel removes its own items); return
    whether something was removed."""
    if not os.path.isdir(host.path(host_path)):
        return False
    os.rmdir(host.path(host_path))
    return True


def snapshot(host, host_path):
    """What is needed to put ``host_path`` back as it is now: its bytes (None when absent) and,
    when it is a symlink, its target as written."""
    try:
        link = os.readlink(host.path(host_path))
    except (IOError, OSError):
        link = None
    return dict(bytes=read_bytes(host, host_path), link=link)


def restore(host, host_path, saved):
    """Put back a :func:`snapshot`: a symlink that was removed comes back as that symlink (its
    target was never touched); otherwise the old bytes (owner and mode kept), or no file at all."""
    real = host.path(host_path)
    if saved.get("link") is not None and not os.path.islink(real):
        if os.path.lexists(real):
            os.unlink(real)
        os.symlink(saved["link"], real)
        _fsync_dir(os.path.dirname(real))
        return
    if saved.get("link") is not None and saved.get("bytes") is None:
        # a dangling link whose target was written: remove that target, keep the link
        target = resolve_target(host, host_path)
        if target != real and os.path.lexists(target):
            os.unlink(target)
            _fsync_dir(os.path.dirname(target))
        return
    if saved.get("bytes") is None:
        remove(host, host_path)
    else:
        write_atomic(host, host_path, saved["bytes"])


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


def _lines(text):
    """Lines split on "\\n" only: str.splitlines() would also split (and so rewrite) form feeds,
    "\\r\\n" and other separators in lines we do not own."""
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _block_bounds(lines, name):
    """``(begin, end)`` indexes of block ``name``'s marker lines in ``lines``, or None."""
    try:
        start = lines.index(MARKER_BEGIN % name)
        return start, lines.index(MARKER_END % name, start)
    except ValueError:
        return None


def merge_block(existing, block_lines, name):
    """Return ``existing`` text with our block ``name`` set to ``block_lines``.

    Lines outside the markers are kept byte for byte.  An empty ``block_lines`` removes the
    block (markers included).  A missing block is appended at the end.
    """
    lines = _lines(existing)
    bounds = _block_bounds(lines, name)
    new_block = [MARKER_BEGIN % name] + list(block_lines) + [MARKER_END % name] if block_lines else []
    if bounds is None:
        if not new_block:
            return existing or ""
        if lines and lines[-1].strip():
            lines.append("")
        merged = lines + new_block
    else:
        merged = lines[:bounds[0]] + new_block + lines[bounds[1] + 1:]
    return "\n".join(merged) + "\n" if merged else ""


def read_block(existing, name):
    """The lines of block ``name`` in ``existing``, or None when there is no such block."""
    lines = _lines(existing)
    bounds = _block_bounds(lines, name)
    return None if bounds is None else lines[bounds[0] + 1:bounds[1]]
