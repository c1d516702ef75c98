"""The analysis' pre-screens and memos answer what the slow path answers.

Each cheap test the tracer or the resolver asks before the real work (is this name bound by
any statement of the module? can this callee be an operator?) and each memo of an answer
that cannot differ between two asks is compared here with the work it saves, on every
fixture and on hand-written forms, and shown to fail when keyed too loosely."""
import ast
import glob
import os
import textwrap

import pytest

from kvlint.analysis.module import ModuleIndex
from kvlint.analysis.values import ValueTracer
from kvlint.source import decode

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.py"), recursive=True))
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

FORMS = textwrap.dedent("""
    a, (b, *c), d.e, f[0] = x
    g: int
    h: int = 1
    for i, (j, k) in zip(u, v):
        pass
    async def co():
        async for m in w:
            pass
        if (n := 3):
            pass
    class K:
        o = 1
        def meth(self):
            self.p = q = 2
            [r, s] = t
            *z, y = 1, 2
            return lambda: (l := 1)
""")


def _tracer(text, path="t.py"):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("not Python (a KV000 fixture)")
    return ValueTracer(ModuleIndex(decode(path, text.encode()), tree)), tree


def _fixture(path):
    with open(path, encoding="utf-8") as fh:
        return _tracer(fh.read(), path)


def _check_bound_names_cover_every_table(tracer, tree):
    bound = tracer.bound_names()
    words = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {"__never__"}
    for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, SCOPES)]:
        table = tracer.assignments(scope)
        assert set(table) <= bound, (scope, set(table) - bound)
        for name in words:
            assert tracer.assigned(scope, name) == table.get(name, [])


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_bound_names_cover_every_assignment_table(path):
    _check_bound_names_cover_every_table(*_fixture(path))


def test_bound_names_of_every_binding_form():
    tracer, tree = _tracer(FORMS)
    assert tracer.bound_names() == frozenset("a b c g h i j k m n o q r s z y l".split())
    _check_bound_names_cover_every_table(tracer, tree)


def test_assigned_skips_the_table_only_for_names_bound_nowhere():
    tracer, tree = _tracer("def f(x):\n    y = x\n    return g(y)\n")
    func = tree.body[0]
    assert tracer.assigned(func, "g") == [] and id(func) not in tracer._assign_tables
    assert [ast.unparse(v) for _, v in tracer.assigned(func, "y")] == ["x"]
    assert id(func) in tracer._assign_tables


@pytest.mark.parametrize("first", ["view", "origin"])
def test_a_local_view_shares_the_module_tables_whoever_asks_first(first):
    """local_view() computes nothing: the module-wide tables are its tracer's, built when
    one of the two first needs them, and equal to a fresh tracer's."""
    text = FORMS + "K.w = 1\nK.o, v = 2, 3\n"
    tracer, tree = _tracer(text)
    view = tracer.local_view()
    assert view._grouped is None and tracer._grouped is None and tracer._class_attr_writes is None
    a, b = (view, tracer) if first == "view" else (tracer, view)
    for method in ("bound_names", "_statements", "definitions", "class_attribute_writes"):
        assert getattr(a, method)() is getattr(b, method)()
    fresh = ValueTracer(ModuleIndex(decode("t.py", text.encode()), tree))  # same tree, own tables

    def dumped(t):
        return {k: [(id(stmt), ast.dump(v)) for stmt, v in items] for k, items in t.class_attribute_writes().items()}

    assert view.bound_names() == fresh.bound_names() and view.definitions() == fresh.definitions()
    assert dumped(view) == dumped(fresh) and set(dumped(view)) == {("K", "w"), ("K", "o")}
    assert view._statements() == fresh._statements()


# -- the resolver's cheap reject ------------------------------------------------------------

from kvlint.analysis.resolve import WORKSPACE_PREFIX, WORKSPACE_SUFFIX, OperatorCall  # noqa: E402
from kvlint.catalog import load_catalog  # noqa: E402


def _reference_resolve(resolver, call):
    """OperatorResolver._resolve as it read before its reject set: each test one by one."""
    func = call.func
    if isinstance(func, ast.Attribute):
        last = func.attr
    elif isinstance(func, ast.Name):
        last = func.id
    elif isinstance(func, ast.Call):
        last = ""
    else:
        return None
    if last not in resolver.operator_names and last not in ("out", "default") and not (
        last.startswith(WORKSPACE_PREFIX) and last.endswith(WORKSPACE_SUFFIX)
    ) and last not in resolver.index.imports and last not in resolver.index.from_imports \
            and not resolver._maybe_alias_name(func):
        return None
    for qualified, partials in resolver._qualify(func, call, depth=0):
        hit = resolver._lookup(qualified)
        if hit is not None:
            return OperatorCall(call, *hit), partials
    return None


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_cheap_reject_resolves_every_call_as_the_test_by_test_reject(path):
    from kvlint.analysis.resolve import OperatorResolver as Resolver

    with open(path, encoding="utf-8") as fh:
        tracer, _ = _tracer(fh.read(), path)
    fast, slow = Resolver(tracer.index, load_catalog(), tracer), Resolver(tracer.index, load_catalog(), tracer)
    for call in tracer.index.calls:
        got = fast._resolve(call)
        want = _reference_resolve(slow, call)
        assert (got, fast.partials.get(id(call), ())) == (want[0], want[1]) if want else got is None, ast.dump(call)
