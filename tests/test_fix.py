"""--fix / --diff / --unsafe-fixes: fixtures/fixes/<name>.in.py -> <name>.out.py pairs.

A name starting with `unsafe_` is fixed with --unsafe-fixes (and must not change without it);
every pair runs with KV900 on. The fixed text must equal the .out.py file exactly, verify with
libcst, and a second --fix must change nothing."""
import os
import shutil
import stat
from pathlib import Path

import libcst
import pytest

from kvlint.analysis.findings import Edit, Fix
from kvlint.cli import main
from kvlint.engine import Checker
from kvlint.fix import apply_fixes, fix_source, verify
from kvlint.settings import Settings
from kvlint.source import load

FIXES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"
PAIRS = sorted(p.name[: -len(".in.py")] for p in FIXES.glob("*.in.py"))
SETTINGS = Settings(extend_select=("KV900",))


def fixed_text(path: Path, unsafe: bool) -> str:
    outcome = fix_source(Checker(SETTINGS), load(str(path)), unsafe=unsafe)
    assert not outcome.errors
    return outcome.text


@pytest.mark.parametrize("name", PAIRS)
def test_fix_pair(name, tmp_path):
    unsafe = name.startswith("unsafe_")
    src = FIXES / f"{name}.in.py"
    expected = (FIXES / f"{name}.out.py").read_text()
    assert src.read_text() != expected
    assert fixed_text(src, unsafe) == expected
    libcst.parse_module(expected)
    if unsafe:
        assert fixed_text(src, unsafe=False) == src.read_text()
    # through the CLI, on a copy: --fix writes, a second --fix changes nothing
    target = tmp_path / "m.py"
    shutil.copy(src, target)
    flags = ["--isolated", "--extend-select", "KV900", "--fix", "-q"] + (["--unsafe-fixes"] if unsafe else [])
    main(["check", str(target)] + flags)
    assert target.read_text() == expected
    before = target.stat().st_mtime_ns
    main(["check", str(target)] + flags)
    assert target.read_text() == expected
    assert target.stat().st_mtime_ns == before  # not rewritten


def test_diff_prints_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "m.py"
    shutil.copy(FIXES / "kv101_rename.in.py", target)
    original = target.read_bytes()
    code = main(["check", str(target), "--isolated", "--diff"])
    out = capsys.readouterr().out
    assert code == 1
    assert target.read_bytes() == original
    assert f"--- a/{target}" in out and "-        softmax_scale=1 / math.sqrt(head_dim),  # v2 name" in out
    assert "+        scale=1 / math.sqrt(head_dim),  # v2 name" in out


def test_fix_keeps_mode_crlf_and_bom(tmp_path):
    text = (FIXES / "kv101_rename.in.py").read_text()
    target = tmp_path / "m.py"
    target.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    os.chmod(target, 0o640)
    main(["check", str(target), "--isolated", "--fix", "-q"])
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert data.count(b"\r\n") == text.count("\n") and b"softmax_scale" not in data
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name != "m.py"]  # no temp file left


def test_remaining_findings_after_fix_exit_1(tmp_path, capsys):
    target = tmp_path / "m.py"
    shutil.copy(FIXES / "unsafe_kv103_scale.in.py", target)
    assert main(["check", str(target), "--isolated", "--fix", "--unsafe-fixes", "--format", "concise"]) == 1
    out = capsys.readouterr().out
    # unknown_head_dim's KV103 stays, and so does KV203: the PFA call in `prefill` has no mask
    assert out.count("KV103") == 1 and out.count("KV203") == 1
    assert "Found 7 errors (5 fixed, 2 remaining)." in out


def test_conflicting_fixes_are_applied_one_at_a_time():
    text = "f(a=1)\n"
    one = Fix("rename", (Edit((1, 2), (1, 3), "b"),))
    two = Fix("add", (Edit((1, 5), (1, 5), ", b=2"),))
    new, applied = apply_fixes(text, [one, two])
    assert new == "f(b=1, b=2)\n" and len(applied) == 2
    assert verify(text, new) is not None  # repeated keyword: rejected
    overlapping = Fix("other", (Edit((1, 2), (1, 3), "c"),))
    assert apply_fixes(text, [one, overlapping]) == ("f(b=1)\n", [one])
