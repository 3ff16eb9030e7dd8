"""What a message to the user must not hold, for the hostile-input tests: Python's type and error
names, a traceback, Ansible's internal class names. The user's own keys and values, quoted in a
message, may be any text (``'int'`` is a key hypothesis draws), so the words are looked for in the
message's own words only."""

import re

PYTHON_WORDS = re.compile(r"\b(dict|str|int|bool|float|NoneType|tuple|unhashable|Traceback|AddrFormatError)\b|_Ansible|<class")
QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def python_words(message):
    """The first Python word in ``message`` outside its quoted parts, or None."""
    return PYTHON_WORDS.search(QUOTED.sub("", message))
