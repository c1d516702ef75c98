"""Helpers for rule fixtures: `fixtures/rules/KVnnn/{bad.py, bad.expected, good.py}`.

`bad.expected` lists every finding kvlint (all rules on, preview included) reports on `bad.py`, one per line,
`LINE:COL CODE`, sorted. `good.py` must produce no finding at all. Regenerate an expected
file after reviewing the output: `python -m kvlint.testing fixtures/rules/KV101/bad.py`.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List

from kvlint.engine import Checker
from kvlint.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def all_on_settings() -> Settings:
    return Settings(extend_select=("ALL",), preview=True)


def findings_lines(path: Path) -> List[str]:
    result = Checker(all_on_settings()).check_path(str(path))
    if result.errors:
        raise AssertionError("internal errors: " + "; ".join(result.errors))
    return [f"{f.line}:{f.column} {f.code}" for f in result.findings]


def main(argv: List[str]) -> int:
    for arg in argv:
        print("\n".join(findings_lines(Path(arg))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
