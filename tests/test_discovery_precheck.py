"""The `.gitignore` pre-check (kvlint/discovery.py `_PreCheck`) may only skip a path that no
pattern of the spec matches: whenever pathspec finds a matching pattern (include or
exclude), the pre-check says `True`."""
import pathspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.discovery import _any_pattern

NAMES = ["build", "dist", "a", "b.py", "x_musa", "lib", "data.tar", ".cache", "c.pyc", "docs", "_build"]
PATTERNS = [
    "build/", "**/dist/", "*.py[cod]", "*.py", "/a", "a/", "docs/_build/", "docs/_build", "**/lib/",
    "lib/**/x_*/", "*_musa/", ".cache", "!b.py", "!a/b.py", "data.*", "*", "a/*", "**/b.py", "[ab]",
    "?.py", "b.py/", "!*.pyc", "docs/**", "/lib/a", "\\#x", "foo\\ bar",
]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=6),
       parts=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), is_dir=st.booleans())
def test_precheck_never_skips_a_matching_path(lines, parts, is_dir):
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    precheck = _any_pattern(spec)
    rel = "/".join(parts) + ("/" if is_dir else "")
    if spec.check_file(rel).include is not None:
        assert precheck is None or precheck.match(rel)


def test_precheck_skips_what_nothing_matches():
    spec = pathspec.GitIgnoreSpec.from_lines(["build/", "*.pyc", "docs/_build/", "/site"])
    precheck = _any_pattern(spec)
    assert not precheck.match("kvlint/engine.py")
    assert not precheck.match("src/build.py")  # `build/` is a folder pattern
    assert precheck.match("src/build/")
    assert precheck.match("src/build/x.py")
    assert precheck.match("a/b.pyc")
    assert precheck.match("docs/_build/")
    assert precheck.match("site")
    assert not precheck.match("docs/site")
