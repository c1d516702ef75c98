"""`# noqa` and `# noqa: KV101,KV2` comments, read from real comment tokens."""
from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, Optional, Set, Tuple

from kvlint.analysis.findings import Finding
from kvlint.settings import code_matches
from kvlint.source import SourceFile

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)
HAS_NOQA = re.compile("noqa", re.IGNORECASE)
ALL = None  # a bare `# noqa`


class NoqaIndex:
    def __init__(self, source: SourceFile):
        self.by_line: Dict[int, Optional[Set[str]]] = {}
        self.comments: Dict[int, Tuple[int, str]] = {}  # line -> (column, comment text), for KV900
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
        m = NOQA.search(comment)
        if not m:
            return
        self.comments[line] = (column, comment)
        codes = m.group("codes")
        if codes is None:
            self.by_line[line] = ALL
        elif self.by_line.get(line, set()) is not ALL:
            self.by_line.setdefault(line, set()).update(c.upper() for c in re.split(r"[\s,]+", codes) if c)

    def suppresses(self, finding: Finding) -> bool:
        for line in finding.noqa_lines or (finding.line,):
            if line in self.by_line:
                codes = self.by_line[line]
                if codes is ALL or code_matches(finding.code, codes):
                    return True
        return False
