"""ModuleIndex.walk / stores / self_attribute_stores find what `ast.walk` finds (rules use
them instead of re-walking a function or class per call)."""
import ast
import glob
import os

import pytest

from kvlint.analysis.module import ModuleIndex
from kvlint.source import SourceFile

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.py"), recursive=True))[:120]
SINGLETONS = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


def _index(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("not Python (a KV000 fixture)")
    return ModuleIndex(SourceFile(path, text.encode(), text, "utf-8"), tree), tree


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_walk_finds_what_ast_walk_finds(path):
    index, tree = _index(path)
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                    ast.ClassDef))]
    for scope in scopes:
        expected = [n for n in ast.walk(scope) if not isinstance(n, SINGLETONS)]
        assert sorted(map(id, index.walk(scope))) == sorted(map(id, expected))
        stores = {}
        for n in ast.walk(scope):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = min(stores.get(n.id, n.lineno), n.lineno)
        assert index.stores(scope) == stores
        assert index.self_attribute_stores(scope) == {
            n.attr for n in ast.walk(scope) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "self"}
