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


def text_change(old: str, new: str, span: Tuple[int, int, int, int]) -> Edit:
    """The edit turning `old`, the text of a node at `span` (line, col, end_line, end_col),
    into `new`, cut down to the part that differs, widened to whole names (`softmax_scale` ->
    `scale`, not `oftmax_`): several fixes on one node then do not overlap and reports show
    the real change."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    word = lambda ch: ch.isalnum() or ch == "_"  # noqa: E731
    while head and word(old[head - 1]):
        head -= 1
    while tail and word(old[len(old) - tail]):
        tail -= 1
    return Edit(text_position(old, span, head), text_position(old, span, len(old) - tail), new[head:len(new) - tail])


def text_position(text: str, span: Tuple[int, int, int, int], offset: int) -> Tuple[int, int]:
    """An offset into the text of a node at `span` -> (line, column) in the file."""
    before = text[:offset]
    newlines = before.count("\n")
    if newlines == 0:
        return span[0], span[1] + offset
    return span[0] + newlines, offset - before.rindex("\n") - 1


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
