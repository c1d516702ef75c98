"""The checked project's modules, found the way Python would import them, parsed on demand.

`Project` answers the tracer's cross-module questions ("what does the name `build_mask`
imported here stand for?") without importing or running anything:

- search roots, in order: the roots given on the command line (a folder, or a file's
  folder), the folder above the top package holding the file (packages by `__init__.py`),
  the file's own folder (a script's imports), the configuration's project root
  (`pyproject.toml`'s folder) and its `src/` (src layouts);
- `from .x import f` / `from ..pkg import f` relative to the importing module's package,
  `from pkg.mod import f`, `import pkg.mod as m; m.f`, `from pkg import mod; mod.f`,
  re-exports through a package's `__init__.py` (`from .impl import f`), a few levels deep;
- a module is read and parsed when a question needs it, whatever the byte pre-filter would
  say of it, once per process (keyed by its content hash), at most `MAX_MODULES` kept.

Every module consulted while one file is checked is recorded with its content hash
(`touched`): the result cache keys that file's findings on them too. A loaded module's
answers are kept for the files checked after (its tracer, resolver and summaries memoise
them), so what answering them read is kept with it: the modules read on behalf of a loaded
module (`_deps`) are recorded whenever its tracer is handed out, and theirs in turn (a file
served a kept answer depends on what it was computed from, whichever file's check computed
it), and a long-lived process analyses a module again once one of those has changed.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
import sys
import unicodedata
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Optional, Pattern, Sequence, Tuple

from kvlint.analysis.module import ModuleIndex, optional_import
from kvlint.source import ReadFailure, decode, file_stat, parse

MAX_MODULES = 96  # parsed modules kept per process (an ast is ~100x its source in memory)
MAX_MODULE_BYTES = 2 * 2 ** 20
MAX_REEXPORT_DEPTH = 4
# top-level names never looked for in the project (the standard library and the frameworks
# kvlint knows by name): no file-system probes for `torch.ones`
EXTERNAL = frozenset(sys.stdlib_module_names) | {
    "torch", "torch_npu", "torchair", "numpy", "np", "triton", "einops", "transformers", "cann_ops_transformer",
}


# `(?m)^name =` and `(?m)^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]+(...)`, each led by a
# literal (a newline, `import`) that the regex engine finds fast, instead of a `^` it tries
# at every byte: the same names on the 9,110 ecosystem files, 3.8x faster.
_ASSIGNED = re.compile(rb"\n([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")
_IMPORT = re.compile(rb"import[ \t]+(\([^)]*\)|[^\n]*)")
_IMPORT_HEAD = re.compile(rb"[ \t]*(?:from[ \t]+\S+[ \t]+)?")  # the line before `import`
_WORD = re.compile(rb"[A-Za-z_]\w*")


def _bound_names(data: bytes) -> frozenset:
    """Names a module binds at module level (`name =` at column 0) or imports (a superset:
    every word of its import lines)."""
    names = set(_ASSIGNED.findall(b"\n" + data))
    at = 0
    while True:
        m = _IMPORT.search(data, at)
        if m is None:
            break
        if _IMPORT_HEAD.fullmatch(data, data.rfind(b"\n", 0, m.start()) + 1, m.start()):
            names.update(_WORD.findall(m.group(1)))
            at = m.end()
        else:
            at = m.start() + 1  # not an import line: what it would have consumed is not skipped
    return frozenset(n.decode("ascii", "replace") for n in names)


# After a whole-word name that is read there, never defined or bound as a plain name: a
# call, an attribute, a subscript, or the last element of a call or tuple before `):`
# (`isinstance(x, name):`; a tuple target is never followed by `:`).
_READ_AFTER = re.compile(rb"[ \t]*(?:([(.\[])|\)[ \t]*:)")
_QUOTES = frozenset(b"'\"")
_BLANKS = b" \t\\\r\n\f"


def only_imported(data: bytes, word: str, classes: bool = False) -> Optional[Tuple[Tuple[int, str, str], ...]]:
    """When the module's text shows that no statement of it defines `word` (`def`, `class`)
    or binds it as a plain name (`=`, annotated, `:=`, `for`, tuples included), the
    (level, module, name) of each `from module import name [as word]` written in it (empty
    when none); else None (only a parse can tell). With `classes`, `class word` followed
    by `(` or `:` is allowed too (the name may then be a class, never a function or a
    value).

    Each whole-word occurrence of `word` must be one of: an attribute name (after `.`),
    string text (after a quote), a name followed by `(`, `.` or `[` (not after `def` or
    `class`), the last element before `):` after a comma, or a name in an import statement
    that is parsed alone (parenthesised and backslash-continued lists included), holds
    imports only, and has no quote before it (the statement's line may start inside a
    string: the word is then string text). Identifiers are compared as Python does, after
    NFKC normalisation."""
    if not word.isascii() or not word.isidentifier():
        return None
    if not data.isascii():
        source = decode("", data)
        if isinstance(source, ReadFailure):
            return None
        data = unicodedata.normalize("NFKC", source.text).encode("utf-8")
    encoded = word.encode("ascii")
    occurrences = [m.start() for m in re.finditer(rb"(?<!\w)" + re.escape(encoded) + rb"(?!\w)", data)]
    if not occurrences:
        return ()
    spans = []  # (start, end) of each import statement, as _bound_names finds them
    at = 0
    while True:
        m = _IMPORT.search(data, at)
        if m is None:
            break
        start = data.rfind(b"\n", 0, m.start()) + 1
        if not _IMPORT_HEAD.fullmatch(data, start, m.start()):
            at = m.start() + 1
            continue
        end = m.end()
        while data[start:end].rstrip(b"\r").endswith(b"\\") and end < len(data):  # continued
            nl = data.find(b"\n", end + 1)
            end = len(data) if nl < 0 else nl
        spans.append((start, end))
        at = max(end, m.start() + 1)
    imports: List[Tuple[int, str, str]] = []
    parsed: Dict[int, bool] = {}
    for p in occurrences:
        span = next(((s, t) for s, t in spans if s <= p < t), None)
        if span is not None:
            start, end = span
            if any(c in _QUOTES for c in data[start:p]):
                return None
            ok = parsed.get(start)
            if ok is None:
                ok = parsed[start] = _import_entries(data[start:end], word, imports)
            if not ok:
                return None
            continue
        if p and data[p - 1] in b".'\"":
            continue
        if classes and _is_class_statement(data, p, len(encoded)):
            continue
        after = _READ_AFTER.match(data, p + len(encoded))
        if after is None:
            return None
        if after.group(1) is None:  # `):`: after a comma on the same line
            q = p
            while q and data[q - 1] in b" \t":
                q -= 1
            if not q or data[q - 1] != 44:  # ","
                return None
            continue
        q = p
        while q and data[q - 1] in _BLANKS:
            q -= 1
        head = data[max(0, q - 6):q]
        if re.search(rb"(?:^|\W)(?:def|class)$", head):
            return None
    return tuple(imports)


_CLASS_HEAD = re.compile(rb"(?:^|\W)class$")
_CLASS_TAIL = re.compile(rb"[ \t]*(?:\\\r?\n[ \t]*)*[(:]")


def _is_class_statement(data: bytes, p: int, size: int) -> bool:
    """Whether the name at `p` is the one a `class` statement binds (`class Name(` or
    `class Name:`, blanks and continuation lines between)."""
    q = p
    while q and data[q - 1] in _BLANKS:
        q -= 1
    return _CLASS_HEAD.search(data, max(0, q - 6), q) is not None and \
        _CLASS_TAIL.match(data, p + size) is not None


def _import_entries(statement: bytes, word: str, out: List[Tuple[int, str, str]]) -> bool:
    """Parse one import statement's text; add the (level, module, name) of each `from`
    import binding `word`. False when the text is not import statements only."""
    try:
        tree = ast.parse(statement.lstrip(b" \t"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ImportFrom, ast.Import, ast.alias)):
            return False
        if isinstance(node, ast.ImportFrom):
            out.extend((node.level or 0, node.module or "", a.name) for a in node.names
                       if (a.asname or a.name) == word)
    return True


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class _Loaded:
    """A parsed module: its tracer, the stat and bytes it was parsed from (no tracer: a module
    that could not be decoded or parsed); the bytes' digest (for `touched`) is computed when
    first asked (most modules are never recorded)."""
    __slots__ = ("path", "data", "tracer", "stat", "_digest")

    def __init__(self, path: str, data: bytes, tracer, stat: tuple):
        self.path, self.data, self.tracer, self.stat = path, data, tracer, stat
        self._digest: Optional[str] = None

    @property
    def digest(self) -> str:
        if self._digest is None:
            self._digest = _digest(self.data)
        return self._digest


def _info_digest(info: Dict[str, Any]) -> str:
    """The digest of the bytes `Project.mentions` read (computed when first recorded)."""
    d = info.get("digest")
    if d is None:
        d = info["digest"] = _digest(info["data"])
    return d


def _stat(path: str) -> Optional[tuple]:
    try:
        return file_stat(os.stat(path))
    except OSError:
        return None


class Project:
    def __init__(self, roots: Iterable[str] = (), project_root: str = ""):
        self.roots: List[str] = []
        self._search_roots: Dict[str, List[str]] = {}  # importer folder -> search_roots()
        self._paths: Dict[Tuple[str, str], Optional[str]] = {}  # (importer dir, dotted) -> file
        # folder -> the casefolded names in it (None: it cannot be listed), kept as `_paths` is
        self._listings: Dict[str, Optional[frozenset]] = {}
        self.add_roots(roots)
        self.project_root = os.path.abspath(project_root) if project_root else ""
        self._modules: "OrderedDict[str, Optional[_Loaded]]" = OrderedDict()
        # path -> a module read but not decoded or parsed (a syntax error): its stat and bytes
        # (a _Loaded without a tracer)
        self._unparsable: Dict[str, _Loaded] = {}
        # path -> (stat, bytes, {pattern: found}, names bound at module level or imported)
        self._bytes_info: Dict[str, Dict[str, Any]] = {}
        self._resolvers: Dict[int, object] = {}
        self.catalog: Any = None  # a Catalog, set by the Checker: resolvers of other modules need it
        self._current: List[Any] = []  # tracers of the file being checked (never evicted)
        self._current_file = ""  # its absolute path
        self._fresh: set = set()
        # (tracer id, name, depth, words) -> (tracer, what _imported answered), for this file's check
        self._imported_memo: Dict[tuple, tuple] = {}
        self._dirs: Dict[str, str] = {}  # importer path -> its absolute folder
        self.touched: Dict[str, str] = {}
        # loaded module path -> {path: (digest, stat)} of the modules read on its behalf (by
        # a question its tracer, resolver or summaries asked), merged into `touched` with it
        self._deps: Dict[str, Dict[str, Tuple[str, Optional[tuple]]]] = {}
        self._stats_now: Dict[str, Optional[tuple]] = {}  # path -> its stat, taken once per checked file
        self._absolutes: Dict[str, str] = {}  # a module's path as given -> absolute

    def add_roots(self, roots: Iterable[str]) -> None:
        for r in roots:
            r = os.path.abspath(r)
            if os.path.isfile(r):
                r = os.path.dirname(r)
            if os.path.isdir(r) and r not in self.roots:
                self.roots.append(r)
                self._search_roots.clear()
                self._paths.clear()  # a module not found before may be under the new root
                self._listings.clear()

    # -- one checked file -------------------------------------------------------------------
    def begin(self, tracer) -> None:
        """Start checking the file of `tracer` (its module is the one the others refer to)."""
        self._current = [tracer]
        self._current_file = self._absolute(tracer.index.source.path)
        self._stats_now = {}
        self.touched = {}
        self._fresh = set()  # modules whose stat was compared during this file's check
        self._imported_memo = {}

    def end(self) -> Dict[str, str]:
        touched, self._current, self._current_file = self.touched, [], ""
        self.touched = {}
        while len(self._modules) > MAX_MODULES:
            self._modules.popitem(last=False)
        return touched

    def _touch(self, path: str, digest: str, stat: Optional[tuple], by: Optional[str] = None) -> None:
        """Record that this file's check read `path` (absolute; `digest` and `stat`: the
        bytes read), asked on behalf of the module at `by` (absolute; None or the checked
        file: the check itself)."""
        self.touched[path] = digest
        if by is not None and by != self._current_file and by != path:
            self._deps.setdefault(by, {})[path] = (digest, stat)

    def _kept(self, path: str) -> List[Tuple[str, str, Optional[tuple]]]:
        """(path, digest, stat) of every module read on behalf of the module at `path` so
        far, and on behalf of those, transitively: what its kept answers were computed from."""
        out: List[Tuple[str, str, Optional[tuple]]] = []
        pending, seen = [path], {path}
        while pending:
            for dep, (digest, stat) in self._deps.get(pending.pop(), {}).items():
                if dep not in seen:
                    seen.add(dep)
                    out.append((dep, digest, stat))
                    pending.append(dep)
        return out

    def _stat_once(self, path: str) -> Optional[tuple]:
        """The stat of `path` (absolute), taken once per checked file: an edit between two
        checks is seen, and a module asked about many times during one costs one stat."""
        if path not in self._stats_now:
            self._stats_now[path] = _stat(path)
        return self._stats_now[path]

    def _absolute(self, path: str) -> str:
        found = self._absolutes.get(path)
        if found is None:
            found = self._absolutes[path] = os.path.abspath(path)
        return found

    # -- finding modules --------------------------------------------------------------------
    def search_roots(self, importer: str) -> List[str]:
        return list(self._roots_of_folder(os.path.dirname(os.path.abspath(importer))))

    def _roots_of_folder(self, here: str) -> List[str]:
        roots = self._search_roots.get(here)
        if roots is None:
            roots = self._search_roots[here] = self._search_roots_of(here)
        return roots

    def _search_roots_of(self, here: str) -> List[str]:
        top = here
        while os.path.isfile(os.path.join(top, "__init__.py")):
            parent = os.path.dirname(top)
            if parent == top:
                break
            top = parent
        out = list(self.roots)
        for r in (top, here, self.project_root, os.path.join(self.project_root, "src") if self.project_root else ""):
            if r and r not in out and os.path.isdir(r):
                out.append(r)
        return out

    def find_module(self, importer: str, dotted: str, level: int = 0) -> Optional[str]:
        """The file `from <level dots><dotted> import ...` in `importer` reads, or None."""
        if not level and dotted.split(".")[0] in EXTERNAL:
            return None
        base_dir = self._dirs.get(importer)
        if base_dir is None:
            base_dir = self._dirs[importer] = os.path.dirname(os.path.abspath(importer))
        key = (base_dir, "." * level + dotted)
        if key in self._paths:
            return self._paths[key]
        found = None
        parts = [p for p in dotted.split(".") if p]
        if level:
            d = base_dir
            for _ in range(level - 1):
                d = os.path.dirname(d)
            found = _module_file(d, parts, self._listed)
        else:
            for root in self._roots_of_folder(base_dir):  # search_roots(importer), not copied
                found = _module_file(root, parts, self._listed)
                if found:
                    break
        self._paths[key] = found
        return found

    def _listed(self, folder: str) -> Optional[frozenset]:
        """The casefolded names of the entries of `folder` (a search root), listed once (an
        empty set when it does not exist or is no folder; None when it cannot be listed, e.g.
        no read permission): a module probed for in a root without its top name costs no
        stat."""
        if folder in self._listings:
            return self._listings[folder]
        try:
            names: Optional[frozenset] = frozenset(n.casefold() for n in os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            names = frozenset()
        except (OSError, ValueError):
            names = None
        self._listings[folder] = names
        return names

    def mentions(self, path: str, words, by: Optional[str] = None) -> bool:
        """Whether the file's bytes match `words`, a bytes regex, or bind the name `words` (a
        str) at module level or import it (read once per content, no parse): asked before a
        module is parsed for an adapter or an operator alias. `by`: the path of the module
        asking (for `_touch`; None: the checked file)."""
        path = os.path.abspath(path)
        info = self._bytes_info.get(path)
        stat = self._stat_once(path)
        if info is None or info["stat"] != stat:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                return False
            info = self._bytes_info[path] = {"stat": stat, "data": data}
        if isinstance(words, str):
            names = info.get("names")
            if names is None:
                names = info["names"] = _bound_names(info["data"])
            found = words in names
        else:
            cached = info.get(words.pattern)
            if cached is None:
                cached = info[words.pattern] = words.search(info["data"]) is not None
            found = bool(cached)
        if not found:
            self._touch(path, _info_digest(info), info["stat"], by)  # a later edit may add what was looked for
        return found

    def load(self, path: str, words: Optional[Pattern[bytes]] = None, by: Optional[str] = None):
        """The tracer of the module at `path` (parsed on first use), or None. With `words`,
        only when the file holds one of them. `by`: as for `mentions`."""
        if words is not None and not self.mentions(path, words, by):
            return None
        path = os.path.abspath(path)
        first = path not in self._fresh  # its first load in this file's check
        # what its kept answers were computed from (asked once per checked file: what is read
        # on its behalf later in this check is recorded in `touched` as it is read)
        kept = self._kept(path) if first else []
        if path in self._modules:
            loaded = self._modules[path]
            read = loaded if loaded is not None else self._unparsable.get(path)
            if read is not None and first and (read.stat != self._stat_once(path) or any(
                    self._stat_once(dep) != stat for dep, _, stat in kept)):
                # changed since it was read, or a module its answers were computed from has
                # (a long-lived process): a new tracer, with nothing kept
                loaded = self._parse(path)
                kept = []
        else:
            loaded = self._parse(path)  # None (cached too) when it cannot be read or parsed
            kept = []
        self._modules[path] = loaded
        self._modules.move_to_end(path)
        self._fresh.add(path)
        if loaded is None:
            failed = self._unparsable.get(path)
            if failed is not None:  # its bytes decided the answer too: an edit that fixes it must
                self._touch(path, failed.digest, failed.stat, by)  # re-check the importers (the result cache)
            return None
        self._touch(path, loaded.digest, loaded.stat, by)
        # the tracer is handed out with its kept answers: this check depends on what they
        # were computed from too
        for dep, digest, _ in kept:
            self.touched.setdefault(dep, digest)
        return loaded.tracer

    def _parse(self, path: str) -> Optional[_Loaded]:
        from kvlint.analysis.values import ValueTracer

        self._deps.pop(path, None)  # a new tracer: no answer of the old one is kept
        stat = _stat(path)
        if stat is None or stat[0] > MAX_MODULE_BYTES:
            return None
        info = self._bytes_info.get(path)
        if info is not None and info["stat"] == stat:
            data = info["data"]  # read by `mentions` (asked before most loads), not read again
        else:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                return None
        self._unparsable.pop(path, None)
        source = decode(path, data)
        if isinstance(source, ReadFailure):
            self._unparsable[path] = _Loaded(path, data, None, stat)
            return None
        try:
            tree = parse(source)
            index = ModuleIndex(source, tree)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self._unparsable[path] = _Loaded(path, data, None, stat)
            return None
        return _Loaded(path, data, ValueTracer(index, self), stat)

    def parsed_tree(self, path: str, data: bytes) -> Optional[ast.Module]:
        """The tree of `path` when another file's check has already parsed these very bytes
        (the checked file is then not parsed twice), else None. Trees are never changed by
        the analysis (synthetic nodes live in the indexes), so two indexes may share one."""
        loaded = self._modules.get(os.path.abspath(path))
        if loaded is None or (loaded.data is not data and loaded.data != data):
            return None
        return loaded.tracer.index.tree

    def resolver_of(self, tracer):
        """The OperatorResolver of a loaded module (qualifies its names by its imports)."""
        from kvlint.analysis.resolve import OperatorResolver

        r = self._resolvers.get(id(tracer))
        if r is None or r.tracer is not tracer:
            r = self._resolvers[id(tracer)] = OperatorResolver(tracer.index, self.catalog, tracer)
        return r

    def tracer_of(self, node: ast.AST):
        """The tracer whose module holds `node` (the checked file's or a loaded module's)."""
        key = id(node)
        for tracer in self._current:
            if key in tracer.index.parent or node is tracer.index.tree:
                return tracer
        for loaded in reversed(self._modules.values()):
            if loaded is not None and (key in loaded.tracer.index.parent or node is loaded.tracer.index.tree):
                return loaded.tracer
        return None

    # -- what an imported name stands for ----------------------------------------------------
    def _imported(self, tracer, name: str, depth: int = 0, words: Optional[Pattern[bytes]] = None):
        """(tracer of the defining module, original name), following `from x import name`
        and re-exports; or (tracer, None) when `name` is a module itself. Asked again during
        one file's check, the same answer (the modules it read are in `touched` already)."""
        entry = tracer.index.from_imports.get(name)
        if entry is None or depth > MAX_REEXPORT_DEPTH:
            return None
        key = (id(tracer), name, depth, words if words is None or isinstance(words, str) else words.pattern)
        hit = self._imported_memo.get(key)
        if hit is not None and hit[0] is tracer:
            return hit[1]
        found = self._imported_uncached(tracer, name, depth, words, entry)
        self._imported_memo[key] = (tracer, found)
        return found

    def _imported_uncached(self, tracer, name: str, depth: int, words, entry):
        level, module, original = entry
        if isinstance(words, str):
            words = original  # `from x import y as name`: x binds y, not the local name
        importer = tracer.index.source.path
        by = self._absolute(importer)
        path = self.find_module(importer, module, level) if (module or level) else None
        if path and isinstance(words, str) and self._leads_nowhere(importer, path, entry, words):
            return None
        target = self.load(path, words, by) if path else None
        if target is not None:
            d = target.definitions().get(original)
            if d is not None or target.assignments(target.index.tree).get(original):
                return target, original
            if original in target.index.from_imports:
                return self._imported(target, original, depth + 1, words)
        # `from pkg import mod`: the name is a submodule
        sub = self.find_module(importer, f"{module}.{original}" if module else original, level)
        sub_tracer = self.load(sub, words, by) if sub else None
        if sub_tracer is not None:
            return sub_tracer, None
        return None

    def _leads_nowhere(self, importer: str, path: str, entry: Tuple[int, str, str], words: str) -> bool:
        """Whether `from module import original` (`entry`) is answered None without parsing
        the module at `path` (not parsed yet): its text shows that it neither defines nor
        assigns `original` and that each `from` import of it there names a module, and a
        submodule, the project does not hold; nor is `module.original` a submodule. A parse
        would find no value (re-exported from outside the project, or not bound there), and
        a module that failed to parse would give the same answer. The module's bytes are
        recorded in `touched` as a load would (an edit may bind the name)."""
        level, module, original = entry
        path = os.path.abspath(path)
        by = self._absolute(importer)
        if path in self._modules or not self.mentions(path, words, by):
            return False
        info = self._bytes_info[path]
        memo = info.setdefault("only_imported", {})
        entries = memo.get(original, False)
        if entries is False:
            entries = memo[original] = only_imported(info["data"], original)
        if entries is None:
            return False
        for lvl, mod, name in entries:
            if (mod or lvl) and self.find_module(path, mod, lvl) is not None:
                return False
            if self.find_module(path, f"{mod}.{name}" if mod else name, lvl) is not None:
                return False
        if self.find_module(importer, f"{module}.{original}" if module else original, level) is not None:
            return False
        self._touch(path, _info_digest(info), info["stat"], by)
        return True

    def imported_definition(self, tracer, name: str, words: Optional[Pattern[bytes]] = None,
                            functions_only: bool = False):
        """(tracer, FunctionDef/ClassDef) that `name`, imported in `tracer`'s module, is.
        `functions_only`: the caller wants a function and takes anything else for None;
        then a module whose text shows the name can only be a class there is not parsed."""
        if functions_only and words is not None and self._class_at_most(tracer, name, words):
            return None
        hit = self._imported(tracer, name, words=words)
        if hit is None or hit[1] is None:
            return None
        target, original = hit
        d = target.definitions().get(original)
        if d is not None:
            return target, d
        # `DeviceOperator = get_device_adaptor()`, `Alias = Impl`: a module-level binding of
        # a name to a class or function of that module
        for value in target.assignments(target.index.tree).get(original, []):
            found = _defined(target, value[1])
            if found is not None:
                return found
        return None

    def _class_at_most(self, tracer, name: str, words: Pattern[bytes]) -> bool:
        """Whether `from module import name` in `tracer`'s module stands for a class or for
        nothing, as the text of the module (not parsed yet, and holding `words`) shows:
        `name` is bound there by `class` statements only, never imported, assigned or
        defined by `def` (`only_imported(..., classes=True)` answers no import). Then the
        module's definition of it is a class or absent, and it re-exports nothing by that
        name, so a parse could only find a class, no value, or the submodule `module.name`
        (which `imported_definition` answers None for). The module's bytes are recorded in
        `touched` (an edit may make it a function)."""
        entry = tracer.index.from_imports.get(name)
        if entry is None:
            return False
        level, module, original = entry
        if not (module or level):
            return False
        path = self.find_module(tracer.index.source.path, module, level)
        if path is None:
            return False
        path = os.path.abspath(path)
        by = self._absolute(tracer.index.source.path)
        if path in self._modules or not self.mentions(path, words, by):
            return False  # parsed already (no cost), or not loaded for these words anyway
        info = self._bytes_info[path]
        memo = info.setdefault("class_at_most", {})
        entries = memo.get(original, False)
        if entries is False:
            entries = memo[original] = only_imported(info["data"], original, classes=True)
        if entries != ():
            return False
        self._touch(path, _info_digest(info), info["stat"], by)
        return True

    def imported_values(self, tracer, name: str, words: Optional[Pattern[bytes]] = None) -> List[ast.expr]:
        """Module-level values of a constant imported into `tracer`'s module (with `words`:
        only from a module holding one of them)."""
        hit = self._imported(tracer, name, words=words)
        if hit is None or hit[1] is None:
            return []
        target, original = hit
        return [v for _, v in target.assignments(target.index.tree).get(original, [])]

    def optional_import(self, tracer, name: str, words: Optional[Pattern[bytes]] = None) -> Optional[str]:
        """For a name imported into `tracer`'s module from a module of the project where it is
        an optional import (`kvlint.analysis.module.optional_import`): the dotted name it
        imports there, else None."""
        hit = self._imported(tracer, name, words=words)
        if hit is None or hit[1] is None:
            return None
        target, original = hit
        values = [v for _, v in target.assignments(target.index.tree).get(original, [])]
        return optional_import(target.index, original, values)

    def module_tracer(self, tracer, dotted: str, words: Optional[Pattern[bytes]] = None):
        """The module a local dotted name stands for: `import pkg.mod as m` (m), `import
        pkg.mod` (pkg.mod), `from pkg import mod` (mod)."""
        importer = tracer.index.source.path
        module = tracer.index.module_imports.get(dotted)
        if module is not None:
            path = self.find_module(importer, module)
            return self.load(path, words, self._absolute(importer)) if path else None
        if "." not in dotted:
            hit = self._imported(tracer, dotted, words=words)
            if hit is not None and hit[1] is None:
                return hit[0]
        return None

    def attribute_definition(self, tracer, dotted: str, attr: str, words: Optional[Pattern[bytes]] = None):
        """`mod.f` / `pkg.mod.Cls`: the function or class `attr` of the module `dotted`."""
        target = self.module_tracer(tracer, dotted, words)
        if target is None:
            return None
        d = target.definitions().get(attr)
        if d is not None:
            return target, d
        if attr in target.index.from_imports:
            return self.imported_definition(target, attr, words)
        return None


def _defined(tracer, value: ast.expr, depth: int = 0):
    """A module-level value naming a class/function of the module, directly or as what a
    module function returns (`get_device_adaptor()` returning one of the adaptor classes: the
    first one named)."""
    if depth > 2:
        return None
    if isinstance(value, ast.Name):
        d = tracer.definitions().get(value.id)
        return (tracer, d) if d is not None else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        f = tracer.definitions().get(value.func.id)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for r in tracer.returns_of(f):
                found = _defined(tracer, r, depth + 1)
                if found is not None:
                    return found
    return None


def _module_file(root: str, parts: Sequence[str], listed=None) -> Optional[str]:
    """`root/a/b.py` or `root/a/b/__init__.py` for parts (a, b), or None. `listed(folder)`:
    the casefolded names in a folder (or None): when `root` holds no entry named `a` (nor
    `a.py` for a single part) in any case (a case-insensitive file system would find those),
    there is no such module, without a stat."""
    if not parts:
        init = os.path.join(root, "__init__.py")
        return init if os.path.isfile(init) else None
    first = parts[0]
    if listed is not None and first.isascii():
        names = listed(root)
        if names is not None:
            folded = first.casefold()
            if folded not in names and (len(parts) > 1 or folded + ".py" not in names):
                return None
    base = os.path.join(root, *parts)
    if os.path.isfile(base + ".py"):
        return base + ".py"
    init = os.path.join(base, "__init__.py")
    if os.path.isfile(init):
        return init
    return None
