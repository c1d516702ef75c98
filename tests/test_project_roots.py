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


# -- module probes answered from a root's listing ----------------------------------------------

import os  # noqa: E402

import pytest  # noqa: E402

from kvlint.analysis import project as project_module  # noqa: E402
from kvlint.analysis.project import _module_file  # noqa: E402

TREE = ["pkg/__init__.py", "pkg/ops.py", "pkg/sub/__init__.py", "pkg/sub/deep.py", "mod.py", "Mixed.py",
        "nopkg/inner.py", "afile", "dir.py/__init__.py"]
NAMES = ["pkg", "pkg.ops", "pkg.sub", "pkg.sub.deep", "pkg.missing", "mod", "mod.x", "Mixed", "mixed", "MOD",
         "nopkg", "nopkg.inner", "afile", "afile.x", "dir", "absent", "absent.x", "", "café"]


def _tree(tmp_path):
    for rel in TREE:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    return str(tmp_path)


@pytest.mark.parametrize("dotted", NAMES)
def test_a_probe_answered_from_the_listing_is_the_stat_answer(tmp_path, dotted):
    root = _tree(tmp_path)
    parts = [p for p in dotted.split(".") if p]
    project = Project([root])
    assert _module_file(root, parts, project._listed) == _module_file(root, parts)
    assert project.find_module(os.path.join(root, "x.py"), dotted) == (
        _module_file(root, parts) if dotted and dotted.split(".")[0] not in project_module.EXTERNAL else None)


@pytest.mark.parametrize("dotted", NAMES)
def test_on_a_case_insensitive_file_system_too(tmp_path, monkeypatch, dotted):
    # simulate one: a path exists when its casefolded form does; the listing keeps the case
    root = _tree(tmp_path)
    real = {os.path.join(dp, n).casefold() for dp, ds, fs in os.walk(root) for n in ds + fs}
    real_isfile = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: p.casefold() in real and real_isfile(
        next((os.path.join(dp, n) for dp, ds, fs in os.walk(root) for n in fs
              if os.path.join(dp, n).casefold() == p.casefold()), p)))
    parts = [p for p in dotted.split(".") if p]
    slow = _module_file(root, parts)
    assert _module_file(root, parts, Project([root])._listed) == slow
    if dotted in ("mixed", "MOD"):
        assert slow is not None  # found only through case-insensitivity: the listing must not refuse it


def test_an_unlistable_root_is_probed_by_stat(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    project = Project([root])

    def refuse(folder):
        raise PermissionError(folder)

    monkeypatch.setattr(os, "listdir", refuse)
    assert project._listed(root) is None
    assert _module_file(root, ["pkg", "ops"], project._listed) == os.path.join(root, "pkg", "ops.py")


def test_a_listing_is_dropped_with_the_roots(tmp_path):
    root = _tree(tmp_path)
    project = Project([root])
    assert project.find_module(os.path.join(root, "x.py"), "later") is None
    (tmp_path / "later.py").write_text("")
    project.add_roots([str(tmp_path / "pkg")])  # any new root: what was not found is asked again
    assert project.find_module(os.path.join(root, "x.py"), "later") == os.path.join(root, "later.py")
