"""benchmarks/ab_trees.py: its report, and one real round of two trees."""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("ab_trees", ROOT / "benchmarks" / "ab_trees.py")
ab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ab)


def run(name, wall, cpu=1.0, status=1):
    return ab.Run(name, wall, cpu, 50.0, status)


def test_summary_gives_medians_and_round_by_round_ratios():
    runs = {"base": [run("base", 2.0, 3.0), run("base", 1.0, 2.0), run("base", 4.0, 5.0)],
            "new": [run("new", 1.0, 1.5), run("new", 0.9, 1.0), run("new", 2.0, 2.5)]}
    lines = ab.summary(runs, [("new", "base"), ("new", "ruff")])
    assert lines[1].split() == ["base", "3", "2.000", "1.000", "3.000"]
    assert lines[2].split() == ["new", "3", "1.000", "0.900", "1.500"]
    # rounds: 1.0/2.0, 0.9/1.0, 2.0/4.0 -> 0.5, 0.9, 0.5; no ruff runs: no ruff line
    assert lines[3:] == ["new/base: median 0.500x (range 0.500-0.900x, 3 rounds)"]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs the git checkout")
def test_one_round_of_head_against_the_working_tree(capsys):
    before = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    code = ab.main([str(ROOT / "fixtures" / "decoder"), "--base", "HEAD", "--rounds", "1", "--jobs", "1",
                    "--ruff", ""])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].startswith("base HEAD, new the working tree;")
    assert [line.split()[0] for line in out.splitlines()[2:]] == ["base", "new", "new/base:"]
    after = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before  # its worktree is gone


def test_a_missing_path_is_exit_2(capsys):
    assert ab.main(["/nonexistent/kvlint-ab", "--base", "HEAD"]) == 2
    assert "not found: /nonexistent/kvlint-ab" in capsys.readouterr().err
