"""The distribution is `ascend-kvlint` (`kvlint` on the package index is another project);
the import package and the command stay `kvlint`, and every install line in the docs says so."""
import re
import sys
from importlib import metadata
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DIST = "ascend-kvlint"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_pyproject_name():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DIST
    assert project["scripts"] == {"kvlint": "kvlint.cli:console_main"}


def test_installed_distribution_provides_the_kvlint_command():
    dist = metadata.distribution(DIST)
    assert [ep.value for ep in dist.entry_points if ep.group == "console_scripts"] == ["kvlint.cli:console_main"]


def test_every_install_line_names_our_distribution():
    bad = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if "another project" in line or "unrelated" in line:
                continue  # the warning about the other `kvlint`
            for m in re.finditer(r"pip install ([^`\n&;#|]*)", line):
                words = m.group(1).replace("'", " ").replace('"', " ").split()
                if any(re.fullmatch(r"kvlint(\[.*\])?", w) for w in words):
                    bad.append(f"{doc.name}:{n}: {line.strip()}")
    assert bad == []


def test_readme_says_kvlint_on_the_index_is_another_project():
    text = (ROOT / "README.md").read_text()
    assert "pip install ascend-kvlint" in text
    assert "`pip install kvlint` installs **another project**" in text


def test_every_fixable_rule_is_listed_with_its_safety():
    from kvlint.catalog import load_catalog

    guide = (ROOT / "docs" / "getting-started.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for code, info in load_catalog().rules.items():
        if info.fix != "none":
            assert re.search(rf"^\| {code} \| (safe|unsafe) \|", guide, re.M), code
            assert code in readme.split("### Fixes")[1].split("### pre-commit")[0], code
