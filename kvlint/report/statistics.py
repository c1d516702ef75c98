"""`--statistics`: how many findings per code, ruff-like: `count  code  [*]  name`."""
from collections import Counter

from kvlint.catalog import load_catalog
from kvlint.report import Report, safe_fixable


def render(report: Report) -> str:
    counts = Counter(f.code for f in report.findings)
    fixable = Counter(f.code for f in report.findings if safe_fixable(f))
    rules = load_catalog().rules
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] == n else ("[-]" if fixable[code] else "   ")
        name = rules[code].name if code in rules else ""
        lines.append(f"{n:>{width}}\t{code}\t{mark} {name}".rstrip())
    return "".join(line + "\n" for line in lines)
