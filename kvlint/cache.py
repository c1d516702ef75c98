"""The result cache: an unchanged file is not read, parsed or checked again.

One JSON file per (kvlint code, Python version, resolved settings) in `.kvlint_cache/` under
the current folder (or `--cache-dir`), mapping each checked file's absolute path to:

- its stat key (size, mtime_ns, inode, ctime_ns): the fast path, no read at all;
- the BLAKE2 hash of its bytes: a file whose stat changed but whose bytes did not (`touch`,
  a checkout) is read and hashed, not checked;
- its findings and their fixes;
- the other modules of the project those findings were computed from (a builder module, an
  adapter's module), each with its stat key and content hash: when one of them changes, the
  file is checked again, even though its own bytes did not change.

The cache file's name hashes kvlint's version, its own source files and the rules/ data (their
folders, and each file's path, size and mtime), the Python version (the `ast` differs between
versions) and the settings, so a code, data or setting change starts a new cache. A stat key
is trusted only when the file's mtime is at least two seconds older than the check (a file
written in the same clock tick as it was read keeps only its hash, as git does for racy
entries). Concurrent runs are safe: the file is replaced atomically (temp file + os.replace);
a corrupt or foreign file is ignored; the last writer wins. Results with an internal error or
a read failure are never cached.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat as stat_module
import sys
import time
from typing import Dict, Optional, Tuple

from kvlint import __version__
from kvlint.analysis.findings import Edit, FileResult, Finding, Fix
from kvlint.atomic import replace_file
from kvlint.settings import Settings

DEFAULT_DIR = ".kvlint_cache"
FORMAT = 2
RACY_SECONDS = 2.0
StatKey = Tuple[int, int, int, int]

_CODE_FINGERPRINT: Optional[str] = None


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def code_fingerprint() -> str:
    """kvlint's version, the Python version, and where and as what its own .py files and the
    rules/ data are: their folders and each file's relative path, size and mtime (an edit, a
    reinstall or a checkout changes one; reading and hashing their contents instead took
    12 ms of each cached run, their stats take 5)."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        from kvlint.data import data_dir

        roots = (os.path.dirname(os.path.realpath(__file__)), os.path.realpath(data_dir()))
        _CODE_FINGERPRINT = files_fingerprint(f"{FORMAT}|{__version__}|{sys.version_info[:2]}", roots)
    return _CODE_FINGERPRINT


def files_fingerprint(head: str, roots) -> str:
    """A digest of `head`, and of each root and its .py/.json/.toml files outside
    `__pycache__` by relative path, size and mtime, in the order of their path components."""
    h = hashlib.blake2b(head.encode(), digest_size=16)
    for root in roots:
        h.update(b"\0" + root.encode())
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if os.path.splitext(name)[1] in (".py", ".json", ".toml"):
                    full = os.path.join(dirpath, name)
                    try:
                        st = os.stat(full)
                    except OSError:
                        continue
                    if stat_module.S_ISREG(st.st_mode):
                        found.append((os.path.relpath(full, root).split(os.sep), st.st_size, st.st_mtime_ns))
        for parts, size, mtime in sorted(found):
            h.update(f"\0{'/'.join(parts)}\0{size}\0{mtime}".encode())
    return h.hexdigest()


def settings_fingerprint(settings: Settings) -> str:
    text = json.dumps(dataclasses.asdict(settings), sort_keys=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# -- (de)serialising a FileResult ------------------------------------------------------------
def _finding_to_json(f: Finding) -> list:
    fix = None
    if f.fix is not None:
        fix = [f.fix.description, f.fix.safe, [[*e.start, *e.end, e.text] for e in f.fix.edits]]
    return [f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.severity, fix,
            list(f.noqa_lines), f.source_line, f.branch]


def _finding_from_json(path: str, item: list) -> Finding:
    line, column, end_line, end_column, code, message, severity, fix, noqa, source_line = item[:10]
    branch = item[10] if len(item) > 10 else ""
    if fix is not None:
        description, safe, edits = fix
        fix = Fix(description, tuple(Edit((e[0], e[1]), (e[2], e[3]), e[4]) for e in edits), safe)
    return Finding(path, line, column, end_line, end_column, code, message, severity, fix,
                   tuple(noqa), source_line, branch)


class Cache:
    """Results of one settings group. `get()` before checking, `put()` after, `save()` once."""

    def __init__(self, directory: str, settings: Settings):
        self.directory = directory
        self.name = f"{code_fingerprint()[:16]}-{settings_fingerprint(settings)}.json"
        self.path = os.path.join(directory, self.name)
        self.started = time.time()
        self._entries: Optional[Dict[str, list]] = None
        self._dirty = False

    # -- loading ------------------------------------------------------------------------
    def _load(self) -> Dict[str, list]:
        if self._entries is None:
            self._entries = {}
            try:
                with open(self.path, "rb") as fh:
                    data = json.loads(fh.read())
                if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("files"), dict):
                    self._entries = data["files"]
            except (OSError, ValueError, UnicodeDecodeError):
                pass  # no cache yet, or a corrupt/foreign one: start empty
        return self._entries

    # -- lookups ------------------------------------------------------------------------
    def get(self, path: str) -> Optional[FileResult]:
        """The cached result for `path` if its content is unchanged, else None."""
        key = os.path.abspath(path)
        entry = self._load().get(key)
        if entry is None:
            return None
        try:
            st = os.stat(path)
            stat, hashed, findings = entry[0], entry[1], entry[2]
            if len(entry) > 3 and not self._dependencies_unchanged(entry[3]):
                return None
            if stat is None or tuple(stat) != stat_key(st):
                if not _is_regular(st) or (stat is not None and stat[0] != st.st_size):
                    return None  # a new size is new content: no need to hash
                with open(path, "rb") as fh:
                    data = fh.read()
                if digest(data) != hashed:
                    return None
                entry[0] = self._trusted_stat(st)  # same bytes: refresh the fast path
                self._dirty = True
            return FileResult(path, [_finding_from_json(path, f) for f in findings])
        except (OSError, ValueError, TypeError, IndexError):
            return None

    def put(self, path: str, st: Optional[os.stat_result], hashed: Optional[str], result: FileResult) -> None:
        if hashed is None or result.errors or not result.checked:
            return
        self._load()[os.path.abspath(path)] = [
            self._trusted_stat(st) if st is not None else None, hashed,
            [_finding_to_json(f) for f in result.findings],
            [[dep, self._dependency_stat(dep), h] for dep, h in sorted(result.dependencies.items())]]
        self._dirty = True

    # -- dependencies: the other modules a file's findings were computed from -----------------
    def _dependency_stat(self, path: str) -> Optional[list]:
        try:
            return self._trusted_stat(os.stat(path))
        except OSError:
            return None

    def _dependencies_unchanged(self, deps: list) -> bool:
        """Every module the findings depended on still has the content they were computed
        from (stat first; a changed stat is settled by the content hash)."""
        for item in deps:
            dep, stat, hashed = item
            try:
                st = os.stat(dep)
            except OSError:
                return False
            if stat is not None and tuple(stat) == stat_key(st):
                continue
            try:
                with open(dep, "rb") as fh:
                    if digest(fh.read()) != hashed:
                        return False
            except OSError:
                return False
            item[1] = self._trusted_stat(st)
            self._dirty = True
        return True

    def _trusted_stat(self, st: os.stat_result) -> Optional[list]:
        if st.st_mtime_ns / 1e9 > self.started - RACY_SECONDS:
            return None  # racy: may change again within the same clock tick; hash next time
        return list(stat_key(st))

    # -- saving ---------------------------------------------------------------------------
    def save(self) -> Optional[str]:
        """Write the cache atomically; a message (not an exception) when it cannot."""
        if not self._dirty:
            return None
        try:
            os.makedirs(self.directory, exist_ok=True)
            _mark_cache_dir(self.directory)
            text = json.dumps({"format": FORMAT, "kvlint": __version__, "files": self._entries},
                              separators=(",", ":"))
            replace_file(self.path, text.encode("utf-8"), prefix=".tmp-", suffix=".json")
            self._dirty = False
            self._prune()
        except OSError as exc:
            return f"cannot write the cache in {self.directory}: {exc.strerror or exc}"
        return None

    def _prune(self) -> None:
        """Drop cache files of another kvlint code not used for a day (they can never hit)."""
        prefix = self.name.split("-")[0]
        now = time.time()
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            full = os.path.join(self.directory, name)
            try:
                old = now - os.stat(full).st_mtime > 86400
            except OSError:
                continue
            if name.endswith(".json") and (not name.startswith(prefix) or name.startswith(".tmp-")) and old:
                _unlink(full)


def _is_regular(st: os.stat_result) -> bool:
    return stat_module.S_ISREG(st.st_mode)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _mark_cache_dir(directory: str) -> None:
    """A `.gitignore` of `*` and a CACHEDIR.TAG, like other tools' caches."""
    for name, text in ((".gitignore", "# created by kvlint\n*\n"),
                       ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
                                        "# This file is a cache directory tag created by kvlint.\n")):
        full = os.path.join(directory, name)
        if not os.path.exists(full):
            try:
                with open(full, "w", encoding="utf-8") as fh:
                    fh.write(text)
            except OSError:
                pass


def open_cache(directory: Optional[str], settings: Settings) -> Optional[Cache]:
    """The cache for these settings (None: caching is off)."""
    if directory is None:
        return None
    return Cache(directory, settings)


__all__ = ["Cache", "DEFAULT_DIR", "open_cache", "digest", "stat_key", "code_fingerprint"]
