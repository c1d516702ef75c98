"""Every rule's fixtures: exact findings on bad.py, none on good.py; and every static rule has
fixtures and documentation."""
from pathlib import Path

import pytest

from kvlint.catalog import load_catalog
from kvlint.checks import all_rules
from kvlint.testing import FIXTURES, findings_lines

RULE_DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else []


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=lambda p: p.name)
def test_bad_fixture_has_exactly_the_expected_findings(rule_dir: Path):
    expected = (rule_dir / "bad.expected").read_text().split("\n")
    expected = [line for line in expected if line.strip()]
    got = findings_lines(rule_dir / "bad.py")
    assert got == expected
    assert any(line.endswith(" " + rule_dir.name) for line in got), "bad.py must trigger its own rule"


@pytest.mark.parametrize("rule_dir", RULE_DIRS, ids=lambda p: p.name)
def test_good_fixture_is_clean(rule_dir: Path):
    assert findings_lines(rule_dir / "good.py") == []


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_static_rule_has_fixtures_and_docs(rule):
    catalog = load_catalog()
    assert rule.code in catalog.rules, f"rules/codes/{rule.code}.toml is missing"
    info = catalog.rules[rule.code]
    assert "static" in info.checked
    assert info.what and info.why and info.example and info.use_instead
    folder = FIXTURES / rule.code
    for name in ("bad.py", "bad.expected", "good.py"):
        assert (folder / name).is_file(), f"{folder / name} is missing"


def test_catalog_codes_match_file_names_and_have_a_checker():
    catalog = load_catalog()
    static_codes = {r.code for r in all_rules()}
    for code, info in catalog.rules.items():
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
