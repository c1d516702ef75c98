"""project._bound_names (the names a module binds at module level or imports, read from its
bytes before it is parsed) gives what the two line-anchored regexes it replaced give."""
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.analysis.project import _bound_names

_ASSIGNED = re.compile(rb"(?m)^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")
_IMPORTS = re.compile(rb"(?m)^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]+(\([^)]*\)|[^\n]*)")
_WORD = re.compile(rb"[A-Za-z_]\w*")


def reference(data: bytes) -> frozenset:
    names = set(_ASSIGNED.findall(data))
    for part in _IMPORTS.findall(data):
        names.update(_WORD.findall(part))
    return frozenset(n.decode("ascii", "replace") for n in names)


FRAGMENTS = [b"import", b"from", b" ", b"\t", b"\n", b"\r\n", b"(", b")", b"=", b"==", b":", b",", b".",
             b"os", b"x", b"importlib", b"import_utils", b"'", b"#", b"a1", b"_b"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_the_same_names_as_the_line_anchored_regexes(parts):
    data = b"".join(parts)
    assert _bound_names(data) == reference(data)


def test_forms():
    src = (b"x = 'import (a'\nimport os\n)\nfrom import_utils import y\nimport z  # import w\n"
           b"from . import (a,\n b)\nc: int = 2\nd == 3\n    e = 1\n")
    assert _bound_names(src) == reference(src) == {"x", "os", "y", "z", "import", "w", "a", "b", "c"}
