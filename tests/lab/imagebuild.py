"""Build the soft-RoCE lab's VM image: debootstrap + Debian's kernel + rdma-core, as a raw ext4 disk.

Used by lab.py (``lab.py build``, or ``lab.py up`` when the cache lacks the recipe's image).
The result lands in CACHE/images/HASH/ (disk.img, vmlinuz, initrd.img, manifest.json,
build.log) by an atomic rename, so a half-built image is never used.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time


class BuildError(Exception):
    """The image could not be built; the message says where the log is."""


# Units the lab has no use for that only slow an emulated boot down (or, for
# systemd-firstboot, would wait for answers on the console).
MASKED_UNITS = (
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-firstboot.service",
    "getty@tty1.service",
    "getty-static.service",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "systemd-pstore.service",
)
LAB_UNITS = ("rdmaops-lab-provision.service", "rdmaops-lab-rxe.service")


def mounts_under(path):
    """Mount points at or below path (from /proc/self/mountinfo)."""
    path = os.path.realpath(path)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == path or point.startswith(path + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def safe_rmtree(path):
    """Remove a build directory, never following into something still mounted (a chroot's /proc or /sys)."""
    if not os.path.lexists(path):
        return
    for point in mounts_under(path):
        subprocess.run(["umount", "-l", point], check=False)
    left = mounts_under(path)
    if left:
        raise BuildError("refusing to remove %s: still mounted: %s" % (path, ", ".join(left)))
    shutil.rmtree(path)


def copy_tree(src, dest):
    """Copy the recipe's files into the root file system: executables 0755, the rest 0644, owned by root."""
    for root, dirs, files in os.walk(src):
        dirs.sort()
        rel = os.path.relpath(root, src)
        target_dir = os.path.normpath(os.path.join(dest, rel))
        os.makedirs(target_dir, exist_ok=True)
        for name in sorted(files):
            source = os.path.join(root, name)
            target = os.path.join(target_dir, name)
            if os.path.lexists(target):
                os.unlink(target)
            shutil.copyfile(source, target)
            os.chmod(target, 0o755 if os.stat(source).st_mode & 0o100 else 0o644)
            os.chown(target, 0, 0)


class Builder:
    def __init__(self, workdir, logfile, say):
        self.workdir = workdir
        self.rootfs = os.path.join(workdir, "rootfs")
        self.logfile = logfile
        self.say = say

    def sh(self, argv, what, env=None):
        with open(self.logfile, "a", encoding="utf-8") as log:
            log.write("\n$ %s\n" % " ".join(argv))
            log.flush()
            proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
        if proc.returncode != 0:
            with open(self.logfile, encoding="utf-8", errors="replace") as log:
                last = "".join(log.readlines()[-25:])
            raise BuildError("%s failed (rc %d); end of %s:\n%s" % (what, proc.returncode, self.logfile, last))

    def chroot(self, script, what):
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "DEBIAN_FRONTEND": "noninteractive",
            "LC_ALL": "C",
            "HOME": "/root",
        }
        self.sh(["chroot", self.rootfs, "/bin/sh", "-ec", script], what, env=env)

    @contextlib.contextmanager
    def mounted(self):
        points = []
        try:
            for fstype, sub in (("proc", "proc"), ("sysfs", "sys")):
                point = os.path.join(self.rootfs, sub)
                subprocess.run(["mount", "-t", fstype, fstype, point], check=True)
                points.append(point)
            yield
        finally:
            for point in reversed(points):
                subprocess.run(["umount", "-l", point], check=False)

    @contextlib.contextmanager
    def step(self, name, timings):
        t0 = time.monotonic()
        yield
        timings[name] = round(time.monotonic() - t0, 1)
        self.say("build: %-30s %6.1f s" % (name, timings[name]))


def build_image(cache_dir, digest, mirror, recipe_dir, packages, suite, size, recipe_version, say):
    images = os.path.join(cache_dir, "images")
    os.makedirs(images, exist_ok=True)
    # a build that died earlier leaves a work directory; remove it safely
    for entry in os.listdir(images):
        if entry.startswith(".build-"):
            safe_rmtree(os.path.join(images, entry))
    workdir = os.path.join(images, ".build-%s-%d" % (digest, os.getpid()))
    os.makedirs(workdir)
    logfile = os.path.join(images, "build-%s.log" % digest)  # kept when the build fails
    with open(logfile, "w", encoding="utf-8") as handle:
        handle.write("rdmaops lab image %s (%s) from %s\n" % (digest, suite, mirror))
    builder = Builder(workdir, logfile, say)
    rootfs = builder.rootfs
    timings = {}
    t_all = time.monotonic()
    say("building image %s (%s, %d packages) in %s; log %s" % (digest, suite, len(packages), workdir, logfile))
    try:
        with builder.step("debootstrap %s minbase" % suite, timings):
            builder.sh(["debootstrap", "--variant=minbase", suite, rootfs, mirror], "debootstrap")

        with builder.step("apt-get install (chroot)", timings):
            copy_tree(os.path.join(recipe_dir, "pre-install"), rootfs)
            with open(os.path.join(rootfs, "usr/sbin/policy-rc.d"), "w", encoding="ascii") as handle:
                handle.write("#!/bin/sh\nexit 101\n")  # no daemon starts inside the chroot
            os.chmod(os.path.join(rootfs, "usr/sbin/policy-rc.d"), 0o755)
            with open(os.path.join(rootfs, "etc/dpkg/dpkg.cfg.d/zz-rdmaops-lab-build"), "w", encoding="ascii") as handle:
                handle.write("force-unsafe-io\n")
            resolv = os.path.join(rootfs, "etc/resolv.conf")
            if os.path.lexists(resolv):
                os.unlink(resolv)
            shutil.copyfile("/etc/resolv.conf", resolv)  # the host's resolver, for apt in the chroot
            with builder.mounted():
                builder.chroot(
                    "apt-get update -qq\n"
                    "apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold %s\n"
                    "apt-get clean\n"
                    "rm -rf /var/lib/apt/lists/*\n" % " ".join(packages),
                    "apt-get install in the chroot",
                )

        with builder.step("configure", timings):
            os.unlink(os.path.join(rootfs, "usr/sbin/policy-rc.d"))
            os.unlink(os.path.join(rootfs, "etc/dpkg/dpkg.cfg.d/zz-rdmaops-lab-build"))
            os.unlink(resolv)
            copy_tree(os.path.join(recipe_dir, "files"), rootfs)
            for name in os.listdir(os.path.join(rootfs, "etc/ssh")):
                if name.startswith("ssh_host_"):
                    os.unlink(os.path.join(rootfs, "etc/ssh", name))  # each VM gets its own from the lab
            with open(os.path.join(rootfs, "etc/hostname"), "w", encoding="ascii") as handle:
                handle.write("rdmaops-lab\n")
            builder.chroot(
                "systemctl enable %s\nsystemctl mask %s\n" % (" ".join(LAB_UNITS), " ".join(MASKED_UNITS)),
                "systemctl enable/mask in the chroot",
            )
            versions = subprocess.run(
                ["chroot", rootfs, "dpkg-query", "-W", "-f", "${Package} ${Version}\\n"],
                stdout=subprocess.PIPE, text=True, check=True,
            ).stdout
            kernels = sorted(n for n in os.listdir(os.path.join(rootfs, "boot")) if n.startswith("vmlinuz-"))
            if len(kernels) != 1:
                raise BuildError("expected one kernel in the image's /boot, found %s" % kernels)
            kver = kernels[0][len("vmlinuz-"):]
            shutil.copyfile(os.path.join(rootfs, "boot", "vmlinuz-" + kver), os.path.join(workdir, "vmlinuz"))
            shutil.copyfile(os.path.join(rootfs, "boot", "initrd.img-" + kver), os.path.join(workdir, "initrd.img"))

        with builder.step("mkfs.ext4 -d (disk image)", timings):
            builder.sh(["mkfs.ext4", "-q", "-F", "-L", "rdmaops-lab", "-d", rootfs, os.path.join(workdir, "disk.img"), size],
                       "mkfs.ext4")
        safe_rmtree(rootfs)

        manifest = {
            "recipe_hash": digest,
            "recipe_version": recipe_version,
            "suite": suite,
            "mirror": mirror,
            "image_size": size,
            "kernel": kver,
            "packages_requested": packages,
            "packages": dict(line.split(" ", 1) for line in versions.splitlines() if line),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - t_all, 1),
            "step_seconds": timings,
        }
        with open(os.path.join(workdir, "manifest.json"), "w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True)
            handle.write("\n")
        shutil.move(logfile, os.path.join(workdir, "build.log"))
        final = os.path.join(images, digest)
        if os.path.exists(final):
            safe_rmtree(final)  # --force rebuild of the same recipe
        os.rename(workdir, final)
    except BaseException:
        with contextlib.suppress(Exception):
            safe_rmtree(workdir)
        raise
    say("image %s built in %.1f s (kernel %s)" % (digest, time.monotonic() - t_all, kver))
    return final
