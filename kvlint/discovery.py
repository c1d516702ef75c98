"""Which files `kvlint check PATH...` looks at.

Folders are walked for `*.py`/`*.pyi`, skipping VCS folders, caches, build output and
virtualenvs, never following a symlinked folder, and (by default, as ruff does) what the
`.gitignore` files say: those of the walked folder and of every folder above it up to the
repository root (the folder holding `.git`), and `.git/info/exclude`, with git's own
pattern language (pathspec's `GitIgnoreSpec`), a deeper `.gitignore` winning over a
shallower one and an ignored folder never entered. A file named on the command line is
always a candidate (`explicit`): what configuration or `.gitignore` says about it is
decided by the caller (ruff's `--force-exclude`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", "build", "dist", ".venv", "venv",
    "env", ".env", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".kvlint_cache",
    "site-packages", ".eggs",
})


@dataclass
class Discovery:
    files: List[str] = field(default_factory=list)  # in a stable order
    explicit: Set[str] = field(default_factory=set)  # named on the command line
    missing: List[str] = field(default_factory=list)


def discover(paths: Sequence[str], respect_gitignore: bool = True) -> Discovery:
    return Discovery(list(walk(paths, respect_gitignore)), explicit_files(paths), missing_paths(paths))


def walk(paths: Sequence[str], respect_gitignore: bool = True) -> Iterator[str]:
    """The files `discover` lists, in its order, each as soon as it is found (`kvlint check`
    hands them to its workers while the walk goes on)."""
    seen = set()
    gitignore = GitIgnore() if respect_gitignore else None
    for p in paths:
        if os.path.isdir(p):
            for f in _walk(p, gitignore):
                if f not in seen:
                    seen.add(f)
                    yield f
        elif os.path.lexists(p) and p not in seen:
            seen.add(p)
            yield p


def explicit_files(paths: Sequence[str]) -> Set[str]:
    """The paths named on the command line that are no folder (files, links, FIFOs...)."""
    return {p for p in paths if not os.path.isdir(p) and os.path.lexists(p)}


def missing_paths(paths: Sequence[str]) -> List[str]:
    return [p for p in paths if not os.path.isdir(p) and not os.path.lexists(p)]


def iter_python_files(paths: Sequence[str], respect_gitignore: bool = False) -> Tuple[List[str], List[str]]:
    """(files, missing): the walk without the exclusion decisions of `kvlint check`."""
    found = discover(paths, respect_gitignore)
    return found.files, found.missing


def _walk(root: str, gitignore: Optional["GitIgnore"]) -> Iterator[str]:
    """The `*.py`/`*.pyi` files under `root`: a folder's own files (sorted) before its
    sub-folders (sorted, each walked the same way), as `os.walk` top-down gave them. One
    `os.scandir` per folder tells each entry's kind and whether it is a link without a
    system call per entry; a virtualenv (a `pyvenv.cfg` file) is seen in its own listing, and
    skipped whole, instead of with a stat per sub-folder. A folder that cannot be listed is
    skipped, as os.walk does; a linked folder is never entered. Each folder's absolute path
    is made from its parent's (one `abspath` per walk, not one per folder)."""
    pending = [(root, os.path.abspath(root))]
    while pending:
        dirpath, absolute = pending.pop()
        try:
            with os.scandir(dirpath) as listing:
                entries = sorted(listing, key=_NAME)
        except OSError:
            continue
        folders: List["os.DirEntry[str]"] = []
        files: List["os.DirEntry[str]"] = []
        names = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (folders if is_dir else files).append(entry)
            names.append(entry.name)
        if dirpath is not root and "pyvenv.cfg" in names and any(
                e.name == "pyvenv.cfg" and _is_file(e) for e in files):
            continue  # a virtualenv
        sources = [e for e in files if e.name.endswith(_PYTHON_SUFFIXES)]
        subfolders = [e for e in folders if e.name not in SKIP_DIRS and not e.name.endswith(".egg-info")
                      and not _is_link(e)]
        if not sources and not subfolders:
            continue  # nothing here for the .gitignore files to decide
        ignored = gitignore.entries_of(dirpath, root, names, absolute) if gitignore else None
        inside = os.path.join(dirpath, "")  # + name: os.path.join(dirpath, name), made once
        for entry in sources:
            name = entry.name
            full = inside + name
            if _is_link(entry) and not _inside(os.path.realpath(full), root):
                continue  # never follow a link out of the given root
            if ignored and ignored(name, False):
                continue
            yield os.path.normpath(full)
        absolute_inside = os.path.join(absolute, "")
        for entry in reversed(subfolders):
            name = entry.name
            if not (ignored and ignored(name, True)):
                pending.append((inside + name, absolute_inside + name))


_NAME = attrgetter("name")
_PYTHON_SUFFIXES = (".py", ".pyi")


def _is_file(entry: "os.DirEntry[str]") -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_link(entry: "os.DirEntry[str]") -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _inside(path: str, root: str) -> bool:
    root = os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


_COMPONENT = None  # compiled on first use (re)


def _any_pattern(spec):
    """A pre-check of where any of the spec's patterns can match (pathspec tries the patterns
    one by one, which over a 150-line .gitignore and 1,600 files took a second); None when
    the patterns cannot be joined. See `_PreCheck`."""
    import re

    global _COMPONENT
    if _COMPONENT is None:
        # pathspec's form of a pattern without a slash: `^(?:.+/)?BODY` then `/` (a folder
        # pattern) or `(?:/|$)`
        _COMPONENT = re.compile(r"\^\(\?:\.\+/\)\?(.*)(\(\?P<ps_d>/\)|\(\?:\(\?P<ps_d>/\)\|\$\))")
    anywhere, folders, other = [], [], []
    for p in spec.patterns:
        if getattr(p, "include", None) is None or getattr(p, "regex", None) is None:
            continue
        pattern = p.regex.pattern
        m = _COMPONENT.fullmatch(pattern)
        if m is not None and _within_component(m.group(1)):
            (folders if m.group(2) == "(?P<ps_d>/)" else anywhere).append(m.group(1))
        else:
            other.append(pattern.replace("(?P<ps_d>", "(?:"))
    try:
        return _PreCheck(*(re.compile("|".join(f"(?:{b})" for b in bodies)) if bodies else None
                           for bodies in (anywhere, folders, other)))
    except re.error:
        return None


def _within_component(body: str) -> bool:
    """Whether a pattern body can only match inside one path component: no `/` (but for
    pathspec's `[^/]`), no unescaped `.`, no group (conservative: else it is matched whole)."""
    body = body.replace("[^/]", "")
    k = 0
    while k < len(body):
        ch = body[k]
        if ch == "\\":
            if body[k + 1:k + 2] in ("/", ""):
                return False
            k += 2
            continue
        if ch in "/.()":
            return False
        k += 1
    return True


class _PreCheck:
    """`match(rel)`: can any pattern of one `.gitignore` match the relative path `rel` (a
    folder's ends with `/`)? A pattern without a slash matches one path component whole
    (`anywhere`; a folder pattern only a component followed by `/`): those are tested per
    component, each distinct component once; the other patterns as one regex over `rel`.
    Only a `False` is trusted (the spec decides a `True`)."""

    def __init__(self, anywhere, folders, other) -> None:
        self.anywhere, self.folders, self.other = anywhere, folders, other
        self._seen: Dict[Tuple[str, bool], bool] = {}

    def match(self, rel: str) -> bool:
        """Can any pattern match `rel` (a folder's ends with `/`)? `folder_hit` of its folder
        part, then `entry` of its last component: what `entries_of` asks in two steps."""
        is_dir = rel.endswith("/")
        head, _, name = (rel[:-1] if is_dir else rel).rpartition("/")
        prefix = head + "/" if head else ""
        return self.folder_hit(prefix) or self.entry(prefix, name, is_dir)

    def folder_hit(self, prefix: str) -> bool:
        """Whether the folder part of a path alone lets a pattern match (`prefix`: a relative
        folder ending with `/`, or "" for the spec's own folder): True when one of its
        components does, whatever the entry (then `entry` is not asked)."""
        return "\n" in prefix or any(self._component(part, True) for part in prefix.split("/")[:-1])

    def entry(self, prefix: str, name: str, is_dir: bool) -> bool:
        """Whether a pattern can match `prefix + name` (+ `/` for a folder) when
        `folder_hit(prefix)` is False: only the entry's own component (and the empty one after
        a folder's `/`) and the patterns with a slash are left to test."""
        if "\n" in name:
            return True  # `.` in pathspec's regexes stops at a newline: let the spec decide
        if self.other is not None and self.other.match(prefix + name + "/" if is_dir else prefix + name):
            return True
        return self._component(name, is_dir) or is_dir and self._component("", False)

    def _component(self, part: str, inner: bool) -> bool:
        """Whether a pattern without a slash matches the path component `part` (`inner`: one
        followed by `/`, which folder patterns match too), each (part, inner) decided once."""
        key = (part, inner)
        hit = self._seen.get(key)
        if hit is None:
            hit = self._seen[key] = bool(self.anywhere is not None and self.anywhere.fullmatch(part)
                                         or inner and self.folders is not None and self.folders.fullmatch(part))
        return hit


class GitIgnore:
    """`.gitignore` decisions: per folder, the chain of (folder, spec) that applies there, from
    the repository root (or the walked folder outside a repository) down, each `.gitignore`
    read once."""

    def __init__(self) -> None:
        self._chains: Dict[str, tuple] = {}  # folder -> ((base, spec, any-pattern regex), ...)
        self._roots: Dict[str, Optional[str]] = {}  # folder -> repository root or None
        # folder -> the names of its entries, when the walk has listed it: a `.git` or a
        # `.gitignore` that is not among them is not looked for on disk
        self._listed: Dict[str, frozenset] = {}

    def repo_root(self, folder: str) -> Optional[str]:
        if folder not in self._roots:
            parent = os.path.dirname(folder)
            listed = self._listed.get(folder)
            if (listed is None or ".git" in listed) and os.path.exists(os.path.join(folder, ".git")):
                self._roots[folder] = folder
            else:
                self._roots[folder] = None if parent == folder else self.repo_root(parent)
        return self._roots[folder]

    @staticmethod
    def _read(path: str):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        import pathspec  # only when there is a .gitignore

        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        return (spec, _any_pattern(spec)) if spec.patterns else None

    def chain(self, folder: str, top: str) -> tuple:
        """The specs that apply to the entries of `folder` (absolute), `top` the outermost."""
        if folder in self._chains:
            return self._chains[folder]
        parent = os.path.dirname(folder)
        if folder == top or parent == folder:
            inherited: tuple = ()
            if folder == self.repo_root(folder):
                info = self._read(os.path.join(folder, ".git", "info", "exclude"))
                inherited = ((folder,) + info,) if info else ()
        else:
            inherited = self.chain(parent, top)
        listed = self._listed.get(folder)
        own = self._read(os.path.join(folder, ".gitignore")) if listed is None or ".gitignore" in listed else None
        self._chains[folder] = inherited + (((folder,) + own,) if own else ())
        return self._chains[folder]

    def entries_of(self, folder: str, walk_root: str, names: Optional[Iterable[str]] = None,
                   absolute: Optional[str] = None):
        """`ignored(name, is_dir)` for the entries of `folder` (a name without a separator):
        whether git would ignore `folder/name`, the deepest `.gitignore` with a matching
        pattern deciding, with the folder's chain and relative paths made once for all its
        entries instead of once per entry; None when no `.gitignore` applies there. `names`:
        every entry of the folder (the walk's listing), so that an absent `.git` or
        `.gitignore` costs no system call; `absolute`: `folder`'s absolute path, when the
        caller knows it. Together, two thirds less time for the `.gitignore` decisions of the
        walk of cann-recipes-infer + vllm-ascend."""
        full = absolute if absolute is not None else os.path.abspath(folder)
        if names is not None:
            self._listed[full] = frozenset(names)
        top = self.repo_root(full) or os.path.abspath(walk_root)
        specs = []
        for base, spec, anything in self.chain(full, top):
            rel = full[len(base):].lstrip(os.sep).replace(os.sep, "/")
            prefix = rel + "/" if rel else ""
            # a component of the folder's own path that a pattern matches: every entry goes
            # to the spec (else only what the entry itself adds can match)
            specs.append((prefix, spec, None if anything is None or anything.folder_hit(prefix) else anything))
        if not specs:
            return None

        def ignored(name: str, is_dir: bool) -> bool:
            verdict = False
            for prefix, spec, anything in specs:
                if anything is not None and not anything.entry(prefix, name, is_dir):
                    continue  # no pattern of this file matches (one regex, not one per line)
                include = spec.check_file(prefix + name + "/" if is_dir else prefix + name).include
                if include is not None:
                    verdict = include
            return verdict
        return ignored

    def ignored(self, path: str, is_dir: bool, walk_root: str) -> bool:
        """Whether git would ignore `path` (the caller walks from the top, so an ignored parent
        folder has already pruned it): the deepest `.gitignore` with a matching pattern decides
        (`entries_of` its folder, without a listing)."""
        full = os.path.abspath(path)
        ignored = self.entries_of(os.path.dirname(full), walk_root)
        return ignored is not None and ignored(os.path.basename(full), is_dir)
