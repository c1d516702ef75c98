"""AdapterResolver's shortcuts answer what the slow path answers.

- `calls_in(func)` (the operator calls one function makes, resolving only the calls inside
  it) equals `direct_calls().get(id(func), [])` (every call of the module resolved), for every
  function of every fixture, decorators and nested functions included, in a module whose
  table is built and in one whose table is not;
- `resolve(call)` rejects a `self.x(...)` / `cls.x(...)` call at once when no function of the
  module makes an operator call: the same answer as following the call to its method.
"""
import ast
import glob
import os
import textwrap

import pytest

from kvlint.analysis.module import ModuleIndex
from kvlint.catalog import load_catalog
from kvlint.checks.base import FileContext
from kvlint.engine import Checker
from kvlint.settings import Settings
from kvlint.source import decode

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "fixtures"))  # not under tests/: adapters are on
FILES = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.py"), recursive=True))
CATALOG = load_catalog()
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _context(text: str, path: str = "m.py", project=None) -> FileContext:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("not Python (a KV000 fixture)")
    return FileContext(ModuleIndex(decode(path, text.encode()), tree), CATALOG, Settings(), project)


def _key(calls):
    return [(id(oc.call), oc.operator.name, oc.variant) for oc in calls]


def _check_calls_in(text: str, path: str = "m.py") -> int:
    fast, slow = _context(text, path).adapters, _context(text, path).adapters
    slow_table = slow.direct_calls()
    functions = [n for n in ast.walk(fast.index.tree) if isinstance(n, FUNCTIONS)]
    slow_functions = [n for n in ast.walk(slow.index.tree) if isinstance(n, FUNCTIONS)]
    found = 0
    for f, g in zip(functions, slow_functions):
        got, want = fast.calls_in(f), slow_table.get(id(g), [])
        assert [(oc.call.lineno, oc.call.col_offset, oc.operator.name, oc.variant) for oc in got] == \
            [(oc.call.lineno, oc.call.col_offset, oc.operator.name, oc.variant) for oc in want], (path, f.name)
        assert _key(fast.calls_in(f)) == _key(got)  # memoised: the same list again
        found += len(got)
    assert fast._functions_with_calls is None  # the module's table was never built
    for f in functions:  # once the table is built, it answers
        assert _key(fast.calls_in(f)) == _key(fast.direct_calls().get(id(f), []))
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_calls_in_is_the_table_entry_on_every_fixture(path):
    with open(path, encoding="utf-8") as fh:
        _check_calls_in(fh.read(), path)


FORMS = textwrap.dedent("""
    import torch_npu
    from functools import partial

    @decorate(torch_npu.npu_fused_infer_attention_score(q, k, v))
    def decorated(q, k, v, d=torch_npu.npu_fused_infer_attention_score(q, k, v)):
        return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=1)

    def outer(q, k, v):
        def inner():
            return torch_npu.npu_fused_infer_attention_score(q, k, v)
        x = torch_npu.npu_fused_infer_attention_score(q, k, v)
        return inner, x

    class Impl:
        def one(self, q, k, v): return torch_npu.npu_fused_infer_attention_score(q, k, v)
        def two(self, q, k, v):
            a = torch_npu.npu_fused_infer_attention_score(q, k, v)
            b = torch_npu.npu_fused_infer_attention_score(q, k, v); return a, b
        async def three(self, q): return torch_npu.npu_fused_infer_attention_score(q, q, q)
    fia = partial(torch_npu.npu_fused_infer_attention_score, num_heads=1)
    def aliased(q): return fia(q, q, q)
""")


def test_calls_in_on_decorators_defaults_nested_functions_and_one_line_methods():
    # decorated: its decorator, its default and its body (3); outer: x only (inner's is its
    # own: 1); inner 1; one 1; two 2; three 1; aliased 1
    assert _check_calls_in(FORMS) == 3 + 1 + 1 + 1 + 2 + 1 + 1


def test_calls_in_misses_no_call_when_keyed_by_the_first_line_only():
    ctx = _context(FORMS)
    f = next(n for n in ast.walk(ctx.index.tree) if isinstance(n, ast.FunctionDef) and n.name == "decorated")
    assert len(ctx.adapters.calls_in(f)) == 3
    assert len([oc for oc in ctx.adapters.calls_in(f) if oc.call.lineno < f.lineno]) == 1  # the decorator's


SELF_CALLS = textwrap.dedent("""
    import torch_npu

    class Base:
        def npu_fused_infer_attention_score(self, q, k, v, **kw):
            return {impl}(q, k, v, **kw)

    class Impl(Base):
        def forward(self, q, k, v):
            return self.npu_fused_infer_attention_score(q, k, v, num_heads=1), cls.helper(q)
""")


@pytest.mark.parametrize("impl", ["torch_npu.npu_fused_infer_attention_score", "something_else"])
def test_self_calls_rejected_at_once_only_when_no_function_calls_an_operator(impl):
    text = SELF_CALLS.format(impl=impl)
    fast, slow = _context(text).adapters, _context(text).adapters
    calls = [c for c in fast.index.calls if isinstance(c.func, ast.Attribute)]
    slow_calls = [c for c in slow.index.calls if isinstance(c.func, ast.Attribute)]
    for c, d in zip(calls, slow_calls):
        got = fast.resolve(c)
        hit = slow.target(d)  # the slow path: the method, then its summary
        want = None
        if hit is not None and hit[0].summary(hit[1], hit[2]) is not None:
            want = slow.resolve(d)
        assert (got is None) == (want is None), ast.unparse(c)
        if got is not None:
            assert (got.operator.name, got.variant) == (want.operator.name, want.variant)
    resolved = [fast.resolve(c) for c in calls if ast.unparse(c.func) == "self.npu_fused_infer_attention_score"]
    assert (resolved[0] is not None) == (impl != "something_else")


def test_calls_in_of_another_module_builds_no_table():
    # the adapter lives in another module of the project: asked through the checked file's
    # resolver, only the adapter's own calls are resolved there, as that module's table has them
    from kvlint.analysis.summaries import AdapterResolver

    root = os.path.join(FIXTURES, "projects", "adapters")
    checker = Checker(Settings(), roots=[root])
    path = os.path.join(root, "engine", "attention.py")
    with open(path, "rb") as fh:
        result = checker.check_bytes(path, fh.read())
    assert result.findings
    others = list(checker.project.__dict__.get("_adapter_resolvers", {}).values())
    assert others and any(r._calls_in for r in others), "the fixture's adapter is in another module"
    for r in others:
        assert r._functions_with_calls is None
        table = AdapterResolver(r.resolver, r.operator_words).direct_calls()
        for func, calls in r._calls_in.values():
            assert _key(calls) == _key(table.get(id(func), [])), func.name
