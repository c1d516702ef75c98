"""What a rule reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple


@dataclass(frozen=True)
class Edit:
    """Replace the text between two (line, column) positions; 1-based lines, 0-based
    character columns, end exclusive."""

    start: Tuple[int, int]
    end: Tuple[int, int]
    text: str


@dataclass(frozen=True)
class Fix:
    description: str
    edits: Tuple[Edit, ...]
    safe: bool = True


@dataclass
class Finding:
    path: str
    line: int  # 1-based
    column: int  # 1-based, in characters
    end_line: int
    end_column: int
    code: str
    message: str
    severity: str = "error"
    fix: Optional[Fix] = None
    noqa_lines: Tuple[int, ...] = ()  # lines whose `# noqa` suppresses this finding
    source_line: str = ""
    branch: str = ""  # the rule's heuristic branch that found it (`[branches.NAME]`), "" = the rule

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self):
        return (self.path, self.line, self.column, self.code, self.message)


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)  # internal errors, reported, not fatal
    checked: bool = True
    # other modules of the project the findings were computed from: absolute path -> content
    # hash (the result cache re-checks this file when one of them changes)
    dependencies: Dict[str, str] = field(default_factory=dict)
