"""`--format gitlab`: a GitLab Code Quality report (a JSON list; `artifacts: reports:
codequality:` in .gitlab-ci.yml), one issue per finding: `check_name` (the code),
`description` (`CODE message`), `severity` (major for errors, minor for warnings, info),
`fingerprint` (stable across runs: path relative to the current folder, code, message and a
counter for repeats, not the line), `location.path` and `location.lines.begin/end`."""
import hashlib
import json
import os
import sys
from collections import Counter

from kvlint.report import Report

SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def _relative(path: str) -> str:
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full)
    except ValueError:
        return full.replace(os.sep, "/")
    return (full if rel.startswith("..") else rel).replace(os.sep, "/")


def render(report: Report) -> str:
    for e in report.errors:
        print(f"kvlint: error: {e}", file=sys.stderr)
    issues, seen = [], Counter()
    for f in report.findings:
        path = _relative(f.path)
        key = (path, f.code, f.message)
        seen[key] += 1
        fingerprint = hashlib.sha256("\0".join([*key, str(seen[key])]).encode()).hexdigest()[:32]
        issues.append({"check_name": f.code, "description": f"{f.code} {f.message}",
                       "severity": SEVERITIES.get(f.severity, "major"), "fingerprint": fingerprint,
                       "location": {"path": path, "lines": {"begin": f.line, "end": f.end_line}}})
    return json.dumps(issues, indent=2) + "\n"
