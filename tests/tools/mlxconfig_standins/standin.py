"""Stand-in for ``mlxconfig`` (MFT) and ``mstconfig`` (mstflint): no ConnectX exists here.

It prints what the real tools print, with the printf formats of mstflint
``mlxconfig/mlxcfg_ui.cpp`` (``printOpening``, ``printConfHeader``, ``printSingleParam``,
``setDevCfg``), for a device seeded from a recorded ``-e q`` output, and keeps the device's
Default / Current / Next Boot values in a JSON state file so that a ``set`` shows up in the next
``q``'s Next Boot column.  ``_standin_reboot`` (not a real command) simulates a reboot: the
Next Boot values become the Current ones.

Environment:
  MLXCFG_STANDIN_SEED   a ``-e q`` output (tests/unit/fixtures/tools/mlxconfig/...) read when the
                        state file does not exist yet
  MLXCFG_STANDIN_STATE  the JSON state file
  MLXCFG_STANDIN_LOG    every argv is appended to it as one JSON list per line (tool name first)
  MLXCFG_STANDIN_ALIASES comma-separated other names of the device (``3d:00.0``, an mst path)

Messages the formatter code does not give (an unknown parameter, a device that is not there)
are the stand-in's own wording, prefixed ``-E-`` as the tool's errors are.
"""

import json
import os
import re
import sys

NAMED = re.compile(r"([A-Za-z0-9_]+)\(([0-9]+)\)\Z")
BOOLS = {"True": 1, "False": 0}
# enum names the seed does not show all of (mlxconfig show_confs: LINK_TYPE_P1 IB=1, ETH=2, VPI=3)
ENUMS = {"LINK_TYPE_P": {"IB": 1, "ETH": 2, "VPI": 3}}


def log(tool, args):
    path = os.environ.get("MLXCFG_STANDIN_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps([tool] + args) + "\n")


def seed(path):
    device = dict(type=None, name=None, description=None, device=None, params=[])
    columns = None
    with open(path) as handle:
        for line in handle.read().splitlines():
            if columns is None:
                if line.startswith("Configurations:"):
                    rest = line.split(":", 1)[1]
                    columns = [t for t in ("Default", "Current", "Next Boot") if t in rest]
                    continue
                for key in ("Device type", "Name", "Description", "Device"):
                    if line.startswith(key + ":"):
                        device[key.lower().replace(" ", "_") if key != "Device type" else "type"] = line.split(":", 1)[1].strip()
                continue
            fields = line.split()
            if fields and fields[0] == "*":
                fields = fields[1:]
            if len(fields) != len(columns) + 1:
                continue
            values = dict(zip(columns, fields[1:]))
            nxt = values["Next Boot"]
            device["params"].append([fields[0], values.get("Default", nxt), values.get("Current", nxt), nxt])
    return device


def load():
    state_path = os.environ["MLXCFG_STANDIN_STATE"]
    if os.path.exists(state_path):
        with open(state_path) as handle:
            return json.load(handle)
    return seed(os.environ["MLXCFG_STANDIN_SEED"])


def save(device):
    with open(os.environ["MLXCFG_STANDIN_STATE"], "w") as handle:
        json.dump(device, handle, indent=1)


def number(text):
    match = NAMED.match(text)
    if match:
        return int(match.group(2))
    try:
        return int(text, 0)
    except ValueError:
        return None


def field(text, previous_width):
    out = (" " if previous_width > 16 else "") + "%-16s" % text
    return out, max(16, len(text))


def opening(device, dev):
    out = "\nDevice #1:\n----------\n\n"
    out += "%-16s%-16s\n" % ("Device type:", device["type"])
    out += "%-16s%-16s\n" % ("Name:", device["name"] or "N/A")
    out += "%-16s%-16s\n" % ("Description:", device["description"] or "N/A")
    out += "%-16s%-16s\n" % ("Device:", dev)
    return out + "\n"


def row(name, values, flagged):
    out = ("*        " if flagged else "         ") + "%-36s" % name
    width = 0
    for value in values:
        text, width = field(value, width)
        out += text
    return out + "\n"


def query(device, dev, verbose, names):
    params = device["params"]
    if names:
        known = dict((p[0], p) for p in params)
        missing = [n for n in names if n not in known]
        if missing:
            sys.stdout.write("-E- The Device doesn't support %s parameter\n" % missing[0])
            return 1
        params = [known[n] for n in names]
    out = opening(device, dev)
    if verbose:
        out += "%-16s%36s%16s%18s\n" % ("Configurations:", "Default", "Current", "Next Boot")
    else:
        out += "%-16s%38s\n" % ("Configurations:", "Next Boot")
    differ = False
    for name, default, current, nxt in params:
        flagged = verbose and (number(nxt) != number(default) or number(nxt) != number(current))
        differ = differ or flagged
        out += row(name, [default, current, nxt] if verbose else [nxt], flagged)
    if differ:
        out += "The '*' shows parameters with next value different from default/current value.\n"
    sys.stdout.write(out)
    return 0


def display(param, value):
    """The text the tool shows for ``value`` set on ``param`` (its enum names come from the
    values the device already shows for it, True/False for booleans)."""
    names = {}
    for text in param[1:]:
        match = NAMED.match(text)
        if match:
            names[match.group(1)] = int(match.group(2))
    if any(name in BOOLS for name in names):
        names.update(BOOLS)
    for prefix, table in ENUMS.items():
        if param[0].startswith(prefix):
            names.update(table)
    if re.match(r"[0-9]+\Z", value):
        for name, num in names.items():
            if num == int(value):
                return "%s(%d)" % (name, num)
        return None if names else value
    for name, num in names.items():
        if name.lower() == value.lower():
            return "%s(%d)" % (name, num)
    return None


def set_(device, dev, yes, assignments):
    known = dict((p[0], p) for p in device["params"])
    new = []
    for item in assignments:
        if item.count("=") != 1:
            sys.stdout.write("-E- Invalid Configuration argument %s\n" % item)
            return 1
        name, value = item.split("=")
        if name not in known:
            sys.stdout.write("-E- The Device doesn't support %s parameter\n" % name)
            return 1
        shown = display(known[name], value)
        if shown is None:
            sys.stdout.write("-E- Unknown value %s for parameter %s\n" % (value, name))
            return 1
        new.append((known[name], shown))
    out = opening(device, dev)
    out += "%-16s%38s" % ("Configurations:", "Next Boot") + "       New" + "\n"
    for param, shown in new:
        out += row(param[0], [param[3], shown], False)
    out += "\n Apply new Configuration? (y/n) [n] : "
    if not yes:
        sys.stdout.write(out + "\n-E- Aborted by user.\n")
        return 1
    out += "y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n"
    for param, shown in new:
        param[3] = shown
    save(device)
    sys.stdout.write(out)
    return 0


def main(tool, args):
    log(tool, args)
    device = load()
    if args == ["_standin_reboot"]:
        for param in device["params"]:
            param[2] = param[3]
        save(device)
        return 0
    dev, verbose, yes, rest = None, False, False, []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-d", "--dev") and i + 1 < len(args):
            dev = args[i + 1]
            i += 2
            continue
        if arg in ("-e", "--enable_verbosity"):
            verbose = True
        elif arg in ("-y", "--yes"):
            yes = True
        elif arg.startswith("-"):
            sys.stdout.write("-E- Unknown option: %s\n" % arg)
            return 1
        else:
            rest.append(arg)
        i += 1
    aliases = [device["device"]] + [a for a in os.environ.get("MLXCFG_STANDIN_ALIASES", "").split(",") if a]
    if dev is None or dev not in aliases:
        sys.stdout.write("-E- Failed to open device: %s. No such file or directory\n" % dev)
        return 1
    if tool == "mstconfig" and dev.startswith("/dev/mst/"):
        sys.stdout.write("-E- Failed to open device: %s. No such file or directory\n" % dev)
        return 1
    if not rest:
        sys.stdout.write("-E- No command found. For more information please read the help message:\n")
        return 1
    command, rest = rest[0], rest[1:]
    if command in ("q", "query"):
        return query(device, dev, verbose, rest)
    if command in ("s", "set"):
        return set_(device, dev, yes, rest)
    sys.stdout.write("-E- Stand-in does not implement %s\n" % command)
    return 1


if __name__ == "__main__":
    sys.exit(main(os.path.basename(sys.argv[1]), sys.argv[2:]))
