"""`--format json`: `{"kvlint": version, "files": N, "findings": [...], "errors": [...]}`.

Each finding: path, line, column, end_line, end_column (1-based), code, severity, message,
fixable, `help` (the remedy, or null), `url` (the rule's documentation page) and `fix`:
null, or ruff's shape `{"applicability": "safe"|"unsafe", "message": ..., "edits": [{"content",
"location": {"row", "column"}, "end_location": {"row", "column"}}]}` with 1-based columns,
the end exclusive. A finding of a named heuristic branch of its rule also has `branch`."""
import json

from kvlint import __version__
from kvlint.analysis.findings import Finding
from kvlint.report import Report, rule_url, split_help


def fix_json(f: Finding):
    if f.fix is None:
        return None
    return {"applicability": "safe" if f.fix.safe else "unsafe", "message": f.fix.description,
            "edits": [{"content": e.text, "location": {"row": e.start[0], "column": e.start[1] + 1},
                       "end_location": {"row": e.end[0], "column": e.end[1] + 1}} for e in f.fix.edits]}


def finding_json(f: Finding) -> dict:
    out = {"path": f.path, "line": f.line, "column": f.column, "end_line": f.end_line,
           "end_column": f.end_column, "code": f.code, "severity": f.severity,
           "message": f.message, "fixable": f.fixable, "help": split_help(f)[1],
           "url": rule_url(f.code), "fix": fix_json(f)}
    if f.branch:
        out["branch"] = f.branch  # the rule's heuristic branch (`kvlint rule CODE` lists them)
    return out


def render(report: Report) -> str:
    return json.dumps({
        "kvlint": __version__,
        "files": report.files,
        "findings": [finding_json(f) for f in report.findings],
        "errors": report.errors,
    }, indent=2) + "\n"
