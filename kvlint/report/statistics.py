"""`--statistics`: how many findings per code, as ruff prints them: `count\tcode\t[*] name`
(`[-]` when only some are fixable, `[ ]` when none) for the text formats, and with
`--format json` ruff's list of `{code, name, count, fixable, fixable_count}`."""
import json
from collections import Counter
from typing import List

from kvlint.catalog import load_catalog
from kvlint.report import Report, applicable


def rows(report: Report) -> List[dict]:
    counts = Counter(f.code for f in report.findings)
    fixable = Counter(f.code for f in report.findings if applicable(f, report.unsafe_fixes))
    rules = load_catalog().rules
    return [{"code": code, "name": rules[code].name if code in rules else "", "count": n,
             "fixable": fixable[code] > 0, "fixable_count": fixable[code]}
            for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def render(report: Report) -> str:
    table = rows(report)
    width = max((len(str(r["count"])) for r in table), default=1)
    code_width = max((len(r["code"]) for r in table), default=1)
    lines = []
    for r in table:
        mark = "[*]" if r["fixable_count"] == r["count"] else ("[-]" if r["fixable_count"] else "[ ]")
        lines.append(f"{r['count']:>{width}}\t{r['code']:<{code_width}}\t{mark} {r['name']}".rstrip())
    return "".join(line + "\n" for line in lines)


def render_json(report: Report) -> str:
    return json.dumps(rows(report), indent=2) + "\n"
