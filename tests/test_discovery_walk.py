"""The walk (kvlint.discovery.walk, one os.scandir per folder) lists what the os.walk
formulation of the same rules lists, in the same order: a folder's *.py/*.pyi files sorted,
then its sub-folders sorted; VCS/cache/build folders, *.egg-info and virtualenvs skipped;
links to folders never entered, links to files outside the root left out; .gitignore
respected. The reference below is that formulation, written the obvious way."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.discovery import SKIP_DIRS, GitIgnore, _inside, walk


def reference_walk(root: str, respect_gitignore: bool) -> Iterator[str]:
    gitignore = GitIgnore() if respect_gitignore else None
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        ignored = gitignore.entries_of(dirpath, root, dirnames + filenames) if gitignore else None
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.endswith(".egg-info")
                             and not os.path.isfile(os.path.join(dirpath, d, "pyvenv.cfg"))
                             and not (ignored and ignored(d, True)))
        for name in sorted(filenames):
            if name.endswith(".py") or name.endswith(".pyi"):
                full = os.path.join(dirpath, name)
                if os.path.islink(full) and not _inside(os.path.realpath(full), root):
                    continue
                if ignored and ignored(name, False):
                    continue
                yield os.path.normpath(full)


def both(root: Path) -> List[List[str]]:
    return [[list(walk([str(root)], g)), list(reference_walk(str(root), g))] for g in (True, False)]


def test_a_tree_with_every_case(tmp_path):
    root = tmp_path / "proj"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.py").write_text("x = 1\n")
    files = ["a.py", "b.pyi", "c.txt", "pkg/m.py", "pkg/sub/n.py", "build/x.py", "x.egg-info/y.py",
             "venv1/lib/z.py", "venv1/pyvenv.cfg", "notvenv/pyvenv.cfg/keep.py", "notvenv/k.py",
             "ignored_dir/i.py", "kept/ignored_file.py", "kept/ok.py", "__pycache__/c.py", "B.py", "_a.py"]
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")
    (root / ".gitignore").write_text("ignored_dir/\nignored_file.py\n")
    (root / "link_in.py").symlink_to(root / "a.py")
    (root / "link_out.py").symlink_to(outside / "far.py")
    (root / "dirlink").symlink_to(root / "pkg", target_is_directory=True)
    (root / "broken.py").symlink_to(root / "missing.py")
    (root / "venvlink").mkdir()
    (root / "venvlink" / "pyvenv.cfg").symlink_to(root / "c.txt")  # a link to a file: a venv
    (root / "venvlink" / "v.py").write_text("x = 1\n")
    (with_gitignore, ref_g), (without, ref) = both(root)
    assert with_gitignore == ref_g and without == ref
    rel = [os.path.relpath(p, root) for p in with_gitignore]
    assert rel == ["B.py", "_a.py", "a.py", "b.pyi", "broken.py", "link_in.py", "kept/ok.py",
                   "notvenv/k.py", "notvenv/pyvenv.cfg/keep.py", "pkg/m.py", "pkg/sub/n.py"]


def test_a_folder_that_cannot_be_listed_is_skipped(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.py").write_text("")
    (tmp_path / "y.py").write_text("")
    real = os.scandir

    def scandir(path="."):
        if os.path.basename(str(path)) == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)  # both walks list folders with it
    (ours, ref), _ = both(tmp_path)
    assert ours == ref == [str(tmp_path / "y.py")]


NAMES = st.sampled_from(["a", "b", "B", "_c", "build", "x.egg-info", "pkg", "venv", "pyvenv.cfg", "m.py",
                         "n.pyi", "o.txt", "z.py"])
TREES = st.recursive(st.just("file"), lambda kids: st.dictionaries(NAMES, kids, max_size=4), max_leaves=12)


def _make(folder: Path, tree) -> None:
    for name, sub in tree.items():
        if sub == "file":
            (folder / name).write_text("")
        else:
            (folder / name).mkdir()
            _make(folder / name, sub)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=st.dictionaries(NAMES, TREES, max_size=5), ignore=st.sampled_from(["", "pkg/\n", "*.pyi\n", "b\n!b/m.py\n"]))
def test_random_trees(tmp_path_factory, tree, ignore):
    root = tmp_path_factory.mktemp("t")
    _make(root, tree)
    if ignore:
        (root / ".gitignore").write_text(ignore)
    (with_gitignore, ref_g), (without, ref) = both(root)
    assert with_gitignore == ref_g
    assert without == ref
