"""Function summaries (kvlint/analysis/summaries.py): which adapter parameter reaches which
operator argument, and how an adapter's call site is seen as the operator's call."""
import ast
import textwrap

from kvlint.analysis.module import ModuleIndex
from kvlint.analysis.values import Unknown
from kvlint.catalog import load_catalog
from kvlint.checks.base import FileContext
from kvlint.settings import Settings
from kvlint.source import decode


def context(code: str, path: str = "m.py") -> FileContext:
    text = textwrap.dedent(code)
    return FileContext(ModuleIndex(decode(path, text.encode()), ast.parse(text)), load_catalog(), Settings())


def function(ctx, name):
    return next(f for f in ast.walk(ctx.index.tree) if isinstance(f, ast.FunctionDef) and f.name == name)


ADAPTER = """
import torch_npu
class Ops:
    @classmethod
    def npu_fused_infer_attention_score(cls, query, key, value, *, num_heads, head_size, **kwargs):
        return torch_npu.npu_fused_infer_attention_score(
            query, key=key.contiguous(), value=value, num_heads=num_heads, input_layout="BSND", **kwargs)
"""


def test_summary_maps_parameters_to_operator_arguments():
    ctx = context(ADAPTER)
    s = ctx.adapters.summary(function(ctx, "npu_fused_infer_attention_score"), is_method=True)
    assert s is not None and s.params == ("query", "key", "value")
    assert s.to_position == {"query": 0}
    assert s.to_keyword == {"key": "key", "value": "value", "num_heads": "num_heads"}
    assert s.kwargs_forwarded == "kwargs" and s.args_forwarded is None
    assert set(s.fixed) == {"input_layout"} and not s.computed and s.complete
    assert s.returns_result
    assert "head_size" in s.named  # consumed by the adapter, not forwarded


def test_site_is_seen_as_the_operator_call():
    ctx = context(ADAPTER + """
def run(q, k, v, m):
    return Ops.npu_fused_infer_attention_score(q, k, v, num_heads=8, head_size=64, atten_mask=m, sparse_mode=3)
""")
    (oc,) = [oc for oc in ctx.checked_calls if id(oc.call) in ctx.adapter_calls]
    assert oc.name == "npu_fused_infer_attention_score" and oc.call.lineno == 10
    args = ctx.args(oc.call)
    assert [a.id for a in args.positional] == ["q"]
    assert {name: type(v[0].value).__name__ for name, v in args.keywords.items()} == {
        "key": "Name", "value": "Name", "num_heads": "Constant", "atten_mask": "Name", "sparse_mode": "Constant",
        "input_layout": "Unknown"}
    assert args.complete
    assert ctx.op_calls[0].call.lineno == 6  # the adapter's own call stays a direct call


def test_rebound_parameter_and_computed_argument_are_not_forwarded():
    ctx = context("""
    import torch_npu
    def write(key, value, key_cache, value_cache, slots):
        key_cache = key_cache.view(-1, 16, 128, 16)
        torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache.view(-1, 16, 128, 16), slots)
    """)
    from kvlint.analysis.summaries import summarize

    s = summarize(function(ctx, "write"), ctx.op_calls[0], ctx.values, is_method=False)
    assert s.to_position == {"key": 0, "value": 1, "slots": 4}
    assert s.computed  # -> not a pure forwarder: its sites are not checked
    assert ctx.adapters.summary(function(ctx, "write"), is_method=False) is None
    assert not s.returns_result


def test_two_operator_calls_make_no_adapter():
    ctx = context("""
    import torch_npu
    def fa(q, k, v, m, causal):
        if causal:
            return torch_npu.npu_fused_infer_attention_score(q, k, v, atten_mask=m, sparse_mode=2)
        return torch_npu.npu_fused_infer_attention_score(q, k, v)
    fa(q, k, v, None, True)
    """)
    assert ctx.adapters.summary(function(ctx, "fa"), is_method=False) is None
    assert [oc.call.lineno for oc in ctx.checked_calls] == [5, 6]


def test_result_not_returned_as_is_hides_the_outputs():
    ctx = context("""
    import torch_npu
    def fa(q, k, v, mask):
        out = torch_npu.npu_fused_infer_attention_score(q, k, v, atten_mask=mask)
        return out[0]
    def run(q, k, v, m):
        o, lse = fa(q, k, v, m)
    """)
    (oc,) = [oc for oc in ctx.checked_calls if id(oc.call) in ctx.adapter_calls]
    assert isinstance(ctx.index.parent_of(oc.call), ast.Expr)  # not the `o, lse = ...` statement


def test_adapter_calls_in_tests_are_not_checked():
    ctx = context(ADAPTER + "Ops.npu_fused_infer_attention_score(q, k, v, num_heads=8, head_size=64)\n",
                  path="tests/test_ops.py")
    assert not ctx.adapter_calls and len(ctx.checked_calls) == 1


def test_unknown_placeholder_counts_as_passed_but_has_no_value():
    ctx = context(ADAPTER + "Ops.npu_fused_infer_attention_score(q, k, v, num_heads=8, head_size=64)\n")
    oc = ctx.checked_calls[-1]
    (layout,) = ctx.args(oc.call).values("input_layout")
    assert isinstance(layout, Unknown)
    assert ctx.values.candidates(layout, layout) == [layout]
    assert ctx.dtypes.infer(layout, layout) == [None]


def test_operator_names_search_as_the_alternation_regex():
    """OperatorNames (substring tests, names holding another left out) answers as the one
    alternation regex of the catalog's names it stands for."""
    import random
    import re

    from kvlint.analysis.summaries import operator_words
    from kvlint.catalog import load_catalog

    words = operator_words(load_catalog())
    regex = re.compile(words.pattern)
    names = sorted(load_catalog().operator_names())
    pieces = [n.encode() for n in names] + [n.encode()[:-1] for n in names] + [
        b"npu_", b"_", b" ", b"\n", b"torch_npu.", b"update", b"attention", b"x"]
    rng = random.Random(11)
    for _ in range(5000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert (words.search(data) is not None) == (regex.search(data) is not None), data
    assert len(words.words) < len(names)  # the workspace twins hold their operator's name
