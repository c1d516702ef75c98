"""The TOML files of kvlint's `rules/` folders, parsed once and kept in a snapshot.

tomllib is pure Python: parsing `rules/codes` and `rules/facts` (400 KB) took 14 ms in every
process that loads the catalog (each worker of a cold run, `kvlint rule`, a test session
with the runtime guard). A snapshot, as Python keeps bytecode, is a marshal file in kvlint's
own `__pycache__` (trusted as its bytecode is) holding each file's name, size and modification
time and the table it parsed to. It is used only when the folder holds exactly those files with those sizes and
times, and written only when none of them changed in the last `SETTLED_NS` (a file written
again within one tick of the clock keeps its time: the racy-git problem; an older file edited
gets a new time). Where it cannot be read or written (a read-only installation, a table
marshal cannot hold) the files are parsed as without one; like bytecode, it is read but not
written under `PYTHONDONTWRITEBYTECODE`.
Only the installed `rules/` folders get a snapshot; any other folder (a test's) is parsed.
Like bytecode that `compileall` wrote for a file pip did not record, `pip uninstall` leaves
the two snapshots (and so `kvlint/__pycache__/`) behind.
"""
from __future__ import annotations

import marshal
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from kvlint.atomic import replace_file

FORMAT = 1
SETTLED_NS = 2 * 10 ** 9
Stamp = Tuple[str, int, int]  # (file name, size, mtime in ns)


def read_tables(folder: Path, pattern: str, snapshot: Optional[Path] = None,
                write: Optional[bool] = None) -> List[Tuple[Path, Dict[str, Any]]]:
    """(path, parsed table) for each file of `folder` matching `pattern`, by name. With a
    snapshot (`snapshot`, else `default_snapshot`: an installed rules/ folder's), served from
    it when it matches the files, else (re)written (`write`: by default, unless Python writes
    no bytecode either: `-B`, PYTHONDONTWRITEBYTECODE)."""
    if snapshot is None:
        snapshot = default_snapshot(folder, pattern)
    paths = sorted(folder.glob(pattern))
    stamps = None if snapshot is None else _stamps(paths)
    if snapshot is None or stamps is None:
        return [(p, _parse(p)) for p in paths]
    kept = _load(snapshot, stamps)
    if kept is not None:
        return [(p, kept[p.name]) for p in paths]
    tables = [(p, _parse(p)) for p in paths]
    if write is None:
        write = not sys.dont_write_bytecode
    settled = time.time_ns() - SETTLED_NS
    if write and paths and all(mtime <= settled for _, _, mtime in stamps):
        _write(snapshot, stamps, {p.name: t for p, t in tables}, paths[0])
    return tables


def default_snapshot(folder: Path, pattern: str) -> Optional[Path]:
    """Where the snapshot of an installed `rules/` folder lives (None for any other folder)."""
    from kvlint.data import data_dir

    if folder.parent != data_dir():
        return None
    tag = sys.implementation.cache_tag or "python"
    name = "".join(c if c.isalnum() else "_" for c in f"{folder.name}-{pattern}")
    return Path(__file__).resolve().parent / "__pycache__" / f"rules-{name}.{tag}.marshal"


def toml_module():
    """The TOML parser: the standard library's tomllib, or its backport tomli before 3.11
    (imported when first asked for: a run whose snapshots are fresh parses no TOML here)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.9/3.10 only
        import tomli as tomllib
    return tomllib


def _parse(path: Path) -> Dict[str, Any]:
    return toml_module().loads(path.read_text(encoding="utf-8"))


def _stamps(paths: List[Path]) -> Optional[List[Stamp]]:
    out = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            return None  # parsed as is (the parse reports the problem)
        out.append((p.name, st.st_size, st.st_mtime_ns))
    return out


def _load(snapshot: Path, stamps: List[Stamp]) -> Optional[Dict[str, Dict[str, Any]]]:
    try:
        data = marshal.loads(snapshot.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(data, tuple) and len(data) == 3 and data[0] == FORMAT):
        return None
    kept = data[2]
    if not (isinstance(data[1], list) and isinstance(kept, dict)):
        return None
    try:
        same = [tuple(s) for s in data[1]] == stamps
    except TypeError:
        return None
    if not same or sorted(kept) != sorted(s[0] for s in stamps):
        return None
    return kept


def _write(snapshot: Path, stamps: List[Stamp], tables: Dict[str, Dict[str, Any]], like: Path) -> None:
    """Atomically (a temporary file renamed over it), readable as `like` (a source file: a
    snapshot written by one user serves the others, as bytecode does)."""
    try:
        blob = marshal.dumps((FORMAT, stamps, tables))
    except ValueError:  # a value marshal cannot hold (a TOML date)
        return
    try:
        snapshot.parent.mkdir(exist_ok=True)
        replace_file(str(snapshot), blob, mode=like.stat().st_mode & 0o666, prefix=snapshot.name + ".")
    except OSError:
        pass  # a read-only installation: parsed each time
