"""ModuleIndex.walk / stores / self_attribute_stores find what `ast.walk` finds (rules use
them instead of re-walking a function or class per call); child_nodes, walk_scope and
walk_in_order visit what `ast.iter_child_nodes`, a stack walk over it and `ast.walk` visit, in
the same order."""
import ast
import glob
import os

import pytest

from kvlint.analysis.module import (
    ModuleIndex,
    ScopeNode,
    child_nodes,
    named_parameters,
    parameter_defaults,
    place,
    positional_parameters,
    walk_in_order,
)
from kvlint.analysis.values import Each, Unknown
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


def _stack_walk(scope):
    """The stack walk rules did before walk_scope: ast.iter_child_nodes, nested scopes skipped."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, ScopeNode):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_walk_scope_keeps_the_order_of_a_stack_walk(path):
    index, tree = _index(path)
    assert list(walk_in_order(tree)) == [n for n in ast.walk(tree) if not isinstance(n, SINGLETONS)]
    for node in ast.walk(tree):
        assert child_nodes(node) == [c for c in ast.iter_child_nodes(node) if not isinstance(c, SINGLETONS)]
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ScopeNode)]
    for scope in scopes:
        expected = [n for n in _stack_walk(scope) if not isinstance(n, SINGLETONS)]
        assert list(index.walk_scope(scope)) == expected


def test_index_collects_by_kind():
    text = (
        "import a.b as c, d.e\nfrom .x import y as z\nfrom .s import *\nfrom p.q import r\n"
        "class K:\n    v: int = 1\n    def f(self):\n        self.n += 1\n"
        "        for i in g(): h(i)\n        async def s():\n            async for j in t(): pass\n"
        "        if (w := u()): pass\n        m = o = k(1)\n"
    )
    index = ModuleIndex(SourceFile("m.py", text.encode(), text, "utf-8"), ast.parse(text))
    assert [ast.unparse(c) for c in index.calls] == ["g()", "h(i)", "t()", "u()", "k(1)"]
    assert sorted(type(n).__name__ for n in index.assigns) == ["AnnAssign", "Assign"]
    assert [ast.unparse(n.target) for n in index.aug_assigns] == ["self.n"]
    assert [c.name for c in index.classes] == ["K"]
    assert sorted(type(n).__name__ for n in index.for_loops) == ["AsyncFor", "For"]
    assert [ast.unparse(n) for n in index.named_exprs] == ["(w := u())"]
    assert index.imports == {"c": "a.b", "d": "d", "r": "p.q.r"}
    assert index.module_imports == {"c": "a.b", "d": "d", "d.e": "d.e"}
    assert index.from_imports == {"z": (1, "x", "y"), "r": (0, "p.q", "r")}


def _reference_index(tree):
    """What ModuleIndex's walk collects, the slow way: a stack walk over
    `ast.iter_child_nodes` (every node pushed, leaves too), parents from the same walk; the
    calls, assignments, augmented assignments, classes, loops and walruses it meets, in order."""
    kinds = ((ast.Call,), (ast.Assign, ast.AnnAssign), (ast.AugAssign,), (ast.ClassDef,),
             (ast.For, ast.AsyncFor), (ast.NamedExpr,))
    parent, lists = {}, [[] for _ in kinds]
    stack = [tree]
    while stack:
        node = stack.pop()
        for types, found in zip(kinds, lists):
            if isinstance(node, types):
                found.append(node)
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, SINGLETONS)]
        for child in children:
            parent[id(child)] = node
        stack.extend(children)
    lists[0].sort(key=lambda n: (n.lineno, n.col_offset))  # stable: equal positions keep walk order
    return (parent, *lists)


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_index_matches_a_walk_that_pushes_every_node(path):
    """The walk links leaves (`Name`, `Constant`...) without visiting them: the parent map
    and every collected list, in order, are those of a walk that visits every node."""
    index, tree = _index(path)
    parent, calls, assigns, aug, classes, loops, named = _reference_index(tree)
    assert index.parent == parent
    for got, want in ((index.calls, calls), (index.assigns, assigns), (index.aug_assigns, aug),
                      (index.classes, classes), (index.for_loops, loops), (index.named_exprs, named)):
        assert list(map(id, got)) == list(map(id, want))


def test_index_orders_calls_at_one_position_as_the_walk_meets_them():
    text = "f(a)(b)\nx = g(h(1), k=j())[0]\n"
    tree = ast.parse(text)
    index = ModuleIndex(SourceFile("m.py", text.encode(), text, "utf-8"), tree)
    assert [ast.unparse(c) for c in index.calls] == [ast.unparse(c) for c in _reference_index(tree)[1]]
    assert [ast.unparse(c) for c in index.calls][:2] == ["f(a)(b)", "f(a)"]


def _new_nodes():
    return [ast.Name(id="n", ctx=ast.Load()), ast.Subscript(value=ast.Name(id="x"), slice=ast.Constant(0)),
            ast.Call(func=ast.Name(id="f"), args=[], keywords=[]), ast.keyword(arg="k", value=ast.Constant(1)),
            ast.Expr(value=ast.Constant(1)), Each(value=ast.Name(id="xs")), Unknown(), ast.arguments()]


def _likes(tree):
    odd = ast.Name(id="o")
    odd.lineno, odd.col_offset = 3, None  # a column of None: copy_location skips it
    half = ast.Constant(1)
    half.lineno, half.col_offset = 2, 4  # no end positions of its own
    return [n for n in ast.walk(tree) if not isinstance(n, SINGLETONS)] + [odd, half, ast.Name(id="bare"), Unknown()]


@pytest.mark.parametrize("path", FILES[:40], ids=lambda p: os.path.relpath(p, HERE))
def test_place_copies_what_copy_location_copies(path):
    _, tree = _index(path)
    for like in _likes(tree):
        for fast, slow in zip(_new_nodes(), _new_nodes()):
            assert place(fast, like) is fast
            ast.copy_location(slow, like)
            assert fast.__dict__.keys() == slow.__dict__.keys()
            assert {k: v for k, v in fast.__dict__.items() if not isinstance(v, ast.AST)} == \
                {k: v for k, v in slow.__dict__.items() if not isinstance(v, ast.AST)}


def test_index_of_a_hand_built_tree_missing_fields():
    """A node built without some of its fields (no `args`, no `keywords`) is indexed as if
    they were empty."""
    name = ast.Name(id="f", ctx=ast.Load())
    call = ast.Call(func=name)
    call.lineno, call.col_offset = 1, 0
    tree = ast.Module(body=[ast.Expr(value=call)], type_ignores=[])
    index = ModuleIndex(SourceFile("m.py", b"f()\n", "f()\n", "utf-8"), tree)
    assert index.calls == [call] and index.parent_of(name) is call and index.parent_of(call) is tree.body[0]


def test_parameter_helpers_cover_every_kind_of_parameter():
    func = ast.parse("def f(a, b=1, /, c=2, *rest, d, e=3, **kw): pass").body[0]
    assert [p.arg for p in positional_parameters(func)] == ["a", "b", "c"]
    assert [p.arg for p in named_parameters(func)] == ["a", "b", "c", "d", "e"]
    defaults = parameter_defaults(func)
    assert sorted(defaults) == ["b", "c", "e"]
    assert [defaults[n].value for n in ("b", "c", "e")] == [1, 2, 3]
    assert parameter_defaults(ast.parse("def g(x, *, y): pass").body[0]) == {}
