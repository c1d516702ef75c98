"""kvlint over the Python standard library's own sources (~1,800 files, 700k lines,
the bad-syntax and odd-encoding test files included): no crash, no internal error, the same
output twice and with `--jobs 1` and `--jobs 2`.

Almost no stdlib file holds a kvlint word, so the pre-filter would skip nearly everything;
`every_rule_everywhere` switches the pre-filter off and runs every rule on every file, which
is what makes this a sweep of the analyzer (~15 s on 2 cores)."""
from __future__ import annotations

import json
import multiprocessing
import sysconfig

import pytest

from kvlint import engine, runner
from kvlint.cli import main
from kvlint.discovery import iter_python_files
from kvlint.settings import Settings

STDLIB = sysconfig.get_paths()["stdlib"]


@pytest.fixture(scope="module")
def stdlib_files():
    files, _ = iter_python_files([STDLIB])
    if len(files) < 500:
        pytest.skip("no standard library sources here")
    return files


@pytest.fixture
def every_rule_everywhere(monkeypatch):
    # class-level patches: the forked workers inherit them
    monkeypatch.setattr(engine, "build_prefilter", lambda rules: None)  # None: every file passes
    monkeypatch.setattr(engine.Checker, "rules_for", lambda self, data, *rest: list(self.rules))


def summary(results):
    return [(r.path, [(f.line, f.column, f.end_line, f.end_column, f.code, f.message) for f in r.findings],
             r.errors, r.checked) for r in results]


def test_stdlib_every_rule_no_internal_error_deterministic(stdlib_files, every_rule_everywhere, monkeypatch):
    settings = Settings(select=("ALL",))
    serial = runner.check_files(stdlib_files, settings, jobs=1)
    errors = [e for r in serial for e in r.errors]
    assert errors == []
    parsed = sum(1 for r in serial if r.checked and not any(f.code == "KV000" for f in r.findings))
    assert parsed > 0.95 * len(stdlib_files)  # the sweep really parsed and analysed the files
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("workers would not inherit the pre-filter switch")
    monkeypatch.setattr(runner, "MIN_FILES_PER_WORKER", 1)
    assert summary(runner.check_files(stdlib_files, settings, jobs=2)) == summary(serial)


def test_stdlib_cli_jobs_1_and_2_and_twice(stdlib_files, capsys):
    outputs = []
    for jobs in ("1", "2", "2"):
        code = main(["check", STDLIB, "--isolated", "--no-cache", "--select", "ALL", "--format", "json",
                     "--jobs", jobs])
        assert code in (0, 1)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    report = json.loads(outputs[0])
    assert report["errors"] == []
