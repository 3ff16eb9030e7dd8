"""Build the stand-ins the ofed role is tested against: a signed DOCA-Host apt repository of
stand-in packages with the real names, and an MLNX_OFED tarball whose installer records its
arguments.

  build.py doca-repo OUT [--version 3.2.1] [--version 3.3.0]   (prints JSON: fingerprint, versions)
  build.py doca-repo OUT --flavour lab --version 3.2.1 --version 3.3.0 --broken 3.4.0
  build.py distro-repo OUT [--rdma-core-version 9999.0-1]     (a "distribution update" to pin against)
  build.py mlnx-tarball OUT --version 24.10-1.1.4.0 --supported-kernel 6.1.0-21-amd64

The repository is what NVIDIA publishes, shrunk: a flat apt repository (``deb URL ./``) with
Packages, Release, InRelease and Release.gpg, signed by a key generated for the run (its
public half is OUT/GPG-KEY-test.pub). Packages are built with dpkg-deb:

  doca-ofed, doca-roce      profile metapackages (version <doca>-<build>), exact dependencies
  ofed-scripts              /usr/bin/ofed_info ("OFED-internal-<ofed>:"), /usr/sbin/ofed_uninstall.sh
  mlnx-ofed-kernel-dkms     /usr/src/mlnx-ofed-kernel-<v>/dkms.conf; postinst registers it with DKMS and
                            builds it for every installed kernel with headers, and, like the real
                            package scripts, does not fail when a build fails
  mlnx-ofed-kernel-utils    /etc/init.d/openibd, /etc/infiniband/openib.conf
  rdma-core, ibverbs-utils  DOCA's builds of the packages it shadows (version 2510.x > Debian's 44.0)
  dkms                      the stand-in dkms (tests/tools/ofed_standins/dkms.py)

The lab flavour (``--flavour lab``, for the soft-RoCE VMs of tests/lab) leaves the host's RDMA
working: no rdma-core or ibverbs-utils of its own (the profiles depend on the distribution's
rdma-core, ibverbs-utils and perftest instead of shadowing them), an openibd whose restart reloads
the real modules (rdma_rxe) and re-creates each Soft-RoCE device on the netdev it had, DKMS
"builds" that install the running kernel's own mlx5 modules under updates/dkms (no headers, no
compiler; the dkms package carries /etc/rdmaops-test/dkms-lab for that) and an ofed_uninstall.sh
that removes only the stand-ins. ``--broken VERSION`` (either flavour) builds that release with a
mlnx-ofed-kernel-dkms whose postinst fails, as a package whose module build breaks would.

Needs dpkg-deb and gpg on the machine that runs it; nothing else.
"""

import argparse
import contextlib
import email.utils
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

DOCA_RELEASES = {
    "3.2.1": dict(build="044000", ofed="25.10-1.7.1", kernel="25.10.OFED.25.10.1.7.1", rdma="2510.0.11-1"),
    "3.3.0": dict(build="000400", ofed="26.01-1.0.0", kernel="26.01.OFED.26.01.1.0.0", rdma="2601.0.6-1"),
    "3.4.0": dict(build="000100", ofed="26.04-1.0.0", kernel="26.04.OFED.26.04.1.0.0", rdma="2604.0.2-1"),
}
FLAVOURS = ("molecule", "lab")
# What the lab flavour's profiles take from the distribution instead of shadowing it.
LAB_DISTRO_DEPENDS = "rdma-core, ibverbs-providers, ibverbs-utils, perftest"
LAB_DKMS_MARKER = "/etc/rdmaops-test/dkms-lab"
DKMS_VERSION = "3.0.10-8+doca1"

OFED_INFO = """#!/bin/sh
# stand-in ofed_info (rdmaops.roce tests)
case "$1" in
  -s) echo "{prefix}-{ofed}:" ;;
  -n) echo "{ofed}" ;;
  *) printf '{prefix}-{ofed}:\\n\\nmlnx-ofed-kernel:\\nstand-in {ofed}\\n' ;;
esac
"""

OFED_UNINSTALL = """#!/bin/sh
# stand-in ofed_uninstall.sh (rdmaops.roce tests): removes every OFED package, as the real one does.
[ "$1" = "--force" ] || {{ echo "This program will uninstall all OFED packages on your system; run it with --force"; exit 1; }}
pkgs=""
for p in {packages}; do
  if dpkg-query -W -f='${{db:Status-Abbrev}}' "$p" 2>/dev/null | grep -q '^.i'; then pkgs="$pkgs $p"; fi
done
[ -z "$pkgs" ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y $pkgs
"""

DKMS_POSTINST = """#!/bin/sh
set -e
if [ "$1" = configure ]; then
  dkms add -m mlnx-ofed-kernel -v {v}
  echo "First Installation: checking all kernels..."
  for dir in /lib/modules/*; do
    k=$(basename "$dir")
    [ -e "$dir/modules.builtin" ] || continue
    if [ -d "$dir/build" ]; then
      echo "Building for $k"
      # Like the real package scripts: a failed build does not fail the package.
      dkms install -m mlnx-ofed-kernel -v {v} -k "$k" || echo "DKMS build for $k failed" >&2
    else
      echo "Module build for kernel $k was skipped since the kernel headers for this kernel do not seem to be installed."
    fi
  done
fi
"""

# The lab flavour: the stand-in dkms needs no headers there, so every installed kernel is built for.
DKMS_POSTINST_LAB = """#!/bin/sh
set -e
if [ "$1" = configure ]; then
  dkms add -m mlnx-ofed-kernel -v {v}
  for dir in /lib/modules/*; do
    k=$(basename "$dir")
    [ -e "$dir/modules.builtin" ] || continue
    echo "Building for $k"
    dkms install -m mlnx-ofed-kernel -v {v} -k "$k" || echo "DKMS build for $k failed" >&2
  done
fi
"""

# --broken: the release whose kernel package cannot be configured (dpkg leaves it half-configured).
DKMS_POSTINST_BROKEN = """#!/bin/sh
if [ "$1" = configure ]; then
  k=$(uname -r)
  echo "Building for $k"
  echo "Error! Bad return status for module build on kernel: $k ($(uname -m))" >&2
  echo "Consult /var/lib/dkms/mlnx-ofed-kernel/{v}/build/make.log for more information." >&2
  exit 10
fi
"""

DKMS_PRERM = """#!/bin/sh
dkms remove -m mlnx-ofed-kernel -v {v} --all || true
"""

DKMS_CONF = """PACKAGE_NAME="mlnx-ofed-kernel"
PACKAGE_VERSION="{v}"
BUILT_MODULE_NAME[0]="mlx5_core"
BUILT_MODULE_NAME[1]="mlx5_ib"
AUTOINSTALL=yes
"""

OPENIBD = """#!/bin/sh
# stand-in openibd (rdmaops.roce tests): records each call
mkdir -p /var/log/rdmaops-test
echo "openibd $*" >> /var/log/rdmaops-test/openibd.log
"""

# The lab flavour's openibd: a restart reloads the real RDMA modules of the lab's Soft-RoCE
# devices and puts each device back on the netdev it had (as the lab's boot unit made them).
OPENIBD_LAB = """#!/bin/sh
# stand-in openibd for the rdmaops.roce soft-RoCE lab: records each call; restart/start reload
# rdma_rxe and re-create every Soft-RoCE device on its netdev
mkdir -p /var/log/rdmaops-test
echo "openibd $*" >> /var/log/rdmaops-test/openibd.log
state=/run/rdmaops-test-openibd.links
stop() {
  : > "$state"
  for d in /sys/class/infiniband/rxe*; do
    [ -e "$d/parent" ] || continue
    echo "${d##*/} $(cat "$d/parent")" >> "$state"
  done
  while read -r dev netdev; do rdma link delete "$dev"; done < "$state"
  modprobe -r rdma_rxe || echo "rdma_rxe stays loaded (in use)"
}
start() {
  modprobe rdma_rxe
  [ -s "$state" ] || return 0
  while read -r dev netdev; do
    [ -e "/sys/class/infiniband/$dev" ] || rdma link add "$dev" type rxe netdev "$netdev"
  done < "$state"
}
case "$1" in
  stop) stop ;;
  start) start ;;
  restart|force-reload) stop; start ;;
  status) ls /sys/class/infiniband ;;
  *) echo "Usage: openibd {start|stop|restart|status}"; exit 1 ;;
esac
"""

IBV_DEVINFO = """#!/bin/sh
echo "No IB devices found"
"""

MLNXOFEDINSTALL = """#!/bin/sh
# stand-in mlnxofedinstall (rdmaops.roce tests): records its arguments, installs ofed_info and
# ofed_uninstall.sh and the mlx5 modules for every installed kernel, exits with the status in
# /etc/rdmaops-test/mlnxofedinstall-rc (default 0).  Every path is under $RDMAOPS_HOST_ROOT
# when it is set (a recorded host tree), so the module can be tested without touching /.
root="${{RDMAOPS_HOST_ROOT:-}}"
root="${{root%/}}"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$root/var/log/rdmaops-test"
printf '%s\\n' "$@" > "$root/var/log/rdmaops-test/mlnxofedinstall.args"
echo "$here" > "$root/var/log/rdmaops-test/mlnxofedinstall.dir"
echo "Logs dir: /tmp/MLNX_OFED_LINUX.$$.logs"
rc=$(cat "$root/etc/rdmaops-test/mlnxofedinstall-rc" 2>/dev/null || echo 0)
if [ "$rc" != 0 ]; then
  echo "Error: the stand-in installer was told to exit $rc"
  exit "$rc"
fi
install -D -m 0755 "$here/standin/ofed_info" "$root/usr/bin/ofed_info"
install -D -m 0755 "$here/standin/ofed_uninstall.sh" "$root/usr/sbin/ofed_uninstall.sh"
for dir in "$root"/lib/modules/*; do
  [ -e "$dir/modules.builtin" ] || continue
  mkdir -p "$dir/extra/mlnx-ofa_kernel"
  for m in mlx5_core mlx5_ib; do echo "stand-in $m {version}" > "$dir/extra/mlnx-ofa_kernel/$m.ko"; done
done
echo "Installation passed successfully"
"""

MLNX_UNINSTALL = """#!/bin/sh
[ "$1" = "--force" ] || exit 1
rm -f /lib/modules/*/extra/mlnx-ofa_kernel/mlx5_core.ko /lib/modules/*/extra/mlnx-ofa_kernel/mlx5_ib.ko
rm -f /usr/bin/ofed_info /usr/sbin/ofed_uninstall.sh
"""


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, **kwargs)


def build_deb(out, name, version, depends="", files=None, scripts=None, description=None):
    """dpkg-deb a package from {path: (mode, text)} and maintainer scripts."""
    root = tempfile.mkdtemp(prefix="deb.")
    try:
        os.makedirs(os.path.join(root, "DEBIAN"))
        control = [
            "Package: %s" % name,
            "Version: %s" % version,
            "Architecture: all",
            "Maintainer: rdmaops tests <tests@rdmaops.invalid>",
            "Section: misc",
            "Priority: optional",
        ]
        if depends:
            control.append("Depends: %s" % depends)
        control.append("Description: %s" % (description or "stand-in %s for the rdmaops.roce ofed role tests" % name))
        with open(os.path.join(root, "DEBIAN", "control"), "w") as handle:
            handle.write("\n".join(control) + "\n")
        for script, text in (scripts or {}).items():
            path = os.path.join(root, "DEBIAN", script)
            with open(path, "w") as handle:
                handle.write(text)
            os.chmod(path, 0o755)
        for path, (mode, text) in (files or {}).items():
            real = os.path.join(root, path.lstrip("/"))
            os.makedirs(os.path.dirname(real), exist_ok=True)
            with open(real, "w") as handle:
                handle.write(text)
            os.chmod(real, mode)
        deb = os.path.join(out, "%s_%s_all.deb" % (name, version.replace(":", "%3a")))
        run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb], stdout=subprocess.DEVNULL)
        return deb
    finally:
        shutil.rmtree(root)


def release_packages(out, doca, flavour="molecule", broken=False):
    rel = DOCA_RELEASES[doca]
    k = "%s-1" % rel["kernel"]
    r = rel["rdma"]
    profile = "%s-%s" % (doca, rel["build"])
    lab = flavour == "lab"
    ofed_set = "doca-ofed doca-roce mlnx-ofed-kernel-utils mlnx-ofed-kernel-dkms ofed-scripts"
    if not lab:
        ofed_set = "doca-ofed doca-roce mlnx-ofed-kernel-utils mlnx-ofed-kernel-dkms ibverbs-utils rdma-core ofed-scripts"
    build_deb(out, "ofed-scripts", k, files={
        "/usr/bin/ofed_info": (0o755, OFED_INFO.format(prefix="OFED-internal", ofed=rel["ofed"])),
        "/usr/sbin/ofed_uninstall.sh": (0o755, OFED_UNINSTALL.format(packages=ofed_set)),
    })
    postinst = DKMS_POSTINST_BROKEN if broken else DKMS_POSTINST_LAB if lab else DKMS_POSTINST
    build_deb(out, "mlnx-ofed-kernel-dkms", k, depends="dkms", files={
        "/usr/src/mlnx-ofed-kernel-%s/dkms.conf" % rel["kernel"]: (0o644, DKMS_CONF.format(v=rel["kernel"])),
    }, scripts={"postinst": postinst.format(v=rel["kernel"]), "prerm": DKMS_PRERM.format(v=rel["kernel"])})
    build_deb(out, "mlnx-ofed-kernel-utils", k, files={
        "/etc/init.d/openibd": (0o755, OPENIBD_LAB if lab else OPENIBD),
        "/etc/infiniband/openib.conf": (0o644, "ONBOOT=yes\nRUN_SYSCTL=no\n"),
    })
    common = "ofed-scripts (= {k}), mlnx-ofed-kernel-utils (= {k}), mlnx-ofed-kernel-dkms (= {k})"
    if lab:
        build_deb(out, "doca-ofed", profile, depends=(common + ", " + LAB_DISTRO_DEPENDS).format(k=k))
        build_deb(out, "doca-roce", profile, depends=(common + ", rdma-core, ibverbs-providers").format(k=k))
        return
    build_deb(out, "rdma-core", r, files={"/usr/share/doc/rdma-core/STANDIN": (0o644, "DOCA %s\n" % doca)})
    build_deb(out, "ibverbs-utils", r, depends="rdma-core (= %s)" % r,
              files={"/usr/bin/ibv_devinfo": (0o755, IBV_DEVINFO)})
    common += ", rdma-core (= {r})"
    build_deb(out, "doca-ofed", profile, depends=(common + ", ibverbs-utils (= {r})").format(k=k, r=r))
    build_deb(out, "doca-roce", profile, depends=common.format(k=k, r=r))


def index(out, gnupghome, key_id):
    """Packages, Release, InRelease, Release.gpg for a flat repository, as apt-ftparchive writes them."""
    stanzas = []
    for name in sorted(os.listdir(out)):
        if not name.endswith(".deb"):
            continue
        path = os.path.join(out, name)
        control = run(["dpkg-deb", "-f", path], stdout=subprocess.PIPE, universal_newlines=True).stdout.rstrip("\n")
        with open(path, "rb") as handle:
            data = handle.read()
        stanzas.append("%s\nFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n" % (
            control, name, len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()))
    packages = "\n".join(stanzas).encode("utf-8")
    with open(os.path.join(out, "Packages"), "wb") as handle:
        handle.write(packages)
    with gzip.open(os.path.join(out, "Packages.gz"), "wb") as handle:
        handle.write(packages)
    lines = ["Origin: rdmaops-test", "Label: DOCA-HOST-TEST", "Date: %s" % email.utils.formatdate(usegmt=True)]
    for field, algo in (("MD5Sum", hashlib.md5), ("SHA256", hashlib.sha256)):
        lines.append("%s:" % field)
        for name in ("Packages", "Packages.gz"):
            with open(os.path.join(out, name), "rb") as handle:
                data = handle.read()
            lines.append(" %s %d %s" % (algo(data).hexdigest(), len(data), name))
    with open(os.path.join(out, "Release"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    gpg = ["gpg", "--homedir", gnupghome, "--batch", "--yes", "--quiet", "--local-user", key_id]
    for name in ("InRelease", "Release.gpg"):
        if os.path.exists(os.path.join(out, name)):
            os.unlink(os.path.join(out, name))
    run(gpg + ["--clearsign", "-o", os.path.join(out, "InRelease"), os.path.join(out, "Release")])
    run(gpg + ["-abs", "-o", os.path.join(out, "Release.gpg"), os.path.join(out, "Release")])


def test_key(gnupghome):
    os.makedirs(gnupghome, mode=0o700, exist_ok=True)
    uid = "rdmaops DOCA test repository <doca-test@rdmaops.invalid>"
    listing = subprocess.run(["gpg", "--homedir", gnupghome, "--with-colons", "--list-secret-keys", uid],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                             check=False).stdout
    if "fpr:" not in listing:
        run(["gpg", "--homedir", gnupghome, "--batch", "--passphrase", "", "--quick-gen-key", uid, "rsa2048", "sign",
             "never"], stderr=subprocess.DEVNULL)
        listing = run(["gpg", "--homedir", gnupghome, "--with-colons", "--list-secret-keys", uid],
                      stdout=subprocess.PIPE, universal_newlines=True).stdout
    fpr = [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")][0]
    return fpr


@contextlib.contextmanager
def short_homedir(gnupghome):
    """The GnuPG home directory under a short path for the gpg calls of one build.

    gpg-agent puts its sockets in the home directory (this machine has no /run/user/UID for them),
    and a Unix socket's path may not be longer than 107 bytes: a deep directory, such as a test's
    tmp_path under pytest-xdist, fails key generation with "No agent running". A symlink in a
    directory of its own under /tmp names it in a few bytes; the agent is stopped afterwards.
    """
    os.makedirs(gnupghome, mode=0o700, exist_ok=True)
    link_dir = tempfile.mkdtemp(prefix="rdg.", dir="/tmp")
    link = os.path.join(link_dir, "h")
    os.symlink(os.path.abspath(gnupghome), link)
    try:
        yield link
    finally:
        try:
            subprocess.run(["gpgconf", "--homedir", link, "--kill", "gpg-agent"], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:
            pass  # no gpgconf: the agent ends by itself when its sockets go
        shutil.rmtree(link_dir, ignore_errors=True)


def doca_repo(args):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    with short_homedir(args.gnupghome or os.path.join(out, ".gnupg")) as gnupghome:
        _doca_repo(args, out, gnupghome)
    if not args.gnupghome:
        shutil.rmtree(os.path.join(out, ".gnupg"), ignore_errors=True)


def _doca_repo(args, out, gnupghome):
    fpr = test_key(gnupghome)
    versions = args.version or ["3.2.1"]
    broken = [version for version in args.broken or [] if version not in versions]
    for version in versions + broken:
        release_packages(out, version, args.flavour, broken=version in broken)
    with open(os.path.join(HERE, "dkms.py")) as handle:
        dkms_files = {"/usr/sbin/dkms": (0o755, "#!/usr/bin/python3\n" + handle.read())}
    if args.flavour == "lab":
        dkms_files[LAB_DKMS_MARKER] = (0o644, "the kernel's own mlx5 modules stand for the OFED builds\n")
    build_deb(out, "dkms", DKMS_VERSION, depends="python3", files=dkms_files)
    key = run(["gpg", "--homedir", gnupghome, "--armor", "--export", fpr], stdout=subprocess.PIPE).stdout
    with open(os.path.join(out, "GPG-KEY-test.pub"), "wb") as handle:
        handle.write(key)
    index(out, gnupghome, fpr)
    result = dict(fingerprint=fpr, versions={v: DOCA_RELEASES[v] for v in versions}, out=out)
    if args.flavour != "molecule" or broken:
        result.update(flavour=args.flavour, broken=broken)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


def distro_repo(args):
    """An unsigned flat repository that plays "the distribution published a newer rdma-core"."""
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    build_deb(out, "rdma-core", args.rdma_core_version,
              files={"/usr/share/doc/rdma-core/STANDIN": (0o644, "distribution update\n")},
              description="stand-in for a distribution update of rdma-core")
    stanzas = []
    for name in sorted(os.listdir(out)):
        if name.endswith(".deb"):
            path = os.path.join(out, name)
            control = run(["dpkg-deb", "-f", path], stdout=subprocess.PIPE, universal_newlines=True).stdout.rstrip("\n")
            with open(path, "rb") as handle:
                data = handle.read()
            stanzas.append("%s\nFilename: ./%s\nSize: %d\nSHA256: %s\n" % (
                control, name, len(data), hashlib.sha256(data).hexdigest()))
    with open(os.path.join(out, "Packages"), "w") as handle:
        handle.write("\n".join(stanzas))
    with open(os.path.join(out, "Release"), "w") as handle:
        handle.write("Origin: rdmaops-test-distro\nLabel: distro-update\nDate: %s\n" % email.utils.formatdate(usegmt=True))
    json.dump(dict(out=out, rdma_core=args.rdma_core_version), sys.stdout)
    sys.stdout.write("\n")


def mlnx_tarball(args):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    top = "MLNX_OFED_LINUX-%s-%s-x86_64" % (args.version, args.distro)
    path = os.path.join(out, top + ".tgz")
    members = {
        "mlnxofedinstall": (0o755, MLNXOFEDINSTALL.format(version=args.version)),
        ".supported_kernels": (0o644, "\n".join(args.supported_kernel) + "\n"),
        "standin/ofed_info": (0o755, OFED_INFO.format(prefix="MLNX_OFED_LINUX", ofed=args.version)),
        "standin/ofed_uninstall.sh": (0o755, MLNX_UNINSTALL),
        "LICENSE": (0o644, "stand-in\n"),
    }
    with tarfile.open(path, "w:gz") as archive:
        directory = tarfile.TarInfo(top)
        directory.type = tarfile.DIRTYPE
        directory.mode = 0o755
        archive.addfile(directory)
        for name, (mode, text) in sorted(members.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo("%s/%s" % (top, name))
            info.size = len(data)
            info.mode = mode
            archive.addfile(info, fileobj=io.BytesIO(data))
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    json.dump(dict(tarball=path, sha256=digest, version=args.version, top=top), sys.stdout)
    sys.stdout.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command")
    repo = sub.add_parser("doca-repo")
    repo.add_argument("out")
    repo.add_argument("--version", action="append", choices=sorted(DOCA_RELEASES))
    repo.add_argument("--flavour", choices=FLAVOURS, default="molecule",
                      help="lab: packages that keep the distribution's RDMA stack working (default: molecule)")
    repo.add_argument("--broken", action="append", choices=sorted(DOCA_RELEASES),
                      help="also build this release, with a mlnx-ofed-kernel-dkms whose postinst fails")
    repo.add_argument("--gnupghome", help="keep the signing key here (default: generated, then removed)")
    distro = sub.add_parser("distro-repo")
    distro.add_argument("out")
    distro.add_argument("--rdma-core-version", default="9999.0-1")
    tgz = sub.add_parser("mlnx-tarball")
    tgz.add_argument("out")
    tgz.add_argument("--version", default="24.10-1.1.4.0")
    tgz.add_argument("--distro", default="debian12.5")
    tgz.add_argument("--supported-kernel", action="append", default=[])
    args = parser.parse_args()
    if args.command == "doca-repo":
        doca_repo(args)
    elif args.command == "distro-repo":
        distro_repo(args)
    elif args.command == "mlnx-tarball":
        mlnx_tarball(args)
    else:
        parser.error("name a command: doca-repo, distro-repo or mlnx-tarball")


if __name__ == "__main__":
    main()
