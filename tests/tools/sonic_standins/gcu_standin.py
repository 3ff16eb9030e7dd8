# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for the Generic Config Updater commands of SONiC's ``config``:

  config apply-patch [-d|--dry-run] FILE   apply an RFC 6902 patch (jsonpatch) to CONFIG_DB in redis,
                                           after validating the patched config with sonic-yang-models
  config checkpoint NAME                   save CONFIG_DB to /etc/sonic/checkpoints/NAME.cp.json
  config rollback NAME                     make CONFIG_DB that checkpoint again
  config delete-checkpoint NAME            remove it

Failures on demand, for the tests: /etc/sonic/standin-fail holding "apply-patch" makes apply-patch
write half of the changed rows and then fail (a part-way apply, as a crashing updater leaves it);
holding "rollback" as well makes rollback fail too.  The YANG release is the switch's, from
/etc/sonic/sonic_version.yml.
"""
import json
import os
import re
import sys

import jsonpatch

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import configdb  # noqa: E402
import sonic_yang  # noqa: E402

CHECKPOINTS = "/etc/sonic/checkpoints"
FAIL_FILE = "/etc/sonic/standin-fail"


def fails(what):
    try:
        with open(FAIL_FILE) as stream:
            return what in stream.read().split()
    except IOError:
        return False


def release():
    with open("/etc/sonic/sonic_version.yml") as stream:
        return re.search(r"(?m)^release:\s*'?([^'\s]+)", stream.read()).group(1)


def checkpoint_path(name):
    if not re.match(r"^[\w.-]+$", name):
        sys.exit("Error: invalid checkpoint name %r" % name)
    return os.path.join(CHECKPOINTS, name + ".cp.json")


def apply_patch(argv):
    dry_run = any(arg in ("-d", "--dry-run") for arg in argv)
    files = [arg for arg in argv if not arg.startswith("-")]
    with open(files[0]) as stream:
        patch = jsonpatch.JsonPatch(json.load(stream))
    db = configdb.connect()
    current = configdb.read(db)
    try:
        target = patch.apply(current)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        sys.exit("Error: Failed to apply patch: %s" % exc)
    empty = sorted(table for table, rows in target.items() if not rows)
    if empty:
        sys.exit("Error: Given patch will produce invalid config. Error: empty tables %s" % ", ".join(empty))
    errors = sonic_yang.validate(target, release())
    if errors:
        sys.exit("Error: Given patch will produce invalid config. Error: %s" % " ".join(errors))
    if dry_run:
        print("Patch would be applied successfully (dry run: CONFIG_DB unchanged).")
        return
    if fails("apply-patch"):
        rows = configdb.changed_rows(current, target)
        half = dict((table, dict(current.get(table, {}))) for table in set(current) | set(target))
        for table, key in rows[: max(1, len(rows) // 2)]:
            if key in target.get(table, {}):
                half[table][key] = target[table][key]
            else:
                half[table].pop(key, None)
        configdb.write(db, half, current)
        sys.exit("Error: Failed to apply patch: the stand-in was told to fail after %d of %d rows"
                 % (max(1, len(rows) // 2), len(rows)))
    configdb.write(db, target, current)
    print("Patch applied successfully.")


def main():
    if len(sys.argv) < 3:
        sys.exit("Usage: config {apply-patch|checkpoint|rollback|delete-checkpoint} ARG")
    command, argv = sys.argv[1], sys.argv[2:]
    if command == "apply-patch":
        apply_patch(argv)
    elif command == "checkpoint":
        os.makedirs(CHECKPOINTS, exist_ok=True)
        with open(checkpoint_path(argv[0]), "w") as stream:
            json.dump(configdb.read(configdb.connect()), stream)
        print("Checkpoint created successfully.")
    elif command == "rollback":
        if fails("rollback"):
            sys.exit("Error: Failed to rollback config: the stand-in was told to fail")
        with open(checkpoint_path(argv[0])) as stream:
            configdb.write(configdb.connect(), json.load(stream))
        print("Config rolled back successfully.")
    elif command == "delete-checkpoint":
        os.unlink(checkpoint_path(argv[0]))
        print("Checkpoint deleted successfully.")
    else:
        sys.exit("Error: No such command %r (stand-in)" % command)


if __name__ == "__main__":
    main()
