"""KV900: a `# noqa` that suppresses nothing, as ruff's RUF100 (docs: rules/codes/KV900.toml).

Off by default (`--extend-select KV900`). The engine calls `unused_noqa()` with every finding
of the enabled rules *before* suppression; this module only knows about comments. Per
comment, one finding naming the dead codes by kind: `unused` (the rule is enabled and
nothing on the line uses the code), `non-enabled` (no rule the code names runs in this
configuration), `unknown` (no such KV code). A bare `# noqa` with no kvlint finding on its
line is an "unused blanket `noqa` directive"; its removal is an unsafe fix, since another
tool may read it. Codes of other tools (`E501`) are never reported.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Set

from kvlint.analysis.findings import Edit, Finding, Fix
from kvlint.checks import register
from kvlint.checks.base import NoCase, Rule
from kvlint.noqa import NOQA, NoqaIndex
from kvlint.settings import code_matches

CODE = "KV900"


@register
class UnusedNoqa(Rule):
    code = CODE
    def words(self, settings):
        # the engine's hook does the work; this feeds the pre-filter, in any case like `# NoQA`
        return (NoCase("noqa"),)


def unused_noqa(noqa: NoqaIndex, findings: Iterable[Finding], enabled: Set[str], known: Set[str],
                source, severity: str = "warning") -> List[Finding]:
    findings = [f for f in findings if f.code != CODE]
    out: List[Finding] = []
    for line, codes in sorted(noqa.by_line.items()):
        if line not in noqa.comments:
            continue
        here = [f for f in findings if line in (f.noqa_lines or (f.line,))]
        column, comment = noqa.comments[line]
        if codes is None:  # bare `# noqa`
            if here:
                continue
            fix = _fix(line, column, comment, None, source)
            out.append(Finding(source.path, line, column + 1, line, column + len(comment) + 1, CODE,
                               "unused blanket `noqa` directive", severity,
                               Fix(fix.description, fix.edits, safe=False), (line,), source.line(line)))
            continue
        kv = [c for c in sorted(codes) if c.startswith("KV") and c != CODE]
        unknown = [c for c in kv if not any(k.startswith(c) for k in known)]
        non_enabled = [c for c in kv if c not in unknown and not any(k in enabled for k in known if k.startswith(c))]
        unused = [c for c in kv if c not in unknown and c not in non_enabled
                  and not any(code_matches(f.code, [c]) for f in here)]
        if not (unused or non_enabled or unknown):
            continue
        kinds = [(name, group) for name, group in (("unused", unused), ("non-enabled", non_enabled),
                                                   ("unknown", unknown)) if group]
        detail = "; ".join(f"{name}: " + ", ".join(f"`{c}`" for c in group) for name, group in kinds)
        fix = _fix(line, column, comment, set(unused) | set(non_enabled) | set(unknown), source)
        out.append(Finding(source.path, line, column + 1, line, column + len(comment) + 1, CODE,
                           f"unused `noqa` directive ({detail})", severity, fix, (line,), source.line(line)))
    return out


def _fix(line: int, column: int, comment: str, drop, source) -> Fix:
    """Drop the dead codes from the comment; drop the whole `# noqa...` when none is left
    (`drop` None: a bare `# noqa`)."""
    m = NOQA.search(comment)
    codes = re.split(r"[\s,]+", m.group("codes").strip()) if drop is not None else []
    keep = [c for c in codes if c and c.upper() not in drop]
    start, end = column + m.start(), column + m.end()
    if keep:
        text = comment[m.start():m.start("codes")] + ", ".join(keep)
        return Fix("remove the unused codes from the `noqa` directive", (Edit((line, start), (line, end), text),))
    rest = comment[m.end():]
    if comment[:m.start()].strip() == "" and rest.strip() == "":
        code_end = len(source.line(line)[:column].rstrip())
        return Fix("remove the unused `noqa` directive", (Edit((line, code_end), (line, column + len(comment)), ""),))
    # text after the noqa (`# noqa: KV101 -- why`) stays a comment
    keep_hash = "#" if m.start() == 0 else ""
    return Fix("remove the unused `noqa` directive", (Edit((line, start), (line, end), keep_hash),))
