"""Project.find_module and the import roots: a root added later finds what was missing."""
from kvlint.analysis.project import Project


def test_a_root_added_later_finds_a_module_missed_before(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "pkg" / "ops.py").write_text("x = 1\n")
    (tmp_path / "app").mkdir()
    importer = str(tmp_path / "app" / "use.py")
    (tmp_path / "app" / "use.py").write_text("from pkg.ops import x\n")
    project = Project([str(tmp_path / "app")])
    assert project.find_module(importer, "pkg.ops") is None
    project.add_roots([str(tmp_path / "src")])
    assert project.find_module(importer, "pkg.ops") == str(tmp_path / "src" / "pkg" / "ops.py")
