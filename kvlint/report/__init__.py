"""Output formats. Each module renders a `Report` to a string."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

from kvlint.analysis.findings import Finding


@dataclass
class Report:
    files: int
    findings: List[Finding] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    fixed: int = 0  # problems fixed by --fix (or that --diff would fix)


def safe_fixable(finding: Finding) -> bool:
    """`--fix` alone would fix it (unsafe fixes need --unsafe-fixes)."""
    return finding.fix is not None and finding.fix.safe
