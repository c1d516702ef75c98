"""docs/rules/ is generated from the catalog by scripts/gen_docs.py and must be current;
`kvlint rule` prints the same text."""
import importlib.util
from pathlib import Path

from kvlint.catalog import load_catalog
from kvlint.cli import main

ROOT = Path(__file__).resolve().parent.parent


def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rule_pages_are_current():
    stale = gen_docs().stale(load_catalog())
    assert stale == [], f"stale docs/rules pages {stale}: run `python scripts/gen_docs.py` and commit"


def test_stale_page_is_detected(tmp_path):
    module = gen_docs()
    catalog = load_catalog()
    for name, text in module.pages(catalog).items():
        (tmp_path / name).write_text(text)
    assert module.stale(catalog, tmp_path) == []
    (tmp_path / "KV101.md").write_text((tmp_path / "KV101.md").read_text().replace("FA v2", "FA v3"))
    (tmp_path / "KV999.md").write_text("old rule\n")
    assert module.stale(catalog, tmp_path) == ["KV101.md", "KV999.md"]


def test_every_page_has_the_five_sections():
    for code in load_catalog().rules:
        text = (ROOT / "docs" / "rules" / f"{code}.md").read_text()
        for section in ("## What it detects", "## Why it is a bug", "## Example", "## Fix", "## Options"):
            assert section in text, (code, section)


def test_rule_command_prints_the_page(capsys):
    assert main(["rule", "kv101"]) == 0
    out = capsys.readouterr().out
    page = (ROOT / "docs" / "rules" / "KV101.md").read_text()
    assert page.endswith(out) and "## Example" in out and "## Fix" in out


def test_rule_all_and_prefix(capsys):
    assert main(["rule", "--all"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| KV")]
    assert len(rows) == len(load_catalog().rules)
    assert main(["rule", "KV3"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| KV")]
    assert rows and all(r.startswith("| KV3") for r in rows)
    assert main(["rule", "KV999"]) == 2
    assert "unknown rule code: KV999" in capsys.readouterr().err


def test_stale_readme_rule_table_is_detected(tmp_path):
    module = gen_docs()
    catalog = load_catalog()
    for name, text in module.pages(catalog).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "top").mkdir()
    readme = tmp_path / "top" / "README.md"  # docs/rules has a README.md index of its own
    current = module.readme_with_table(catalog, (ROOT / "README.md").read_text())
    readme.write_text(current)
    assert module.stale(catalog, tmp_path, readme) == []
    readme.write_text(current.replace("| KV101", "| KV199", 1).replace("[KV101]", "[KV199]", 1))
    assert module.stale(catalog, tmp_path, readme) == ["README.md"]
