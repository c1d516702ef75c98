"""Applying `Finding.fix` edits: `kvlint check --fix`, `--diff`, `--unsafe-fixes`.

How fixes go through libcst: a fix that changes a call's arguments (add a keyword, rename
one, set its value: KV101, KV102, KV103, KV202, KV205, KV305) is a libcst transformation of that
call node (kvlint/cst_edit.py: the call parsed alone, its nodes found through libcst's
PositionProvider, the layout kept), turned into the smallest text edit that differs. A fix
that replaces one name or appends to an expression (KV301's dtype, `.int()`, `.to(...)`; a
dict key string; a `# noqa` code) is a position-exact edit of that token. Edits are applied to the source text, so
everything outside them -- formatting, comments, blank lines, line endings -- stays byte for
byte. The result is then verified with `libcst.parse_module` (it must parse and round-trip to
exactly the same text) and with `ast.parse` and `compile`; a fix that would produce anything
else is dropped and reported, and the file is left alone. The analysis stays on `ast` for
speed.

Then the fixed text is checked again and the remaining fixable findings are fixed, up to
MAX_ROUNDS times, until nothing changes: a second `--fix` run has nothing left to do. Files
are written atomically (a temporary file in the same folder, the original's mode, then
`os.replace`), in the file's own encoding, keeping a UTF-8 BOM.
"""
from __future__ import annotations

import ast
import difflib
import os
import stat
import warnings
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

from kvlint.analysis.findings import Edit, FileResult, Finding, Fix
from kvlint.atomic import replace_file
from kvlint.source import SourceFile

MAX_ROUNDS = 10
Keep = Callable[[List[Finding]], List[Finding]]


def wanted(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.safe or unsafe)


def line_starts(text: str) -> List[int]:
    """Offsets of each line's first character, with the same line split as
    `SourceFile.lines` (str.splitlines), which the rules' columns refer to."""
    starts, pos = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)  # an edit may point just past the last line
    return starts


def _offset(starts: List[int], pos: Tuple[int, int]) -> int:
    line, col = pos
    if not 1 <= line <= len(starts):
        raise ValueError(f"edit outside the file: line {line}")
    return starts[line - 1] + col


def apply_fixes(text: str, fixes: Sequence[Fix]) -> Tuple[str, List[Fix]]:
    """Apply every fix whose edits overlap no edit of an earlier fix; (new text, applied)."""
    starts = line_starts(text)
    taken: List[Tuple[int, int]] = []
    spans: List[Tuple[int, int, str]] = []
    applied: List[Fix] = []
    ordered = sorted(fixes, key=lambda f: min((e.start, e.end) for e in f.edits))
    for fix in ordered:
        try:
            mine = [(_offset(starts, e.start), _offset(starts, e.end), e.text) for e in fix.edits]
        except ValueError:
            continue
        if any(a > b for a, b, _ in mine) or any(_overlap(a, b, x, y) for a, b, _ in mine for x, y in taken):
            continue
        if fix in applied:
            continue
        taken.extend((a, b) for a, b, _ in mine)
        spans.extend(mine)
        applied.append(fix)
    for a, b, new in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:a] + new + text[b:]
    return text, applied


def _overlap(a: int, b: int, x: int, y: int) -> bool:
    if a == b or x == y:  # insertions conflict only at the same point or strictly inside
        return a == x or x < a < y or a < x < b
    return a < y and x < b


def verify(old: str, new: str) -> Optional[str]:
    """None when `new` is valid Python that libcst round-trips; else why not."""
    problem = _compile_error(new)
    if problem is not None and _compile_error(old) is None:
        return f"the fixed code does not compile: {problem}"
    import libcst

    try:
        module = libcst.parse_module(new)
    except Exception as exc:  # libcst.ParserSyntaxError, or syntax libcst does not know
        try:
            libcst.parse_module(old)
        except Exception:
            return None  # libcst cannot read this file at all: ast verified it
        return f"libcst cannot parse the fixed code: {str(exc).splitlines()[0]}"
    if module.code != new:
        return "libcst does not round-trip the fixed code"
    return None


def _compile_error(text: str) -> Optional[str]:
    """Parse *and* compile (never run): compiling catches what parsing lets through, such as a
    keyword passed twice after two fixes touched one call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<kvlint-fix>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
            compile(text, "<kvlint-fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return str(exc)
    return None


@dataclass
class FixOutcome:
    path: str
    original: str
    text: str
    result: FileResult  # the findings of the fixed text
    fixed: int = 0
    errors: List[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.original.splitlines(keepends=True), self.text.splitlines(keepends=True),
            fromfile=f"a/{self.path}", tofile=f"b/{self.path}"))


def fix_source(checker, source: SourceFile, unsafe: bool = False,
               keep: Optional[Keep] = None, result: Optional[FileResult] = None) -> FixOutcome:
    """Fix `source` in memory: check, apply the wanted fixes, re-check, until stable.
    `keep` filters findings (per-file-ignores) before fixing; `result` is the first check's
    result when the caller already has it."""
    keep = keep or (lambda fs: fs)
    text = source.text
    outcome = FixOutcome(source.path, source.text, text, result or checker.check_source(source))
    outcome.result.findings = keep(outcome.result.findings)
    seen = {text}
    for _ in range(MAX_ROUNDS):
        findings = [f for f in outcome.result.findings if wanted(f, unsafe)]
        # safe fixes first: an unsafe fix is computed again on the text the safe ones left
        every = [f.fix for f in findings if f.fix is not None]  # all of them: `wanted` holds a fix
        fixes = [fx for fx in every if fx.safe] or every
        if not fixes:
            break
        new, applied = _apply_verified(text, fixes, outcome)
        if not applied or new == text:
            break
        if new in seen:  # fixes undoing each other: stop at the last text before the cycle
            outcome.errors.append(f"{source.path}: fixes undo each other; stopped after {outcome.fixed}")
            break
        seen.add(new)
        text = new
        outcome.fixed += len(applied)
        current = SourceFile(source.path, _encode(text, source.encoding), text, source.encoding)
        outcome.result = checker.check_source(current)
        outcome.result.findings = keep(outcome.result.findings)
    outcome.text = text
    return outcome


def _apply_verified(text: str, fixes: Sequence[Fix], outcome: FixOutcome) -> Tuple[str, List[Fix]]:
    """All fixes at once when the result verifies; else one at a time, keeping each one
    whose result verifies (two fixes may be fine alone and clash together)."""
    new, applied = apply_fixes(text, fixes)
    if not applied or verify(text, new) is None:
        return new, applied
    done: List[Fix] = []
    for fix in applied:
        candidate, ok = apply_fixes(text, [fix])
        problem = verify(text, candidate) if ok else "overlaps another fix"
        if problem is None:
            text = candidate
            done.append(fix)
            break  # positions of the other fixes are stale now: the next round recomputes them
        outcome.errors.append(f"{outcome.path}: fix not applied ({fix.description}): {problem}")
    return text, done


def _encode(text: str, encoding: str) -> bytes:
    return text.encode(encoding)


def write_atomic(path: str, text: str, encoding: str) -> None:
    """Write through a temporary file in the same folder and os.replace, keeping the mode.
    `newline=""`-style: the text already holds its own line endings."""
    data = _encode(text, encoding)
    try:
        mode: Optional[int] = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = None
    replace_file(path, data, mode=mode, sync=True)


__all__ = ["Edit", "Fix", "FixOutcome", "apply_fixes", "fix_source", "verify", "wanted", "write_atomic"]
