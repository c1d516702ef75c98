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
