"""Multi-file fixture projects (fixtures/projects/<name>/): kvlint checks every .py file of the
project with the project folder as its import root; `expected.txt` lists every finding,
`PATH:LINE:COL CODE message` (paths relative to the project folder), sorted."""
import os
from pathlib import Path

import pytest

from kvlint.engine import Checker
from kvlint.testing import all_on_settings

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
PROJECT_DIRS = sorted(p for p in PROJECTS.iterdir() if p.is_dir()) if PROJECTS.is_dir() else []


def project_findings(project: Path):
    old = os.getcwd()
    os.chdir(project)
    try:
        checker = Checker(all_on_settings(), roots=["."])
        lines = []
        for path in sorted(str(p.relative_to(project)) for p in project.rglob("*.py")):
            result = checker.check_path(path)
            assert not result.errors, result.errors
            lines += [f"{f.path}:{f.line}:{f.column} {f.code} {f.message}" for f in result.findings]
        return lines
    finally:
        os.chdir(old)


@pytest.mark.parametrize("project", PROJECT_DIRS, ids=lambda p: p.name)
def test_project_has_exactly_the_expected_findings(project: Path):
    expected = [line for line in (project / "expected.txt").read_text().splitlines() if line.strip()]
    assert project_findings(project) == expected


if __name__ == "__main__":  # regenerate after reviewing: python tests/test_projects.py NAME
    import sys

    for name in sys.argv[1:]:
        print("\n".join(project_findings(PROJECTS / name)))
