# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenPGP public key fingerprints, computed without gpg.

A repository key is trusted only after its fingerprint matched the one the user wrote down.
Targets often lack ``gpg`` (minimal images, containers), and apt reads armored keys by
itself, so the check is done here from the key bytes (RFC 4880 / RFC 9580):

* ASCII armor is decoded and its CRC-24 checked;
* packets are walked (old and new header formats);
* for each public key (tag 6) and subkey (tag 14) the fingerprint is computed:
  v4 = SHA-1 over ``0x99 || len16 || body``, v5 = SHA-256 over ``0x9a || len32 || body``,
  v6 = SHA-256 over ``0x9b || len32 || body``.  v3 keys (MD5, 1990s) are refused.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import re
import struct

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import InputError, RdmaopsError

ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
ARMOR_END = "-----END PGP PUBLIC KEY BLOCK-----"
TAG_PUBLIC_KEY = 6
TAG_PUBLIC_SUBKEY = 14
_HEX = re.compile(r"[0-9A-F]+")


def _crc24(data):
    crc = 0xB704CE
    for byte in bytearray(data):
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def is_armored(data):
    return ARMOR_BEGIN.encode("ascii") in bytes(data)


def dearmor(data):
    """Return the binary packets of an armored public key block (bytes in, bytes out)."""
    text = bytes(data).decode("ascii", "replace")
    start = text.find(ARMOR_BEGIN)
    end = text.find(ARMOR_END, start)
    if start < 0 or end < 0:
        raise RdmaopsError("no '%s' ... '%s' block found" % (ARMOR_BEGIN, ARMOR_END))
    lines = text[start + len(ARMOR_BEGIN):end].splitlines()
    # Armor headers ("Version: ...", "Comment: ...") end at the first empty line.
    body = []
    in_headers = True
    checksum = None
    for raw in lines:
        line = raw.strip()
        if in_headers:
            if not line:
                in_headers = False
                continue
            if ":" in line:
                continue
            # No header lines at all: the first line is already data.
            in_headers = False
        if not line:
            continue
        if line.startswith("=") and len(line) == 5:
            checksum = line[1:]
            break
        body.append(line)
    try:
        packets = base64.b64decode("".join(body).encode("ascii"))
    except (binascii.Error, ValueError) as exc:
        raise RdmaopsError("the armored key is not valid base64: %s" % exc)
    if checksum is not None:
        try:
            expected = struct.unpack(">I", b"\x00" + base64.b64decode(checksum.encode("ascii")))[0]
        except (binascii.Error, ValueError, struct.error):
            raise RdmaopsError("the armor checksum line %r is malformed" % ("=" + checksum))
        if expected != _crc24(packets):
            raise RdmaopsError("the armor checksum does not match: the key was damaged in transit")
    if not packets:
        raise RdmaopsError("the armored block is empty")
    return packets


def iter_packets(data):
    """Yield ``(tag, body)`` for each packet of binary OpenPGP data."""
    data = bytearray(data)
    pos = 0
    while pos < len(data):
        header = data[pos]
        pos += 1
        if not header & 0x80:
            raise RdmaopsError("byte %d is not a packet header (0x%02x)" % (pos - 1, header))
        if header & 0x40:  # new format
            tag = header & 0x3F
            if pos >= len(data):
                raise RdmaopsError("truncated packet header")
            first = data[pos]
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                if pos + 1 >= len(data):
                    raise RdmaopsError("truncated packet length")
                length = ((first - 192) << 8) + data[pos + 1] + 192
                pos += 2
            elif first == 255:
                if pos + 5 > len(data):
                    raise RdmaopsError("truncated packet length")
                length = struct.unpack(">I", bytes(data[pos + 1:pos + 5]))[0]
                pos += 5
            else:
                raise RdmaopsError("partial body lengths are not allowed in key packets")
        else:  # old format
            tag = (header >> 2) & 0x0F
            length_type = header & 0x03
            if length_type == 3:
                length = len(data) - pos
            else:
                size = (1, 2, 4)[length_type]
                if pos + size > len(data):
                    raise RdmaopsError("truncated packet length")
                length = int(binascii.hexlify(bytes(data[pos:pos + size])), 16)
                pos += size
        if pos + length > len(data):
            raise RdmaopsError("packet with tag %d runs past the end of the data" % tag)
        yield tag, bytes(data[pos:pos + length])
        pos += length


def key_fingerprint(body):
    """Fingerprint (upper-case hex) of a public key or subkey packet body."""
    if not body:
        raise RdmaopsError("empty key packet")
    version = bytearray(body)[0]
    if version == 4:
        digest = hashlib.sha1(b"\x99" + struct.pack(">H", len(body)) + body).hexdigest()
    elif version == 5:
        digest = hashlib.sha256(b"\x9a" + struct.pack(">I", len(body)) + body).hexdigest()
    elif version == 6:
        digest = hashlib.sha256(b"\x9b" + struct.pack(">I", len(body)) + body).hexdigest()
    else:
        raise RdmaopsError("version %d keys are not accepted (only v4, v5 and v6)" % version)
    return digest.upper(), version


def public_keys(data):
    """Primary keys in ``data`` (armored or binary): ``[{fingerprint, version, subkeys}]``."""
    data = bytes(data)
    if is_armored(data):
        data = dearmor(data)
    keys = []
    for tag, body in iter_packets(data):
        if tag == TAG_PUBLIC_KEY:
            fingerprint, version = key_fingerprint(body)
            keys.append(dict(fingerprint=fingerprint, version=version, subkeys=[]))
        elif tag == TAG_PUBLIC_SUBKEY:
            if not keys:
                raise RdmaopsError("a subkey packet comes before any primary key")
            keys[-1]["subkeys"].append(key_fingerprint(body)[0])
    if not keys:
        raise RdmaopsError("no public key packet found (is this a public key?)")
    return keys


def normalize_fingerprint(value):
    """``"2A1D 9E2B ..."``, ``0x...`` or lower case -> upper-case hex; raise on anything else.

    A full fingerprint (40 hex digits for v4, 64 for v5/v6) or a 64-bit long key ID (16 hex
    digits, the tail of a v4 fingerprint) is accepted; 32-bit short IDs collide easily and
    are refused.
    """
    text = re.sub(r"\s+", "", str(value or "")).upper()
    if text.startswith("0X"):
        text = text[2:]
    if not _HEX.fullmatch(text) or len(text) not in (16, 40, 64):
        raise InputError(
            "%r is not a key fingerprint: give the full fingerprint (40 or 64 hex digits, as "
            "'gpg --show-keys --with-fingerprint KEYFILE' prints it) or at least the 16-digit "
            "long key ID" % (value,),
            option="key_fingerprints",
        )
    return text


def fingerprint_matches(fingerprint, expected):
    """Whether a computed fingerprint equals ``expected`` (already normalized)."""
    if len(expected) == 16:
        return len(fingerprint) == 40 and fingerprint.endswith(expected)
    return fingerprint == expected


def check_keys(data, expected_fingerprints):
    """Return the primary keys of ``data`` when EVERY one of them is expected, else raise.

    A key file that carries an extra key would make apt/dnf trust that key too, so one match
    is not enough.
    """
    expected = [normalize_fingerprint(item) for item in expected_fingerprints]
    if not expected:
        raise RdmaopsError("no expected fingerprint given")
    keys = public_keys(data)
    unexpected = [key["fingerprint"] for key in keys
                  if not any(fingerprint_matches(key["fingerprint"], item) for item in expected)]
    if unexpected:
        raise RdmaopsError(
            "the key file holds key(s) %s, which match none of the expected fingerprint(s) %s"
            % (", ".join(unexpected), ", ".join(expected))
        )
    return keys


def armor(data):
    """ASCII-armor binary key packets (what apt's ``.asc`` keyrings and ``rpm --import`` read)."""
    data = bytes(data)
    encoded = base64.b64encode(data).decode("ascii")
    lines = [ARMOR_BEGIN, ""]
    lines.extend(encoded[i:i + 64] for i in range(0, len(encoded), 64))
    crc = base64.b64encode(struct.pack(">I", _crc24(data))[1:]).decode("ascii")
    lines.extend(["=" + crc, ARMOR_END])
    return "\n".join(lines) + "\n"


def as_armored_text(data):
    """The key as armored text: armored input is kept as it came, binary input is armored."""
    data = bytes(data)
    if is_armored(data):
        text = data.decode("ascii", "replace")
        start = text.find(ARMOR_BEGIN)
        end = text.find(ARMOR_END, start) + len(ARMOR_END)
        return text[start:end] + "\n"
    return armor(data)
