# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for SONiC's sonic-cfggen, the two uses the tests need:

  sonic-cfggen -d --print-data            CONFIG_DB as JSON (what the module reads)
  sonic-cfggen -j FILE --write-to-db      load a config_db.json into CONFIG_DB (seeding)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import configdb  # noqa: E402

parser = argparse.ArgumentParser(prog="sonic-cfggen")
parser.add_argument("-d", "--from-db", action="store_true")
parser.add_argument("-j", "--json")
parser.add_argument("--print-data", action="store_true")
parser.add_argument("--write-to-db", action="store_true")
args = parser.parse_args()
db = configdb.connect()
if args.json and args.write_to_db:
    with open(args.json) as stream:
        configdb.write(db, json.load(stream))
elif args.from_db and args.print_data:
    print(json.dumps(configdb.read(db), indent=4, sort_keys=True))
else:
    parser.error("this stand-in knows -d --print-data and -j FILE --write-to-db")
