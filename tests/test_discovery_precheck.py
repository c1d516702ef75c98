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


def reference_match(precheck, rel: str) -> bool:
    """What `_PreCheck.match` reads, written the obvious way: the patterns with a slash over
    the whole path, then each component (folder patterns only for one followed by `/`)."""
    if "\n" in rel:
        return True
    if precheck.other is not None and precheck.other.match(rel):
        return True
    parts = rel.split("/")
    return any(precheck.anywhere is not None and precheck.anywhere.fullmatch(part)
               or i < len(parts) - 1 and precheck.folders is not None and precheck.folders.fullmatch(part)
               for i, part in enumerate(parts))


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=6),
       folder=st.lists(st.sampled_from(NAMES + ["a\nb", ""]), max_size=3), name=st.sampled_from(NAMES + ["", "x\ny"]),
       is_dir=st.booleans())
def test_the_folder_and_entry_split_gives_the_whole_path_s_verdict(lines, folder, name, is_dir):
    """entries_of asks `folder_hit` once per folder, then `entry` per entry (and `match` is
    the two): together the verdict of reading the whole path component by component."""
    precheck = _any_pattern(pathspec.GitIgnoreSpec.from_lines(lines))
    if precheck is None:
        return
    prefix = "".join(part + "/" for part in folder)
    rel = prefix + name + ("/" if is_dir else "")
    whole = reference_match(precheck, rel)
    assert (precheck.folder_hit(prefix) or precheck.entry(prefix, name, is_dir)) == whole
    assert precheck.match(rel) == whole


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


# -- GitIgnore.entries_of with the walk's listing (no .git / .gitignore looked for where the
# listing has none) decides as ignored() per path, which lists nothing ---------------------------
TREE_NAMES = ["build", "a", "b.py", "x_musa", "lib", "docs", "_build", "c.pyc", "keep"]


@settings(max_examples=60, deadline=None)
@given(root_lines=st.lists(st.sampled_from(PATTERNS), max_size=5),
       deep_lines=st.lists(st.sampled_from(PATTERNS), max_size=4),
       exclude_lines=st.lists(st.sampled_from(PATTERNS), max_size=2),
       layout=st.lists(st.lists(st.sampled_from(TREE_NAMES), min_size=1, max_size=3), min_size=1, max_size=8),
       git=st.sampled_from(["dir", "file", "none"]))
def test_entries_of_agrees_with_ignored_on_every_entry(tmp_path_factory, root_lines, deep_lines, exclude_lines,
                                                         layout, git):
    import os

    from kvlint.discovery import GitIgnore

    root = tmp_path_factory.mktemp("repo")
    if git == "dir":
        (root / ".git" / "info").mkdir(parents=True)
        (root / ".git" / "info" / "exclude").write_text("\n".join(exclude_lines))
    elif git == "file":  # a worktree's .git is a file
        (root / ".git").write_text("gitdir: elsewhere\n")
    (root / ".gitignore").write_text("\n".join(root_lines))
    for parts in layout:
        folder = root.joinpath(*parts[:-1])
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # a file on the way
            continue
        leaf = folder / parts[-1]
        if not leaf.exists():
            leaf.write_text("x = 1\n")
    if not (root / "docs").is_file():
        (root / "docs").mkdir(exist_ok=True)
        if not (root / "docs" / ".gitignore").exists():
            (root / "docs" / ".gitignore").mkdir()  # a folder named .gitignore is no file
    deep = next((d for d, dirs, files in os.walk(root)
                 if d != str(root) and ".git" not in d and ".gitignore" not in dirs + files), None)
    if deep is not None:
        (root / deep / ".gitignore").write_text("\n".join(deep_lines))
    per_path, per_folder = GitIgnore(), GitIgnore()
    for dirpath, dirnames, filenames in os.walk(root):
        ignored = per_folder.entries_of(dirpath, str(root), dirnames + filenames)
        for name, is_dir in [(d, True) for d in dirnames] + [(f, False) for f in filenames]:
            expected = per_path.ignored(os.path.join(dirpath, name), is_dir, str(root))
            assert (ignored is not None and ignored(name, is_dir)) == expected, (dirpath, name)
