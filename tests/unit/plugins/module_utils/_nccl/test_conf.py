"""nccl_conf's engine on recorded hosts: a real Soft-RoCE capture (rxe0 on ens4) and the ConnectX-7
tree in the kernel's format, run through the engine runner as the module runs it."""

import copy
import os

import pytest

import hosttree
from fixtures.hosts import cx7_doca
from ansible_collections.rdmaops.roce.plugins.module_utils._core.engine import Context, execute
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RefusedError
from ansible_collections.rdmaops.roce.plugins.module_utils._core.host import HostRoot
from ansible_collections.rdmaops.roce.plugins.module_utils._core.runner import CommandRunner
from ansible_collections.rdmaops.roce.plugins.module_utils._nccl import conf

CONF = "/etc/nccl.conf"
MLX5_1_PORT = cx7_doca.NIC1 + "/infiniband/mlx5_1/ports/1"
# /proc/net/route as net/ipv4/fib_trie.c prints it: a header, then one row per route, each padded
# to 127 characters; addresses in host byte order (x86: little endian). eno1 holds the default
# route through 10.10.0.1 (metric 100), ens1f0np0 a worse one (metric 200) and its subnet.
ROUTE_HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
ROUTES = [
    "ens1f0np0\t00000000\t0164A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0",
    "eno1\t00000000\t01000A0A\t0003\t0\t0\t100\t00000000\t0\t0\t0",
    "ens1f0np0\t0064A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
]


def route_table(rows):
    return "".join("%-127s\n" % line for line in [ROUTE_HEADER] + rows)


class FakeModule(hosttree.ReplayModule):
    def __init__(self, manifest, bindir, check_mode=False, diff=False):
        super(FakeModule, self).__init__(manifest.get("commands", {}), bindir)
        self.check_mode = check_mode
        self._diff = diff


class Host:
    """A recorded host materialized under ``root``, and the engine run against it."""

    def __init__(self, root, manifest):
        self.root = str(root)
        self.manifest = manifest
        self.bindir = hosttree.materialize(manifest, root)

    def path(self, host_path):
        return os.path.join(self.root, host_path.lstrip("/"))

    def run(self, check_mode=False, diff=False, **params):
        params.setdefault("tc", 106)
        module = FakeModule(self.manifest, self.bindir, check_mode=check_mode, diff=diff)
        ctx = Context(module, host=HostRoot(self.root), runner=CommandRunner(module))
        result, _plan = execute(conf.NcclConf(ctx, params))
        result["warnings"] = ctx.warnings
        return result

    def write(self, host_path, data):
        real = self.path(host_path)
        if not os.path.isdir(os.path.dirname(real)):
            os.makedirs(os.path.dirname(real))
        with open(real, "wb") as handle:
            handle.write(data if isinstance(data, bytes) else data.encode())

    def read(self, host_path):
        with open(self.path(host_path), "rb") as handle:
            return handle.read()

    def exists(self, host_path):
        return os.path.lexists(self.path(host_path))


def assignments(data):
    """What NCCL would set from the file, first line for a name winning (setenv without overwrite)."""
    env = {}
    for _number, name, value in conf.parse_lines(data.decode("utf-8", "surrogateescape")):
        env.setdefault(name, value)
    return env


@pytest.fixture
def rxe(tmp_path):
    return Host(tmp_path, hosttree.load("rxe_bookworm_mtu9000.json"))


def cx7_manifest(mlx5_1_gid_index=None, route=True):
    """The ConnectX-7 host; with ``mlx5_1_gid_index`` its second port is up with 192.168.102.12 and the
    RoCE v1/v2 GIDs of that address at index - 1 / index (the slots below stay empty)."""
    manifest = copy.deepcopy(cx7_doca.manifest())
    entries = manifest["entries"]
    if route:
        entries["/proc/net/route"] = {"type": "file", "content": route_table(ROUTES)}
    if mlx5_1_gid_index is not None:
        entries[MLX5_1_PORT + "/state"] = {"type": "file", "content": "4: ACTIVE\n"}
        for index, kind in ((mlx5_1_gid_index - 1, "IB/RoCE v1"), (mlx5_1_gid_index, "RoCE v2")):
            entries["%s/gids/%d" % (MLX5_1_PORT, index)] = {
                "type": "file", "content": "0000:0000:0000:0000:0000:ffff:c0a8:660c\n"}
            entries["%s/gid_attrs/types/%d" % (MLX5_1_PORT, index)] = {"type": "file", "content": kind + "\n"}
            entries["%s/gid_attrs/ndevs/%d" % (MLX5_1_PORT, index)] = {"type": "file", "content": "ens1f1np1\n"}
        address = ('{"family":"inet","local":"192.168.102.12","prefixlen":24,"scope":"global",'
                   '"label":"ens1f1np1","valid_life_time":4294967295,"preferred_life_time":4294967295}')
        ip = manifest["commands"]["ip -j addr show"]
        ip["stdout"] = ip["stdout"].replace('"addr_info":[]}]', '"addr_info":[%s]}]' % address)
        assert address in ip["stdout"]
    return manifest


# -- the values -----------------------------------------------------------------------------------
def test_soft_roce_host_gets_rxe0_and_the_gid_of_its_fabric_address(rxe):
    result = rxe.run(socket_ifname="ens4")
    assert result["changed"] is True
    assert result["changes"] == ["write /etc/nccl.conf"]
    # The capture's GID table: index 0 the link-local RoCE v2 GID, 1 the one of 198.18.0.11.
    assert result["ports"] == [dict(device="rxe0", port=1, netdev="ens4", gid_index=1)]
    env = assignments(rxe.read(CONF))
    assert env == {
        "NCCL_IB_HCA": "=rxe0:1",
        "NCCL_IB_GID_INDEX": "1",
        "NCCL_IB_TC": "106",
        "NCCL_SOCKET_IFNAME": "=ens4",
        "NCCL_IB_TIMEOUT": "20",
        "NCCL_IB_RETRY_CNT": "7",
    }
    assert result["settings"] == env
    assert oct(os.stat(rxe.path(CONF)).st_mode & 0o777) == oct(0o644)
    assert b"Managed by rdmaops.roce" in rxe.read(CONF)


def test_connectx_host_uses_the_up_port_leaves_out_the_one_without_address_and_finds_the_default_route(tmp_path):
    host = Host(tmp_path, cx7_manifest())
    result = host.run()
    env = assignments(host.read(CONF))
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1"
    # mlx5_0's table: 2/3 are 192.168.100.12 (v1/v2), 4/5 192.168.101.12; the primary address's v2 GID
    assert env["NCCL_IB_GID_INDEX"] == "3"
    # the default route with the lowest metric is eno1's (the management NIC), not the fabric's
    assert env["NCCL_SOCKET_IFNAME"] == "=eno1"
    assert result["socket_ifname_source"] == "default route"
    assert [(s["device"], s["netdev"]) for s in result["skipped"]] == [("mlx5_1", "ens1f1np1")]
    assert any("mlx5_1 port 1 left out of NCCL_IB_HCA" in w and "DOWN" in w for w in result["warnings"])


def test_two_devices_that_agree_are_both_listed_exactly(tmp_path):
    host = Host(tmp_path, cx7_manifest(mlx5_1_gid_index=3))
    result = host.run()
    assert assignments(host.read(CONF))["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1"
    assert result["settings"]["NCCL_IB_GID_INDEX"] == "3"
    assert result["skipped"] == []


def test_devices_that_disagree_on_the_gid_index_fail_naming_each(tmp_path):
    host = Host(tmp_path, cx7_manifest(mlx5_1_gid_index=5))
    with pytest.raises(RefusedError) as err:
        host.run()
    assert "mlx5_0 port 1 (ens1f0np0) index 3" in err.value.msg
    assert "mlx5_1 port 1 (ens1f1np1) index 5" in err.value.msg
    assert not host.exists(CONF)
    # an explicit index is the way out, or one device
    assert host.run(gid_index=3)["settings"]["NCCL_IB_GID_INDEX"] == "3"
    assert host.run(interfaces=["ens1f1np1"])["settings"]["NCCL_IB_HCA"] == "=mlx5_1:1"


def test_a_named_interface_without_an_address_fails_instead_of_being_left_out(tmp_path):
    host = Host(tmp_path, cx7_manifest())
    with pytest.raises(RefusedError) as err:
        host.run(interfaces=["ens1f1np1"])
    assert "ens1f1np1" in err.value.msg and "no RoCE v2 GID" in err.value.msg
    with pytest.raises(RefusedError) as err:
        host.run(interfaces=["eno1"])
    assert "eno1 has no RoCE port" in err.value.msg
    assert not host.exists(CONF)


def test_host_without_rdma_device_is_refused(tmp_path):
    host = Host(tmp_path, hosttree.load("nordma_debian12_container.json"))
    with pytest.raises(RefusedError) as err:
        host.run(socket_ifname="eth0")
    assert "no RoCE port" in err.value.msg
    assert not host.exists(CONF)


def test_no_default_route_asks_for_socket_ifname(rxe):
    with pytest.raises(RefusedError) as err:
        rxe.run()
    assert err.value.details["option"] == "socket_ifname"
    rxe.write("/proc/net/route", route_table(["ens3\t00000000\t0202000A\t0003\t0\t0\t0\t00000000\t0\t0\t0"]))
    assert rxe.run()["settings"]["NCCL_SOCKET_IFNAME"] == "=ens3"


def test_default_route_reader_skips_routes_that_are_down_and_prefers_the_lowest_metric(rxe):
    rows = ["ens4\t00000000\t0100000A\t0002\t0\t0\t0\t00000000\t0\t0\t0",  # not RTF_UP
            "ens3\t00000000\t0202000A\t0003\t0\t0\t50\t00000000\t0\t0\t0"]
    rxe.write("/proc/net/route", route_table(rows))
    assert conf.default_route_interface(HostRoot(rxe.root)) == "ens3"


# -- idempotence, check and diff mode ---------------------------------------------------------------
def test_second_run_changes_nothing(rxe):
    rxe.run(socket_ifname="ens4")
    before = rxe.read(CONF)
    again = rxe.run(socket_ifname="ens4")
    assert again["changed"] is False and again["changes"] == []
    assert rxe.read(CONF) == before


def test_check_mode_predicts_and_writes_nothing(rxe):
    result = rxe.run(check_mode=True, diff=True, socket_ifname="ens4")
    assert result["changed"] is True
    assert not rxe.exists(CONF)
    assert "NCCL_IB_HCA==rxe0:1" in result["diff"][0]["after"]
    rxe.run(socket_ifname="ens4")
    # a changed intent (another ToS) is predicted as a one-line change and still not written
    before = rxe.read(CONF)
    result = rxe.run(check_mode=True, diff=True, socket_ifname="ens4", tc=138)
    assert result["changed"] is True and rxe.read(CONF) == before
    diff = result["diff"][0]
    assert "NCCL_IB_TC=106" in diff["before"] and "NCCL_IB_TC=138" in diff["after"]
    assert diff["before_header"] == CONF


# -- the file rules ------------------------------------------------------------------------------------
FOREIGN = b"# site settings \xe9t\xe9 (Latin-1)\nNCCL_DEBUG=WARN\n  # indented: NCCL reads this as a name\nNCCL_NET_GDR_LEVEL=PHB\n"


def test_unowned_file_is_refused_unless_adopted_then_foreign_bytes_are_kept(rxe):
    rxe.write(CONF, FOREIGN)
    with pytest.raises(RefusedError) as err:
        rxe.run(socket_ifname="ens4")
    assert "adopt" in err.value.msg
    assert rxe.read(CONF) == FOREIGN
    result = rxe.run(socket_ifname="ens4", adopt=True)
    assert result["changes"] == ["update /etc/nccl.conf"]
    data = rxe.read(CONF)
    assert data.startswith(FOREIGN)
    env = assignments(data)
    assert env["NCCL_DEBUG"] == "WARN" and env["NCCL_NET_GDR_LEVEL"] == "PHB" and env["NCCL_IB_HCA"] == "=rxe0:1"
    # from now on the file carries our block: ours without adopt, and unchanged
    assert rxe.run(socket_ifname="ens4")["changed"] is False
    # a line the user adds later, outside the block, stays
    rxe.write(CONF, data + b"NCCL_IB_QPS_PER_CONNECTION=4\n")
    assert rxe.run(socket_ifname="ens4")["changed"] is False
    rxe.run(socket_ifname="ens4", tc=138)
    data = rxe.read(CONF)
    assert data.startswith(FOREIGN) and data.endswith(b"NCCL_IB_QPS_PER_CONNECTION=4\n")
    assert assignments(data)["NCCL_IB_TC"] == "138"


def test_symlink_is_followed_and_kept(rxe):
    rxe.write("/etc/site/nccl.conf", FOREIGN)
    os.symlink("site/nccl.conf", rxe.path(CONF))
    rxe.run(socket_ifname="ens4", adopt=True)
    assert os.path.islink(rxe.path(CONF)) and os.readlink(rxe.path(CONF)) == "site/nccl.conf"
    data = rxe.read("/etc/site/nccl.conf")
    assert data.startswith(FOREIGN) and b"NCCL_IB_GID_INDEX=1\n" in data


def test_foreign_line_with_another_value_for_our_name_is_refused_naming_the_line(rxe):
    rxe.run(socket_ifname="ens4")
    data = b"NCCL_IB_TC=0\n" + rxe.read(CONF)
    rxe.write(CONF, data)
    with pytest.raises(RefusedError) as err:
        rxe.run(socket_ifname="ens4")
    assert "line 1 NCCL_IB_TC=0 (this module: 106)" in err.value.msg
    assert err.value.details["conflicts"] == [dict(line=1, name="NCCL_IB_TC", value="0", ours="106")]
    assert rxe.read(CONF) == data


def test_foreign_line_with_the_same_value_and_lines_nccl_would_not_read_only_warn(rxe):
    rxe.run(socket_ifname="ens4")
    data = b"NCCL_IB_TC=106\nNCCL_IB_TIMEOUT =22\nexport NCCL_IB_RETRY_CNT=5\n" + rxe.read(CONF)
    rxe.write(CONF, data)
    result = rxe.run(socket_ifname="ens4")
    assert result["changed"] is False
    warnings = "\n".join(result["warnings"])
    assert "NCCL_IB_TC=106 outside the rdmaops.roce block repeats" in warnings
    assert "'NCCL_IB_TIMEOUT =22' is not read by NCCL as NCCL_IB_TIMEOUT" in warnings
    assert "'export NCCL_IB_RETRY_CNT=5' is not read by NCCL as NCCL_IB_RETRY_CNT" in warnings


def test_extra_variables_go_into_the_block_sorted(rxe):
    rxe.run(socket_ifname="ens4", extra={"NCCL_IB_QPS_PER_CONNECTION": 4, "NCCL_DEBUG": "WARN"})
    text = rxe.read(CONF).decode()
    block = text[text.index("NCCL_IB_HCA"):text.index("# END")]
    assert block.splitlines()[-2:] == ["NCCL_DEBUG=WARN", "NCCL_IB_QPS_PER_CONNECTION=4"]


def test_absent_removes_only_the_block(rxe):
    rxe.write(CONF, FOREIGN)
    rxe.run(socket_ifname="ens4", adopt=True)
    result = rxe.run(state="absent")
    assert result["changes"] == ["remove the rdmaops.roce block from /etc/nccl.conf"]
    assert rxe.read(CONF) == FOREIGN
    assert rxe.run(state="absent")["changed"] is False


def test_absent_removes_a_file_that_held_only_the_block(rxe):
    rxe.run(socket_ifname="ens4")
    assert rxe.run(state="absent")["changes"] == ["remove /etc/nccl.conf"]
    assert not rxe.exists(CONF)


# -- bad input: named, refused before anything is read or written -------------------------------------
@pytest.mark.parametrize("params, option, words", [
    (dict(tc=None), "tc", "roce_tos"),
    (dict(tc=256), "tc", "0 to 255"),
    (dict(tc="106"), "tc", "integer"),
    (dict(tc=107), "tc", "CE"),
    (dict(gid_index=-1), "gid_index", "0 to 255"),
    (dict(ib_timeout=0), "ib_timeout", "wait forever"),
    (dict(ib_retry_cnt=8), "ib_retry_cnt", "3 bits"),
    (dict(socket_ifname="eth0 eth1"), "socket_ifname", "interface name"),
    (dict(interfaces=["ens4", "../x"]), "interfaces", "interface name"),
    (dict(extra={"NCCL_IB_HCA": "mlx5"}), "extra", "own option instead (interfaces)"),
    (dict(extra={"nccl_debug": "WARN"}), "extra", "not an NCCL variable name"),
    (dict(extra={"NCCL_DEBUG": "WARN\nNCCL_IB_TC=0"}), "extra", "one line"),
    (dict(path="/etc/../nccl.conf"), "path", "absolute file path"),
])
def test_bad_input_is_named_and_nothing_is_written(rxe, params, option, words):
    params.setdefault("socket_ifname", "ens4")
    with pytest.raises(InputError) as err:
        rxe.run(**params)
    assert err.value.details["option"] == option
    assert words in err.value.msg
    assert not rxe.exists(CONF)


def test_parse_lines_follows_nccls_reader():
    text = "#NCCL_IB_TC=1\n  #NCCL_IB_TC=2\nNCCL_IB_TC = 3\nno equals sign\nNCCL_X=a=b\r\n\nNCCL_Y=\n"
    assert conf.parse_lines(text) == [
        (2, "  #NCCL_IB_TC", "2"),  # only a '#' in the first column starts a comment
        (3, "NCCL_IB_TC ", " 3"),  # the name is everything before the first '=', verbatim
        (5, "NCCL_X", "a=b"),
        (7, "NCCL_Y", ""),
    ]
