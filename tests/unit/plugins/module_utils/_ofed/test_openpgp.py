"""openpgp.py against keys made by GnuPG and the fingerprints GnuPG printed for them."""

import os

import pytest

from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import RdmaopsError
from ansible_collections.rdmaops.roce.plugins.module_utils._ofed import openpgp

GPG = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "tools", "gpg")


def fixture(name, mode="rb"):
    with open(os.path.join(GPG, name), mode) as handle:
        return handle.read()


def gpg_colons(name):
    """Primary and sub fingerprints from ``gpg --show-keys --with-colons`` output."""
    keys, kind = [], None
    for line in fixture(name + ".colons.txt", "r").splitlines():
        fields = line.split(":")
        if fields[0] in ("pub", "sub"):
            kind = fields[0]
        elif fields[0] == "fpr":
            if kind == "pub":
                keys.append({"fingerprint": fields[9], "subkeys": []})
            else:
                keys[-1]["subkeys"].append(fields[9])
    return keys


@pytest.mark.parametrize("name", ["rsa2048.asc", "rsa2048.gpg", "ed25519-with-subkey.asc", "two-keys.asc"])
def test_fingerprints_are_the_ones_gnupg_printed(name):
    keys = openpgp.public_keys(fixture(name))
    assert [{"fingerprint": k["fingerprint"], "subkeys": k["subkeys"]} for k in keys] == gpg_colons(name)
    assert all(k["version"] == 4 for k in keys)


def test_binary_and_armored_forms_give_the_same_key():
    armored = fixture("rsa2048.asc")
    assert openpgp.dearmor(armored) == fixture("rsa2048.gpg")
    assert openpgp.as_armored_text(armored) == armored.decode("ascii")
    rearmored = openpgp.as_armored_text(fixture("rsa2048.gpg"))
    assert openpgp.public_keys(rearmored.encode("ascii")) == openpgp.public_keys(armored)


def test_check_keys_accepts_full_fingerprint_spaced_and_long_id():
    fpr = gpg_colons("rsa2048.asc")[0]["fingerprint"]
    spaced = " ".join(fpr[i:i + 4] for i in range(0, 40, 4)).lower()
    assert openpgp.check_keys(fixture("rsa2048.asc"), [spaced])[0]["fingerprint"] == fpr
    assert openpgp.check_keys(fixture("rsa2048.asc"), ["0x" + fpr[-16:]])[0]["fingerprint"] == fpr


def test_a_file_with_an_extra_key_is_refused_even_if_one_key_matches():
    rsa = gpg_colons("rsa2048.asc")[0]["fingerprint"]
    ed = gpg_colons("ed25519-with-subkey.asc")[0]["fingerprint"]
    with pytest.raises(RdmaopsError, match=ed):
        openpgp.check_keys(fixture("two-keys.asc"), [rsa])
    assert len(openpgp.check_keys(fixture("two-keys.asc"), [rsa, ed])) == 2


def test_wrong_fingerprint_and_weak_ids_are_refused():
    with pytest.raises(RdmaopsError, match="match none"):
        openpgp.check_keys(fixture("rsa2048.asc"), ["A024F6F0E6D6A281"])
    with pytest.raises(RdmaopsError, match="not a key fingerprint"):
        openpgp.check_keys(fixture("rsa2048.asc"), ["0C6B744F"])  # 32-bit short ID
    with pytest.raises(RdmaopsError, match="no expected"):
        openpgp.check_keys(fixture("rsa2048.asc"), [])


def test_damaged_armor_and_non_keys_are_refused():
    text = fixture("rsa2048.asc").decode("ascii")
    lines = text.splitlines()
    body = lines[2]
    flipped = body[:10] + ("A" if body[10] != "A" else "B") + body[11:]
    damaged = "\n".join(lines[:2] + [flipped] + lines[3:]) + "\n"
    with pytest.raises(RdmaopsError, match="checksum"):
        openpgp.public_keys(damaged.encode("ascii"))
    with pytest.raises(RdmaopsError):
        openpgp.public_keys(b"<html>404 Not Found</html>")
    with pytest.raises(RdmaopsError, match="no public key"):
        # A user ID packet alone (tag 13, new format).
        openpgp.public_keys(b"\xcd\x03abc")
