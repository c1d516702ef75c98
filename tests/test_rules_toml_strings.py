"""The TOML files under rules/ write their strings as literal strings ('...', '''...''')
unless a string needs an escape: Python's tomllib reads a basic string ("...") one character
at a time and a literal one with str.find, and every run loads these files before it starts
its workers (rules/README.md)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import pytest
import tomllib

from kvlint.data import data_dir

FILES = sorted(data_dir().glob("codes/*.toml")) + sorted(data_dir().glob("facts/*.toml"))


def basic_strings(text: str) -> List[Tuple[int, str]]:
    """(line, body) of every basic string of a TOML text: the strings between `"` or `\"\"\"`
    outside literal strings and comments."""
    out: List[Tuple[int, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("'''", i):
            i = text.index("'''", i + 3) + 3
        elif c == "'":
            i = text.index("'", i + 1) + 1
        elif c == '"':
            quote = '"""' if text.startswith('"""', i) else '"'
            j = i + len(quote)
            while not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            out.append((text.count("\n", 0, i) + 1, text[i + len(quote):j]))
            i = j + len(quote)
        else:
            i += 1
    return out


def test_the_scanner_finds_basic_strings_only():
    text = 'a = "x"\nb = \'"y"\'\nc = \'\'\'\n"z"\n\'\'\'\n# "w"\nd = """\nv\\n"""\ne = "q\\"r"\n'
    assert tomllib.loads(text)["e"] == 'q"r'
    assert basic_strings(text) == [(1, "x"), (7, "\nv\\n"), (9, 'q\\"r')]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_basic_strings_only_where_an_escape_is_needed(path: Path):
    text = path.read_text(encoding="utf-8")
    needless = [line for line, body in basic_strings(text) if "\\" not in body and "'" not in body]
    assert not needless, f"{path.name}: write these as literal strings ('...'): lines {needless}"
