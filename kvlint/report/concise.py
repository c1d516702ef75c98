"""`--format concise`: one line per finding, `path:line:col: CODE [*] message` (errors go to
the same stream, prefixed `error:`), then ruff's summary lines (not with --quiet)."""
from kvlint.report import Report, marker, summary_lines


def render(report: Report, with_summary: bool = True) -> str:
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code}{marker(f, report.unsafe_fixes)} {f.message}"
             for f in report.findings]
    lines += [f"error: {e}" for e in report.errors]
    if with_summary:
        lines += summary_lines(report)
    return "".join(line + "\n" for line in lines)
