"""One wording of a value for every message (_core/errors.py: kind, shown, describe), and one shape
vocabulary (_core/shape.py) that the switch parsers' strict check and fabric_check's reader both walk."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdmaops.roce.plugins.module_utils._core import errors, shape
from ansible_collections.rdmaops.roce.plugins.module_utils._core.errors import describe, kind, quoted, shown
from ansible_collections.rdmaops.roce.plugins.module_utils._core.shape import Int, MapOf, ReadError, Record, Text, check, no_nulls
from ansible_collections.rdmaops.roce.plugins.module_utils._validate import inputs

PYTHON_WORDS = ("int", "str", "dict", "NoneType", "bool", "float", "tuple", "True", "False", "None")


@pytest.mark.parametrize("value, words", [
    (None, ("null", "null", "null")),
    (True, ("a boolean", "true", "a boolean (true)")),
    (False, ("a boolean", "false", "a boolean (false)")),
    (5, ("a number", "5", "a number (5)")),
    (-7, ("a number", "-7", "a number (-7)")),
    (1.5, ("a decimal number", "1.5", "a decimal number (1.5)")),
    (float("inf"), ("a decimal number", "inf", "a decimal number (inf)")),
    ("9k", ("text", '"9k"', 'text ("9k")')),
    ("eth0\n", ("text", '"eth0\\n"', 'text ("eth0\\n")')),
    ({"a": 1}, ("a mapping", "a mapping", "a mapping")),
    ([1], ("a list", "a list", "a list")),
    ((1, 2), ("a list", "a list", "a list")),
    (object(), ("a value of another kind",) * 3),
])
def test_each_kind_in_yaml_words(value, words):
    assert (kind(value), shown(value), describe(value)) == words


def test_long_text_is_cut_outside_its_quotes_and_huge_numbers_by_their_size():
    assert shown("x" * 100) == '"' + "x" * 40 + '"...'
    assert shown("x" * 100, 60) == '"' + "x" * 60 + '"...'
    assert quoted("x" * 100, None) == '"' + "x" * 100 + '"'
    # past 64 bits the size, not the digits (Python refuses to print 4300 digits at all)
    assert (shown(1 << 64), describe(1 << 64)) == ("a number of 65 bits", "a number of 65 bits")
    assert describe(10 ** 5000) == "a number of %d bits" % (10 ** 5000).bit_length()
    assert shown((1 << 64) - 1) == "%d" % ((1 << 64) - 1)


def test_text_that_escapes_long_is_cut_by_its_written_length_between_escapes():
    # control characters and characters past the BMP are written as \\u escapes, six or twelve
    # characters each: the cut counts what is written, and never splits an escape
    text = "000" + "\x1f" * 7 + "\x07" + "\U00010000" * 5
    written = shown(text)
    assert written.endswith('"...') and len(written) <= 40 + 5
    assert written == '"000' + "\\u001f" * 6 + '"...'
    assert shown("\x1f" * 6) == '"' + "\\u001f" * 6 + '"'


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=80),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6))
def test_no_value_is_described_with_a_python_type_name_or_at_length(value):
    for words in (kind(value), shown(value), describe(value)):
        assert len(words) < 120
        if not isinstance(value, str):
            assert not any(word in words.split() for word in PYTHON_WORDS), words


def test_the_validate_reader_and_the_switch_check_share_one_vocabulary():
    # the same classes: fabric_check's reader and the switch parsers name shapes alike
    for name in ("Text", "Int", "Bool", "Name", "Record", "MapOf", "ListOf", "Tuple", "Anything", "Either"):
        assert getattr(inputs, name) is getattr(shape, name)
    assert inputs.describe is errors.describe is shape.describe
    mtu = Int(0, 65536, unit="bytes", example=9216)
    assert mtu.wanted == "a whole number of bytes from 0 to 65536, such as 9216"
    reader = inputs.Reader("leaf1", "switches.leaf1", "switch_roce's gathered state")
    assert reader.read(Record(mtu=mtu), {"mtu": "9216 bytes"}) == {}
    assert reader.findings[0]["hint"].startswith('switches.leaf1.mtu is text ("9216 bytes"); expected ' + mtu.wanted)
    with pytest.raises(ReadError) as caught:
        check(Record({"mtu": Int(1, 65535)}), {"mtu": "9216 bytes"})
    assert str(caught.value) == 'mtu is text ("9216 bytes") where a whole number from 1 to 65535 belongs'


@pytest.mark.parametrize("shape_, value, message", [
    (Record({"a": Text()}), {"a": 3}, "a is a number (3) where text belongs"),
    (Record({"a": Text(r"[0-7]", "a priority")}), {"a": "9"}, 'a is text ("9"), not a priority'),
    (MapOf(Record({}), key=r"[0-9]{1,2}", key_what="a DSCP (0 to 63)", low=0, high=63), {"x": {}},
     'has the key text ("x"), not a DSCP (0 to 63)'),
    (MapOf(Record({}), key=r"[0-9]{1,2}", key_what="a DSCP (0 to 63)", low=0, high=63), {"64": {}},
     "has the key 64, outside 0 to 63"),
    (Int(0, 1 << 32, as_text=True), 5, "is a number (5) where decimal text from 0 to 4294967296 (CONFIG_DB keeps numbers as text) belongs"),
    (Int(0, 7), 8, "is a number (8), outside 0 to 7"),
    (no_nulls(Record({"a": Text()})), {"a": None}, "a is null where text belongs"),
])
def test_the_strict_check_names_the_place_and_the_value(shape_, value, message):
    with pytest.raises(ReadError) as caught:
        check(shape_, value)
    assert str(caught.value) == message
    check(Record({"a": Text()}), {"a": None, "other": object()})  # null passes unless refused; unread keys are not checked
