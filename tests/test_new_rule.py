"""`scripts/new_rule.py KVnnn name` scaffolds a rule that registers, is documented, and whose
fixtures and snapshot pass the fixture tests, in a copy of the tree."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_new_rule_scaffold(tmp_path):
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("kvlint", "rules", "scripts", "fixtures", "docs"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=ignore)
    shutil.copy(ROOT / "README.md", repo / "README.md")
    run = lambda *args: subprocess.run([sys.executable, *args], cwd=repo, capture_output=True, text=True)  # noqa: E731
    made = run("scripts/new_rule.py", "KV998", "scaffold-example")
    assert made.returncode == 0, made.stderr
    for rel in ("kvlint/checks/kv998_scaffold_example.py", "rules/codes/KV998.toml", "fixtures/rules/KV998/bad.py",
                "fixtures/rules/KV998/good.py", "fixtures/rules/KV998/bad.snap", "docs/rules/KV998.md"):
        assert (repo / rel).is_file(), rel
    assert "KV998" in (repo / "README.md").read_text()
    snap = (repo / "fixtures/rules/KV998/bad.snap").read_text().splitlines()
    assert len(snap) == 2 and " KV998 TODO" in snap[1]
    check = ("import sys; sys.path.insert(0, '.')\n"
             "from kvlint.checks import all_rules\n"
             "from kvlint.testing import FIXTURES, findings_lines, stale\n"
             "assert 'KV998' in {r.code for r in all_rules()}\n"
             "assert findings_lines(FIXTURES / 'KV998' / 'good.py') == []\n"
             "assert stale(FIXTURES / 'KV998') == {}\n")
    ok = run("-c", check)
    assert ok.returncode == 0, ok.stderr
    again = run("scripts/new_rule.py", "KV998", "scaffold-example")
    assert again.returncode == 2 and "exists already" in again.stderr
