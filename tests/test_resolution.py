"""The analyzer's resolution of what a call is and what its keywords are, idiom by idiom."""
import ast
import textwrap

import pytest

from kvlint.analysis.module import ModuleIndex
from kvlint.analysis.values import UNKNOWN
from kvlint.catalog import load_catalog
from kvlint.checks.base import FileContext
from kvlint.settings import Settings
from kvlint.source import decode


def context(code: str) -> FileContext:
    text = textwrap.dedent(code)
    source = decode("t.py", text.encode())
    return FileContext(ModuleIndex(source, ast.parse(text)), load_catalog(), Settings())


def resolved(code: str):
    ctx = context(code)
    return [(oc.call.lineno, oc.operator.name, oc.variant) for oc in ctx.op_calls]


@pytest.mark.parametrize("code, expected", [
    ("import torch_npu\ntorch_npu.npu_fused_infer_attention_score(q, k, v)",
     [(2, "npu_fused_infer_attention_score", "")]),
    ("import torch\ntorch.ops.npu.npu_fused_infer_attention_score_v2(q, k, v)",
     [(2, "npu_fused_infer_attention_score_v2", "")]),
    ("import torch_npu as t\nt.npu_incre_flash_attention(q, k, v)", [(2, "npu_incre_flash_attention", "")]),
    ("from torch_npu import npu_fused_infer_attention_score as fa\nfa(q, k, v)",
     [(2, "npu_fused_infer_attention_score", "")]),
    ("import torch_npu\ntorch_npu.npu_fused_infer_attention_score.out(q, k, v, workspace=w, out=[o, l])",
     [(2, "npu_fused_infer_attention_score", "out")]),
    ("import torch\ntorch.ops.npu.npu_fused_infer_attention_score.default(q, k, v)",
     [(2, "npu_fused_infer_attention_score", "default")]),
    ("import torch\ntorch.ops.npu._npu_fused_infer_attention_score_v2_get_max_workspace(q, k, v)",
     [(2, "npu_fused_infer_attention_score_v2", "workspace")]),
    ("from torch.ops import npu\nnpu.scatter_update_(c, i, u, axis=1)", [(2, "scatter_update_", "")]),
    ("import torch_npu\ntorch_npu.npu_fusion_attention(q, k, v, 8, 'BSH')", [(2, "npu_fusion_attention", "")]),
    ("import torch_npu\ntorch_npu.npu_fusion_attention_v2(q, k, v, 8, 'BSH')", [(2, "npu_fusion_attention_v2", "")]),
    ("import torch_npu\ntorch_npu.npu_fusion_attention_v3.out(q, k, v, 8, 'BSH', workspace=w)",
     [(2, "npu_fusion_attention_v3", "out")]),
    ("import torch\ntorch.ops.npu._npu_fusion_attention_v3_get_max_workspace(q, k, v, 8, 'BSH')",
     [(2, "npu_fusion_attention_v3", "workspace")]),
    ("import torch\ntorch.ops.cann_ops_transformer.kv_compress_epilog(cache, x, s)", [(2, "kv_compress_epilog", "")]),
])
def test_module_level_names(code, expected):
    assert resolved(code) == expected


def test_local_namespace_alias_with_torchair_alternative():
    code = """
    import torch
    import torchair
    def f(q, k, v, is_prefill, enable_gegraph):
        fa_ops = torch.ops.npu
        if not is_prefill and enable_gegraph:
            fa_ops = torchair.ops
        return fa_ops.npu_fused_infer_attention_score(q, k, v)
    """
    assert resolved(code) == [(8, "npu_fused_infer_attention_score", "")]


def test_self_attribute_namespace_set_in_init_and_tng():
    code = """
    import torch
    import torchair as tng
    class Attn:
        def __init__(self, graph):
            self.fa_ops = tng.ops if graph else torch.ops.npu
        def forward(self, q, k, v):
            return self.fa_ops.npu_fused_infer_attention_score_v2(q, k, v)
    """
    assert resolved(code) == [(8, "npu_fused_infer_attention_score_v2", "")]


def test_namespace_returning_method():
    code = """
    import torch
    import torchair
    class Attn:
        def _fa_ops_for(self, is_prefill):
            return torch.ops.npu if is_prefill else torchair.ops
        def forward(self, q, k, v, p):
            return self._fa_ops_for(p).npu_fused_infer_attention_score(q, k, v)
    """
    assert resolved(code) == [(8, "npu_fused_infer_attention_score", "")]


def test_operator_object_bound_to_a_name_and_an_attribute():
    code = """
    import torch_npu
    class Attn:
        def __init__(self):
            self.fa = torch_npu.npu_fused_infer_attention_score
        def forward(self, q, k, v):
            op = torch_npu.npu_prompt_flash_attention
            return self.fa(q, k, v), op(q, k, v)
    """
    assert resolved(code) == [(8, "npu_fused_infer_attention_score", ""), (8, "npu_prompt_flash_attention", "")]


def test_same_named_wrapper_method_is_not_the_operator():
    code = """
    class DeviceOperator:
        def npu_fused_infer_attention_score(self, query, key_cache, head_size):
            return query
    def f(op, q, k):
        DeviceOperator().npu_fused_infer_attention_score(q, k, head_size=1)
        op.npu_fused_infer_attention_score(q, k, head_size=1)
    """
    assert resolved(code) == []


def test_unrelated_module_with_an_operator_named_attribute():
    assert resolved("import mylib\nmylib.npu_fused_infer_attention_score(q, k, v)") == []


def keywords(code: str):
    ctx = context(code)
    (oc,) = ctx.op_calls
    args = ctx.args(oc.call)
    return {k: [(kw.conditional, kw.via_dict) for kw in v] for k, v in args.keywords.items()}, args.complete


def test_dict_literal_subscript_update_and_conditional_keys():
    code = """
    import torch_npu
    def f(q, k, v, rope, extra_scale):
        d = {"num_heads": 8}
        d["scale"] = 0.1
        d.update({"input_layout": "TND"})
        d.update(sparse_mode=3)
        if rope is not None:
            d["query_rope"] = rope
        return torch_npu.npu_fused_infer_attention_score(q, k, v, atten_mask=None, **d)
    """
    kws, complete = keywords(code)
    assert complete
    assert set(kws) == {"num_heads", "scale", "input_layout", "sparse_mode", "query_rope", "atten_mask"}
    assert kws["query_rope"] == [(True, "d")]
    assert kws["scale"] == [(False, "d")]
    assert kws["atten_mask"] == [(False, None)]


def test_dict_call_and_nested_unpacking():
    code = """
    import torch_npu
    def f(q, k, v):
        base = dict(num_heads=8, scale=0.1)
        d = dict(base, input_layout="BSH")
        return torch_npu.npu_fused_infer_attention_score(q, k, v, **d)
    """
    kws, complete = keywords(code)
    assert complete and set(kws) == {"num_heads", "scale", "input_layout"}


def test_unresolvable_kwargs_mark_the_set_incomplete():
    code = """
    import torch_npu
    def f(q, k, v, **kwargs):
        return torch_npu.npu_fused_infer_attention_score(q, k, v, **kwargs)
    """
    kws, complete = keywords(code)
    assert not complete and kws == {}


def literal_candidates(code: str, keyword: str):
    ctx = context(code)
    (oc,) = ctx.op_calls
    (value,) = ctx.args(oc.call).values(keyword)
    return sorted(map(repr, ctx.values.literal_values(value, oc.call)))


def test_ternary_both_arms_and_names_assigned_in_branches():
    code = """
    import torch_npu
    def f(q, k, v, sliding, causal):
        mode = 4 if sliding else 3 if causal else 0
        return torch_npu.npu_fused_infer_attention_score(q, k, v, sparse_mode=mode)
    """
    assert literal_candidates(code, "sparse_mode") == ["0", "3", "4"]


def test_class_attribute_and_module_constant():
    code = """
    import torch_npu
    MODE = 3
    class A:
        def __init__(self):
            self.mode = MODE
        def forward(self, q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, sparse_mode=self.mode)
    """
    assert literal_candidates(code, "sparse_mode") == ["3"]


def test_later_reassignment_hides_the_earlier_one():
    code = """
    import torch_npu
    def f(q, k, v):
        mode = 2
        mode = 3
        return torch_npu.npu_fused_infer_attention_score(q, k, v, sparse_mode=mode)
    """
    assert literal_candidates(code, "sparse_mode") == ["3"]


def test_parameter_reassigned_on_one_branch_keeps_the_callers_value():
    code = """
    import torch_npu
    def f(q, k, v, mask, q_len):
        if q_len == 1:
            mask = None
        return torch_npu.npu_fused_infer_attention_score(q, k, v, atten_mask=mask)
    """
    ctx = context(code)
    (oc,) = ctx.op_calls
    (value,) = ctx.args(oc.call).values("atten_mask")
    values = ctx.values.literal_values(value, oc.call)
    assert len(values) == 2 and None in values and UNKNOWN in values


def test_module_level_builder_result_is_followed():
    code = """
    import torch
    import torch_npu
    def get_mask():
        m = torch.ones(2048, 2048)
        return m
    def f(q, k, v):
        return torch_npu.npu_fused_infer_attention_score(q, k, v, atten_mask=get_mask())
    """
    ctx = context(code)
    (oc,) = ctx.op_calls
    (value,) = ctx.args(oc.call).values("atten_mask")
    sites = ctx.dtypes.construction_sites(value, oc.call)
    assert [s.lineno for s in sites] == [5]
    assert ctx.dtypes.infer(value, oc.call) == ["float"]


@pytest.mark.parametrize("condition, phase", [
    ("is_prefill", "prefill"), ("not is_prefill", "decode"), ("attn_metadata.is_decode", "decode"),
    ("q_len > 1", "prefill"), ("q_len == 1", "decode"), ("1 < seq_len", "prefill"),
    ("num_decode_tokens > 0", "decode"), ("prefill_meta is not None", "prefill"), ("flag", None),
])
def test_phase_from_branch_conditions(condition, phase):
    code = f"""
    import torch_npu
    def f(q, k, v):
        if {condition}:
            return torch_npu.npu_fused_infer_attention_score(q, k, v)
    """
    ctx = context(code)
    (oc,) = ctx.op_calls
    assert ctx.context.phase(oc.call) == phase


@pytest.mark.parametrize("condition, in_body, single", [
    ("max_query_len == 1", True, True), ("q_len <= 1", True, True), ("q_len < 2", True, True),
    ("1 == q_len", True, True), ("q_len > 1", False, True), ("q_len >= 2", False, True),
    ("q_len != 1", False, True), ("not q_len > 1", True, True),
    ("q_len == 1 and use_graph", True, True), ("q_len > 1 or chunked", False, True),
    ("q_len == 1 or chunked", True, False), ("q_len == 1", False, False), ("q_len == 4", False, False),
    ("q_len > 1", True, False), ("is_decode", True, False), ("num_decodes > 0", True, False),
    ("attn_state == AscendAttentionState.DecodeOnly", True, False),
])
def test_single_query_arm_only_from_query_lengths(condition, in_body, single):
    ctx = context("x = 1")
    test = ast.parse(condition, mode="eval").body
    assert ctx.context.single_query_arm(test, in_body) is single


def test_phase_from_else_branch_and_function_name():
    code = """
    import torch_npu
    def forward_decode(q, k, v, q_len):
        a = torch_npu.npu_fused_infer_attention_score(q, k, v)
        if q_len == 1:
            pass
        else:
            b = torch_npu.npu_fused_infer_attention_score(q, k, v)
    """
    ctx = context(code)
    phases = [ctx.context.phase(oc.call) for oc in ctx.op_calls]
    assert phases == ["decode", "prefill"]


@pytest.mark.parametrize("function, phase", [
    ("forward_prefill", "prefill"), ("prompt_step", "prefill"), ("forward_decode", "decode"),
    # named after an operator: no phase (FUNCTION_NAME_PHASE takes operator names out)
    ("prompt_flash_attention_npu", None), ("testPromptFlashAttention", None),
    ("test_incre_flash_attention_int8_in", None), ("IncreFlashAttentionKernel", None),
    # a phase word beside the operator's name still counts
    ("prefill_with_prompt_flash_attention", "prefill"), ("decode_incre_flash_attention", "decode"),
])
def test_phase_from_function_name_without_the_operator_names_it_spells(function, phase):
    ctx = context(f"""
    import torch_npu
    def {function}(q, k, v):
        return torch_npu.npu_fused_infer_attention_score(q, k, v)
    """)
    assert [ctx.context.phase(oc.call) for oc in ctx.op_calls] == [phase]


def test_calls_under_fake_tensor_mode_are_not_checked():
    ctx = context("""
    import torch
    import torch_npu
    from torch._subclasses import fake_tensor
    from torch._subclasses.fake_tensor import FakeTensorMode

    def shapes(q, k, v):
        with FakeTensorMode():
            torch_npu.npu_fused_infer_attention_score(q, k, v)
        with torch.no_grad(), fake_tensor.FakeTensorMode() as mode:
            if q.dim() == 3:
                torch_npu.npu_fused_infer_attention_score(q, k, v)
        torch_npu.npu_fused_infer_attention_score(q, k, v)
        with torch.no_grad():
            torch_npu.npu_fused_infer_attention_score(q, k, v)
    """)
    assert len(ctx.op_calls) == 4
    assert [oc.call.lineno for oc in ctx.checked_calls] == [13, 15]


def test_fusion_attention_roles_by_keyword_and_by_position():
    from kvlint.helpers.roles import role_node, role_values
    from kvlint.helpers.sparse import sparse_view, token_window_values
    ctx = context("""
        import torch_npu
        torch_npu.npu_fusion_attention(q, k, v, 8, "BSH", None, None, mask, 0.125, pre_tockens=7, sparse_mode=4)
        torch_npu.npu_fusion_attention(q, k, v, 8, "BSH", scale=0.1)
    """)
    first, second = ctx.op_calls
    assert [ctx.text(e) for e in role_values(first, ctx, "mask")] == ["mask"]
    assert [ctx.text(e) for e in role_values(first, ctx, "scale")] == ["0.125"]
    assert ctx.text(role_node(first, ctx, "num_heads")) == "8"
    view = sparse_view(first, ctx)
    assert view.modes == {4} and view.mask_passed and not view.no_mask
    assert token_window_values(first, ctx, "pre_tokens")[1] == [7]
    assert token_window_values(first, ctx, "next_tokens") is None
    assert sparse_view(second, ctx).no_mask and role_values(second, ctx, "mask") == []


def test_cached_mask_rule_reads_the_positional_fusion_mask_through_the_prefilter():
    """npu_fusion_attention's mask at position 7: no `atten_mask` in the file at all."""
    from kvlint.engine import Checker
    from kvlint.testing import only

    text = textwrap.dedent("""
        import torch_npu
        class DiTSelfAttention:
            def forward(self, q, k, v, n, pad):
                self.band_mask.masked_fill_(pad, True)
                return torch_npu.npu_fusion_attention(q, k, v, n, "BNSD", None, None, self.band_mask, 0.125)[0]
    """)
    result = Checker(only("KV221")).check_bytes("dit.py", text.encode())
    assert [(f.code, f.line) for f in result.findings] == [("KV221", 5)]


@pytest.mark.parametrize("code, expected", [
    # an optional import: the name is the import or None, and None is never called
    ("try:\n    import torch_npu\nexcept ImportError:\n    torch_npu = None\n"
     "def f(q, k, v):\n    return torch_npu.npu_fused_infer_attention_score(q, k, v)",
     [(6, "npu_fused_infer_attention_score", "")]),
    ("try:\n    from torch_npu import npu_fusion_attention\nexcept (ImportError, OSError):\n"
     "    npu_fusion_attention = None\n"
     "def f(q, k, v):\n    return npu_fusion_attention(q, k, v, 8, 'BSND')",
     [(6, "npu_fusion_attention", "")]),
    ("if HAS_NPU:\n    try:\n        from torch_npu import npu_fusion_attention as fa\n    except ImportError:\n"
     "        fa = None\nelse:\n    fa = None\n"
     "def f(q, k, v):\n    return fa(q, k, v, 8, 'BSND')",
     [(9, "npu_fusion_attention", "")]),
    # a fallback that can be called: the call may be either, so it is not taken for the operator
    ("try:\n    from torch_npu import npu_fusion_attention\nexcept ImportError:\n"
     "    npu_fusion_attention = my_attention\n"
     "def f(q, k, v):\n    return npu_fusion_attention(q, k, v, 8, 'BSND')", []),
    ("try:\n    import torch_npu\nexcept ImportError:\n    torch_npu = FakeNpu()\n"
     "def f(q, k, v):\n    return torch_npu.npu_fused_infer_attention_score(q, k, v)", []),
])
def test_optional_imports(code, expected):
    assert resolved(code) == expected


@pytest.mark.parametrize("layout, q_lens, single", [
    ('"TND"', "list(range(1, n + 1))", True),
    ('"TND"', "range(1, n + 1)", True),
    ('"TND"', "torch.arange(1, n + 1, dtype=torch.int32).tolist()", True),
    ('"NTD_TND"', "lens", True),  # `lens = list(range(1, n + 1))` above the call
    ('"TND"', "torch.arange(1, n + 1, 2)", False),  # a step of 2: two queries a sequence
    ('"TND"', "list(range(0, n))", False),
    ('"TND"', "cu_seqlens[1:].tolist()", False),
    ('"TND"', "[1] * n", False),  # cumulative 1, 1, ...: not lengths of one query each
    ('"BSND"', "[1] * n", True),
    ('"BSND"', "(1, 1, 1)", True),
    ('"BSND"', "list(range(1, n + 1))", False),  # per-sequence lengths 1, 2, ..., n
    ("layout", "[1] * n", False),  # the layout is not known
])
def test_one_query_per_sequence(layout, q_lens, single):
    from kvlint.helpers.sparse import one_query_per_sequence
    ctx = context(f"""
        import torch
        import torch_npu
        def f(q, k, v, n, cu_seqlens, layout):
            lens = list(range(1, n + 1))
            return torch_npu.npu_fused_infer_attention_score(
                q, k, v, num_heads=8, input_layout={layout}, actual_seq_lengths={q_lens})
    """)
    (oc,) = ctx.op_calls
    assert one_query_per_sequence(oc, ctx) is single


@pytest.mark.parametrize("source, values", [
    # a parameter never rebound: its literal default
    ("def f(q, next_tokens=65535):\n    return op(q, next_tokens=next_tokens)", [65535]),
    # stored on self in __init__ and read in another method
    ("class A:\n    def __init__(self, next_tokens=0):\n        self.next_tokens = next_tokens\n"
     "    def forward(self, q):\n        return op(q, next_tokens=self.next_tokens)", [0]),
    # no default, or rebound before the call: not known
    ("def f(q, next_tokens):\n    return op(q, next_tokens=next_tokens)", [UNKNOWN]),
    ("def f(q, next_tokens=65535):\n    next_tokens = next_tokens - 1\n    return op(q, next_tokens=next_tokens)",
     [UNKNOWN]),
    ("def f(q, next_tokens=65535):\n    next_tokens += 1\n    return op(q, next_tokens=next_tokens)", [UNKNOWN]),
    # a default that is no literal
    ("def f(q, next_tokens=WINDOW):\n    return op(q, next_tokens=next_tokens)", [UNKNOWN]),
    # a literal passed is itself
    ("def f(q):\n    return op(q, next_tokens=7)", [7]),
])
def test_window_values_take_a_parameter_default(source, values):
    from kvlint.helpers.sparse import token_window_values
    ctx = context("import torch_npu\n" + source.replace("op(", "torch_npu.npu_fused_infer_attention_score("))
    (oc,) = ctx.op_calls
    assert token_window_values(oc, ctx, "next_tokens")[1] == values
