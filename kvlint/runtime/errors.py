"""What the guard reports: findings, the exception and the warning category."""
from __future__ import annotations

from dataclasses import dataclass


class ContractError(ValueError):
    """An operator call broke a contract (mode "raise"). `.code`, `.op`, `.argument`, `.finding`."""

    def __init__(self, finding: "Violation"):
        super().__init__(finding.message)
        self.finding = finding
        self.code = finding.code
        self.op = finding.op
        self.argument = finding.argument


class ContractWarning(UserWarning):
    """An operator call broke a contract (mode "warn", or a warning-severity rule)."""


@dataclass(frozen=True)
class Violation:
    """One broken contract of one operator call (the static checker's counterpart is
    kvlint.analysis.findings.Finding)."""

    code: str
    op: str
    argument: str
    expected: str
    given: str
    consequence: str
    site: str  # "file.py:12", the user's call site
    severity: str = "error"

    @property
    def message(self) -> str:
        text = f"{self.code} {self.op}: {self.argument} must be {self.expected}, got {self.given}"
        if self.site:
            text += f" ({self.site})"
        if self.consequence:
            text += f"\n  consequence: {self.consequence}"
        return text

    def __str__(self) -> str:
        return self.message
