# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a host's RDMA state: devices, ports, GIDs, netdevs, driver stack, modules, GPUs.

sysfs first: almost everything comes from /sys/class/infiniband, /sys/class/net,
/sys/module and /sys/bus/pci.  Tools are run only where they add facts sysfs lacks, once
per host each: ``ibv_devinfo`` (port MTUs), ``ip -j addr show`` (netdev addresses),
``ofed_info -s`` (OFED flavour and version) and the package manager (rdma-core version).
Missing tools, empty GID slots, ports without a netdev and hosts with no RDMA device all
give correct partial facts, never an exception.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rdmaops.roce.plugins.module_utils._host.sysfs import (
    GPU_CLASSES,
    IB_CLASS,
    MODULES,
    NET_CLASS,
    NVIDIA_VENDOR,
    PCI_DEVICES,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.iproute import (
    RAIL_TABLES,
    parse_ip_addr_json,
    parse_rt_tables,
    parse_rules,
)
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.ofed_info import parse_ofed_info
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.pci import is_pci_address, pci_chain, pci_relation
from ansible_collections.rdmaops.roce.plugins.module_utils._parsers.rdma import (
    decode_gid,
    parse_ibv_devinfo,
    parse_numbered_state,
    roce_active_mtu,
)

# Modules whose presence the rest of the collection decides on.
REPORTED_MODULES = (
    "rdma_cm",
    "ib_uverbs",
    "ib_umad",
    "ib_core",
    "mlx5_core",
    "mlx5_ib",
    "nvidia",
    "nvidia_peermem",
    "nv_peer_mem",
    "rdma_rxe",
)

# Software RDMA devices have no PCI function behind them; rdma-core's providers recognise
# them by name in the same way (VERBS_NAME_MATCH).
SOFTWARE_DRIVERS = (("rxe", "rdma_rxe"), ("siw", "siw"))


class RdmaFacts:
    """Collect ``ansible_facts.rdma`` from a :class:`HostRoot` and a :class:`CommandRunner`."""

    def __init__(self, host, runner=None, use_tools=True, gpu_topology=True):
        self.host = host
        self.runner = runner if use_tools else None
        self.gpu_topology = gpu_topology
        self.warnings = []

    # -- public -------------------------------------------------------------------------
    def gather(self):
        devices = {}
        for name in self.host.listdir(IB_CLASS):
            devices[name] = self._device(name)
        tool_ports = self._ibv_devinfo() if devices else {}
        netdevs = self._netdevs(devices)
        for name, device in devices.items():
            for port_name, port in device["ports"].items():
                self._port_mtus(port, tool_ports.get(name, {}).get("ports", {}).get(port_name), netdevs)
                self._port_gid_index(name, port_name, port, netdevs)
        facts = dict(
            devices=devices,
            netdevs=netdevs,
            stack=self._stack(),
            modules=dict((mod, self.host.isdir("%s/%s" % (MODULES, mod))) for mod in REPORTED_MODULES),
        )
        if self.gpu_topology:
            facts["gpus"] = self._gpus(devices)
        facts["warnings"] = self.warnings
        return facts

    # -- devices and ports ------------------------------------------------------------------
    def _device(self, name):
        base = "%s/%s" % (IB_CLASS, name)
        read = self.host.read
        device_path = self.host.realpath(base + "/device")
        pci_address = None
        if device_path and is_pci_address(device_path.rsplit("/", 1)[-1]):
            pci_address = device_path.rsplit("/", 1)[-1]
        driver = self.host.readlink_name(base + "/device/driver")
        if driver is None:
            driver = dict(SOFTWARE_DRIVERS).get(name.rstrip("0123456789"))
        numa = self.host.read_int(base + "/device/numa_node")
        node_type = parse_numbered_state(read(base + "/node_type"))[0]
        device = dict(
            driver=driver,
            fw_ver=read(base + "/fw_ver") or None,  # Soft-RoCE has an empty fw_ver
            node_guid=read(base + "/node_guid"),
            sys_image_guid=read(base + "/sys_image_guid"),
            node_type=node_type,
            hca_type=read(base + "/hca_type"),
            board_id=read(base + "/board_id"),
            pci_address=pci_address,
            numa_node=numa if numa is not None and numa >= 0 else None,
            virtual=pci_address is None,
            ports={},
        )
        if pci_address:
            candidates = self.host.listdir(base + "/device/net")
        else:
            # Soft-RoCE names the netdev it runs on in its ``parent`` attribute.
            candidates = [name for name in [read(base + "/parent")] if name]
        for port in sorted(self.host.listdir(base + "/ports"), key=_numeric):
            device["ports"][port] = self._port(base, port, candidates)
        return device

    def _port(self, base, port, candidates):
        pbase = "%s/ports/%s" % (base, port)
        read = self.host.read
        state = parse_numbered_state(read(pbase + "/state"))[0]
        phys_state = parse_numbered_state(read(pbase + "/phys_state"))[0]
        gids = self._gids(pbase)
        netdev = next((gid["netdev"] for gid in gids if gid["netdev"]), None)
        if netdev is None:
            netdev = self._netdev_by_dev_port(candidates, port)
        return dict(
            state=state,
            phys_state=phys_state,
            link_layer=read(pbase + "/link_layer"),
            rate=read(pbase + "/rate"),
            netdev=netdev,
            active_mtu=None,
            max_mtu=None,
            mtu_source=None,
            gids=gids,
            roce_v2_ipv4_gid_index=None,
        )

    def _gids(self, pbase):
        gids = []
        for index in sorted(self.host.listdir(pbase + "/gids"), key=_numeric):
            gid, ipv4 = decode_gid(self.host.read(pbase + "/gids/" + index))
            if gid is None:
                continue
            # An empty slot's type reads EINVAL; a table the kernel is rewriting can show a
            # GID whose attributes are already gone.  Either way it is not a usable GID.
            gid_type, error = self.host.read_or_errno(pbase + "/gid_attrs/types/" + index)
            if error is not None or not gid_type:
                continue
            gids.append(
                dict(
                    index=int(index),
                    type=gid_type.strip(),
                    gid=gid,
                    netdev=self.host.read(pbase + "/gid_attrs/ndevs/" + index),
                    ipv4=ipv4,
                )
            )
        return gids

    def _netdev_by_dev_port(self, candidates, port):
        """A port with no GID (link down, no address) still has a netdev: find it by dev_port."""
        if len(candidates) == 1:
            return candidates[0]
        for netdev in candidates:
            dev_port = self.host.read_int("%s/%s/dev_port" % (NET_CLASS, netdev))
            if dev_port is not None and dev_port + 1 == int(port):
                return netdev
        return None

    def _ibv_devinfo(self):
        if self.runner is None:
            return {}
        result = self.runner.run_optional(["ibv_devinfo"])
        return parse_ibv_devinfo(result.stdout) if result else {}

    def _port_mtus(self, port, tool_port, netdevs):
        if tool_port and tool_port.get("active_mtu"):
            port["active_mtu"] = tool_port["active_mtu"]
            port["max_mtu"] = tool_port.get("max_mtu")
            port["mtu_source"] = "ibv_devinfo"
            return
        netdev = netdevs.get(port["netdev"]) if port["netdev"] else None
        if port["link_layer"] == "Ethernet" and netdev and netdev["mtu"]:
            # RoCE: the port MTU follows the netdev MTU, as the kernel computes it.
            port["max_mtu"] = 4096
            port["active_mtu"] = roce_active_mtu(netdev["mtu"])
            port["mtu_source"] = "derived_from_netdev_mtu"

    def _port_gid_index(self, device, port_name, port, netdevs):
        netdev = netdevs.get(port["netdev"]) if port["netdev"] else None
        addresses = set(addr.split("/")[0] for addr in (netdev or {}).get("ipv4", []))
        v2_ipv4 = [
            gid for gid in port["gids"]
            if gid["type"] == "RoCE v2" and gid["ipv4"] and gid["netdev"] == port["netdev"]
        ]
        if netdev is not None and netdev["ipv4_source"] == "ip":
            matching = [gid for gid in v2_ipv4 if gid["ipv4"] in addresses]
            for address in sorted(addresses - set(gid["ipv4"] for gid in v2_ipv4)):
                self.warnings.append(
                    "%s port %s: %s has IPv4 %s but no RoCE v2 GID for it; RDMA-CM and NCCL "
                    "cannot use that address" % (device, port_name, port["netdev"], address)
                )
        else:
            matching = v2_ipv4
        if matching:
            port["roce_v2_ipv4_gid_index"] = min(gid["index"] for gid in matching)

    # -- netdevs --------------------------------------------------------------------------
    def _netdevs(self, devices):
        addresses = {}
        source = "gids"
        if self.runner is not None and devices:
            result = self.runner.run_optional(["ip", "-j", "addr", "show"])
            if result:
                addresses = parse_ip_addr_json(result.stdout)
                source = "ip"
        netdevs = {}
        for ibdev, device in sorted(devices.items()):
            for port_name, port in device["ports"].items():
                name = port["netdev"]
                if not name or name in netdevs:
                    continue
                netdevs[name] = self._netdev(name, ibdev, port_name, port, addresses, source)
        self._rails(netdevs, addresses)
        return netdevs

    def _rails(self, netdevs, addresses):
        """On a multi-rail host (nic_layer's rails wrote the table names), each rail netdev's
        ``rails``: its rail, table, addresses and the rules that send its addresses there.  Two
        more commands (``ip rule``, per family) only on such a host."""
        tables = parse_rt_tables(self.host.read(RAIL_TABLES))
        if not tables or self.runner is None:
            return
        rules = []
        for family in ("-4", "-6"):
            result = self.runner.run_optional(["ip", "-N", "-j", family, "rule", "show"])
            if result:
                rules.extend(parse_rules(result.stdout))
        for name, netdev in netdevs.items():
            mine = [(number, table_name, rail) for number, (table_name, rail) in sorted(tables.items())
                    if table_name == "rdmaops_" + name or table_name.startswith("rdmaops_%s_" % name)]
            if not mine:
                continue
            netdev["ipv6"] = [address for address in addresses.get(name, {}).get("ipv6", []) if not address.startswith("fe80:")]
            netdev["rails"] = [
                dict(rail=rail, table=number, table_name=table_name,
                     rules=["%s from %s lookup %s" % (rule["priority"], rule["src"], number) for rule in rules if rule["table"] == number])
                for number, table_name, rail in mine
            ]

    def _netdev(self, name, ibdev, port_name, port, addresses, source):
        base = "%s/%s" % (NET_CLASS, name)
        device_path = self.host.realpath(base + "/device")
        chain = pci_chain(device_path)
        if source == "ip":
            ipv4 = addresses.get(name, {}).get("ipv4", [])
        else:
            # Without iproute2 the RoCE GIDs still name every address the kernel mirrored.
            ipv4 = sorted(set(
                gid["ipv4"] for gid in port["gids"] if gid["ipv4"] and gid["netdev"] == name
            ))
        return dict(
            ibdev=ibdev,
            port=int(port_name),
            mtu=self.host.read_int(base + "/mtu"),
            operstate=self.host.read(base + "/operstate"),
            carrier=self.host.read_int(base + "/carrier"),
            address=self.host.read(base + "/address"),
            driver=self.host.readlink_name(base + "/device/driver"),
            pci_address=chain[-1] if chain and is_pci_address(chain[-1]) else None,
            ipv4=ipv4,
            ipv4_source=source,
        )

    # -- driver stack ---------------------------------------------------------------------
    def _stack(self):
        kernel = self.host.read("/proc/sys/kernel/osrelease")
        mlx5_version = self.host.read(MODULES + "/mlx5_core/version")
        mlx5_loaded = self.host.isdir(MODULES + "/mlx5_core")
        ofed = None
        if self.runner is not None:
            result = self.runner.run_optional(["ofed_info", "-s"])
            ofed = parse_ofed_info(result.stdout) if result else None
        doca_tree = self.host.isdir("/opt/mellanox/doca")
        stack = dict(
            flavor="none",
            version=None,
            kernel=kernel,
            mlx5_core_version=mlx5_version,
            loaded_driver=("ofed" if mlx5_version else "inbox") if mlx5_loaded else None,
            evidence=[],
        )
        if ofed is not None:
            stack["evidence"].append("ofed_info -s: %s-%s" % (ofed["distribution"], ofed["version"]))
            if ofed["distribution"] == "MLNX_OFED_LINUX":
                stack["flavor"] = "mlnx_ofed"
            elif doca_tree or (ofed["major"] or 0) >= 24:
                # DOCA-OFED reports itself as OFED-internal; so did some pre-DOCA repo installs.
                stack["flavor"] = "doca_ofed"
            else:
                stack["flavor"] = "mlnx_ofed"
            stack["version"] = ofed["version"]
        elif mlx5_version:
            stack["evidence"].append("/sys/module/mlx5_core/version: %s" % mlx5_version)
            stack["flavor"] = "doca_ofed" if doca_tree else "mlnx_ofed"
            stack["version"] = mlx5_version
            self.warnings.append(
                "an OFED mlx5_core %s is loaded but ofed_info is missing: the OFED user space "
                "is incomplete" % mlx5_version
            )
        else:
            rdma_core = self._rdma_core_version()
            if rdma_core or self.host.isdir(MODULES + "/ib_core") or self.host.isdir("/etc/rdma"):
                stack["flavor"] = "inbox"
                stack["version"] = rdma_core
                stack["evidence"].append(
                    "rdma-core %s" % rdma_core if rdma_core else "in-kernel RDMA core (ib_core) without OFED"
                )
        if stack["flavor"] in ("doca_ofed", "mlnx_ofed") and stack["loaded_driver"] == "inbox":
            self.warnings.append(
                "%s %s is installed but the loaded mlx5_core is the kernel's own driver: the OFED "
                "modules are missing for kernel %s (check DKMS) or were never loaded"
                % (stack["flavor"], stack["version"], kernel)
            )
        return stack

    def _rdma_core_version(self):
        if self.runner is None:
            return None
        if self.runner.has("dpkg-query"):
            result = self.runner.run_optional(["dpkg-query", "-W", "-f=${Version}", "rdma-core"])
        else:
            result = self.runner.run_optional(["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", "rdma-core"])
        version = result.stdout.strip() if result else ""
        return version or None

    # -- GPUs -----------------------------------------------------------------------------
    def _gpus(self, devices):
        gpus = []
        for address in self.host.listdir(PCI_DEVICES):
            base = "%s/%s" % (PCI_DEVICES, address)
            if self.host.read(base + "/vendor") != NVIDIA_VENDOR:
                continue
            pci_class = self.host.read(base + "/class") or ""
            if not pci_class.startswith(GPU_CLASSES):
                continue
            numa = self.host.read_int(base + "/numa_node")
            gpus.append(
                dict(
                    pci_address=address,
                    device_id=self.host.read(base + "/device"),
                    numa_node=numa if numa is not None and numa >= 0 else None,
                    chain=pci_chain(self.host.realpath(base)),
                )
            )
        for name, device in devices.items():
            chain = pci_chain(self.host.realpath("%s/%s/device" % (IB_CLASS, name)))
            affinity = []
            for gpu in gpus:
                relation = pci_relation(chain, gpu["chain"], device["numa_node"], gpu["numa_node"])
                if relation is not None:
                    affinity.append(dict(gpu=gpu["pci_address"], relation=relation))
            device["gpu_affinity"] = affinity
        for gpu in gpus:
            del gpu["chain"]
        return gpus


def gather(ctx, params):
    """The rdma_facts module's result: ``ansible_facts.rdma`` read through ``ctx`` (for ``run_facts``)."""
    facts = RdmaFacts(
        ctx.host,
        ctx.runner,
        use_tools=params.get("use_tools", True),
        gpu_topology=params.get("gpu_topology", True),
    ).gather()
    ansible_facts = dict(rdma=facts)
    if params.get("os_facts"):
        # Imported only here: ansible's fact collectors cost every other rdma_facts run (validate,
        # the final report, the roles' re-reads) their import, about 50 ms natively and seconds in
        # an emulated VM. AnsiballZ still ships the module, its import finder reads function bodies.
        from ansible_collections.rdmaops.roce.plugins.module_utils._host import os_facts

        ansible_facts.update(os_facts.gather(ctx.module))
    result = dict(changed=False, ansible_facts=ansible_facts)
    if params.get("observe"):
        # Only in site.yml's preflight: the owned files of the layers that can be skipped on a no-op
        # (kept out of ansible_facts: never cached, always this run's).
        from ansible_collections.rdmaops.roce.plugins.module_utils._host.observe import observe

        result["observed"] = observe(ctx.host, ctx.runner, params["observe"])
    return result


def _numeric(name):
    try:
        return (0, int(name))
    except ValueError:
        return (1, name)
