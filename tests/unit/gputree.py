"""GPU host trees for the peermem tests, built on the ConnectX-7 / DOCA-OFED host fixture.

:func:`gpu_host` materialises ``fixtures/hosts/cx7_doca.py`` (two H100s, DOCA-OFED mlx5_core,
ib_core loaded) with the changes a peermem scenario needs, and configures the kmodsim
simulator (modprobe, modinfo, dmesg, systemctl) in the same tree:

* every module directory gets ``initstate`` (``live``), as the kernel writes it for loadable
  modules (the fixture was written for rdma_facts, which only looks at the directories);
* ``nvidia_peermem`` is *not* loaded unless asked, the nvidia module shows ``driver`` as
  its version and ``/proc/driver/nvidia/version`` names the flavour;
* ``/proc/kallsyms`` lists OFED's ``ib_register_peer_memory_client`` unless ``peer_api=False``;
* a successful ``modprobe nvidia-peermem`` creates what the real module creates:
  ``/sys/module/nvidia_peermem/version`` and ``/sys/kernel/mm/memory_peers/nv_mem/version``.
"""

import os
import sys

import hosttree
import kmodsim
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from fixtures.hosts import cx7_doca

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "peermem")
KERNEL = cx7_doca.KERNEL


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def nvrm_line(driver, flavor):
    if flavor == "open":
        return "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U16)  Tue May 20 2025\n" % driver
    return "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Sat Aug 19 01:15:15 UTC 2023\n" % driver


def gpu_host(root, driver="535.104.05", flavor="proprietary", peer_api=True, peermem_loaded=False,
             modinfo="nvidia-peermem-535-ofed.txt", peermem_behaviour=None, extra_config=None):
    """Materialise the scenario under ``root``; return the bin directory of its stub tools."""
    root = str(root)
    manifest = cx7_doca.manifest()
    entries = manifest["entries"]
    for path in [p for p in entries if p.startswith("/sys/module/nvidia_peermem")]:
        del entries[path]
    for path in [p for p in list(entries) if p.count("/") == 3 and p.startswith("/sys/module/")]:
        entries[path + "/initstate"] = {"type": "file", "content": "live\n"}
    entries["/sys/module/nvidia/version"] = {"type": "file", "content": driver + "\n"}
    entries["/proc/driver/nvidia/version"] = {"type": "file", "content": nvrm_line(driver, flavor)}
    symbols = "0000000000000000 T ib_register_client\t[ib_core]\n"
    if peer_api:
        symbols += "0000000000000000 T ib_register_peer_memory_client\t[ib_core]\n"
    entries["/proc/kallsyms"] = {"type": "file", "content": symbols}
    bindir = hosttree.materialize(manifest, root)
    simdir = os.path.join(root, "simbin")
    kmodsim.install_stubs(simdir)
    behaviour = {
        "creates": {
            "/sys/module/nvidia_peermem/version": driver + "\n",
            "/sys/kernel/mm/memory_peers/nv_mem/version": driver + "\n",
        }
    }
    behaviour.update(peermem_behaviour or {})
    config = dict(
        modules={"nvidia_peermem": behaviour},
        modinfo={"nvidia_peermem": fixture("modinfo", modinfo)} if modinfo else {},
    )
    config.update(extra_config or {})
    kmodsim.Sim(root).configure(**config)
    kmodsim.Sim(root).log("[    2.113400] mlx5_core 0000:3d:00.0: firmware version: 28.39.1002")
    if peermem_loaded:
        kmodsim.Sim(root).run(["modprobe", "nvidia-peermem"])
        os.unlink(os.path.join(root, ".kmodsim", "calls"))
    return [simdir, bindir]


def no_gpu_host(root):
    """The Debian 12 container capture: no RDMA device, no GPU, no nvidia module."""
    root = str(root)
    bindir = hosttree.materialize(hosttree.load("nordma_debian12_container.json"), root)
    simdir = os.path.join(root, "simbin")
    kmodsim.install_stubs(simdir)
    return [simdir, bindir]


def tree_files(root):
    """Every path in the tree except the simulator's own bookkeeping, for 'nothing changed' checks."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(str(root)):
        if ".kmodsim" in dirpath.split(os.sep):
            continue
        for name in dirnames + filenames:
            if name == ".kmodsim":
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                found[path] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    found[path] = handle.read()
            else:
                found[path] = "dir"
    return found


# -- GPUDirect prerequisites (gpudirect_facts, gpudirect_config) -------------------------------
LSPCI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tools", "lspci")


def lspci_text(name):
    with open(os.path.join(LSPCI_DIR, name)) as handle:
        return handle.read()


# IOMMU groups as the kernel lays them out: /sys/kernel/iommu_groups/N/{type,devices/BDF} and a
# per-device iommu_group link back to the group.
GROUPS = {"0000:3d:00.0": 40, "0000:3d:00.1": 41, "0000:3e:00.0": 42, "0000:ba:00.0": 90, "0000:01:00.0": 7}


CMDLINE = "BOOT_IMAGE=/vmlinuz-5.15.0-119-generic root=/dev/md0 ro intel_iommu=on iommu=pt"


def gpudirect_tree(tmp_path, domain="identity", overrides=None, cmdline=CMDLINE, groups=True, peermem=True):
    """The CX-7 GPU server with IOMMU groups (one domain type for all, or per device) and a kernel command line."""
    manifest = cx7_doca.manifest()
    entries = manifest["entries"]
    entries["/proc/cmdline"] = {"type": "file", "content": cmdline + "\n"}
    if not peermem:
        del entries["/sys/module/nvidia_peermem"]
    if groups:
        entries["/sys/class/iommu/dmar0"] = {"type": "dir"}
        for bdf, group in GROUPS.items():
            kind = (overrides or {}).get(bdf, domain)
            entries["/sys/kernel/iommu_groups/%d/type" % group] = {"type": "file", "content": kind + "\n"}
            entries["/sys/kernel/iommu_groups/%d/devices/%s" % (group, bdf)] = {"type": "link", "target": "../../../../devices/x/" + bdf}
            device_link = entries["/sys/bus/pci/devices/" + bdf]["target"]
            device_dir = "/sys/" + device_link.split("../../../", 1)[1]
            entries[device_dir + "/iommu_group"] = {
                "type": "link",
                "target": os.path.relpath("/sys/kernel/iommu_groups/%d" % group, device_dir),
            }
    hosttree.materialize(manifest, tmp_path)
    return HostRoot(str(tmp_path))


SETPCI_STUB = r'''#!{python}
# setpci stand-in: ECAP_ACS+0x6.w=0000:002c clears the redirect bits of that device in the lspci state
import re, sys
assert sys.argv[1] == "-s" and sys.argv[3] == "ECAP_ACS+0x6.w=0000:002c", sys.argv
with open("{state}") as handle:
    text = handle.read()
out, current = [], None
for line in text.splitlines(True):
    if re.match(r"^[0-9a-f]{{4}}:", line):
        current = line.split()[0]
    if current == sys.argv[2] and "ACSCtl:" in line:
        for bit in ("ReqRedir", "CmpltRedir", "EgressCtrl"):
            line = line.replace(bit + "+", bit + "-")
    out.append(line)
with open("{state}", "w") as handle:
    handle.write("".join(out))
with open("{state}.calls", "a") as handle:
    handle.write(" ".join(sys.argv[1:]) + "\n")
'''


def pci_stub_tools(tmp_path):
    """A bin directory with stateful lspci and setpci stand-ins, plus update-grub recording its runs.

    ``lspci`` prints ``lspci.txt`` (the CX-7 server with ACS redirection on); ``setpci`` clears
    the redirect bits of one device there and appends its arguments to ``lspci.txt.calls``.
    """
    state = tmp_path / "lspci.txt"
    state.write_text(lspci_text("cx7-gpu-server-acs-on.txt"))
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "lspci").write_text("#!/bin/sh\ncat %s\n" % state)
    (stubs / "setpci").write_text(SETPCI_STUB.format(python=sys.executable, state=state))
    (stubs / "update-grub").write_text("#!/bin/sh\necho update-grub >> %s/update-grub.calls\n" % tmp_path)
    for tool in ("lspci", "setpci", "update-grub"):
        os.chmod(str(stubs / tool), 0o755)
    return stubs
