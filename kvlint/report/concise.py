"""`--format concise`: one line per finding, `path:line:col: CODE message`, nothing else
(errors go to the same stream, prefixed `error:`)."""
from kvlint.report import Report, safe_fixable


def render(report: Report) -> str:
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code}{' [*]' if safe_fixable(f) else ''} {f.message}"
             for f in report.findings]
    lines += [f"error: {e}" for e in report.errors]
    return "".join(line + "\n" for line in lines)
