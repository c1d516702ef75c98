"""`kvlint check`: exit codes, discovery, selection, noqa, output shapes."""
import json
import subprocess
import sys

import pytest

from kvlint.cli import main

BAD = """\
import torch_npu


def f(q, k, v):
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, softmax_scale=0.1)
    return out
"""
GOOD = BAD.replace("softmax_scale", "scale")


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "model.py").write_text(BAD)
    (tmp_path / "ok.py").write_text(GOOD)
    for skipped in (".git", ".venv", "build", "__pycache__", "node_modules"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x.py").write_text(BAD)
    venv = tmp_path / "myenv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "y.py").write_text(BAD)
    return tmp_path


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_codes_and_discovery(tree, capsys):
    code, out, _ = run(["check", str(tree), "--format", "json"], capsys)
    assert code == 1
    data = json.loads(out)
    assert data["files"] == 2  # skipped folders and the virtualenv are not walked
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in data["findings"]] == [
        (str(tree / "model.py"), 5, 78, "KV101")]  # one mistake, one finding: no KV103
    code, out, _ = run(["check", str(tree / "ok.py")], capsys)
    assert code == 0 and "All checks passed" in out


def test_explicit_file_in_a_skipped_folder_is_checked(tree, capsys):
    code, out, _ = run(["check", str(tree / "build" / "x.py"), "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["files"] == 1


def test_missing_path_and_unknown_option_are_usage_errors(tree, capsys):
    code, _, err = run(["check", str(tree / "nope.py")], capsys)
    assert code == 2 and "no such file" in err
    code, _, err = run(["check", "--no-such-option"], capsys)
    assert code == 2 and "unrecognized arguments" in err
    code, _, err = run(["check", str(tree), "--select", "KV999"], capsys)
    assert code == 2 and "unknown rule code" in err


@pytest.mark.parametrize("args, codes", [
    (["--select", "KV101"], ["KV101"]),
    (["--select", "KV1"], ["KV101"]),
    (["--ignore", "KV101"], ["KV103"]),  # KV101 off: the scale is then reported as missing
    (["--select", "KV2"], []),
])
def test_select_and_ignore_by_code_and_prefix(tree, capsys, args, codes):
    code, out, _ = run(["check", str(tree / "model.py"), "--format", "json", *args], capsys)
    assert [f["code"] for f in json.loads(out)["findings"]] == codes
    assert code == (1 if codes else 0)


@pytest.mark.parametrize("comment, left", [
    ("  # noqa", []),
    ("  # noqa: KV101", []),
    ("  # noqa: KV1", []),
    ("  # noqa: KV2", ["KV101"]),
    ("  # NOQA:KV103,KV101", []),
])
def test_noqa_on_the_reported_line(tmp_path, capsys, comment, left):
    path = tmp_path / "m.py"
    path.write_text(BAD.replace("softmax_scale=0.1)", "softmax_scale=0.1)" + comment))
    _, out, _ = run(["check", str(path), "--format", "json"], capsys)
    assert [f["code"] for f in json.loads(out)["findings"]] == left


def test_noqa_on_the_first_line_of_a_multiline_statement(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(
        "import torch_npu\n\n"
        "out = torch_npu.npu_fused_infer_attention_score(  # noqa: KV101\n"
        "    q, k, v, scale=0.1,\n"
        "    actual_seq_qlen=[1])\n")
    _, out, _ = run(["check", str(path), "--format", "json"], capsys)
    assert [(f["line"], f["code"]) for f in json.loads(out)["findings"]] == [(3, "KV104")]


def test_noqa_inside_a_string_does_not_suppress(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(BAD.replace("softmax_scale=0.1)", "softmax_scale=0.1, input_layout='# noqa')"))
    _, out, _ = run(["check", str(path), "--format", "json"], capsys)
    assert [f["code"] for f in json.loads(out)["findings"]] == ["KV101"]


def test_json_shape(tree, capsys):
    _, out, _ = run(["check", str(tree / "model.py"), "--format", "json"], capsys)
    data = json.loads(out)
    assert set(data) == {"kvlint", "files", "findings", "errors"}
    f = data["findings"][0]
    assert set(f) == {"path", "line", "column", "end_line", "end_column", "code", "severity", "message", "fixable",
                      "help", "url", "fix"}
    assert (f["line"], f["column"], f["end_column"], f["fixable"]) == (5, 78, 95, True)
    assert "`scale`" in f["message"]
    assert f["url"].endswith("/docs/rules/KV101.md")
    assert f["help"] == "Rename `softmax_scale` to `scale`"
    assert f["fix"] == {"applicability": "safe", "message": "rename `softmax_scale` to `scale`",
                        "edits": [{"content": "scale", "location": {"row": 5, "column": 78},
                                   "end_location": {"row": 5, "column": 91}}]}


def test_text_output_has_location_source_and_caret(tree, capsys):
    _, out, _ = run(["check", str(tree / "model.py"), "--select", "KV101"], capsys)
    lines = out.splitlines()
    assert lines[0].startswith(f"{tree / 'model.py'}:5:78: KV101 ")
    assert "softmax_scale=0.1" in lines[1]
    assert lines[2].strip() == "^" * 17
    assert "\x1b[" not in out  # no colour when not a terminal


def test_kv000_for_a_file_that_does_not_parse(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("import torch_npu\ndef f(:\n    torch_npu.npu_fused_infer_attention_score(q)\n")
    code, out, _ = run(["check", str(path), "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 1 and [(f["code"], f["line"]) for f in data["findings"]] == [("KV000", 2)]


def test_python_dash_m_and_rule_command():
    proc = subprocess.run([sys.executable, "-m", "kvlint", "rule", "KV101"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "## What it detects" in proc.stdout and "## Why it is a bug" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "kvlint", "rule", "KV999"], capture_output=True, text=True)
    assert proc.returncode == 2


def test_the_checker_never_imports_the_checked_code(tmp_path, capsys):
    marker = tmp_path / "imported"
    path = tmp_path / "evil.py"
    path.write_text(f"import torch_npu\nopen({str(marker)!r}, 'w').write('x')\n"
                    "torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=1, scale=1.0)\n")
    run(["check", str(path)], capsys)
    assert not marker.exists()
    # the static checker itself imports no torch (a fresh interpreter: this one may have it)
    proc = subprocess.run([sys.executable, "-c", "import sys, kvlint.cli as c; c.main(['check', %r]);"
                           "print('torch' in sys.modules)" % str(path)], capture_output=True, text=True)
    assert proc.stdout.strip().endswith("False")
