"""kvlint never crashes on a bad input; each gets a KV000 finding or is checked, and
the run goes on. Every file below holds an operator name, so the pre-filter lets it through
to the reader, the decoder and the parser."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kvlint.analysis.findings import FileResult
from kvlint.checks.base import Rule
from kvlint.cli import main
from kvlint.engine import Checker
from kvlint.runner import check_files, check_one, read_file
from kvlint.settings import Settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALL = "torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8)\n"  # KV103: no scale
GOOD = "import torch_npu\n" + CALL


def run(paths, jobs=1):
    return check_files([str(p) for p in paths], Settings(), jobs=jobs)


def codes(result: FileResult):
    return [f.code for f in result.findings]


def kv000(result: FileResult) -> str:
    assert codes(result) == ["KV000"], result.findings
    return result.findings[0].message


def test_latin1_without_cookie(tmp_path):
    p = tmp_path / "latin.py"
    p.write_bytes(b"import torch_npu\nname = '\xe9t\xe9'\n" + CALL.encode())
    assert "cannot decode as utf-8" in kv000(run([p])[0])


def test_latin1_with_cookie_is_checked(tmp_path):
    p = tmp_path / "latin.py"
    p.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch_npu\nname = '\xe9t\xe9'\n" + CALL.encode())
    assert codes(run([p])[0]) == ["KV103"]


def test_nul_bytes_and_binary(tmp_path):
    p = tmp_path / "nul.py"
    p.write_bytes(GOOD.encode() + b"\x00\x01\x02\xff" * 100)
    assert "NUL" in kv000(run([p])[0])


def test_bom_crlf_and_tabs(tmp_path):
    p = tmp_path / "bom.py"
    text = "import torch_npu\r\nif True:\r\n\tout = " + CALL.replace("\n", "\r\n")
    p.write_bytes(b"\xef\xbb\xbf" + text.encode())
    (finding,) = run([p])[0].findings
    assert (finding.code, finding.line, finding.column) == ("KV103", 3, 8)


def test_empty_and_blank_files(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "blank.py").write_bytes(b"\n\n   \n")
    results = run([tmp_path / "empty.py", tmp_path / "blank.py"])
    assert [r.findings for r in results] == [[], []] and all(r.checked for r in results)


def test_huge_generated_file_is_refused_not_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(Checker, "max_parse_bytes", 64 * 1024)  # same path as 10 MB, less time
    p = tmp_path / "generated.py"
    p.write_text("import torch_npu\n" + "".join(f"x{i} = [{i}] * 8\n" for i in range(8000)) + CALL)
    message = kv000(run([p])[0])
    assert message.startswith("too large:") and "not parsed" in message


def test_newer_python_syntax(tmp_path):
    p = tmp_path / "new.py"
    p.write_text("import torch_npu\ntype Alias = int\ndef f[T](x: T) -> T:\n    return x\n" + CALL)
    if sys.version_info >= (3, 12):
        assert codes(run([p])[0]) == ["KV103"]
    else:
        assert kv000(run([p])[0]).startswith("cannot parse")


def test_invalid_syntax_reports_the_line(tmp_path):
    p = tmp_path / "broken.py"
    p.write_text("import torch_npu\n" + CALL + "def f(:\n")
    (finding,) = run([p])[0].findings
    assert (finding.code, finding.line) == ("KV000", 3)


@pytest.mark.parametrize("text", [
    "x = " + "(" * 300 + "1" + ")" * 300 + "\n",          # the parser's own limit
    "x = 1" + " + a" * 100_000 + "\n",                     # RecursionError while building the ast
    "x = " + "[" * 150 + "]" * 150 + "\n",
])
def test_deep_nesting(tmp_path, text):
    p = tmp_path / "deep.py"
    p.write_text("import torch_npu\n" + text + CALL)
    result = run([p])[0]
    assert not result.errors
    assert codes(result) in (["KV000"], ["KV103"])


def test_deep_but_valid_nesting_in_an_argument(tmp_path):
    p = tmp_path / "deep_arg.py"
    p.write_text("import torch_npu\nmask = 1" + " + m" * 400 + "\n"
                 "torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1, atten_mask=mask)\n")
    assert not run([p])[0].errors


def test_broken_symlink(tmp_path):
    link = tmp_path / "gone.py"
    link.symlink_to(tmp_path / "missing.py")
    assert "broken symbolic link" in kv000(run([link])[0])


def test_directory_named_py(tmp_path):
    d = tmp_path / "pkg.py"
    d.mkdir()
    assert "directory" in kv000(run([d])[0])
    (d / "inner.py").write_text(GOOD)
    assert main(["check", "--isolated", "--no-cache", str(d)]) == 1  # walked into, inner.py checked


def test_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    # a plain open() of a FIFO with no writer blocks forever: run it in a subprocess with a timeout
    proc = subprocess.run([sys.executable, "-m", "kvlint", "check", "--isolated", "--no-cache", "--no-source",
                           str(fifo), str(good)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert "KV000 cannot read: not a regular file (a FIFO)" in proc.stdout
    assert "KV103" in proc.stdout and proc.returncode == 1


def test_unreadable_file(tmp_path, monkeypatch):
    p = tmp_path / "secret.py"
    p.write_text(GOOD)
    real_open = os.open

    def denied(path, flags, *args, **kwargs):  # tests run as root, where chmod 000 does not stop reads
        if str(path) == str(p):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    assert "Permission denied" in kv000(run([p])[0])


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_unreadable_file_for_real(tmp_path):
    p = tmp_path / "secret.py"
    p.write_text(GOOD)
    p.chmod(0)
    try:
        assert "Permission denied" in kv000(run([p])[0])
    finally:
        p.chmod(0o644)


def test_read_file_never_raises(tmp_path):
    assert read_file(str(tmp_path / "nope.py"))[1] is None
    assert read_file(str(tmp_path))[2].startswith("not a regular file")
    st, data, reason = read_file(os.devnull)
    assert data is None and "device" in reason


class Exploding(Rule):
    code = "KV999"
    operators = ("npu_fused_infer_attention_score",)

    def check_call(self, oc, ctx):
        raise ValueError("boom")


def test_internal_error_in_one_rule_names_file_and_rule(tmp_path):
    p = tmp_path / "m.py"
    p.write_text(GOOD)
    from kvlint.checks import all_rules

    checker = Checker(Settings(), rules=[Exploding()] + all_rules())
    result, _, _ = check_one(checker, str(p))
    assert codes(result) == ["KV103"]  # the other rules still ran
    (error,) = result.errors
    assert str(p) in error and "KV999" in error and "ValueError: boom" in error


def test_the_run_goes_on_and_exit_codes(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_bytes(GOOD.encode() + b"\x00")
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    assert main(["check", "--isolated", "--no-cache", str(bad), str(good)]) == 1
    out = capsys.readouterr().out
    assert "KV000" in out and "KV103" in out
    # nothing could be checked: exit 2
    assert main(["check", "--isolated", "--no-cache", str(bad)]) == 2


def test_a_symlink_out_of_the_root_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.py").write_text(GOOD)
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.py").symlink_to(outside / "target.py")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    assert main(["check", "--isolated", "--no-cache", str(root)]) == 0
