"""Suppression comments, read from real comment tokens (`"# noqa"` in a string does nothing):

- `# noqa` / `# noqa: KV101,KV2` on the reported line or on the first line of the statement;
- `# kvlint: noqa` (every code) / `# kvlint: noqa: KV2` anywhere in a file, for the whole
  file (ruff's `# ruff: noqa`).
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, List, Optional, Set, Tuple

from kvlint.analysis.findings import Finding
from kvlint.settings import code_matches
from kvlint.source import SourceFile

CODES = r"[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*"
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>%s))?" % CODES, re.IGNORECASE)
FILE_NOQA = re.compile(r"#\s*kvlint\s*:\s*noqa(?:\s*:\s*(?P<codes>%s))?" % CODES, re.IGNORECASE)
HAS_NOQA = re.compile("noqa", re.IGNORECASE)
# where str.splitlines breaks a line and tokenize (reading lines up to each newline) does not
OTHER_LINE_BREAK = re.compile("\r(?!\n)|[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
ALL = None  # a bare `# noqa`
UNUSED_NOQA = "KV900"


def split_codes(codes: str) -> List[str]:
    return [c.upper() for c in re.split(r"[\s,]+", codes) if c]


def may_suppress(source: SourceFile, findings: List[Finding]) -> bool:
    """Whether a suppression comment of the file could hide one of `findings`: a
    `# kvlint: noqa` written anywhere in its text, or `noqa` in the text of a line one of them
    names (its `noqa_lines`, else its line). Exact: every comment lies on one line, and its
    text is part of that line's; without such a line, the file is not tokenized (NoqaIndex
    only tells the comments from the strings that look like them; 31 ms for a 70 KB file
    holding ruff's `# noqa: E501`s). A text with another line break (a lone carriage return, a form
    feed, ...) is always tokenized: `source.line` numbers its lines differently."""
    if FILE_NOQA.search(source.text) or OTHER_LINE_BREAK.search(source.text):
        return True
    for finding in findings:
        for line in finding.noqa_lines or (finding.line,):
            if HAS_NOQA.search(source.line(line)):
                return True
    return False


class NoqaIndex:
    def __init__(self, source: SourceFile):
        self.by_line: Dict[int, Optional[Set[str]]] = {}
        self.comments: Dict[int, Tuple[int, str]] = {}  # line -> (column, comment text), for KV900
        self.file_all = False  # `# kvlint: noqa`
        self.file_codes: Set[str] = set()  # `# kvlint: noqa: KV2, KV301`
        if not HAS_NOQA.search(source.text):
            return  # the common case: no need to tokenize (the hot path of every parsed file)
        try:
            tokens = tokenize.generate_tokens(io.StringIO(source.text).readline)
            for tok in tokens:
                if tok.type == tokenize.COMMENT:
                    self._add(tok.start[0], tok.string, tok.start[1])
        except (tokenize.TokenError, SyntaxError, IndentationError):
            for n, line in enumerate(source.lines, 1):
                if "#" in line:
                    self._add(n, line[line.index("#"):], line.index("#"))

    def _add(self, line: int, comment: str, column: int = 0) -> None:
        whole = FILE_NOQA.search(comment)
        if whole:
            if whole.group("codes") is None:
                self.file_all = True
            else:
                self.file_codes.update(split_codes(whole.group("codes")))
            comment = comment[:whole.start()] + " " * (whole.end() - whole.start()) + comment[whole.end():]
        m = NOQA.search(comment)
        if not m:
            return
        self.comments[line] = (column, comment)
        codes = m.group("codes")
        if codes is None:
            self.by_line[line] = ALL
        else:
            known = self.by_line.setdefault(line, set())
            if known is not ALL:
                known.update(split_codes(codes))

    def suppresses_file(self, finding: Finding) -> bool:
        return self.file_all or code_matches(finding.code, self.file_codes)

    def suppresses(self, finding: Finding) -> bool:
        if self.suppresses_file(finding):
            return True
        for line in finding.noqa_lines or (finding.line,):
            if line in self.by_line:
                codes = self.by_line[line]
                if codes is ALL and finding.code != UNUSED_NOQA:
                    return True  # a bare `# noqa` cannot hide the report that it is unused (RUF100)
                if codes is not ALL and code_matches(finding.code, codes):
                    return True
        return False
