"""Check one file: pre-filter its bytes, parse it with `ast`, run the enabled rules, apply
`# noqa`. Never imports or runs the checked code; an internal error in one rule is reported
with the file and the rule, and the other rules still run."""
from __future__ import annotations

import os
import traceback
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from kvlint.analysis.context import AnyOf, LowercasePattern, minimal_words
from kvlint.analysis.findings import FileResult, Finding
from kvlint.analysis.module import ModuleIndex
from kvlint.analysis.project import Project
from kvlint.catalog import Catalog, load_catalog
from kvlint.checks import FileContext, Rule, all_rules
from kvlint.checks.base import NoCase, is_test_path
from kvlint.noqa import NoqaIndex, may_suppress
from kvlint.settings import Settings
from kvlint.source import ReadFailure, SourceFile, decode, parse, read_file

PARSE_ERROR = "KV000"


class Checker:
    max_parse_bytes = 4 * 2 ** 20  # bigger files get a KV000 instead of an ast (memory bound)

    def __init__(self, settings: Settings = Settings(), catalog: Optional[Catalog] = None,
                 rules: Optional[Sequence[Rule]] = None, roots: Sequence[str] = ()):
        self.settings = settings
        # the checked project's other modules, parsed on demand (kvlint/analysis/project.py)
        self.project = Project(roots, settings.root)
        self.catalog = catalog or load_catalog()
        self.project.catalog = self.catalog
        every = list(rules) if rules is not None else all_rules()
        self.rules = [r for r in every if settings.enabled(r.code, self._default_on(r.code), self._preview(r.code))]
        canon: Dict[object, object] = {}  # one object per distinct word: rules_for tests each once

        held: Dict[int, object] = {}  # by id of a word with a `literal` (Holding): that word

        def word(w):
            w = _as_bytes(w)
            key = (type(w), w) if isinstance(w, bytes) else (type(w), w.pattern, w.flags)
            w = canon.setdefault(key, w)
            literal = getattr(w, "literal", None)
            if literal is not None:
                held[id(w)] = word(literal)
            return w

        def expand(ws):  # an AnyOf word is there when one of its parts is: its parts, each tested once
            return tuple(word(p) for w in ws for p in (w.parts if isinstance(w, AnyOf) else (w,)))

        self._rule_words = {r.code: expand(r.words(settings)) for r in self.rules}
        # all of any of pure tests: the order never changes the answer, only the time. The
        # groups are tested in the rule's order (a rule lists first the group that rejects
        # most files for least time, as measured on real code: a plain word is not always the
        # cheaper test, `+=` takes longer than a `class` regex); in a group, its plain words
        # before its regexes
        def ordered(groups):
            return [tuple(sorted(expand(group), key=_is_regex)) for group in groups]

        self._required = {r.code: ordered(r.required_words(settings)) for r in self.rules}
        in_tests = {r.code: r.required_words_in_tests(settings) for r in self.rules}
        required_in_tests = {c: self._required[c] if g is None else ordered(g) for c, g in in_tests.items()}
        # a word occurs only where its parent does (tested first): a word it holds
        self._parents = {**_literal_parents(list(canon.values())), **held}
        # rules with the same words and groups (the FA rules share the operator names) are
        # decided once per file: (words, groups, the rules' positions in self.rules); test
        # files (TEST_DOUBLES) have their own list where a rule narrows its groups there
        self._conditions = self._grouped(self._required)
        self._conditions_in_tests = self._conditions
        if any(g is not None for g in in_tests.values()):
            self._conditions_in_tests = self._grouped(required_in_tests)
        # a rule without words runs on every parsed file, so then every file is parsed
        wordless = any(not words for words in self._rule_words.values())
        self.prefilter = None if wordless else build_prefilter(list(self._rule_words.values()))
        # by id of the word Prefilter.find stopped at: what rules_for then knows unsearched,
        # and the conditions that knowledge leaves open (for other files, for test files)
        self._after: Dict[int, Tuple[Dict[int, bool], list, list]] = {}
        if self.prefilter is not None:
            for at, known in self.prefilter.known_after(list(canon.values())).items():
                self._after[at] = (known, _open(self._conditions, known), _open(self._conditions_in_tests, known))
        self.report_unused_noqa = any(r.code == "KV900" for r in self.rules)

    def _grouped(self, required) -> List[Tuple[tuple, list, List[int]]]:
        conditions: Dict[tuple, Tuple[tuple, list, List[int]]] = {}
        for n, r in enumerate(self.rules):
            words, groups = self._rule_words[r.code], required[r.code]
            key = (tuple(map(id, words)), tuple(tuple(map(id, g)) for g in groups))
            conditions.setdefault(key, (words, groups, []))[2].append(n)
        return list(conditions.values())

    def _default_on(self, code: str) -> bool:
        info = self.catalog.rules.get(code)
        return info.enabled_by_default if info else True

    def _preview(self, code: str) -> bool:
        info = self.catalog.rules.get(code)
        return bool(info and info.preview)

    # -- entry points -------------------------------------------------------------------
    def check_path(self, path: str) -> FileResult:
        _, data, reason = read_file(path)
        if data is None:
            return self._failure(path, reason)
        return self.check_bytes(path, data)

    def check_bytes(self, path: str, data: bytes, prefilter: bool = True) -> FileResult:
        """`prefilter=False` parses the file and runs every enabled rule whatever its bytes
        (the pre-filter's property test compares both)."""
        if prefilter:
            lower: List[bytes] = []  # the lowercased bytes, made once for both levels
            if not self.rules:
                return FileResult(path)
            found = None
            if self.prefilter is not None:
                found = self.prefilter.find(data, lower)
                if found is None:
                    return FileResult(path)
            rules = self.rules_for(data, path, lower, found)
            if not rules:
                return FileResult(path)  # words seen, but no rule's `required_words` are all there
        else:
            rules = list(self.rules)
        if len(data) > self.max_parse_bytes:  # the ast of 10 MB of code takes ~1.6 GB
            return self._failure(path, f"{len(data) / 2 ** 20:.1f} MiB is over the {self.max_parse_bytes / 2 ** 20:g} "
                                       f"MiB limit for one file (generated code?); not parsed",
                                 prefix="too large: ")
        source = decode(path, data)
        if isinstance(source, ReadFailure):
            return self._failure(path, source.reason)
        return self.check_source(source, rules)

    def rules_for(self, data: bytes, path: Optional[str] = None, lower: Optional[List[bytes]] = None,
                  found: Optional[object] = None) -> List[Rule]:
        """The enabled rules one of whose words is in `data` (a rule without words always
        runs) and each of whose `required_words` groups (`required_words_in_tests` where
        `path` is a test file) has a word in `data`: the per-rule level of the pre-filter.
        `lower`: [the lowercased bytes] if already made, filled in when they are made here; a
        word object with `search_lowered(data, lowered)` is given them. `found`: the word
        `self.prefilter.find(data)` returned: the words it searched before are absent, and
        not searched again (Prefilter.known_after), nor the rules that this alone rejects."""
        test = path is not None and is_test_path(path)
        after = self._after.get(id(found)) if found is not None else None
        if after is None:
            searched: Dict[int, bool] = {}  # one search per word object, however many rules share it
            conditions = self._conditions_in_tests if test else self._conditions
        else:
            searched = dict(after[0])
            conditions = after[2] if test else after[1]
        parents = self._parents
        made: List[bytes] = [] if lower is None else lower

        def holds(w) -> bool:
            hit = searched.get(id(w))
            if hit is None:
                parent = parents.get(id(w))
                if parent is not None and not holds(parent):
                    hit = False  # a word occurs only where a word it holds does
                elif isinstance(w, _NoCaseBytes):
                    hit = w in _lowered(data, made)
                elif type(w) is bytes:
                    hit = w in data
                elif isinstance(w, LowercasePattern):
                    hit = w.regex.search(_lowered(data, made)) is not None
                elif hasattr(w, "search_lowered"):
                    hit = w.search_lowered(data, _lowered(data, made)) is not None
                else:
                    hit = w.search(data) is not None
                searched[id(w)] = hit
            return hit

        wanted = []
        for words, groups, positions in conditions:
            if words and not any(map(holds, words)):
                continue
            if all(any(map(holds, group)) for group in groups):
                wanted += positions
        wanted.sort()  # the rules in their own order
        rules = self.rules
        return [rules[n] for n in wanted]

    def check_source(self, source: SourceFile, rules: Optional[List[Rule]] = None) -> FileResult:
        """`rules`: the rules to run (default: `rules_for(source.data)`)."""
        result = FileResult(source.path)
        try:
            tree = self.project.parsed_tree(source.path, source.data)  # parsed for an importer
            if tree is None:
                tree = parse(source)
        except SyntaxError as exc:
            line = exc.lineno or 1
            result.findings.append(self._parse_finding(source.path, line, exc.offset or 1,
                                                       f"cannot parse: {exc.msg}", source.line(line)))
            return result
        except (ValueError, RecursionError, MemoryError) as exc:
            result.findings.append(self._parse_finding(source.path, 1, 1, f"cannot parse: {exc}", ""))
            return result
        try:
            index = ModuleIndex(source, tree)
        except RecursionError:
            result.findings.append(self._parse_finding(source.path, 1, 1, "cannot parse: nesting too deep", ""))
            return result
        ctx = FileContext(index, self.catalog, self.settings, self.project)
        findings: List[Finding] = []
        self.project.begin(ctx.values)
        try:
            for rule in self.rules_for(source.data, source.path) if rules is None else rules:
                try:
                    findings.extend(self._run_rule(rule, ctx))
                except Exception as exc:  # a bug in one rule must not stop the run
                    tb = traceback.extract_tb(exc.__traceback__)[-1]
                    result.errors.append(f"{source.path}: internal error in {rule.code}: "
                                         f"{type(exc).__name__}: {exc} ({tb.filename}:{tb.lineno})")
        finally:
            own = os.path.abspath(source.path)
            result.dependencies = {p: h for p, h in self.project.end().items() if p != own}
        if self.report_unused_noqa or (findings and may_suppress(source, findings)):
            noqa = NoqaIndex(source)
            if self.report_unused_noqa:  # KV900, before suppression: it needs every finding
                findings += self._unused_noqa(noqa, findings, source)
            findings = [f for f in findings if not noqa.suppresses(f)]
        result.findings.extend(dedupe(findings))
        result.findings.sort(key=Finding.sort_key)
        return result

    def _unused_noqa(self, noqa: NoqaIndex, findings: List[Finding], source: SourceFile) -> List[Finding]:
        from kvlint.checks.kv900_unused_noqa import unused_noqa

        enabled = {r.code for r in self.rules} | ({PARSE_ERROR} if self.settings.enabled(PARSE_ERROR) else set())
        info = self.catalog.rules.get("KV900")
        severity = self.settings.severity.get("KV900", info.severity if info else "warning")
        return unused_noqa(noqa, findings, enabled, set(self.catalog.rules) | {PARSE_ERROR}, source, severity)

    @staticmethod
    def _run_rule(rule: Rule, ctx: FileContext) -> Iterable[Finding]:
        out: List[Finding] = []
        if rule.wants_calls:
            wanted = set(rule.operators)
            for oc in ctx.checked_calls:
                if not wanted or oc.name in wanted:
                    ctx.current_call = oc.call
                    out.extend(rule.check_call(oc, ctx))
            ctx.current_call = None
        if rule.wants_module:
            out.extend(rule.check_module(ctx))
        return out

    def _failure(self, path: str, reason: str, prefix: str = "cannot read: ") -> FileResult:
        if not self.settings.enabled(PARSE_ERROR):
            return FileResult(path, checked=False)
        return FileResult(path, [self._parse_finding(path, 1, 1, f"{prefix}{reason}", "")], checked=False)

    def _parse_finding(self, path, line, col, message, text) -> Finding:
        return Finding(path, line, max(col, 1), line, max(col, 1), PARSE_ERROR, message, "error",
                       source_line=text)


class Prefilter:
    """`search(data)`: does any word of any enabled rule occur in `data`? Plain words are
    substring tests, `NoCase` words the same over the lowercased bytes, regex words are
    searched one by one (each with its own flags). A word holding another word is left out
    (the shorter one decides), and words sharing a substring (`npu_`) sit behind it: when it
    is absent none of them is searched. Substring tests run at memchr speed, about twice as
    fast here as one trie regex over the same words. The words are the Checker's own word
    objects (`find` names the one it found)."""

    def __init__(self, exact, nocase, patterns):
        self.exact, self.nocase, self.patterns = _anchored(exact), _anchored(nocase), patterns

    def search(self, data: bytes, lower: Optional[List[bytes]] = None) -> bool:
        """`lower`: as for Checker.rules_for (the lowercased bytes are kept there)."""
        return self.find(data, lower) is not None

    def find(self, data: bytes, lower: Optional[List[bytes]] = None) -> Optional[object]:
        """The first word found, in the order of `order()`, or None: `search` naming its hit."""
        hit = _first_in(self.exact, data)
        if hit is None and self.nocase:
            hit = _first_in(self.nocase, _lowered(data, [] if lower is None else lower))
        if hit is None:
            for p in self.patterns:
                if p.search(data) is not None:  # as rules_for reads a match (a match may be falsy)
                    return p
        return hit

    def order(self) -> List[object]:
        """The words in the order `find` tries them (a word behind an absent anchor is not
        searched, but is absent all the same)."""
        return [w for groups in (self.exact, self.nocase) for _, words in groups for w in words] + self.patterns

    def known_after(self, words: Sequence[object]) -> Dict[int, Dict[int, bool]]:
        """By id of each word `find` can return: {id(word): there?} for those of `words`
        (the Checker's word objects) that its search decided without searching them: every
        word tried before it is absent, and so is a plain or NoCase word holding one of
        those (`_occurs_only_with`); the word found is there, and so is one it holds. (One
        pass: the words held by an absent word are collected as the words become absent.)"""
        literal = [w for w in words if isinstance(w, bytes)]
        out: Dict[int, Dict[int, bool]] = {}
        absent: Dict[int, bool] = {}  # {id(word): False} for the words tried so far
        dead: set = set()  # ids of the literal words that hold an absent word
        for w in self.order():
            known = dict(absent)
            if isinstance(w, bytes):
                for o in literal:
                    if id(o) in dead:
                        known[id(o)] = False
                    elif o is w or _occurs_only_with(w, o):
                        known[id(o)] = True
                dead.update(id(o) for o in literal if _occurs_only_with(o, w))
            known[id(w)] = True
            out[id(w)] = known
            absent[id(w)] = False
        return out


def _open(conditions, known: Dict[int, bool]) -> list:
    """The `conditions` (words, groups, positions) that `known` (by word id: there?) does
    not decide false: those with a word and a word in each group not known absent."""
    def maybe(words) -> bool:
        return any(known.get(id(w)) is not False for w in words)

    return [c for c in conditions if (not c[0] or maybe(c[0])) and all(map(maybe, c[1]))]


def _lowered(data: bytes, made: List[bytes]) -> bytes:
    """`data.lower()`, made once: kept in `made` (one list per file, shared by both levels of
    the pre-filter)."""
    if not made:
        made.append(data.lower())
    return made[0]


def build_prefilter(word_lists: Sequence[Sequence[object]]) -> Optional[Prefilter]:
    """The pre-filter of every word of every enabled rule (`Rule.words`); derived, never
    hand-kept."""
    exact: set = set()
    nocase: set = set()
    patterns: Dict[tuple, Any] = {}
    for ws in word_lists:
        for w in ws:
            if isinstance(w, _NoCaseBytes):
                nocase.add(w)
            elif type(w) is bytes:
                exact.add(w)
            else:
                pattern: Any = w
                patterns[(pattern.pattern, pattern.flags)] = pattern
    if not exact and not nocase and not patterns:
        return None
    # a plain word holding a NoCase word occurs only where that one does (lowercased)
    exact = {w for w in exact if not any(n in w.lower() for n in nocase)}
    return Prefilter(exact, nocase, list(patterns.values()))


def _first_in(groups, data: bytes) -> Optional[bytes]:
    for anchor, words in groups:
        if anchor is None or anchor in data:
            for w in words:
                if w in data:
                    return w
    return None


def _anchored(words, size: int = 4) -> List[Tuple[Optional[bytes], List[bytes]]]:
    """The minimal `words` in groups behind a shared substring of `size` bytes (greedily: the
    substring most words hold, while at least three do), then a group without an anchor."""
    rest = minimal_words(words)
    groups: List[Tuple[Optional[bytes], List[bytes]]] = []
    while rest:
        counts: Dict[bytes, int] = {}
        for w in rest:
            for gram in {w[k:k + size] for k in range(len(w) - size + 1)}:
                counts[gram] = counts.get(gram, 0) + 1
        best = max(sorted(counts), key=counts.__getitem__, default=None)
        if best is None or counts[best] < 3:
            break
        groups.append((best, [w for w in rest if best in w]))
        rest = [w for w in rest if best not in w]
    if rest:
        groups.append((None, rest))
    return groups


def _is_regex(word) -> bool:
    return not isinstance(word, bytes)


def _literal_parents(words) -> Dict[int, object]:
    """By id, for each plain or NoCase word, the longest other word that occurs wherever it
    does: a word it holds (a NoCase word held by a plain word's lowercase counts, a plain
    word held by a NoCase word does not)."""
    literal = [w for w in words if isinstance(w, bytes)]
    parents: Dict[int, object] = {}
    for w in literal:
        best = None
        for o in literal:
            if o is w or len(o) >= len(w) or (best is not None and len(o) <= len(best)):
                continue
            if _occurs_only_with(w, o):
                best = o
        if best is not None:
            parents[id(w)] = best
    return parents


def _occurs_only_with(w: bytes, o: bytes) -> bool:
    """Plain or NoCase word `w` is in a file only if `o` is: `w` holds `o` (a NoCase `o`
    held by `w`'s lowercase counts, a plain `o` held by a NoCase `w` does not)."""
    if isinstance(o, _NoCaseBytes):
        return o in (w if isinstance(w, _NoCaseBytes) else w.lower())
    return not isinstance(w, _NoCaseBytes) and o in w


class _NoCaseBytes(bytes):
    """A NoCase word, lowercased, as bytes."""


def _as_bytes(word):
    if isinstance(word, NoCase):
        return _NoCaseBytes(word.lower().encode())
    return word.encode() if isinstance(word, str) else word


def dedupe(findings: List[Finding]) -> List[Finding]:
    seen, out = set(), []
    for f in findings:
        key = (f.line, f.column, f.code, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
