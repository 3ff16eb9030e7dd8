# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CONFIG_DB in a real redis, stored the way SONiC stores it: database 4, one hash per row
under ``TABLE|key`` (``QUEUE|Ethernet0|3``: the table name ends at the first ``|``), a row
without fields as the hash ``{"NULL": "NULL"}`` (swsscommon's convention).

Shared by the stand-ins of ``sonic-cfggen`` and ``config`` in the SONiC test container.
"""

import redis

CONFIG_DB = 4
SEPARATOR = "|"


def connect():
    return redis.Redis(unix_socket_path=None, host="127.0.0.1", port=6379, db=CONFIG_DB, decode_responses=True)


def read(db):
    """``{TABLE: {key: {field: value}}}`` of everything in CONFIG_DB."""
    config = {}
    for name in db.scan_iter(count=1000):
        table, sep, key = name.partition(SEPARATOR)
        if not sep:
            continue
        row = db.hgetall(name)
        row.pop("NULL", None)
        config.setdefault(table, {})[key] = row
    return config


def write(db, config, old=None):
    """Make CONFIG_DB hold ``config``: rows that differ from ``old`` (default: what it holds) are
    rewritten, rows not in ``config`` deleted.  Returns how many rows were touched."""
    old = read(db) if old is None else old
    touched = 0
    for table, rows in old.items():
        for key in rows:
            if key not in config.get(table, {}):
                db.delete(table + SEPARATOR + key)
                touched += 1
    for table, rows in config.items():
        for key, row in rows.items():
            if old.get(table, {}).get(key) == row:
                continue
            name = table + SEPARATOR + key
            pipe = db.pipeline()
            pipe.delete(name)
            pipe.hset(name, mapping=dict(row) if row else {"NULL": "NULL"})
            pipe.execute()
            touched += 1
    return touched


def changed_rows(old, new):
    """``[(table, key)]`` whose rows differ between two configs, in a stable order."""
    names = set()
    for one, other in ((old, new), (new, old)):
        for table, rows in one.items():
            for key, row in rows.items():
                if other.get(table, {}).get(key) != row:
                    names.add((table, key))
    return sorted(names)
