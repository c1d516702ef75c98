"""kvlint's command line behaves as a ruff user expects: each test runs `kvlint check ...` as
a user would type it (through the CLI's main, or the installed `kvlint` command)."""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from kvlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json").read_text())
KV101_BAD = ROOT / "fixtures" / "fixes" / "kv101_rename.in.py"  # 2x KV101 (safe fixes)
MASK = ROOT / "fixtures" / "fixes" / "kv205_bool_mask.in.py"  # 2x KV205 (safe fixes)
UNSAFE = ROOT / "fixtures" / "fixes" / "unsafe_kv202_right_down.in.py"  # KV202 (unsafe fix)

V1_SCALE_AS_V2 = """\
import torch_npu


def f(q, k, v):
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, softmax_scale=0.1)
    return out
"""
NO_SCALE = """\
import torch_npu


def f(q, k, v):
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, input_layout="BSH")
    return out
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    shutil.copy(KV101_BAD, tmp_path / "bad.py")
    shutil.copy(MASK, tmp_path / "mask.py")
    shutil.copy(UNSAFE, tmp_path / "unsafe.py")
    (tmp_path / "good.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def kvlint(capsys, *args):
    code = main(["check", "--isolated", "--no-cache", *args])
    out, err = capsys.readouterr()
    return code, out, err


def finding_codes(out):
    return [line.split(": ")[1].split()[0] for line in out.splitlines() if re.match(r"\S+:\d+:\d+: KV", line)]


# -- selection flags accumulate; --output-format ---------------------------------------------
def test_repeated_select_ignore_and_extend_select_accumulate(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "mask.py", "--select", "KV101", "--select", "KV205",
                          "--format", "concise")
    assert finding_codes(out) == ["KV101", "KV101", "KV205", "KV205"]
    code, out, _ = kvlint(capsys, "bad.py", "mask.py", "--ignore", "KV1", "--ignore", "KV205",
                          "--format", "concise")
    assert code == 0 and finding_codes(out) == []
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV2", "--extend-select", "KV900",
                          "--extend-select", "KV101", "--format", "concise")
    assert finding_codes(out) == ["KV101", "KV101"]


def test_repeated_per_file_ignores_accumulate(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "mask.py", "--select", "KV101,KV205", "--format", "concise",
                          "--per-file-ignores", "bad.py:KV101", "--per-file-ignores", "mask.py:KV2")
    assert code == 0 and finding_codes(out) == []
    code, out, err = kvlint(capsys, "bad.py", "--per-file-ignores", "bad.py")
    assert code == 2 and "expected GLOB:CODE" in err


def test_output_format_is_accepted_as_ruff_spells_it(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--output-format", "concise")
    assert code == 1 and out.splitlines()[0].startswith("bad.py:12:9: KV101 [*] ")
    code, full, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--output-format", "full")
    code, text, _ = kvlint(capsys, "bad.py", "--select", "KV101")
    assert full == text


# -- summary lines ---------------------------------------------------------------------------
def test_summary_lines_as_ruff(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--no-source")
    assert out.splitlines()[-2:] == ["Found 2 errors.", "[*] 2 fixable with the `--fix` option."]
    code, out, _ = kvlint(capsys, "good.py")
    assert out == "All checks passed!\n"
    code, out, _ = kvlint(capsys, "unsafe.py", "--select", "KV202", "--format", "concise")
    assert out.splitlines()[-2:] == [
        "Found 1 error.", "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)."]
    code, out, _ = kvlint(capsys, "unsafe.py", "bad.py", "--select", "KV202,KV101", "--format", "concise")
    assert out.splitlines()[-1] == ("[*] 2 fixable with the `--fix` option "
                                    "(1 hidden fix can be enabled with the `--unsafe-fixes` option).")
    code, out, _ = kvlint(capsys, "unsafe.py", "--select", "KV202", "--format", "concise", "--unsafe-fixes")
    assert out.splitlines()[-1] == "[*] 1 fixable with the `--fix` option."
    assert "KV202 [*] " in out


def test_summary_after_fix(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "unsafe.py", "--select", "KV101,KV202", "--fix")
    assert code == 1
    assert out.splitlines()[-2:] == [
        "Found 3 errors (2 fixed, 1 remaining).",
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)."]
    code, out, _ = kvlint(capsys, "unsafe.py", "--select", "KV202", "--fix", "--unsafe-fixes", "--format", "concise")
    assert code == 0 and out == "Found 1 error (1 fixed, 0 remaining).\n"


def test_diff_says_would_fix(work, capsys):
    code, out, err = kvlint(capsys, "bad.py", "--select", "KV101", "--diff")
    assert code == 1 and out.startswith("--- a/bad.py") and err == "Would fix 2 errors.\n"


def test_marker_right_after_the_code_and_help_line(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101")
    lines = out.splitlines()
    assert lines[0].startswith("bad.py:12:9: KV101 [*] `softmax_scale` is the FA v2 name")
    assert lines[3].strip() == "= help: Rename `softmax_scale` to `scale`"
    code, out, _ = kvlint(capsys, "unsafe.py", "--select", "KV202", "--no-source")
    first, help_line = out.splitlines()[:2]
    assert first.startswith("unsafe.py:") and " KV202 sparse_mode=2 is left-up causal" in first
    assert "; use sparse_mode=3" not in first  # the remedy is on its own line
    assert help_line.strip().startswith("= help: Use sparse_mode=3 (right-down causal)")


def test_quiet_has_no_summary(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--format", "concise", "-q")
    assert code == 1 and len(out.splitlines()) == 2 and "Found" not in out


# -- --statistics ----------------------------------------------------------------------------
def test_statistics_as_json_and_into_the_output_file(work, capsys):
    code, out, _ = kvlint(capsys, ".", "--select", "KV101,KV202", "--statistics", "--format", "json")
    assert code == 1
    assert json.loads(out) == [
        {"code": "KV101", "name": "fa-other-version-keyword", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "KV202", "name": "left-up-causal-mode", "count": 1, "fixable": False, "fixable_count": 0}]
    code, out, _ = kvlint(capsys, ".", "--select", "KV101", "--statistics", "--output-file", "stats.txt")
    assert out == "" and (work / "stats.txt").read_text().splitlines()[0] == "2\tKV101\t[*] fa-other-version-keyword"
    code, out, err = kvlint(capsys, ".", "--statistics", "--format", "sarif", "--output-file", "k.sarif")
    assert code == 2 and "--statistics" in err and not (work / "k.sarif").exists()


# -- gitignore, --force-exclude --------------------------------------------------------------
@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    for rel in ("app/model.py", "app/generated/gen.py", "scratch.py", "keep/scratch.py", "vendor/lib.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(KV101_BAD, tmp_path / rel)
    (tmp_path / ".gitignore").write_text("scratch.py\n!keep/scratch.py\n")
    (tmp_path / "app" / ".gitignore").write_text("generated/\n")
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\nselect = ['KV101']\nextend-exclude = ['vendor']\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def checked_files(capsys, *args):
    main(["check", "--no-cache", "--format", "json", *args])
    captured = capsys.readouterr()
    return sorted({f["path"] for f in json.loads(captured.out)["findings"]}), captured.err


def test_gitignore_is_respected_by_default(repo, capsys):
    files, _ = checked_files(capsys, ".")
    assert files == ["app/model.py", "keep/scratch.py"]
    files, _ = checked_files(capsys, ".", "--no-respect-gitignore")
    assert files == ["app/generated/gen.py", "app/model.py", "keep/scratch.py", "scratch.py"]


def test_named_files_are_checked_unless_force_exclude_and_then_it_says_why(repo, capsys):
    files, err = checked_files(capsys, "vendor/lib.py", "scratch.py", "app/model.py")
    assert files == ["app/model.py", "scratch.py", "vendor/lib.py"] and err == ""
    files, err = checked_files(capsys, "vendor/lib.py", "scratch.py", "app/model.py", "--force-exclude")
    assert files == ["app/model.py"]
    assert "vendor/lib.py not checked: excluded by `extend-exclude` in " in err
    assert 'pattern "vendor"' in err
    assert "scratch.py not checked: ignored by .gitignore" in err
    files, err = checked_files(capsys, "app/model.py", "--force-exclude", "--extend-exclude", "app")
    assert files == [] and 'excluded by --extend-exclude pattern "app"' in err
    files, err = checked_files(capsys, "app/generated/gen.py", "--force-exclude")  # an ignored folder
    assert files == [] and "app/generated/gen.py not checked: ignored by .gitignore" in err
    files, err = checked_files(capsys, "scratch.py", "--force-exclude", "--no-respect-gitignore")
    assert files == ["scratch.py"] and err == ""


def test_precommit_hook_sets_force_exclude():
    manifest = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert re.search(r"^\s*entry: kvlint check --force-exclude\s*$", manifest, re.M)


# -- KV900 as RUF100; file-level noqa --------------------------------------------------------
NOQA_SRC = """\
import torch_npu


def f(q, k, v):
    a, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1)  # noqa
    b, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1)  # noqa: KV205
    c, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, softmax_scale=0.1)  # noqa
    return a, b, c  # noqa: E501
"""


def test_kv900_reports_blanket_and_non_enabled_noqa(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(NOQA_SRC)
    code, out, _ = kvlint(capsys, "m.py", "--select", "KV1", "--extend-select", "KV900", "--format", "concise")
    assert out.splitlines()[:2] == [
        "m.py:5:88: KV900 unused blanket `noqa` directive",
        "m.py:6:88: KV900 [*] unused `noqa` directive (non-enabled: `KV205`)"]
    assert len(out.splitlines()) == 2 + 2  # line 7's noqa is used; E501 is another tool's
    code, out, _ = kvlint(capsys, "m.py", "--extend-select", "KV900", "--format", "concise", "-q")
    assert out.splitlines()[1] == "m.py:6:88: KV900 [*] unused `noqa` directive (unused: `KV205`)"


def test_kv900_blanket_removal_is_unsafe(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(NOQA_SRC)
    kvlint(capsys, "m.py", "--extend-select", "KV900", "--fix")
    assert (tmp_path / "m.py").read_text().splitlines()[4].endswith("scale=0.1)  # noqa")
    kvlint(capsys, "m.py", "--extend-select", "KV900", "--fix", "--unsafe-fixes")
    lines = (tmp_path / "m.py").read_text().splitlines()
    assert lines[4].endswith("scale=0.1)") and lines[5].endswith("scale=0.1)")
    assert lines[6].endswith("# noqa") and lines[7].endswith("# noqa: E501")


@pytest.mark.parametrize("directive, left", [
    ("# kvlint: noqa", []),
    ("# kvlint: noqa: KV1", []),
    ("# kvlint: noqa: KV101", ["KV103"]),
    ("# KVLINT: NOQA: kv103, KV2", ["KV101"]),
    ("x = '# kvlint: noqa'", ["KV103", "KV101"]),  # a string, not a comment
])
def test_file_level_noqa(tmp_path, capsys, directive, left):
    path = tmp_path / "m.py"
    path.write_text(directive + "\n" + NO_SCALE + textwrap.dedent("""

        def g(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1, actual_seq_qlen=[1])
    """))
    code, out, _ = kvlint(capsys, str(path), "--format", "json", "--select", "KV101,KV103")
    codes = sorted({f["code"] for f in json.loads(out)["findings"]}, key=["KV103", "KV101"].index)
    assert codes == left


# -- JSON url and fix, json-lines, gitlab, SARIF ---------------------------------------------
def test_json_lines(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "mask.py", "--select", "KV101,KV205", "--format", "json-lines")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["code"] for r in rows] == ["KV101", "KV101", "KV205", "KV205"]
    assert rows[0]["url"].endswith("/docs/rules/KV101.md")
    assert rows[0]["fix"]["applicability"] == "safe" and rows[0]["fix"]["edits"][0]["content"] == "scale"


def test_gitlab_code_quality(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--format", "gitlab")
    issues = json.loads(out)
    assert code == 1 and len(issues) == 2
    first = issues[0]
    assert set(first) == {"check_name", "description", "severity", "fingerprint", "location"}
    assert first["check_name"] == "KV101" and first["severity"] == "major"
    assert first["location"] == {"path": "bad.py", "lines": {"begin": 12, "end": 12}}
    assert len({i["fingerprint"] for i in issues}) == 2
    _, again, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--format", "gitlab")
    assert again == out  # fingerprints are stable


def test_sarif_information_and_help_uris(work, capsys):
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    urls = {r["id"]: r["helpUri"] for r in driver["rules"]}
    assert urls["KV101"].startswith("https://") and urls["KV101"].endswith("/docs/rules/KV101.md")
    assert len(set(urls.values())) == len(urls)


# -- configuration ---------------------------------------------------------------------------
def test_misplaced_heuristic_key_fails_with_a_hint(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\nprefill-function-words = ['encode_step']\n")
    shutil.copy(KV101_BAD, tmp_path / "m.py")
    assert main(["check", str(tmp_path / "m.py")]) == 2
    err = capsys.readouterr().err
    assert "unknown key `prefill-function-words`: it is a heuristics option; put it under " \
           "[tool.kvlint.heuristics]" in err


def test_show_settings_for_a_file_lists_the_rules_in_effect(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.kvlint]
        select = ["KV1", "KV205"]
        [tool.kvlint.per-file-ignores]
        "tests/*.py" = ["KV10"]
    """))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("")
    assert main(["check", "--show-settings", "tests/t.py"]) == 0
    out = capsys.readouterr().out
    assert '# per-file-ignores matching tests/t.py: "tests/*.py" = ["KV10"]' in out
    in_effect = out.split("# rules in effect for tests/t.py: ")[1].splitlines()[0].split(", ")
    assert "KV101" not in in_effect and "KV131" in in_effect and "KV205" in in_effect
    assert all(c.startswith("KV1") or c == "KV205" for c in in_effect)
    assert main(["check", "--show-settings", "model.py"]) == 0
    out = capsys.readouterr().out
    assert "# rules in effect for model.py: " in out and "KV101" in out.split("# rules in effect")[1]


def test_installed_command_end_to_end(work):
    """The `kvlint` console script of this environment, as a user runs it."""
    exe = shutil.which("kvlint", path=os.path.dirname(sys.executable)) or shutil.which("kvlint")
    assert exe, "the kvlint command is not installed (pip install -e .)"
    proc = subprocess.run([exe, "check", "--isolated", "--no-cache", "--select", "KV101", "--select", "KV205",
                           "--output-format", "concise", "bad.py", "mask.py"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-2:] == ["Found 4 errors.", "[*] 4 fixable with the `--fix` option."]


def test_rule_pages_show_heuristic_options_where_they_live(tmp_path, capsys):
    from kvlint.catalog import load_catalog
    from kvlint.rule_docs import heuristic_options

    pages = [code for code, info in load_catalog().rules.items() if heuristic_options(info)]
    assert "KV203" in pages and "KV401" in pages
    for code in pages:
        page = (ROOT / "docs" / "rules" / f"{code}.md").read_text()
        block = page.split("```toml\n")[1].split("```")[0]
        assert block.startswith("[tool.kvlint.heuristics]\n")
        # the snippet, with a word filled in, is a configuration kvlint accepts
        (tmp_path / "pyproject.toml").write_text(block.replace('["..."]', '["my_word"]'))
        (tmp_path / "m.py").write_text("")
        assert main(["check", "--no-cache", str(tmp_path / "m.py")]) == 0, capsys.readouterr().err
        capsys.readouterr()


def test_docs_snippets_pin_a_real_rev_and_grant_code_scanning():
    from kvlint import __version__
    from kvlint.links import HOMEPAGE

    for doc in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        text = doc.read_text()
        assert re.search(rf"- repo: {re.escape(HOMEPAGE)}\s.*\n\s+rev: v{re.escape(__version__)}\s", text), doc
        assert "<org>" not in text
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    assert "security-events: write" in guide and "upload-sarif" in guide
    assert "clones the hook repository" in guide


def test_json_fix_edits_reproduce_what_fix_writes(work, capsys):
    """A tool applying the JSON `fix` edits (1-based columns, end exclusive) gets the file
    `--fix` writes."""
    from kvlint.analysis.findings import Edit, Fix
    from kvlint.fix import apply_fixes

    src = (work / "bad.py").read_text()
    code, out, _ = kvlint(capsys, "bad.py", "--select", "KV101", "--format", "json")
    fixes = [Fix(f["fix"]["message"], tuple(
        Edit((e["location"]["row"], e["location"]["column"] - 1),
             (e["end_location"]["row"], e["end_location"]["column"] - 1), e["content"])
        for e in f["fix"]["edits"])) for f in json.loads(out)["findings"]]
    by_json, applied = apply_fixes(src, fixes)
    assert len(applied) == 2
    kvlint(capsys, "bad.py", "--select", "KV101", "--fix")
    assert (work / "bad.py").read_text() == by_json != src
