#!/usr/bin/env python
"""Capture, read-only, what a host's kernel exposes about RDMA/RoCE as a JSON test fixture.

Usage: capture_host_tree.py -o OUTPUT.json [--with-rdma-cm-configfs] [--keep-hostname]

What it reads (nothing else):
  * /sys/class/infiniband/*            the class links; for each, the real device directory
                                       recursively (depth <= 8; files up to 4 KiB; symlinks are
                                       recorded, never followed; `power/` and `subsystem` skipped).
                                       For the `device` link of an RDMA device, the target
                                       directory's top level only (its files, its links such as
                                       `driver`, its sub-directory names, and the names under
                                       its net/ and infiniband*/ folders).  The directory a
                                       `driver` link points to is recorded as a bare "dir".
  * /sys/class/net/*                   the class links (and plain files such as bonding_masters);
                                       for each netdev, its real directory's top level, its
                                       bonding/ and bonding_slave/ folders, its `device` link and
                                       that target's top level as above.
  * /sys/module/*                      each module as a directory, with its version, refcnt,
                                       initstate files where present.
  * /sys/bus/pci/devices/*             the links, and each device's vendor, device, class,
                                       numa_node files and its `driver` link.
  * /proc/sys/kernel/osrelease
  * /sys/kernel/config/rdma_cm         recursively, if present.
  * optional commands, each only when found on PATH, each with a timeout, LC_ALL=C:
      ibv_devinfo; ibv_devinfo -v; rdma -j link show; rdma -j dev show; ip -j addr show;
      ip -j -d link show; ethtool -i <each netdev behind an RDMA device>; ofed_info -s;
      dpkg-query / rpm for the rdma-core version

What it writes: only the output file (or stdout with -o -).  It never writes to /sys or
/proc, never loads modules, never follows symlinks out of the directories above.  Files whose
reading can touch hardware or is not meaningful as text are not read at all: PCI `config`,
`rom`, `vpd`, `resource*`, `remove`, `rescan`, `reset`, and driver `bind`/`unbind`/`new_id`/
`remove_id`; they are left out of the manifest.

One exception, only on request: --with-rdma-cm-configfs creates, for every RDMA device that
has no directory yet, /sys/kernel/config/rdma_cm/<dev> (this is how the kernel exposes
default_roce_mode / default_roce_tos), captures the tree, then removes exactly the
directories it created.  Use that in a lab VM, not on a production host.

Manifest (JSON, sorted keys, indent=1):
  {"format": 1,
   "meta": {"captured_by": "tests/tools/capture_host_tree.py", "kernel": uname -r,
            "hostname": "host", "date": UTC ISO-8601},
   "entries": {"<absolute path>": {"type": "dir"}
                                 | {"type": "file", "content": "<text>"[, "truncated": true]}
                                 | {"type": "link", "target": "<readlink text, as given>"}
                                 | {"type": "error", "errno": "EINVAL"}},
   "commands": {"<argv joined with spaces>": {"rc": int, "stdout": str, "stderr": str}}}
A file that cannot be read (e.g. gid_attrs/types/N of an empty GID slot: EINVAL) is recorded
as type "error" with the errno name.  A command that times out has rc 124.  The host name
(full and short) is replaced by "host" in all recorded text unless --keep-hostname is given.
"""

import argparse
import datetime
import errno
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys

CAPTURED_BY = "tests/tools/capture_host_tree.py"
MAX_FILE_BYTES = 4096
MAX_DEPTH = 8
MAX_ENTRIES = 200000
CMD_TIMEOUT = 20

# Never opened: reads that touch hardware (PCI config space, option ROM, VPD, BARs) or
# write-only control files.
DENY_NAMES = {"config", "rom", "vpd", "remove", "rescan", "reset", "bind", "unbind",
              "new_id", "remove_id"}
DENY_PREFIXES = ("resource",)
# Skipped while walking an RDMA device directory.
SKIP_IN_WALK = {"power", "subsystem"}
# Sub-folders of a `device` target whose child names are recorded (one level, not recursed).
DEVICE_NAME_DIRS = ("net", "infiniband", "infiniband_verbs", "infiniband_mad")


# Linux aliases share a number; name them the way the kernel sources do.
_ERRNO_PREFERRED = {"EOPNOTSUPP", "EAGAIN", "EDEADLK"}


def errno_name(num):
    for name in _ERRNO_PREFERRED:
        if getattr(errno, name, None) == num:
            return name
    return errno.errorcode.get(num, str(num))


class Capture(object):
    def __init__(self):
        self.entries = {}
        self.commands = {}

    # ---- primitives (all read-only) -----------------------------------------------------
    def _put(self, path, rec):
        if len(self.entries) >= MAX_ENTRIES and path not in self.entries:
            raise RuntimeError("more than %d entries; refusing to continue" % MAX_ENTRIES)
        self.entries[path] = rec

    @staticmethod
    def _err(exc):
        return {"type": "error", "errno": errno_name(exc.errno)}

    def lstat(self, path):
        try:
            return os.lstat(path)
        except OSError:
            return None

    def rec_link(self, path):
        try:
            target = os.readlink(path)
        except OSError as exc:
            self._put(path, self._err(exc))
            return
        self._put(path, {"type": "link", "target": target})
        if os.path.basename(path) == "driver":
            # the driver's directory itself (not its contents), so the link is not dangling
            dest = os.path.normpath(os.path.join(os.path.dirname(path), target))
            if dest.startswith("/sys/bus/") and dest not in self.entries:
                self._put(dest, {"type": "dir"})

    def rec_file(self, path, st=None):
        name = os.path.basename(path)
        if name in DENY_NAMES or name.startswith(DENY_PREFIXES):
            return
        st = st or self.lstat(path)
        if st is None or not stat.S_ISREG(st.st_mode):
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            self._put(path, self._err(exc))
            return
        try:
            data = os.read(fd, MAX_FILE_BYTES + 1)
        except OSError as exc:
            self._put(path, self._err(exc))
            return
        finally:
            os.close(fd)
        rec = {"type": "file",
               "content": data[:MAX_FILE_BYTES].decode("utf-8", "backslashreplace")}
        if len(data) > MAX_FILE_BYTES:
            rec["truncated"] = True
        self._put(path, rec)

    def rec_any(self, path):
        """Record one path without descending: file, link or dir."""
        st = self.lstat(path)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            self.rec_link(path)
        elif stat.S_ISDIR(st.st_mode):
            self._put(path, {"type": "dir"})
        elif stat.S_ISREG(st.st_mode):
            self.rec_file(path, st)
        return st

    @staticmethod
    def listdir(path):
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    @staticmethod
    def link_dest(path):
        """Absolute directory a sysfs link points to (lexical, no symlink following)."""
        try:
            target = os.readlink(path)
        except OSError:
            return None
        dest = os.path.normpath(os.path.join(os.path.dirname(path), target))
        # sysfs class links chain (e.g. /sys/class -> /sys/devices); resolve what remains
        # without ever leaving /sys.
        dest = os.path.realpath(dest)
        if not dest.startswith("/sys/"):
            return None
        st = os.lstat(dest) if os.path.lexists(dest) else None
        if st is None or not stat.S_ISDIR(st.st_mode):
            return None
        return dest

    # ---- tree walks ---------------------------------------------------------------------
    def walk(self, path, depth=0, skip=None):
        """Record a directory recursively; links recorded, never followed."""
        skip = SKIP_IN_WALK if skip is None else skip
        self._put(path, {"type": "dir"})
        if depth >= MAX_DEPTH:
            return
        for name in self.listdir(path):
            if name in skip:
                continue
            child = os.path.join(path, name)
            st = self.rec_any(child)
            if st is not None and stat.S_ISDIR(st.st_mode):
                self.walk(child, depth + 1, skip)

    def top_level(self, path, files=None, links=None, dirs=True):
        """Record a directory's top level: files (all, or the named ones), links, subdir names."""
        self._put(path, {"type": "dir"})
        for name in self.listdir(path):
            child = os.path.join(path, name)
            st = self.lstat(child)
            if st is None:
                continue
            if stat.S_ISLNK(st.st_mode):
                if name != "subsystem" and (links is None or name in links):
                    self.rec_link(child)
            elif stat.S_ISDIR(st.st_mode):
                if dirs and name != "power":
                    self._put(child, {"type": "dir"})
            elif stat.S_ISREG(st.st_mode):
                if files is None or name in files:
                    self.rec_file(child, st)

    def device_target(self, link_path):
        """The directory behind a `device` link: top level, plus names under net/, infiniband*/."""
        dest = self.link_dest(link_path)
        if dest is None:
            return None
        self.top_level(dest)
        for sub in DEVICE_NAME_DIRS:
            d = os.path.join(dest, sub)
            st = self.lstat(d)
            if st is None or not stat.S_ISDIR(st.st_mode):
                continue
            for name in self.listdir(d):
                self.rec_any(os.path.join(d, name))
        return dest

    # ---- sections -----------------------------------------------------------------------
    def infiniband(self):
        base = "/sys/class/infiniband"
        devs = []
        if self.rec_any(base) is None:
            return devs
        for name in self.listdir(base):
            link = os.path.join(base, name)
            self.rec_any(link)
            real = self.link_dest(link) if os.path.islink(link) else link
            if real is None:
                continue
            devs.append((name, real))
            self.walk(real)
            dev_link = os.path.join(real, "device")
            if os.path.islink(dev_link):
                self.device_target(dev_link)
        return devs

    def net(self):
        base = "/sys/class/net"
        if self.rec_any(base) is None:
            return
        for name in self.listdir(base):
            link = os.path.join(base, name)
            st = self.rec_any(link)
            if st is None or not stat.S_ISLNK(st.st_mode):
                continue
            real = self.link_dest(link)
            if real is None:
                continue
            self.top_level(real)
            for sub in ("bonding", "bonding_slave"):
                d = os.path.join(real, sub)
                if os.path.isdir(d) and not os.path.islink(d):
                    self.walk(d, depth=MAX_DEPTH - 2)
            dev_link = os.path.join(real, "device")
            if os.path.islink(dev_link):
                self.device_target(dev_link)

    def modules(self):
        base = "/sys/module"
        if self.rec_any(base) is None:
            return
        for name in self.listdir(base):
            d = os.path.join(base, name)
            if not os.path.isdir(d) or os.path.islink(d):
                continue
            self.top_level(d, files=("version", "refcnt", "initstate"), links=(), dirs=False)

    def pci(self):
        base = "/sys/bus/pci/devices"
        if self.rec_any(base) is None:
            return
        for name in self.listdir(base):
            link = os.path.join(base, name)
            st = self.rec_any(link)
            if st is None or not stat.S_ISLNK(st.st_mode):
                continue
            real = self.link_dest(link)
            if real is None:
                continue
            self.top_level(real, files=("vendor", "device", "class", "numa_node"),
                           links=("driver",), dirs=False)

    def rdma_cm_configfs(self, devs, create):
        base = "/sys/kernel/config/rdma_cm"
        created = []
        if create and os.path.isdir(base):
            for name in [dev[0] for dev in devs]:
                d = os.path.join(base, name)
                if not os.path.lexists(d):
                    try:
                        os.mkdir(d)
                        created.append(d)
                    except OSError as exc:
                        sys.stderr.write("mkdir %s: %s\n" % (d, exc))
        try:
            if os.path.isdir(base) and not os.path.islink(base):
                self._put("/sys/kernel/config", {"type": "dir"})
                self.walk(base)
        finally:
            for d in reversed(created):
                try:
                    os.rmdir(d)
                except OSError as exc:
                    sys.stderr.write("rmdir %s: %s\n" % (d, exc))

    # ---- commands -------------------------------------------------------------------------
    def run(self, argv):
        if shutil.which(argv[0]) is None:
            return
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env, cwd="/")
        except OSError as exc:
            self.commands[" ".join(argv)] = {"rc": 127, "stdout": "", "stderr": str(exc)}
            return
        try:
            out, err = p.communicate(timeout=CMD_TIMEOUT)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            rc = 124
        self.commands[" ".join(argv)] = {
            "rc": rc,
            "stdout": out.decode("utf-8", "backslashreplace"),
            "stderr": err.decode("utf-8", "backslashreplace"),
        }

    def rdma_netdevs(self, devs):
        """Netdev names behind RDMA devices: rxe `parent`, gid_attrs/ndevs/*, device/net/*."""
        names = set()
        for real in [dev[1] for dev in devs]:
            for path, rec in self.entries.items():
                if rec.get("type") != "file" or not path.startswith(real + "/"):
                    continue
                rel = path[len(real) + 1:]
                if rel == "parent" or ("/gid_attrs/ndevs/" in rel):
                    v = rec["content"].strip()
                    if v:
                        names.add(v)
            dev_link = os.path.join(real, "device")
            dest = self.link_dest(dev_link) if os.path.islink(dev_link) else None
            if dest:
                names.update(self.listdir(os.path.join(dest, "net")))
        return sorted(n for n in names if os.path.lexists(os.path.join("/sys/class/net", n)))


def redact(obj, pattern):
    """Replace the host name (as a whole word) by 'host' in every string value."""
    if isinstance(obj, dict):
        return {k: redact(v, pattern) for k, v in obj.items()}
    if isinstance(obj, str):
        return pattern.sub("host", obj)
    return obj


def _utc_now():
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return now.isoformat().replace("+00:00", "Z")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Read-only capture of a host's RDMA/RoCE sysfs view and tool outputs "
                    "into one JSON manifest (test fixture). Writes only the output file.",
        epilog="Reads /sys/class/infiniband, /sys/class/net, /sys/module, /sys/bus/pci/devices, "
               "/proc/sys/kernel/osrelease, /sys/kernel/config/rdma_cm; runs ibv_devinfo [-v], "
               "rdma -j link/dev show, ip -j addr show, ip -j -d link show, ethtool -i, "
               "ofed_info -s when present. See the module docstring for details.")
    ap.add_argument("-o", "--output", required=True, help="output JSON file ('-' for stdout)")
    ap.add_argument("--with-rdma-cm-configfs", action="store_true",
                    help="LAB ONLY: mkdir /sys/kernel/config/rdma_cm/<dev> for each RDMA device "
                         "missing there, capture, then rmdir what was created")
    ap.add_argument("--keep-hostname", action="store_true",
                    help="do not replace the host name with 'host' in recorded text")
    ap.add_argument("--no-commands", action="store_true", help="record no command outputs")
    args = ap.parse_args(argv)

    out = os.path.abspath(args.output) if args.output != "-" else "-"
    if out != "-" and (out.startswith("/sys/") or out.startswith("/proc/")):
        ap.error("refusing to write under /sys or /proc")

    cap = Capture()
    devs = cap.infiniband()
    cap.net()
    cap.modules()
    cap.pci()
    cap.rec_any("/proc/sys/kernel/osrelease")
    cap.rdma_cm_configfs(devs, args.with_rdma_cm_configfs)

    if not args.no_commands:
        for argv_ in (["ibv_devinfo"], ["ibv_devinfo", "-v"],
                      ["rdma", "-j", "link", "show"], ["rdma", "-j", "dev", "show"],
                      ["ip", "-j", "addr", "show"], ["ip", "-j", "-d", "link", "show"]):
            cap.run(argv_)
        for nd in cap.rdma_netdevs(devs):
            cap.run(["ethtool", "-i", nd])
        cap.run(["ofed_info", "-s"])
        # The rdma-core package version, exactly as rdma_facts asks for it.
        cap.run(["dpkg-query", "-W", "-f=${Version}", "rdma-core"])
        cap.run(["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", "rdma-core"])

    doc = {
        "format": 1,
        "meta": {
            "captured_by": CAPTURED_BY,
            "kernel": os.uname().release,
            "hostname": "host",
            "date": _utc_now(),
        },
        "entries": cap.entries,
        "commands": cap.commands,
    }
    if not args.keep_hostname:
        full = socket.gethostname()
        names = sorted({n for n in (full, full.split(".")[0]) if len(n) >= 3},
                       key=len, reverse=True)
        if names:
            pattern = re.compile(r"(?<![\w.-])(?:%s)(?![\w-])" % "|".join(map(re.escape, names)))
            doc["entries"] = redact(doc["entries"], pattern)
            doc["commands"] = redact(doc["commands"], pattern)
    text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        sys.stderr.write("wrote %s: %d entries, %d commands\n"
                         % (out, len(cap.entries), len(cap.commands)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
