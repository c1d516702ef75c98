"""`--format json`."""
import json

from kvlint import __version__
from kvlint.report import Report


def render(report: Report) -> str:
    return json.dumps({
        "kvlint": __version__,
        "files": report.files,
        "findings": [
            {"path": f.path, "line": f.line, "column": f.column, "end_line": f.end_line,
             "end_column": f.end_column, "code": f.code, "severity": f.severity,
             "message": f.message, "fixable": f.fixable}
            for f in report.findings
        ],
        "errors": report.errors,
    }, indent=2) + "\n"
