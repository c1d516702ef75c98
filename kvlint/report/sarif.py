"""`--format sarif`: SARIF 2.1.0 (validated against the OASIS schema in tests/test_formats.py).

`tool.driver.rules` carries every rule of the catalog (id, name, descriptions, the full
`kvlint rule` text as help, `helpUri`: its docs page, default level; the driver carries the
`informationUri`); each result points at its rule by id and index,
with a region in Unicode code points (`columnKind`) and an artifact URI relative to the
current folder (`uriBaseId` %SRCROOT%); fixes are attached as SARIF `fixes`.
"""
import json
import os
from pathlib import Path
from typing import Dict

from kvlint import __version__
from kvlint.analysis.findings import Finding
from kvlint.catalog import RuleInfo, load_catalog
from kvlint.links import HOMEPAGE as INFO_URI
from kvlint.links import rule_url
from kvlint.report import Report
from kvlint.rule_docs import render_rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _rule(info: RuleInfo) -> dict:
    text = render_rule(info)
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.what},
        "help": {"text": text, "markdown": text},
        "helpUri": rule_url(info.code),
        "defaultConfiguration": {"level": LEVELS.get(info.severity, "error"),
                                 "enabled": info.enabled_by_default},
        "properties": {"fix": info.fix, "checked": list(info.checked)},
    }


def _artifact(path: str, root: str) -> dict:
    full = os.path.abspath(path)
    rel = os.path.relpath(full, root) if not os.path.splitdrive(full)[0] or \
        os.path.splitdrive(full)[0] == os.path.splitdrive(root)[0] else full
    if rel.startswith(".."):
        return {"uri": Path(full).as_uri()}
    return {"uri": Path(rel).as_posix(), "uriBaseId": "%SRCROOT%"}


def _result(f: Finding, index: Dict[str, int], root: str) -> dict:
    artifact = _artifact(f.path, root)
    result = {
        "ruleId": f.code,
        "level": LEVELS.get(f.severity, "error"),
        "message": {"text": f.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": artifact,
            "region": {"startLine": f.line, "startColumn": f.column,
                       "endLine": f.end_line, "endColumn": max(f.end_column, 1)},
        }}],
    }
    if f.code in index:
        result["ruleIndex"] = index[f.code]
    if f.fix is not None:
        result["fixes"] = [{
            "description": {"text": f.fix.description + ("" if f.fix.safe else " (unsafe)")},
            "artifactChanges": [{"artifactLocation": artifact, "replacements": [
                {"deletedRegion": {"startLine": e.start[0], "startColumn": e.start[1] + 1,
                                   "endLine": e.end[0], "endColumn": e.end[1] + 1},
                 "insertedContent": {"text": e.text}}
                for e in f.fix.edits]}],
        }]
    return result


def render(report: Report) -> str:
    catalog = load_catalog()
    codes = sorted(catalog.rules)
    index = {c: i for i, c in enumerate(codes)}
    root = os.getcwd()
    run = {
        "tool": {"driver": {"name": "kvlint", "version": __version__, "informationUri": INFO_URI,
                            "rules": [_rule(catalog.rules[c]) for c in codes]}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(root).as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index, root) for f in report.findings],
        "invocations": [{
            "executionSuccessful": not report.errors,
            "toolExecutionNotifications": [{"level": "error", "message": {"text": e}}
                                           for e in report.errors],
        }],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
