"""Which files `kvlint check PATH...` looks at."""
from __future__ import annotations

import os
from typing import Iterator, List, Sequence, Tuple

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", "build", "dist", ".venv", "venv",
    "env", ".env", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".kvlint_cache",
    "site-packages", ".eggs",
})


def is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def iter_python_files(paths: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(files, missing): files in a stable order; explicit file paths are always kept;
    directories are walked for `*.py`, skipping VCS, caches, build output and virtualenvs,
    never following symlinked directories."""
    files: List[str] = []
    missing: List[str] = []
    seen = set()
    for p in paths:
        if os.path.isdir(p):
            for f in _walk(p):
                if f not in seen:
                    seen.add(f)
                    files.append(f)
        elif os.path.lexists(p):
            if p not in seen:
                seen.add(p)
                files.append(p)
        else:
            missing.append(p)
    return files, missing


def _walk(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.endswith(".egg-info")
                             and not is_virtualenv(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            if name.endswith(".py") or name.endswith(".pyi"):
                full = os.path.join(dirpath, name)
                if os.path.islink(full) and not _inside(os.path.realpath(full), root):
                    continue  # never follow a link out of the given root
                yield os.path.normpath(full)


def _inside(path: str, root: str) -> bool:
    root = os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
