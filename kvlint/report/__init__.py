"""Output formats. Each module renders a `Report` to a string; this module holds what they
share: which fixes apply, the remedy (`help:`) of a finding, the rule's docs URL, and the
summary lines, worded as ruff words them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from kvlint.analysis.findings import Finding


@dataclass
class Report:
    files: int
    findings: List[Finding] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    fixed: int = 0  # problems fixed by --fix (or that --diff would fix)
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes apply too (and count as fixable)


def safe_fixable(finding: Finding) -> bool:
    """`--fix` alone would fix it (unsafe fixes need --unsafe-fixes)."""
    return finding.fix is not None and finding.fix.safe


def applicable(finding: Finding, unsafe: bool = False) -> bool:
    """`--fix` would fix it in this run: a safe fix, or any fix with --unsafe-fixes. The
    findings marked `[*]`."""
    return finding.fix is not None and (finding.fix.safe or unsafe)


def marker(finding: Finding, unsafe: bool = False) -> str:
    """` [*]` right after the code when `--fix` would fix it, as ruff prints it."""
    return " [*]" if applicable(finding, unsafe) else ""


# The remedy a rule writes as the last `; ...` clause of its message starts with one of
# these words (`...; pass `scale=head_dim ** -0.5``). REMEDY_CLAUSE is presentation only: the
# message itself is unchanged in every format.
REMEDY_VERBS = ("pass", "use", "keep", "build", "convert", "assign", "invert", "remove", "write",
                "compute", "update", "move", "rename", "drop", "create", "call", "read", "did you mean",
                "put", "set", "add", "give", "check", "cast", "make", "replace", "delete", "return")
REMEDY_CLAUSE = re.compile(r";\s+((?:%s)\b.*)$" % "|".join(re.escape(v) for v in REMEDY_VERBS), re.DOTALL)


def split_help(finding: Finding) -> Tuple[str, Optional[str]]:
    """(reason, remedy): the message without its remedy clause, and the remedy for a
    `help:` line: the fix's description when there is a fix (it names the exact change), else
    the message's remedy clause."""
    m = REMEDY_CLAUSE.search(finding.message)
    reason = finding.message[:m.start()] if m else finding.message
    remedy = finding.fix.description if finding.fix is not None else m.group(1) if m else None
    return reason, (remedy[0].upper() + remedy[1:]) if remedy else None


def plural(n: int, word: str, many: Optional[str] = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def summary_lines(report: Report) -> List[str]:
    """ruff's summary: `Found N errors.` (after --fix: `Found N errors (M fixed, K remaining).`)
    or `All checks passed!`, then what --fix / --unsafe-fixes would do."""
    remaining = len(report.findings)
    if report.fixed:
        lines = [f"Found {plural(report.fixed + remaining, 'error')} ({report.fixed} fixed, {remaining} remaining)."]
    elif remaining:
        lines = [f"Found {plural(remaining, 'error')}."]
    else:
        return ["All checks passed!"]
    fixable = sum(1 for f in report.findings if applicable(f, report.unsafe_fixes))
    hidden = 0 if report.unsafe_fixes else sum(1 for f in report.findings if f.fix is not None and not f.fix.safe)
    hint = f"{plural(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the `--unsafe-fixes` option"
    if fixable and hidden:
        lines.append(f"[*] {fixable} fixable with the `--fix` option ({hint}).")
    elif fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option.")
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return lines


def rule_url(code: str) -> str:
    from kvlint.links import rule_url as url

    return url(code)
