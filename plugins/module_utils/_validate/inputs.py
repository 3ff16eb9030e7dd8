# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_check's per-host and per-switch inputs, read for type and shape before any check sees them.

Every value a check uses is read here against the shape its producer writes (rdma_facts'
``ansible_facts.rdma``, nic_layer's check-mode ``ports``, the validate role's pings and runs,
switch_roce's ``gathered`` state). The checks see only what was read:

- a key that is absent, or null, is missing data: the checks report what depends on it as not
  checked (absent keys are left out of the read mapping, so a check can tell null from absent
  where the producer gives null a meaning, as rdma_facts does for the GID index);
- a value of another type or shape cannot be read: it is left out, and one ``input`` finding
  (``passed: null``) names the host or switch and the key, so it is never compared and never passes;
- numbers and booleans are taken only as what they are, or as the text Ansible documents for them,
  matched whole: ``"9000"`` is 9000; ``yes``/``no``, ``true``/``false``, ``on``/``off``, ``y``/``n``,
  ``t``/``f``, ``1``/``0`` (any case) are booleans, so ``"off"`` is false, never "a non-empty string".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import describe, shown
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import (
    INT_RANGE,
    Anything,
    Bool,
    Either,
    Int,
    ListOf,
    MapOf,
    Name,
    Record,
    Text,
    Tuple,
)

# Ansible's documented boolean words (ansible.module_utils.parsing.convert_bool), matched whole.
BOOLEAN_TRUE = frozenset(("yes", "on", "true", "y", "t", "1"))
BOOLEAN_FALSE = frozenset(("no", "off", "false", "n", "f", "0"))
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_:.@/-]{0,63}")


TEXT = Text()
INT = Int()
BOOL = Bool()
NAME = Name()
MTU = Int(0, 65536, unit="bytes", example=9216)
PRIORITIES = ListOf(Int(0, 7, example=3))

# what the checks read, by producer ----------------------------------------------------------------
PORT = Record(state=TEXT, link_layer=TEXT, netdev=TEXT, max_mtu=INT, active_mtu=INT, roce_v2_ipv4_gid_index=INT, rate=TEXT)
RDMA = Record(
    devices=MapOf(Record(fw_ver=TEXT, ports=MapOf(PORT))),
    netdevs=MapOf(Record(mtu=MTU)),
    modules=MapOf(BOOL),
    gpus=ListOf(Anything()),
    stack=Record(flavor=TEXT, version=TEXT, kernel=TEXT),
)
NIC_PORT = Record(
    device=TEXT, port=NAME,
    qos=Record(before=Record(trust=TEXT, pfc=PRIORITIES, dscp2prio=MapOf(INT))),
    ecn=Record(supported=BOOL, before=Record(np=Record(enabled=PRIORITIES, cnp_dscp=INT, cnp_802p_prio=INT),
                                             rp=Record(enabled=PRIORITIES))),
    tos=Record(before=Record(tos=INT, roce_mode=TEXT)),
)
PING = Record(peer=TEXT, address=TEXT, size=INT, rc=INT, stdout=TEXT, stderr=TEXT, skipped=BOOL, why=TEXT,
              source=TEXT, netdev=TEXT, peer_netdev=TEXT, peer_evidence=TEXT, nonce=TEXT)
RDMA_RUN = Record(test=Text(choices=("ib_write_bw", "ib_write_lat")), peer=TEXT, device=TEXT, peer_device=TEXT, gid_index=INT, tos=INT,
                  rc=INT, stdout=TEXT, stderr=TEXT, skipped=BOOL, why=TEXT, requested=BOOL, attempts=INT)
NCCL_RUN = Record(rc=INT, stdout=TEXT, skipped=BOOL, why=TEXT)
# multi-rail hosts (_validate/rails.py): the plan's links (rdmaops.roce.roce_rail_links), nic_layer's
# check-mode read per netdev, and the validate role's per-rail loops (ping, ARP probe, ib_write_bw),
# each an Ansible loop result whose ``item`` is what the loop ran over
RAIL_LINK = Record(rail=NAME, interface=TEXT, address=TEXT, prefix=Int(0, 128), network=TEXT, gateway=TEXT,
                   table=Int(0, (1 << 32) - 1), rule_priority=Int(0, (1 << 32) - 1))
RAIL_READ = Record(addresses=ListOf(TEXT), routes=ListOf(TEXT), rules=ListOf(TEXT),
                   sysctls=Record(arp_ignore=INT, arp_announce=INT, rp_filter=INT))
HOST_PAIR = ListOf(TEXT, length=2)
ARGV = ListOf(TEXT)
RAILS = Record(
    links=ListOf(RAIL_LINK, whole=False),
    read=MapOf(RAIL_READ),
    error=TEXT,
    pings=ListOf(Record(item=Tuple(HOST_PAIR, RAIL_LINK), cmd=ARGV, rc=INT, stdout=TEXT, stderr=TEXT), whole=False),
    rx=Record(before=TEXT, after=TEXT),
    arp=ListOf(Record(item=HOST_PAIR, cmd=ARGV, rc=INT, stdout=TEXT), whole=False),
    # item: [pair index, rail index]
    rdma=ListOf(Record(item=ListOf(Int(0, INT_RANGE[1]), length=2), cmd=ARGV, rc=INT, stdout=TEXT, stderr=TEXT, attempts=INT),
                whole=False),
)
HOST = Record(
    rdma=RDMA,
    nic=ListOf(NIC_PORT, whole=False),
    nic_error=TEXT,
    pings=ListOf(PING, whole=False),
    rdma_runs=ListOf(RDMA_RUN, whole=False),
    nccl=ListOf(NCCL_RUN, whole=False),
    counters=Record(ports=ListOf(ListOf(TEXT, length=2), whole=False), before=TEXT, after=TEXT),
    rails=RAILS,
)
SWITCH_INTERFACE = Either(TEXT, Record(name=TEXT, interface=TEXT, mtu=MTU, pfc_priorities=PRIORITIES))
SWITCH = Record(
    fabric=Record(roce_dscp=INT, roce_priority=INT, cnp_dscp=INT, cnp_priority=INT, trust=TEXT,
                  pfc_priorities=PRIORITIES, ecn_priorities=PRIORITIES, switch_mtu=MTU,
                  ecn=Record(min_threshold_bytes=INT, max_threshold_bytes=INT, probability_percent=INT),
                  pfc_watchdog=Either(BOOL, Record(enabled=BOOL))),
    interfaces=ListOf(SWITCH_INTERFACE, whole=False),
)

SOURCES = {
    "rdma": "rdma_facts' ansible_facts.rdma",
    "nic": "nic_layer's ports (check mode)",
    "switches": "switch_roce's gathered state",
}


def key_name(key):
    """A key for a path: a plain name as is, anything else quoted."""
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
        return key
    return "[%s]" % (json.dumps(key[:40]) if isinstance(key, str) else describe(key))


def join_path(path, key):
    """``path.key``, or ``path["odd key"]``."""
    name = key_name(key)
    if name.startswith("["):
        return path + name
    return "%s.%s" % (path, name) if path else name


def name_of(key):
    """A host's or switch's name for the findings: its text, or the key described."""
    if isinstance(key, str) and key:
        return str(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return shown(key)
    return describe(key)


class Reader(object):
    """Reads one host's or switch's data; ``findings`` holds one ``input`` finding per value that
    could not be read. ``where`` is the option's path to the data (``hosts.vm1``)."""

    def __init__(self, owner, where, source):
        self.owner, self.where, self.source = owner, where, source
        self.findings = []

    def unreadable(self, path, value, shape):
        field = path or "(all of it)"
        full = "%s.%s" % (self.where, path) if path else self.where
        actual = describe(value)
        if getattr(shape, "length", None) is not None and isinstance(value, (list, tuple)):
            actual = "a list of %d" % len(value)  # "a list; expected a list of 2" would say nothing
        self.findings.append(dict(
            check="input", host=self.owner, peer=None, device=None, field=field, expected=shape.wanted, actual=actual,
            hint="%s is %s; expected %s: fabric_check cannot read it, so what depends on it is not checked (pass %s as it "
                 "returns it)" % (full, actual, shape.wanted, self._source(path)),
            passed=None))

    def collision(self, path, name, keys):
        """``keys`` (such as ``"1"`` and the number 1) all name ``name``: which one's data is meant
        cannot be told, so none of them is read."""
        field = path or "(all of it)"
        full = "%s.%s" % (self.where, path) if path else self.where
        given = " and ".join(describe(key) for key in keys)
        self.findings.append(dict(
            check="input", host=self.owner, peer=None, device=None, field=field, expected="one entry named %s" % json.dumps(name),
            actual="%d entries: %s" % (len(keys), given),
            hint="%s has %s, which all name %s: fabric_check cannot tell which is meant, so none of them is checked "
                 "(give each its own name)" % (full, given, json.dumps(name)),
            passed=None))

    def _source(self, path):
        return SOURCES.get(path.split(".", 1)[0].split("[", 1)[0] if path else "", self.source)

    def read(self, shape, value, path=""):
        """``value`` read as ``shape``; None when it is missing (null) or cannot be read."""
        if value is None:
            return None
        method = getattr(self, "_" + type(shape).__name__.lower())
        return method(shape, value, path)

    def _quiet(self, shape, value, path):
        probe = Reader(self.owner, self.where, self.source)
        result = probe.read(shape, value, path)
        return (result, probe.findings)

    def _text(self, shape, value, path):
        if isinstance(value, str) and (shape.choices is None or value in shape.choices):
            return str(value)
        return self.unreadable(path, value, shape)

    def _int(self, shape, value, path):
        number = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = int(value)
        elif isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
            number = int(value)
        if number is not None and shape.low <= number <= shape.high:
            return number
        return self.unreadable(path, value, shape)

    def _bool(self, shape, value, path):
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, int) and value in (0, 1):
            return value == 1
        if isinstance(value, str):
            word = value.lower()
            if word in BOOLEAN_TRUE:
                return True
            if word in BOOLEAN_FALSE:
                return False
        return self.unreadable(path, value, shape)

    def _name(self, shape, value, path):
        if isinstance(value, str):
            return str(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < (1 << 32):
            return str(int(value))
        return self.unreadable(path, value, shape)

    def _anything(self, shape, value, path):
        return value

    def _record(self, shape, value, path):
        if not isinstance(value, Mapping):
            return self.unreadable(path, value, shape)
        out = {}
        for key, item_shape in shape.fields.items():
            if key not in value:
                continue
            item = value[key]
            read = self.read(item_shape, item, join_path(path, key))
            if item is None or read is not None:
                out[key] = read
        return out

    def _mapof(self, shape, value, path):
        if not isinstance(value, Mapping):
            return self.unreadable(path, value, shape)
        out = {}
        keys_of = {}
        for key, item in value.items():
            name = self._name(NAME, key, join_path(path, key))
            if name is None:
                continue
            keys_of.setdefault(name, []).append(key)
            read = self.read(shape.item, item, join_path(path, key))
            if item is None or read is not None:
                out[name] = read
        for name, keys in keys_of.items():
            if len(keys) > 1:
                # 1 and "1" are one name once read: keeping either would hide the other's data
                self.collision(join_path(path, name), name, keys)
                out.pop(name, None)
        return out

    def _listof(self, shape, value, path):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
            return self.unreadable(path, value, shape)
        if shape.length is not None and len(value) != shape.length:
            return self.unreadable(path, value, shape)
        out = []
        for index, item in enumerate(value):
            read = self.read(shape.item, item, "%s[%d]" % (path, index))
            if read is None:
                if shape.whole:
                    # one item that is null or unreadable: the list as a whole cannot be compared
                    if item is None:
                        self.unreadable("%s[%d]" % (path, index), item, shape.item)
                    return None
                if item is None:
                    self.unreadable("%s[%d]" % (path, index), item, shape.item)
                continue
            out.append(read)
        return out

    def _tuple(self, shape, value, path):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)) or len(value) != len(shape.shapes):
            return self.unreadable(path, value, shape)
        out = []
        for index, (item_shape, item) in enumerate(zip(shape.shapes, value)):
            read = self.read(item_shape, item, "%s[%d]" % (path, index))
            if read is None:
                if item is None:
                    self.unreadable("%s[%d]" % (path, index), item, item_shape)
                return None
            out.append(read)
        return out

    def _either(self, shape, value, path):
        fitting = [option for option in shape.shapes if _fits(option, value)]
        for option in fitting:
            result, problems = self._quiet(option, value, path)
            if not problems and result is not None:
                return result
        if len(fitting) == 1:
            # the value is of the one kind that could be meant (a mapping where text or a mapping is
            # read): that shape's own findings name the innermost key that is wrong and what it should be
            return self.read(fitting[0], value, path)
        return self.unreadable(path, value, shape)


def _fits(shape, value):
    """Whether ``value`` is of the kind ``shape`` reads (a mapping for a record, a list for a list ...),
    whatever its content."""
    if isinstance(shape, (Record, MapOf)):
        return isinstance(value, Mapping)
    if isinstance(shape, (ListOf, Tuple)):
        return isinstance(value, (list, tuple))
    if isinstance(shape, Either):
        return any(_fits(option, value) for option in shape.shapes)
    if isinstance(shape, Anything):
        return True
    if isinstance(shape, Text):
        return isinstance(value, str)
    # Int, Bool and Name read numbers, booleans and text
    return isinstance(value, (str, int))


def unreadable_output(owner, field, actual, why, peer=None):
    """An ``input`` finding for a tool's output (``hosts.OWNER.FIELD``) that holds a result fabric_check
    cannot read (a count of 5000 digits, a figure ``1.2.3``): what depends on it is not checked and
    the verdict is not passed, as for any data that cannot be read."""
    return dict(check="input", host=owner, peer=peer, device=None, field=field, expected="a result as its tool prints it",
                actual=actual, hint="hosts.%s.%s: %s: fabric_check cannot read it, so what depends on it is not checked"
                % (owner, field, why), passed=None)


def collisions(option, keys, source):
    """Input findings for the keys of ``option`` (hosts, switches) that name one host or switch
    (``"1"`` and the number 1): ``{name: finding}`` for each name given more than once."""
    keys_of = {}
    for key in keys:
        keys_of.setdefault(name_of(key), []).append(key)
    out = {}
    for name, same in keys_of.items():
        if len(same) > 1:
            reader = Reader(name, option, source)
            reader.collision("", name, same)
            out[name] = reader.findings[0]
    return out


def read_entry(shape, owner_key, value, option, source):
    """One host's or switch's data read: ``(name, read or None, [input findings])``. A whole entry
    that is null is missing (None, no finding); one that is not a mapping cannot be read."""
    name = name_of(owner_key)
    reader = Reader(name, join_path(option, owner_key), source)
    read = reader.read(shape, value)
    return name, read, reader.findings
