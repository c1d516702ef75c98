"""Every rule's fixtures pin what the user sees: `bad.snap` (its findings with only that rule
selected, `LINE:COL CODE message`), the fixed text for every fixable rule (`bad.fixed.snap`,
`bad.unsafe-fixed.snap`, derived from the catalog), and a silent `good.py` with all rules on.
Regenerate with `python scripts/update_snapshots.py` and review the diff it prints."""
import difflib
from pathlib import Path

import pytest

from kvlint.catalog import load_catalog
from kvlint.checks import all_rules
from kvlint.testing import FIXTURES, REGENERATE, findings_lines, fixed_text, only, rule_dirs, snapshots

RULE_DIRS = rule_dirs() if FIXTURES.is_dir() else []
CATALOG = load_catalog()


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=lambda p: p.name)
def test_snapshots_are_current(rule_dir: Path):
    problems = []
    for snap in snapshots(rule_dir):
        current = snap.path.read_text(encoding="utf-8") if snap.path.is_file() else ""
        if current != snap.text:
            problems.append("".join(difflib.unified_diff(
                current.splitlines(keepends=True), snap.text.splitlines(keepends=True),
                fromfile=f"{snap.path.name} (committed)", tofile=f"{snap.path.name} (now)")))
    assert not problems, f"stale snapshots; review and run `{REGENERATE} {rule_dir.name}`:\n" + "\n".join(problems)


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=lambda p: p.name)
def test_bad_fixture_triggers_its_rule(rule_dir: Path):
    lines = (rule_dir / "bad.snap").read_text(encoding="utf-8").splitlines()[1:]
    assert lines and all(f" {rule_dir.name} " in f" {line} " for line in lines), "bad.py must trigger its own rule"


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=lambda p: p.name)
def test_good_fixture_is_clean(rule_dir: Path):
    assert findings_lines(rule_dir / "good.py") == []


FIXABLE = sorted(code for code, info in CATALOG.rules.items() if info.fixable and "static" in info.checked)


@pytest.mark.parametrize("code", FIXABLE)
def test_every_fixable_rule_has_a_fix_snapshot_that_fixes_something(code):
    info = CATALOG.rules[code]
    folder = FIXTURES / code
    bad = (folder / "bad.py").read_text(encoding="utf-8")
    name = "bad.fixed.snap" if info.fix == "safe" else "bad.unsafe-fixed.snap"
    assert (folder / name).is_file(), f"{code} is fixable ({info.fix}) but {folder / name} is missing: {REGENERATE} {code}"
    assert (folder / name).read_text(encoding="utf-8") != bad, f"{code}'s fix changes nothing in bad.py"
    if info.fix == "unsafe":
        assert fixed_text(folder / "bad.py", only(code), unsafe=False) == bad, "an unsafe fix applied without --unsafe-fixes"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_static_rule_has_fixtures_and_docs(rule):
    assert rule.code in CATALOG.rules, f"rules/codes/{rule.code}.toml is missing"
    info = CATALOG.rules[rule.code]
    assert "static" in info.checked
    assert info.what and info.why and info.example and info.use_instead
    folder = FIXTURES / rule.code
    for name in ("bad.py", "bad.snap", "good.py"):
        assert (folder / name).is_file(), f"{folder / name} is missing"


def test_catalog_codes_match_file_names_and_have_a_checker():
    static_codes = {r.code for r in all_rules()}
    for code, info in CATALOG.rules.items():
        if "static" in info.checked and code not in ("KV000", "KV900"):
            assert code in static_codes, f"{code} says it is checked statically but has no rule"


def test_all_rules_is_complete_even_after_one_rule_module_was_imported_directly():
    import subprocess
    import sys

    code = ("import kvlint.checks.kv301_block_table_not_int32\n"
            "from kvlint.checks import all_rules\n"
            "print(len(all_rules()))")
    direct = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert int(direct.stdout) == len(all_rules()) > 20


def test_update_snapshots_check_mode_reports_a_stale_snapshot(tmp_path, monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_snapshots", FIXTURES.parent.parent / "scripts" / "update_snapshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    snap = FIXTURES / "KV101" / "bad.snap"
    original = snap.read_text(encoding="utf-8")
    try:
        snap.write_text(original + "1:1 KV101 not a finding\n", encoding="utf-8")
        assert module.main(["--check", "KV101"]) == 1
        assert "-1:1 KV101 not a finding" in capsys.readouterr().out
        assert snap.read_text(encoding="utf-8") != original  # --check writes nothing
        assert module.main(["KV101"]) == 0
        assert snap.read_text(encoding="utf-8") == original
    finally:
        snap.write_text(original, encoding="utf-8")
