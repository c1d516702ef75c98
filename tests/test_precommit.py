"""`.pre-commit-hooks.yaml` works: `pre-commit try-repo` against a temporary git repo, with a
bad file (the hook fails and prints the finding) and a good file (passes).

The hook repo is a temporary git copy of this working tree (pyproject.toml, kvlint/, rules/,
the manifest), so the test checks the code as it is, not the last commit. pre-commit installs
it with pip into its own virtualenv: that needs PyPI (hatchling, libcst, rich), nothing else.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "fixtures" / "fixes" / "kv101_rename.in.py"
GOOD = ROOT / "fixtures" / "fixes" / "kv101_rename.out.py"

pytestmark = [
    pytest.mark.network,  # pre-commit pip-installs the hook repo from the package index
    pytest.mark.skipif(shutil.which("pre-commit") is None and
                       subprocess.run([sys.executable, "-m", "pre_commit", "--version"],
                                      capture_output=True).returncode != 0,
                       reason="pre-commit is not installed (pip install -e .[test])"),
]


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("hookrepo")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, repo / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "kvlint", repo / "kvlint", ignore=ignore)
    shutil.copytree(ROOT / "rules", repo / "rules", ignore=ignore)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "hook repo")
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


def try_repo(hook_repo, home, target, files):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)  # the hook must run the kvlint installed in its own venv
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "kvlint",
                           "--files", *files], cwd=target, env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.fixture
def target(tmp_path):
    git(tmp_path, "init", "-q")
    shutil.copy(BAD, tmp_path / "bad.py")
    shutil.copy(GOOD, tmp_path / "good.py")
    (tmp_path / "notes.txt").write_text("torch_npu.npu_fused_infer_attention_score(softmax_scale=1)\n")
    git(tmp_path, "add", ".")
    return tmp_path


def test_hook_fails_on_bad_file(hook_repo, pre_commit_home, target):
    proc = try_repo(hook_repo, pre_commit_home, target, ["bad.py", "notes.txt"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "kvlint" in out and "Failed" in out
    assert "bad.py:12:9: KV101" in out


def test_hook_passes_on_good_file(hook_repo, pre_commit_home, target):
    proc = try_repo(hook_repo, pre_commit_home, target, ["good.py", "notes.txt"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Passed" in out


def test_hook_applies_exclude_to_the_files_it_is_given(hook_repo, pre_commit_home, target):
    """The manifest's --force-exclude: a staged file the configuration excludes is skipped, as
    with ruff's hook (without it, a file named on the command line is always checked)."""
    (target / "pyproject.toml").write_text("[tool.kvlint]\nextend-exclude = [\"bad.py\"]\n")
    git(target, "add", "pyproject.toml")
    proc = try_repo(hook_repo, pre_commit_home, target, ["bad.py", "good.py"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Passed" in out
