"""A checked file that another file's check already parsed on demand (an imported builder
or adapter module) is not parsed again, and its findings are the same."""
import ast
import os

from kvlint.engine import Checker

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.join(HERE, "..", "fixtures", "projects", "adapters")
REAL_PARSE = ast.parse


def _files():
    out = []
    for dirpath, _, names in os.walk(PROJECT):
        out += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".py")]
    return sorted(out)


def _check_all(monkeypatch, share: bool):
    parsed = []
    checker = Checker(roots=[PROJECT])
    root = os.path.abspath(PROJECT)

    def counting(source, filename="<unknown>", *args, **kwargs):
        if os.path.abspath(filename).startswith(root):
            parsed.append(os.path.abspath(filename))
        return REAL_PARSE(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    if not share:
        monkeypatch.setattr(checker.project, "parsed_tree", lambda path, data: None)
    results = {}
    for path in _files():
        r = checker.check_path(path)
        results[path] = ([(f.line, f.column, f.code, f.message) for f in r.findings], sorted(r.dependencies))
    return results, parsed


def test_a_module_parsed_for_an_importer_is_not_parsed_again(monkeypatch):
    shared, parsed = _check_all(monkeypatch, share=True)
    unshared, parsed_twice = _check_all(monkeypatch, share=False)
    assert shared == unshared
    assert len(parsed) < len(parsed_twice)  # ops/device_op.py is loaded for attention.py first


def test_parsed_tree_only_for_the_same_bytes(tmp_path):
    mod = tmp_path / "helpers.py"
    mod.write_text("def build():\n    return 1\n")
    checker = Checker(roots=[str(tmp_path)])
    tracer = checker.project.load(str(mod))
    assert checker.project.parsed_tree(str(mod), mod.read_bytes()) is tracer.index.tree
    assert checker.project.parsed_tree(str(mod), b"def build():\n    return 2\n") is None
    assert checker.project.parsed_tree(str(tmp_path / "other.py"), mod.read_bytes()) is None
