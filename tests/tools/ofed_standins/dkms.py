"""Stand-in for dkms in the ofed role's tests: the real command-line verbs the role and the
stand-in packages use, acting on the real DKMS tree layout, without a compiler.

  dkms add -m MODULE -v VERSION           register /usr/src/MODULE-VERSION
  dkms install -m MODULE -v VERSION -k K  "build" and install for kernel K
  dkms autoinstall [-k K]                 every registered AUTOINSTALL module for K (default: running)
  dkms remove -m MODULE -v VERSION --all  uninstall from every kernel and unregister
  dkms status                             dkms 3.x format: "module/version, kernel, arch: state"

A build for kernel K fails like the real one when /lib/modules/K/build is missing ("Your kernel
headers ... cannot be found", no make.log) or when /etc/rdmaops-test/dkms-break-K exists (a
compiler error in /var/lib/dkms/MODULE/VERSION/build/make.log, exit status 10). A built module
is a text file named like the real one under /lib/modules/K/updates/dkms/.

With /etc/rdmaops-test/dkms-lab (the lab flavour's dkms package) no headers are needed and a built
module is a copy of kernel K's own module of that name (a real module: depmod and modprobe stay
happy in the soft-RoCE VMs), or the text file when K has none.
"""

import os
import platform
import shutil
import sys

TREE = "/var/lib/dkms"
LAB_MARKER = "/etc/rdmaops-test/dkms-lab"
SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
ARCH = platform.machine()


def conf(module, version):
    values = {}
    with open("/usr/src/%s-%s/dkms.conf" % (module, version)) as handle:
        for line in handle:
            if "=" in line and not line.startswith("#"):
                key, _sep, value = line.strip().partition("=")
                values[key] = value.strip('"')
    return values


def built_names(module, version):
    values = conf(module, version)
    return [value for key, value in sorted(values.items()) if key.startswith("BUILT_MODULE_NAME")]


def registered():
    for module in sorted(os.listdir(TREE)) if os.path.isdir(TREE) else []:
        for version in sorted(os.listdir(os.path.join(TREE, module))):
            if os.path.isdir(os.path.join(TREE, module, version, "source")) or os.path.islink(
                    os.path.join(TREE, module, version, "source")):
                yield module, version


def add(module, version):
    base = os.path.join(TREE, module, version)
    os.makedirs(base, exist_ok=True)
    if not os.path.lexists(os.path.join(base, "source")):
        os.symlink("/usr/src/%s-%s" % (module, version), os.path.join(base, "source"))
    print("Creating symlink %s/source -> /usr/src/%s-%s" % (base, module, version))


def own_module(kernel, name):
    """Kernel ``kernel``'s own module ``name`` (its path under /lib/modules/K/kernel), or None."""
    for dirpath, _dirs, files in os.walk("/lib/modules/%s/kernel" % kernel):
        for suffix in SUFFIXES:
            if name + suffix in files:
                return os.path.join(dirpath, name + suffix)
    return None


def install(module, version, kernel):
    base = os.path.join(TREE, module, version)
    lab = os.path.exists(LAB_MARKER)
    if not lab and not os.path.isdir("/lib/modules/%s/build" % kernel):
        print("Error! Your kernel headers for kernel %s cannot be found at /lib/modules/%s/build or "
              "/lib/modules/%s/source." % (kernel, kernel, kernel), file=sys.stderr)
        return 21
    os.makedirs(os.path.join(base, "build"), exist_ok=True)
    log = os.path.join(base, "build", "make.log")
    if os.path.exists("/etc/rdmaops-test/dkms-break-%s" % kernel):
        with open(log, "w") as handle:
            handle.write("DKMS make.log for %s-%s for kernel %s (%s)\n" % (module, version, kernel, ARCH))
            handle.write("make -j2 KERNELRELEASE=%s -C /lib/modules/%s/build M=%s/build\n" % (kernel, kernel, base))
            handle.write("drivers/net/ethernet/mellanox/mlx5/core/dpll.c:14:9: error: implicit declaration "
                         "of function 'dpll_netdev_pin_set' [-Werror=implicit-function-declaration]\n")
            handle.write("make: *** [Makefile:2025: drivers/net/ethernet/mellanox/mlx5/core] Error 2\n")
        print("Error! Bad return status for module build on kernel: %s (%s)" % (kernel, ARCH), file=sys.stderr)
        print("Consult %s for more information." % log, file=sys.stderr)
        return 10
    built = os.path.join(base, kernel, ARCH, "module")
    os.makedirs(built, exist_ok=True)
    dest = "/lib/modules/%s/updates/dkms" % kernel
    os.makedirs(dest, exist_ok=True)
    for name in built_names(module, version):
        own = own_module(kernel, name) if lab else None
        suffix = os.path.basename(own)[len(name):] if own else ".ko"
        for path in (os.path.join(built, name + suffix), os.path.join(dest, name + suffix)):
            if own:
                shutil.copyfile(own, path)
                continue
            with open(path, "w") as handle:
                handle.write("stand-in %s from %s/%s for %s\n" % (name, module, version, kernel))
    with open(log, "w") as handle:
        handle.write("DKMS make.log for %s-%s for kernel %s (%s)\nmake: done\n" % (module, version, kernel, ARCH))
    link = os.path.join(TREE, module, "kernel-%s-%s" % (kernel, ARCH))
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("%s/%s/%s" % (version, kernel, ARCH), link)
    print("Building module(s)... done.\nInstalling %s/%s.ko to %s" % (dest, module, dest))
    return 0


def remove(module, version):
    for name in os.listdir(os.path.join(TREE, module)):
        path = os.path.join(TREE, module, name)
        if name.startswith("kernel-") and os.readlink(path).startswith(version + "/"):
            kernel = name[len("kernel-"):-len("-" + ARCH)]
            for built in built_names(module, version):
                for suffix in SUFFIXES:
                    target = "/lib/modules/%s/updates/dkms/%s%s" % (kernel, built, suffix)
                    if os.path.exists(target):
                        os.unlink(target)
            os.unlink(path)
    shutil.rmtree(os.path.join(TREE, module, version), ignore_errors=True)
    if not os.listdir(os.path.join(TREE, module)):
        os.rmdir(os.path.join(TREE, module))
    print("Deleting module %s-%s completely from the DKMS tree." % (module, version))
    return 0


def status():
    for module, version in registered():
        base = os.path.join(TREE, module, version)
        kernels = [name for name in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, name, ARCH))]
        if not kernels:
            print("%s/%s: added" % (module, version))
        for kernel in kernels:
            link = os.path.join(TREE, module, "kernel-%s-%s" % (kernel, ARCH))
            installed = os.path.islink(link) and os.readlink(link) == "%s/%s/%s" % (version, kernel, ARCH)
            print("%s/%s, %s, %s: %s" % (module, version, kernel, ARCH, "installed" if installed else "built"))
    return 0


def option(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def main(args):
    verb = args[0] if args else ""
    if verb == "status":
        return status()
    if verb == "add":
        add(option(args, "-m"), option(args, "-v"))
        return 0
    if verb == "install":
        return install(option(args, "-m"), option(args, "-v"), option(args, "-k") or platform.release())
    if verb == "autoinstall":
        kernel = option(args, "-k") or platform.release()
        rc = 0
        for module, version in registered():
            if conf(module, version).get("AUTOINSTALL", "").lower() == "yes":
                rc = install(module, version, kernel) or rc
        return rc
    if verb == "remove":
        return remove(option(args, "-m"), option(args, "-v"))
    print("dkms stand-in: unsupported arguments %r" % (args,), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
