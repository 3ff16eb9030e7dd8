"""Shared state of the dcb and mlnx_qos stand-ins: one mlx5-like netdev kept in a JSON file.

Environment: QOS_STANDIN_STATE (the state file, required), QOS_STANDIN_LOG (argv log, one JSON
list per line).  The state keys: iface, app ([[dscp, prio], ...]), pfc (8 bools), delay,
prio_tc, tsa, bw (8 each), buffer_size, prio2buffer (8 each or null: no buffer support),
total_size, unsupported (the netdev has no DCB ops), iproute2 ("6.1" or "6.5": JSON app shape),
fail (a list of argv prefixes, joined by spaces, that fail with rc 1).

The output is printed in the tools' exact layouts (reference section 1.4.3 for mlnx_qos, 2.3 for
dcb -j); tests/unit/plugins/module_utils/_qos/test_nic_qos.py checks that the mlnx_qos rendering
reproduces the recorded fixtures byte for byte.  mlx5 semantics: any DSCP entry means DSCP
trust, adding an entry for a DSCP replaces its old one, --trust dscp installs d -> d >> 3.
"""

import json
import os
import sys

DEFAULT = dict(
    iface="ens1f0np0", app=[], pfc=[False] * 8, delay=7, prio_tc=[1, 0, 2, 3, 4, 5, 6, 7], tsa=["vendor"] * 8,
    bw=[0] * 8, buffer_size=[262016, 0, 0, 0, 0, 0, 0, 0], prio2buffer=[0] * 8, total_size=2044224,
    unsupported=False, iproute2="6.1", fail=[], dcbx="OS controlled",
)


def load():
    path = os.environ["QOS_STANDIN_STATE"]
    state = dict(DEFAULT)
    if os.path.exists(path):
        with open(path) as handle:
            state.update(json.load(handle))
    return state


def save(state):
    path = os.environ["QOS_STANDIN_STATE"]
    with open(path + ".tmp", "w") as handle:
        json.dump(state, handle)
    os.rename(path + ".tmp", path)


def log(argv):
    path = os.environ.get("QOS_STANDIN_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps(argv) + "\n")


def fail(msg, rc=1):
    sys.stderr.write(msg + "\n")
    sys.exit(rc)


def set_app(state, dscp, prio):
    state["app"] = [pair for pair in state["app"] if pair[0] != dscp] + [[dscp, prio]]


def check_fail(state, argv):
    joined = " ".join(argv)
    for prefix in state.get("fail", []):
        if joined.startswith(prefix):
            fail("Error: simulated failure for %s" % prefix)


# -- mlnx_qos ----------------------------------------------------------------------------------
def render_mlnx_qos(state, show_all=False):
    out = ["DCBX mode: %s" % state["dcbx"]]
    trust = "dscp" if state["app"] else "pcp"
    out.append("Priority trust state: %s" % trust)
    if trust == "dscp":
        out.append("dscp2prio mapping:")
        by_prio = {}
        # the kernel's app list is newest first
        for dscp, prio in reversed(state["app"]):
            by_prio.setdefault(prio, []).append(dscp)
        for prio in sorted(by_prio):
            dscps = by_prio[prio]
            for start in range(0, len(dscps), 8):
                out.append("\tprio:%d dscp:%s" % (prio, "".join("%02d," % d for d in dscps[start:start + 8])))
    if state["buffer_size"] is not None:
        sizes = ",".join(str(b) for b in state["buffer_size"])
        out.append("Receive buffer size (bytes): %s,max_buffer_size=%d" % (sizes, state["total_size"]))
    out.append("Cable len: %d" % state["delay"])
    out.append("PFC configuration:")
    out.append("\tpriority    0   1   2   3   4   5   6   7")
    out.append("\tenabled     " + "".join("%d   " % int(bit) for bit in state["pfc"]))
    if state["prio2buffer"] is not None:
        out.append("\tbuffer      " + "".join("%d   " % b for b in state["prio2buffer"]))
    for tc in range(8):
        prios = [p for p in range(8) if state["prio_tc"][p] == tc]
        if not prios and not show_all:
            continue
        tsa = state["tsa"][tc]
        tsa_text = "ets, bw: %d%%" % state["bw"][tc] if tsa == "ets" else tsa
        out.append("tc: %d ratelimit: unlimited, tsa: %s" % (tc, tsa_text))
        for prio in prios:
            out.append("\t priority:  %d" % prio)
    return "\n".join(out) + "\n"


def mlnx_qos(argv):
    state = load()
    args = list(argv)
    iface = None
    show_all = False
    sets = []
    while args:
        opt = args.pop(0)
        if opt in ("-i", "--interface"):
            iface = args.pop(0)
        elif opt == "-a":
            show_all = True
        elif opt.startswith("--cable_len="):
            sets.append(("--cable_len", opt.split("=", 1)[1]))
        elif opt in ("--trust", "--pfc", "-f", "-p", "-s", "-t", "--dscp2prio", "--cable_len", "--buffer_size",
                     "--prio2buffer"):
            sets.append((opt, args.pop(0)))
        else:
            fail("mlnx_qos stand-in: unknown option %s" % opt, 2)
    if iface != state["iface"]:
        fail("Interface %s doesn't exist" % iface)
    if state["unsupported"]:
        fail("[Errno 95] Operation not supported")
    check_fail(state, ["mlnx_qos"] + argv)
    opts = [pair[0] for pair in sets]
    if "--trust" in opts and "--dscp2prio" in opts:
        fail("trust and dscp2prio commands cannot be used at the same time.")
    for opt, value in sets:
        items = value.split(",")
        if opt in ("--pfc", "-f", "-p", "-s", "-t", "--buffer_size", "--prio2buffer") and len(items) != 8:
            fail("%s list must have 8 items" % opt.lstrip("-"))
        if opt == "--trust":
            state["app"] = [[d, d >> 3] for d in range(64)] if value == "dscp" else []
        elif opt == "--dscp2prio":
            verb, dscp, prio = value.split(",")
            if verb == "set":
                set_app(state, int(dscp), int(prio))
            else:
                state["app"] = [p for p in state["app"] if p != [int(dscp), int(prio)]]
        elif opt in ("--pfc", "-f"):
            state["pfc"] = [item == "1" for item in items]
        elif opt == "--cable_len":
            state["delay"] = int(value)
        elif opt == "-p":
            state["prio_tc"] = [int(i) for i in items]
        elif opt == "-s":
            state["tsa"] = items
        elif opt == "-t":
            state["bw"] = [int(i) for i in items]
        elif opt == "--buffer_size":
            state["buffer_size"] = [int(i) for i in items]
        elif opt == "--prio2buffer":
            state["prio2buffer"] = [int(i) for i in items]
    if sets:
        save(state)
    sys.stdout.write(render_mlnx_qos(state, show_all))


# -- dcb -----------------------------------------------------------------------------------------
def dcb_json(state, obj):
    if obj == "pfc":
        return dict(pfc_cap=8, macsec_bypass=False, delay=state["delay"], prio_pfc=state["pfc"])
    if obj == "ets":
        return dict(willing=False, ets_cap=8, cbs=False, tc_bw=state["bw"], pg_bw=[0] * 8, tc_tsa=state["tsa"],
                    prio_tc=state["prio_tc"], reco_tc_bw=[0] * 8, reco_tc_tsa=["strict"] * 8, reco_prio_tc=[0] * 8)
    if obj == "app":
        if not state["app"]:
            return {}
        pairs = sorted(state["app"])
        if state["iproute2"] >= "6.5":
            pairs = [[d, p, " "] for d, p in pairs]
        return dict(dscp_prio=pairs)
    if obj == "buffer":
        if state["buffer_size"] is None:
            fail("Attribute read: Operation not supported")
        return dict(prio_buffer=state["prio2buffer"], buffer_size=state["buffer_size"], total_size=state["total_size"])
    fail("dcb stand-in: object %s not recorded" % obj, 2)


def _mapping(words, keys_int=True):
    result = {}
    for word in words:
        key, value = word.split(":", 1)
        result[key] = value
    return result


def _apply8(current, mapping, conv):
    out = list(current)
    if "all" in mapping:
        out = [conv(mapping["all"])] * 8
    for key, value in mapping.items():
        if key != "all":
            out[int(key)] = conv(value)
    return out


def dcb(argv):
    state = load()
    args = list(argv)
    as_json = False
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in ("-j", "--json"):
            as_json = True
        elif flag not in ("-N", "-p", "-s"):
            fail("dcb stand-in: unknown flag %s" % flag, 2)
    obj, verb = args[0], args[1]
    if args[2] != "dev":
        fail("dcb stand-in: expected dev", 2)
    iface, rest = args[3], args[4:]
    if iface != state["iface"]:
        fail("Attribute read: No such device")
    if state["unsupported"]:
        fail("Attribute read: Operation not supported")
    check_fail(state, ["dcb"] + argv)
    if verb == "show":
        if not as_json:
            fail("dcb stand-in: only -j output is recorded", 2)
        sys.stdout.write(json.dumps(dcb_json(state, obj), separators=(",", ":")) + "\n")
        return
    if obj == "app":
        if rest[:1] != ["dscp-prio"]:
            fail("dcb stand-in: only dscp-prio is recorded", 2)
        pairs = [tuple(int(x) for x in word.split(":")) for word in rest[1:]]
        if verb == "flush":
            state["app"] = []
        elif verb in ("add", "replace"):
            for dscp, prio in pairs:
                set_app(state, dscp, prio)
        elif verb == "del":
            for pair in pairs:
                if list(pair) not in state["app"]:
                    fail("Error: RTNETLINK answers: No such file or directory")
                state["app"].remove(list(pair))
        else:
            fail("dcb stand-in: app %s" % verb, 2)
    elif verb == "set":
        words = {}
        key = None
        for word in rest:
            if ":" in word:
                words.setdefault(key, []).append(word)
            else:
                key = word
                words.setdefault(key, [])
        for key, values in words.items():
            mapping = _mapping(values)
            if obj == "pfc" and key == "prio-pfc":
                state["pfc"] = _apply8(state["pfc"], mapping, lambda v: v == "on")
            elif obj == "pfc" and key == "delay":
                state["delay"] = int(rest[rest.index("delay") + 1])
            elif obj == "ets" and key == "prio-tc":
                state["prio_tc"] = _apply8(state["prio_tc"], mapping, int)
            elif obj == "ets" and key == "tc-tsa":
                state["tsa"] = _apply8(state["tsa"], mapping, str)
            elif obj == "ets" and key == "tc-bw":
                state["bw"] = _apply8(state["bw"], mapping, int)
            elif obj == "buffer" and key == "buffer-size":
                state["buffer_size"] = _apply8(state["buffer_size"], mapping, int)
            elif obj == "buffer" and key == "prio-buffer":
                state["prio2buffer"] = _apply8(state["prio2buffer"], mapping, int)
            elif key.isdigit():
                continue
            else:
                fail("dcb stand-in: %s set %s not recorded" % (obj, key), 2)
    else:
        fail("dcb stand-in: %s %s not recorded" % (obj, verb), 2)
    save(state)


def main():
    # run as "standin.py TOOL ARGS..." by the sh wrappers named after the tools
    tool, args = sys.argv[1], sys.argv[2:]
    log([tool] + args)
    if tool == "mlnx_qos":
        mlnx_qos(args)
    else:
        dcb(args)


if __name__ == "__main__":
    main()
