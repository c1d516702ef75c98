"""`kvlint check` options and exit codes: 0 clean, 1 findings, 2 usage/configuration error."""
import shutil
import sys
import types
from pathlib import Path

import pytest

from kvlint.analysis.findings import FileResult
from kvlint.cli import main

FIXES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"


@pytest.fixture
def work(tmp_path, monkeypatch):
    shutil.copy(FIXES / "kv101_rename.in.py", tmp_path / "bad.py")
    shutil.copy(FIXES / "kv101_rename.out.py", tmp_path / "good.py")
    shutil.copy(FIXES / "kv900_unused_noqa.in.py", tmp_path / "noqa.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args, code", [
    (["good.py"], 0),
    (["bad.py"], 1),
    (["bad.py", "--exit-zero"], 0),
    (["nope.py"], 2),
    (["bad.py", "--select", "KV999"], 2),
    (["bad.py", "--ignore", "XY1"], 2),
    (["bad.py", "--format", "xml"], 2),
    (["bad.py", "--config", "missing.toml"], 2),
])
def test_exit_codes(work, capsys, args, code):
    assert main(["check", "--isolated", *args]) == code


def test_usage_error_names_the_problem(work, capsys):
    main(["check", "bad.py", "--select", "KV999"])
    assert "unknown rule code or prefix: KV999" in capsys.readouterr().err


def test_kv900_only_when_selected(work, capsys):
    assert main(["check", "--isolated", "noqa.py", "--format", "concise"]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"
    assert main(["check", "--isolated", "noqa.py", "--format", "concise", "--extend-select", "KV900", "-q"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["KV900", "KV900", "KV900"]
    assert lines[0] == "noqa.py:5:108: KV900 [*] unused `noqa` directive (unused: `KV101`)"


def test_fix_and_exclude_leave_excluded_files_alone(work, capsys):
    before = (work / "bad.py").read_text()
    assert main(["check", "--isolated", ".", "--exclude", "bad.py", "--fix", "-q"]) == 0
    assert (work / "bad.py").read_text() == before


def test_uses_runner_check_files_when_present(work, capsys, monkeypatch):
    calls = []

    def check_files(paths, settings, **options):  # jobs=, cache=
        calls.append((list(paths), settings.select))
        return [FileResult(p) for p in paths]

    monkeypatch.setitem(sys.modules, "kvlint.runner", types.SimpleNamespace(check_files=check_files))
    assert main(["check", "--isolated", "--select", "KV1", "bad.py", "good.py"]) == 0
    assert calls == [(["bad.py", "good.py"], ("KV1",))]
