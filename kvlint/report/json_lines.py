"""`--format json-lines`: one JSON object per finding per line (the objects of `--format
json`), nothing else; internal errors go to stderr."""
import json
import sys

from kvlint.report import Report
from kvlint.report.json_format import finding_json


def render(report: Report) -> str:
    for e in report.errors:
        print(f"kvlint: error: {e}", file=sys.stderr)
    return "".join(json.dumps(finding_json(f)) + "\n" for f in report.findings)
