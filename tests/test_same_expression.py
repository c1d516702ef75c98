"""`kvlint.helpers.args.same_expression`: when two arguments denote one object (KV108's
ABSORB_CALL asks whether key and value are the same latent cache)."""
import ast
import textwrap

import pytest

from kvlint.analysis.module import ModuleIndex
from kvlint.catalog import load_catalog
from kvlint.checks.base import FileContext
from kvlint.helpers.args import builds_new_object, same_expression
from kvlint.settings import Settings
from kvlint.source import decode


def key_and_value(body: str):
    """The 2nd and 3rd arguments of the last call `f(...)` in `body` (a function's body)."""
    text = "import torch\nimport numpy as np\n\n\ndef fn(q, kv, cache, shape, make):\n" + textwrap.indent(
        textwrap.dedent(body), "    ")
    ctx = FileContext(ModuleIndex(decode("t.py", text.encode()), ast.parse(text)), load_catalog(), Settings())
    call = [c for c in ctx.index.calls if isinstance(c.func, ast.Name) and c.func.id == "f"][-1]
    return call.args[1], call.args[2], ctx


@pytest.mark.parametrize("body, same", [
    ("f(q, kv, kv)", True),  # one name read twice
    ("f(q, cache[0], cache[0])", True),
    ("f(q, kv.view(-1, 1, 512), kv.view(-1, 1, 512))", True),  # two views of one tensor
    ("k = kv.view(-1, 512)\nf(q, k, k)", True),
    ("latent = torch.zeros(shape)\nkey, value = latent, latent\nf(q, key, value)", True),  # one construction
    ("key = torch.randn(shape)\nvalue = torch.randn(shape)\nf(q, key, value)", False),  # two tensors
    ("key = torch.randn(shape).npu()\nvalue = torch.randn(shape).npu()\nf(q, key, value)", False),
    ("f(q, torch.randn(shape), torch.randn(shape))", False),
    ("f(q, np.zeros(shape), np.zeros(shape))", False),
    ("f(q, make(shape), make(shape))", False),  # a function may build a new tensor each call
    ("f(q, kv + 1, kv + 1)", False),
    ("f(q, kv, cache)", False),
])
def test_two_arguments_are_one_object_only_when_each_reading_sees_it(body, same):
    a, b, ctx = key_and_value(body)
    assert same_expression(a, b, ctx) is same


@pytest.mark.parametrize("expr, new", [
    ("kv", False), ("kv.k_cache", False), ("cache[0]", False), ("kv.view(-1, 512)", False),
    ("kv.k_cache[0].transpose(1, 2)", False), ("torch.randn(shape)", True),
    ("torch.randn(shape).npu()", True), ("make(shape)", True), ("kv * 2", True),
])
def test_builds_new_object(expr, new):
    a, _, ctx = key_and_value(f"f(q, {expr}, kv)")
    assert builds_new_object(a, ctx) is new
