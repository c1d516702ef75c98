"""KV900: a `# noqa: KV...` code that suppresses nothing on its line (docs: rules/codes/KV900.toml).

Off by default (`--extend-select KV900`). The engine calls `unused_noqa()` with every finding
of the enabled rules *before* suppression; this module only knows about comments. Codes
of other tools (`E501`) and bare `# noqa` are never reported; a KV code of a rule that is not
enabled in this run is not reported either (it may be used when that rule runs).
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
        if not codes or line not in noqa.comments:
            continue  # bare `# noqa`
        used = {c for c in codes if any(line in (f.noqa_lines or (f.line,)) and code_matches(f.code, [c])
                                        for f in findings)}
        unknown = sorted(c for c in codes if c.startswith("KV") and not any(k.startswith(c) for k in known))
        unused = sorted(c for c in codes if c.startswith("KV") and c not in used and c not in unknown
                        and c != CODE and all(k in enabled for k in known if k.startswith(c)))
        if not unused and not unknown:
            continue
        column, comment = noqa.comments[line]
        parts = []
        if unused:
            parts.append(f"unused `noqa` code{'s' if len(unused) > 1 else ''} {', '.join(unused)}: "
                         f"no such finding on this line")
        if unknown:
            parts.append(f"unknown code{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        fix = _fix(line, column, comment, set(unused) | set(unknown), source)
        out.append(Finding(source.path, line, column + 1, line, column + len(comment) + 1, CODE,
                           "; ".join(parts) + "; remove " + ("them" if len(unused) + len(unknown) > 1 else "it"),
                           severity, fix, (line,), source.line(line)))
    return out


def _fix(line: int, column: int, comment: str, drop: Set[str], source) -> Fix:
    """Drop the dead codes from the comment; drop the whole `# noqa...` when none is left."""
    m = NOQA.search(comment)
    codes = re.split(r"[\s,]+", m.group("codes").strip())
    keep = [c for c in codes if c and c.upper() not in drop]
    start, end = column + m.start(), column + m.end()
    if keep:
        text = comment[m.start():m.start("codes")] + ", ".join(keep)
        return Fix("remove the unused noqa codes", (Edit((line, start), (line, end), text),))
    rest = comment[m.end():]
    if comment[:m.start()].strip() == "" and rest.strip() == "":
        code_end = len(source.line(line)[:column].rstrip())
        return Fix("remove the unused noqa comment", (Edit((line, code_end), (line, column + len(comment)), ""),))
    # text after the noqa (`# noqa: KV101 -- why`) stays a comment
    keep_hash = "#" if m.start() == 0 else ""
    return Fix("remove the unused noqa comment", (Edit((line, start), (line, end), keep_hash),))
