"""The value forms real code uses, one test per form: what the tracer, the dtype inference
and the resolver make of each (module-level aliases, partial, getattr, tuple unpacking, loop
targets, class attributes, config objects, persistent buffers, escaping returns)."""
import ast
import textwrap

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


def call_at(ctx: FileContext, line: int) -> ast.Call:
    return next(c for c in ctx.index.calls if c.lineno == line)


def keyword(ctx: FileContext, line: int, name: str) -> ast.expr:
    return next(k.value for k in call_at(ctx, line).keywords if k.arg == name)


def literals(ctx: FileContext, line: int, name: str):
    value = keyword(ctx, line, name)
    return sorted((ctx.values.literal(c) for c in ctx.values.candidates(value, value, follow_calls=True)),
                  key=repr)


def dtypes(ctx: FileContext, line: int, name: str):
    value = keyword(ctx, line, name)
    return sorted(set(ctx.dtypes.infer(value, value)), key=repr)


def resolved(ctx: FileContext):
    return [(oc.call.lineno, oc.operator.name) for oc in ctx.op_calls]


# -- operator aliases ---------------------------------------------------------------------
def test_module_level_operator_alias():
    ctx = context("""
    import torch_npu
    fia = torch_npu.npu_fused_infer_attention_score
    def forward(q, k, v):
        return fia(q, k, v, num_heads=8)
    """)
    assert resolved(ctx) == [(5, "npu_fused_infer_attention_score")]


def test_alias_bound_in_the_enclosing_function_reaches_a_closure():
    ctx = context("""
    import torch
    def build():
        op = torch.ops.npu.npu_fused_infer_attention_score
        def run(q, k, v):
            return op(q, k, v)
        return run
    """)
    assert resolved(ctx) == [(6, "npu_fused_infer_attention_score")]


def test_functools_partial_binds_keywords():
    ctx = context("""
    import functools
    import torch_npu
    fa = functools.partial(torch_npu.npu_fused_infer_attention_score, scale=0.125, sparse_mode=3)
    def forward(q, k, v):
        return fa(q, k, v, num_heads=8)
    """)
    assert resolved(ctx) == [(6, "npu_fused_infer_attention_score")]
    args = ctx.args(ctx.op_calls[0].call)
    assert args.has("scale") and args.has("num_heads") and args.complete
    assert [ctx.values.literal(v) for v in args.values("sparse_mode")] == [3]


def test_partial_imported_by_name():
    ctx = context("""
    from functools import partial
    import torch_npu
    def forward(q, k, v):
        fa = partial(torch_npu.npu_incre_flash_attention, num_heads=8)
        return fa(q, k, v)
    """)
    assert resolved(ctx) == [(6, "npu_incre_flash_attention")]


def test_partial_of_a_user_function_is_not_an_operator():
    ctx = context("""
    import functools
    def my_attention(q, k, v): ...
    npu_fused_infer_attention_score = functools.partial(my_attention, 1)
    npu_fused_infer_attention_score(q, k, v)
    """)
    assert resolved(ctx) == []


def test_getattr_on_an_operator_namespace():
    ctx = context("""
    import torch
    op = getattr(torch.ops.npu, "npu_fused_infer_attention_score")
    def forward(q, k, v):
        a = op(q, k, v)
        return getattr(torch.ops.npu, "npu_fused_infer_attention_score_v2")(q, k, v)
    """)
    assert resolved(ctx) == [(5, "npu_fused_infer_attention_score"), (6, "npu_fused_infer_attention_score_v2")]


def test_getattr_on_a_user_object_is_not_an_operator():
    ctx = context("""
    def forward(backend, q, k, v):
        return getattr(backend, "npu_fused_infer_attention_score")(q, k, v)
    """)
    assert resolved(ctx) == []


# -- tuple assignment and unpacking -------------------------------------------------------
def test_tuple_assignment_per_branch():
    ctx = context("""
    def forward(q, single_token, m):
        if single_token:
            mask, mode = None, 0
        else:
            mask, mode = m, 3
        op(q, atten_mask=mask, sparse_mode=mode)
    """)
    assert literals(ctx, 7, "sparse_mode") == [0, 3]
    mask = keyword(ctx, 7, "atten_mask")
    kinds = {type(c).__name__ for c in ctx.values.candidates(mask, mask)}
    assert kinds == {"Constant", "Name"}


def test_unpacking_a_builder_result():
    ctx = context("""
    import torch
    def helper(q, k, v, mask):
        return q, k, v, mask.float()
    def forward(q, k, v, mask):
        q, k, v, m = helper(q, k, v, mask)
        op(q, k, v, atten_mask=m)
    """)
    assert dtypes(ctx, 7, "atten_mask") == ["float"]


def test_unpacking_a_ternary_of_tuples():
    ctx = context("""
    def forward(q, c, m):
        mask, mode = (None, 0) if c else (m, 4)
        op(q, atten_mask=mask, sparse_mode=mode)
    """)
    assert literals(ctx, 4, "sparse_mode") == [0, 4]


def test_self_attributes_assigned_as_a_tuple():
    ctx = context("""
    import torch
    class Impl:
        def __init__(self, n):
            self.mask, self.fia_mask = torch.ones(n, n), torch.ones(2048, 2048, dtype=torch.bool)
        def forward(self, q):
            op(q, atten_mask=self.mask)
            op(q, atten_mask=self.fia_mask)
    """)
    assert dtypes(ctx, 7, "atten_mask") == ["float"]
    assert dtypes(ctx, 8, "atten_mask") == ["bool"]


def test_starred_unpacking_binds_only_the_leading_names():
    ctx = context("""
    def forward(q, pair):
        mode, *rest = pair
        op(q, sparse_mode=mode)
    """)
    assert literals(ctx, 4, "sparse_mode") == [UNKNOWN]


# -- loop targets -------------------------------------------------------------------------
def test_loop_targets_over_zip_and_enumerate():
    ctx = context("""
    import torch
    def forward(q):
        for mask, mode in zip([torch.ones(4, 4), None], [0, 3]):
            op(q, atten_mask=mask, sparse_mode=mode)
        for i, table in enumerate([torch.zeros(2, 8, dtype=torch.int64)]):
            op(q, block_table=table, sparse_mode=i)
    """)
    assert literals(ctx, 5, "sparse_mode") == [0, 3]
    assert dtypes(ctx, 5, "atten_mask") == ["float", None]
    assert dtypes(ctx, 7, "block_table") == ["int64"]
    assert literals(ctx, 7, "sparse_mode") == [UNKNOWN]


def test_loop_over_a_tensor_keeps_its_dtype():
    ctx = context("""
    import torch
    def forward(q):
        tables = torch.zeros(4, 2, 8, dtype=torch.int64)
        for table in tables:
            op(q, block_table=table)
    """)
    assert dtypes(ctx, 6, "block_table") == ["int64"]


# -- class attributes, config objects -----------------------------------------------------
def test_class_attribute_assigned_through_the_class_name():
    ctx = context("""
    import torch
    class Impl:
        SHARE_MASK = None
        def forward(self, q):
            op(q, atten_mask=self.SHARE_MASK)
            op(q, atten_mask=Impl.SHARE_MASK)
    Impl.SHARE_MASK = torch.ones(2048, 2048)
    """)
    assert dtypes(ctx, 6, "atten_mask") == ["float", None]
    assert dtypes(ctx, 7, "atten_mask") == ["float", None]


def test_attribute_of_a_base_class_in_the_module():
    ctx = context("""
    import torch
    class Base:
        def __init__(self):
            self.mask = torch.ones(8, 8)
    class Impl(Base):
        def forward(self, q):
            op(q, atten_mask=self.mask)
    """)
    assert dtypes(ctx, 8, "atten_mask") == ["float"]


def test_config_object_built_from_literals():
    ctx = context("""
    from dataclasses import dataclass
    @dataclass
    class AttnConfig:
        sparse_mode: int = 3
        next_tokens: int = 65535
        pre_tokens: int = 65535
    class Plain:
        def __init__(self, mode, band=4):
            self.mode = mode
            self.band = band
    def forward(q):
        cfg = AttnConfig(sparse_mode=0, next_tokens=0)
        op(q, sparse_mode=cfg.sparse_mode, next_tokens=cfg.next_tokens, pre_tokens=cfg.pre_tokens)
        positional = AttnConfig(2)
        op(q, sparse_mode=positional.sparse_mode)
        p = Plain(1)
        op(q, sparse_mode=p.mode, next_tokens=p.band)
    """)
    assert literals(ctx, 14, "sparse_mode") == [0]
    assert literals(ctx, 14, "next_tokens") == [0]
    assert literals(ctx, 14, "pre_tokens") == [65535]
    assert literals(ctx, 16, "sparse_mode") == [2]
    assert literals(ctx, 18, "sparse_mode") == [1]
    assert literals(ctx, 18, "next_tokens") == [4]


def test_attribute_of_an_unknown_object_stays_a_leaf():
    ctx = context("""
    def forward(q, meta):
        op(q, sparse_mode=meta.sparse_mode)
    """)
    value = keyword(ctx, 3, "sparse_mode")
    assert ctx.values.candidates(value, value) == [value]


# -- buffers and escaping values ----------------------------------------------------------
def test_persistent_buffer_sliced_and_moved():
    ctx = context("""
    import torch
    class Runner:
        def __init__(self, n, m):
            self.block_table_cpu = torch.zeros((n, m), dtype=torch.int64, device="cpu", pin_memory=True)
        def step(self, q, n, dev):
            op(q, block_table=self.block_table_cpu[:n].to(dev, non_blocking=True))
    """)
    assert dtypes(ctx, 7, "block_table") == ["int64"]
    sites = ctx.dtypes.construction_sites(keyword(ctx, 7, "block_table"), call_at(ctx, 7))
    assert [s.lineno for s in sites] == [5]  # the buffer's construction, not the per-step view


def test_return_moved_to_a_device_escapes_with_its_dtype():
    ctx = context("""
    import torch
    def make_mask(n, device):
        mask = torch.triu(torch.ones(n, n), diagonal=1)
        return mask.to(device)
    def forward(q, device):
        op(q, atten_mask=make_mask(2048, device))
    """)
    assert dtypes(ctx, 7, "atten_mask") == ["float"]
    sites = ctx.dtypes.construction_sites(keyword(ctx, 7, "atten_mask"), call_at(ctx, 7))
    assert [s.lineno for s in sites] == [4]


def test_unpacking_an_unknown_value_keeps_the_name_as_the_leaf():
    # `(..., sliding_window, ...) = param` of an unknown `param`: the name is all there is,
    # so the name heuristics (HF_SLIDING_WINDOW) still see it
    ctx = context("""
    def update(params):
        for param in params:
            (query, sliding_window) = param
            op(query, pre_tokens=sliding_window)
    """)
    value = keyword(ctx, 5, "pre_tokens")
    assert ctx.values.candidates(value, value) == [value]
    assert [getattr(v, "id", None) for v in ctx.values.bindings("sliding_window", value)] == ["<parameter>"]


# -- context: phase from enum states, vLLM's per-layer loops ---------------------------------
def phase_at(code: str, line: int):
    ctx = context(code)
    return ctx.context.phase(call_at(ctx, line))


def test_phase_from_enum_states():
    code = """
    def forward(self, q, meta):
        if meta.attn_state == AscendAttentionState.PrefillNoCache:
            op(q)
        elif meta.attn_state == AscendAttentionState.DecodeOnly:
            op(q)
        elif meta.attn_state in (AscendAttentionState.ChunkedPrefill, AscendAttentionState.DecodeOnly):
            op(q)
        if meta.attn_state != AscendAttentionState.DecodeOnly:
            op(q)
    """
    assert [phase_at(code, n) for n in (4, 6, 8, 10)] == ["prefill", "decode", None, None]


def test_vllm_per_layer_loops():
    ctx = context("""
    from itertools import islice
    class Model:
        def forward(self, x, start, end):
            for layer in islice(self.layers, start, end):
                f(x)
            for i in range(start, end):
                layer = self.layers[i]
                g(x)
            for i in range(start, end):
                h(x)
    """)
    loops = [ctx.context.per_layer_loop(call_at(ctx, n)) for n in (6, 9, 11)]
    assert [getattr(loop, "lineno", None) for loop in loops] == [5, 7, None]
    from kvlint.analysis.context import layer_loop_pattern
    from kvlint.settings import HeuristicNames

    assert layer_loop_pattern(HeuristicNames()).search(b"        layer = self.layers[i]\n")


# -- branch by branch -----------------------------------------------------------------------
def branch_combos(code: str, line: int, roles=("atten_mask", "sparse_mode")):
    from kvlint.analysis.branches import combinations

    ctx = context(code)
    call = call_at(ctx, line)
    exprs = {r: keyword(ctx, line, r) for r in roles}
    out = []
    for combo, _ in combinations(ctx.values, call, exprs):
        out.append(tuple(ctx.values.literal(v) if isinstance(v, ast.Constant) else type(v).__name__
                         for v in combo.values()))
    return sorted(out, key=repr)


def test_combinations_follow_tuple_assignments_per_branch():
    assert branch_combos("""
    def f(q, m, single):
        if single:
            mask, mode = None, 0
        else:
            mask, mode = m, 4
        op(q, atten_mask=mask, sparse_mode=mode)
    """, 7) == [("Name", 4), (None, 0)]  # not the cross product (None, 4), (m, 0)


def test_combinations_pair_ternaries_on_one_condition():
    assert branch_combos("""
    def f(q, m, causal):
        mask = m if causal else None
        op(q, atten_mask=mask, sparse_mode=3 if causal else 0)
    """, 4) == [("Name", 3), (None, 0)]


def test_combinations_split_a_ternary_of_tuples_per_side():
    assert branch_combos("""
    def f(q, m, single):
        mask, mode = (None, 0) if single else (m, 4)
        op(q, atten_mask=mask, sparse_mode=mode)
    """, 4) == [("Name", 4), (None, 0)]  # not (None, 4), (m, 0)


def test_a_side_that_is_not_a_tuple_literal_stays_one_leaf_on_its_arm():
    combos = branch_combos("""
    def f(q, m, single):
        mask, mode = (None, 0) if single else helper(m)
        op(q, atten_mask=mask, sparse_mode=mode)
    """, 4)
    assert combos == [("Subscript", "Subscript"), (None, 0)]


def test_a_later_assignment_in_one_arm_overrides_on_that_arm_only():
    assert branch_combos("""
    def f(q, m, quant):
        mask, mode = m, 4
        if quant:
            mask = None
            mode = 0
        op(q, atten_mask=mask, sparse_mode=mode)
    """, 7) == [("Name", 4), (None, 0)]


def test_the_calls_own_arm_excludes_the_other_side():
    assert branch_combos("""
    def f(q, m, c):
        mode = 3 if c else 0
        if c:
            op(q, atten_mask=m, sparse_mode=mode)
    """, 5) == [("Name", 3)]


def test_or_reads_as_a_condition():
    assert branch_combos("""
    def f(q, m, w):
        mode = 4 if w else 0
        op(q, pre_tokens=w or 2147483647, sparse_mode=mode)
    """, 4, roles=("pre_tokens", "sparse_mode")) == [("Name", 4), (2147483647, 0)]


def test_unpacking_that_feeds_itself_terminates():
    ctx = context("""
    def f(x, n):
        for _ in range(n):
            a, x = g(x)
            b, c = x
        op(x, sparse_mode=b)
    """)
    value = keyword(ctx, 6, "sparse_mode")
    assert ctx.values.candidates(value, value)  # no RecursionError
