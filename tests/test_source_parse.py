"""`kvlint.source.parse` parses plain UTF-8 from the bytes (faster); it must give exactly the
tree, and the SyntaxError, that parsing the decoded text gives."""
from __future__ import annotations

import ast
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.source import ReadFailure, decode, parse

CASES = [
    b"x = 1\r\ny = 2\r\n",
    b"x = 1\ry = 2\r",
    b"\x0cdef f():\n  return 1\n",
    "\u00e9 = '\u00fc'\nprint(\u00e9)\n".encode(),
    b"# -*- coding: utf-8 -*-\nx = '\xc3\xa9'\n",
    b"\xef\xbb\xbfx = '\xc3\xa9'\n",  # BOM: parsed from the text
    b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",  # another cookie: from the text
    b"x = 1",
    b"x = '\\q'\n",  # an invalid escape: a SyntaxWarning, not shown
    "x = 1  # \u00e9\n".encode(),
    "def f(a, /, *, b=\u00e9):\n    return f'{a!r:>{b}}'\n".encode(),
]
# the bytes path reports some of these columns in bytes (the text path in characters)
ERRORS = [
    "a = '\u00e9'; b = ((\n".encode(),
    "\u00f1 = 1 +\n".encode(),
    b"x = (1,\n",
    "def f(:\n  \u00e9=1\n".encode(),
    b"f'{x!z}'\n",
    b"x = 1\\",
    b"if x:\n\ty\n        z\n",  # inconsistent tabs: a TabError
]


def from_text(data: bytes):
    source = decode("m.py", data)
    assert not isinstance(source, ReadFailure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source.text, filename="m.py")


def error(fn):
    try:
        fn()
    except SyntaxError as exc:
        return (type(exc).__name__, exc.msg, exc.lineno, exc.offset, exc.end_lineno, exc.end_offset, exc.text)
    raise AssertionError("no SyntaxError")


@pytest.mark.parametrize("data", CASES)
def test_the_same_tree_as_from_the_text(data):
    source = decode("m.py", data)
    assert ast.dump(parse(source), include_attributes=True) == ast.dump(from_text(data), include_attributes=True)


@pytest.mark.parametrize("data", ERRORS)
def test_the_same_syntax_error_as_from_the_text(data):
    source = decode("m.py", data)
    assert error(lambda: parse(source)) == error(lambda: from_text(data))


def test_the_bytes_path_is_the_one_taken_for_plain_utf8(monkeypatch):
    seen = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda src, *a, **k: seen.append(type(src)) or real(src, *a, **k))
    parse(decode("m.py", "x = '\u00e9'\n".encode()))
    parse(decode("m.py", b"# coding: latin-1\nx = '\xe9'\n"))
    assert seen == [bytes, str]


def test_warnings_of_the_checked_code_are_not_shown():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse(decode("m.py", b"x = '\\q'\n"))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab (),:=\n\r\t\\'\"#f{}[]+-\u00e9\u4e2d\u00a0\x0c;1.")), max_size=60))
def test_any_text_parses_or_fails_alike(text):
    data = text.encode("utf-8")
    source = decode("m.py", data)
    if isinstance(source, ReadFailure):
        return
    def run(fn):
        try:
            return ast.dump(fn(), include_attributes=True)
        except SyntaxError:
            return error(fn)
        except ValueError as exc:  # e.g. a null byte (decode refuses those first)
            return ("ValueError", str(exc))
    assert run(lambda: parse(source)) == run(lambda: from_text(data))
