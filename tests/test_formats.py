"""Output formats: concise, github, sarif (validated against the SARIF 2.1.0 schema), junit,
json (schema kept), --statistics, --output-file, --quiet, --exit-zero."""
import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from kvlint.analysis.findings import Finding
from kvlint.cli import main
from kvlint.report import Report
from kvlint.report.github import escape_data, escape_property
from kvlint.report.github import render as render_github

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text())
BAD = ROOT / "fixtures" / "fixes" / "kv101_rename.in.py"  # one KV101 per call, both fixable
MASK = ROOT / "fixtures" / "fixes" / "kv205_bool_mask.in.py"


@pytest.fixture
def work(tmp_path, monkeypatch):
    shutil.copy(BAD, tmp_path / "bad.py")
    shutil.copy(MASK, tmp_path / "mask.py")
    (tmp_path / "good.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args):
    # a fixed rule set: new rules elsewhere must not change these outputs
    code = main(["check", "--isolated", "--select", "KV101,KV205", *args])
    return code, capsys.readouterr().out


def test_concise(work, capsys):
    code, out = run(capsys, "bad.py", "--format", "concise")
    assert code == 1
    assert out.splitlines() == [
        "bad.py:12:9: KV101 [*] `softmax_scale` is the FA v2 name; npu_fused_infer_attention_score (v1) "
        "takes `scale`: this call raises when it first runs",
        "bad.py:14:15: KV101 [*] `softmax_scale` is the FA v2 name (from `**kwargs`); "
        "npu_fused_infer_attention_score (v1) takes `scale`: this call raises when it first runs",
        "Found 2 errors.",
        "[*] 2 fixable with the `--fix` option.",
    ]


def test_github(work, capsys):
    code, out = run(capsys, "bad.py", "--format", "github")
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2
    assert lines[0].startswith("::error file=bad.py,line=12,col=9,endLine=12,endColumn=")
    assert ",title=kvlint (KV101)::KV101 `softmax_scale` is the FA v2 name; " in lines[0]


def test_github_escaping():
    assert escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    f = Finding("dir,x/a:b.py", 1, 2, 1, 3, "KV101", "bad\nthing", "warning")
    assert render_github(Report(1, [f])) == \
        "::warning file=dir%2Cx/a%3Ab.py,line=1,col=2,endLine=1,endColumn=3,title=kvlint (KV101)::KV101 bad%0Athing\n"


def test_sarif_is_valid_and_complete(work, capsys):
    code, out = run(capsys, ".", "--format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    run_ = doc["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert "KV101" in ids and "KV205" in ids
    kv101 = rules[ids.index("KV101")]
    assert kv101["name"] == "fa-other-version-keyword"
    assert kv101["shortDescription"]["text"] and kv101["fullDescription"]["text"]
    assert "## Why it is a bug" in kv101["help"]["markdown"]
    assert kv101["defaultConfiguration"]["level"] == "error"
    results = run_["results"]
    assert {r["ruleId"] for r in results} == {"KV101", "KV205"}
    first = results[0]
    assert ids[first["ruleIndex"]] == first["ruleId"]
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "bad.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == 12 and loc["region"]["startColumn"] == 9
    assert first["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "scale"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file://")


def test_sarif_clean_run_is_valid(work, capsys):
    code, out = run(capsys, "good.py", "--format", "sarif")
    assert code == 0
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["runs"][0]["results"] == []


def test_junit(work, capsys):
    code, out = run(capsys, "bad.py", "mask.py", "--format", "junit")
    root = ET.fromstring(out)
    assert root.tag == "testsuites" and root.get("failures") == "4"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"bad.py", "mask.py"}
    cases = suites["bad.py"].findall("testcase")
    assert len(cases) == 2 and cases[0].find("failure").get("type") == "KV101"
    code, out = run(capsys, "good.py", "--format", "junit")
    root = ET.fromstring(out)
    assert code == 0 and root.get("failures") == "0" and len(root.findall("testsuite/testcase")) == 1


def test_json_schema_kept(work, capsys):
    code, out = run(capsys, "bad.py", "--format", "json")
    doc = json.loads(out)
    assert set(doc) == {"kvlint", "files", "findings", "errors"}
    assert set(doc["findings"][0]) == {"path", "line", "column", "end_line", "end_column", "code",
                                       "severity", "message", "fixable", "help", "url", "fix"}


def test_statistics(work, capsys):
    code, out = run(capsys, ".", "--statistics")
    assert code == 1
    assert out.splitlines() == ["2\tKV101\t[*] fa-other-version-keyword",
                                "2\tKV205\t[*] float-attention-mask",
                                "Found 4 errors.",
                                "[*] 4 fixable with the `--fix` option."]


def test_output_file(work, capsys):
    code, out = run(capsys, "bad.py", "--format", "sarif", "--output-file", "reports/kvlint.sarif")
    assert code == 1 and out == ""
    jsonschema.validate(json.loads((work / "reports" / "kvlint.sarif").read_text()), SCHEMA)


def test_quiet_and_exit_zero(work, capsys):
    code, out = run(capsys, "good.py", "--quiet")
    assert code == 0 and out == ""
    code, out = run(capsys, "good.py")
    assert out.startswith("All checks passed")
    code, out = run(capsys, "bad.py", "--quiet", "--no-source")
    assert code == 1 and "Found" not in out and out.count("KV101") == 2
    code, out = run(capsys, "bad.py", "--exit-zero", "--format", "concise")
    assert code == 0 and out.count("KV101") == 2
