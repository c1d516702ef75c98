"""Which reference kernel runs each catalog operator, and what its fake (meta) implementation is.

The kernels live with their family (`kvlint/runtime/families/<family>/reference.py`); this table
only adapts them to the schema: `.out` overloads, the workspace query, the v1 rmsnorm outputs.
`IGNORED` names the arguments that only tune precision or speed on the NPU (the reference math
is float32 whatever they say); any other argument a kernel does not read must keep its schema
default, or the call raises NotImplementedError naming it (quantization, pse, left padding,
shared prefixes, dropout, ... are not emulated)."""
from __future__ import annotations

import torch

from kvlint.runtime.families.cache_write import reference as cache_write
from kvlint.runtime.families.fa import reference as fa
from kvlint.runtime.families.fusion import reference as fusion
from kvlint.runtime.families.mla import reference as mla


# --------------------------------------------------------------------------- adapters
def _with_out(kernel):
    """`.out` overload: same arguments plus workspace, attention_out(a!), softmax_lse(b!)."""
    def run(query, key, value, *, attention_out, softmax_lse, workspace=None, **kw):
        out, lse = kernel(query, key, value, **kw)
        attention_out.resize_(out.shape).copy_(out)
        softmax_lse.resize_(lse.shape).copy_(lse)
        return attention_out, softmax_lse
    run.__name__ = kernel.__name__ + "_out"
    run.__wrapped__ = kernel
    return run


def _fusion_v3_out(query, key, value, head_num, input_layout, *, attention_score, softmax_max, softmax_sum,
                   softmax_out, seed, offset, workspace=None, **kw):
    results = fusion.fusion_attention_v3(query, key, value, head_num, input_layout, **kw)
    given = (attention_score, softmax_max, softmax_sum, softmax_out, seed, offset)
    for target, value_ in zip(given, results):
        target.resize_(value_.shape).copy_(value_)
    return given


_fusion_v3_out.__wrapped__ = fusion.fusion_attention_v3


def _workspace(query, key, value, **kw):
    """The host-side workspace size query: the emulation needs no workspace."""
    return torch.empty(1, dtype=torch.uint8)


def _rmsnorm_v1(kv, gamma, cos, sin, index, k_cache, ckv_cache, *, is_output_kv=False, **kw):
    """v1 writes its caches (its schema marks no alias) and returns (k_cache, ckv_cache, k_rope,
    c_kv) as new tensors."""
    k_rope, c_kv = cache_write.kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache, **kw)
    return k_cache.clone(), ckv_cache.clone(), k_rope, c_kv


_rmsnorm_v1.__wrapped__ = cache_write.kv_rmsnorm_rope_cache


def _rmsnorm_v2(kv, gamma, cos, sin, index, k_cache, ckv_cache, *, is_output_kv=False, k_cache_dtype=None,
                ckv_cache_dtype=None, **kw):
    return cache_write.kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache, **kw)


_rmsnorm_v2.__wrapped__ = cache_write.kv_rmsnorm_rope_cache


# --------------------------------------------------------------------------- fake implementations
def _fake_fa_out(query, num_heads, layout):
    base_in, base_out = fa.split_layout(layout or "BSH")
    if base_in in fa.TOKEN_MAJOR:
        return query.new_empty(query.shape if base_in == base_out else (query.shape[1], query.shape[0],
                                                                        query.shape[2]))
    out = fa.from_bnsd(fa.to_bnsd(query, base_in, max(int(num_heads), 1)), base_out)
    return query.new_empty(out.shape)


def _fake_lse(query, num_heads, layout, flag):
    if not flag:
        return query.new_empty((1,), dtype=torch.float32)
    base_in = fa.split_layout(layout or "BSH")[0]
    if base_in in fa.TOKEN_MAJOR:
        total = query.shape[0] if base_in == "TND" else query.shape[1]
        return query.new_empty((total, int(num_heads), 1), dtype=torch.float32)
    bnsd = fa.to_bnsd(query, base_in, max(int(num_heads), 1))
    return query.new_empty((bnsd.shape[0], bnsd.shape[1], bnsd.shape[2], 1), dtype=torch.float32)


def _fake_fia(query, key, value, *, num_heads=1, input_layout="BSH", softmax_lse_flag=False, **kw):
    return (_fake_fa_out(query, num_heads, input_layout),
            _fake_lse(query, num_heads, input_layout, softmax_lse_flag))


def _fake_fia_v2(query, key, value, *, num_query_heads=1, input_layout="BSH", return_softmax_lse=False, **kw):
    return (_fake_fa_out(query, num_query_heads, input_layout),
            _fake_lse(query, num_query_heads, input_layout, return_softmax_lse))


def _fake_single(query, key, value, *, num_heads=1, input_layout="BSH", **kw):
    return _fake_fa_out(query, num_heads, input_layout)


def _fake_none(*args, **kwargs):
    return None


def _fake_self(self, *args, **kwargs):
    return self


def _fake_rmsnorm_v2(kv, gamma, cos, *args, **kw):
    lead = list(kv.shape[:-1])
    return kv.new_empty(lead + [cos.shape[-1]]), kv.new_empty(lead + [gamma.shape[0]])


# --------------------------------------------------------------------------- the table
FA_PRECISION = ("inner_precise", "antiquant_mode", "key_antiquant_mode", "value_antiquant_mode")
FA2_PRECISION = ("inner_precise", "query_quant_mode", "key_quant_mode", "value_quant_mode")

# (namespace, name, overload) -> (kernel, fake or None, arguments ignored; None: a workspace
# query that reads nothing and checks nothing)
KERNELS = {
    ("npu", "npu_fused_infer_attention_score", ""):
        (fa.fused_infer_attention_score, _fake_fia, FA_PRECISION),
    ("npu", "npu_fused_infer_attention_score", "out"):
        (_with_out(fa.fused_infer_attention_score), None, FA_PRECISION),
    ("npu", "_npu_fused_infer_attention_score_get_max_workspace", ""): (_workspace, _workspace, None),
    ("npu", "npu_fused_infer_attention_score_v2", ""):
        (fa.fused_infer_attention_score_v2, _fake_fia_v2, FA2_PRECISION),
    ("npu", "npu_fused_infer_attention_score_v2", "out"):
        (_with_out(fa.fused_infer_attention_score_v2), None, FA2_PRECISION),
    ("npu", "_npu_fused_infer_attention_score_v2_get_max_workspace", ""): (_workspace, _workspace, None),
    ("npu", "npu_incre_flash_attention", ""): (fa.incre_flash_attention, _fake_single, ("inner_precise",)),
    ("npu", "npu_prompt_flash_attention", ""): (fa.prompt_flash_attention, _fake_single, ()),
    ("npu", "npu_fusion_attention", ""):
        (fusion.fusion_attention, None, ("inner_precise", "gen_mask_parallel", "sync")),
    ("npu", "npu_fusion_attention_v2", ""):
        (fusion.fusion_attention_v2, None, ("inner_precise", "gen_mask_parallel", "sync", "pse_type")),
    ("npu", "npu_fusion_attention_v3", ""):
        (fusion.fusion_attention_v3, None, ("inner_precise", "gen_mask_parallel", "sync")),
    ("npu", "npu_fusion_attention_v3", "out"):
        (_fusion_v3_out, None, ("inner_precise", "gen_mask_parallel", "sync")),
    ("npu", "_npu_fusion_attention_v3_get_max_workspace", ""): (_workspace, _workspace, None),
    ("npu", "scatter_update_", ""): (cache_write.scatter_update_, _fake_self, ()),
    ("npu", "npu_scatter_nd_update_", ""): (cache_write.scatter_nd_update_, _fake_self, ()),
    ("npu", "npu_scatter_pa_kv_cache", ""): (cache_write.scatter_pa_kv_cache, _fake_none, ()),
    ("npu", "npu_kv_rmsnorm_rope_cache", ""): (_rmsnorm_v1, None, ()),
    ("npu", "npu_kv_rmsnorm_rope_cache_v2", ""): (_rmsnorm_v2, _fake_rmsnorm_v2, ()),
    ("atb", "npu_ring_mla", ""): (mla.ring_mla, None, ("kernel_type", "input_layout")),
    ("atb", "_npu_reshape_and_cache", ""): (cache_write.reshape_and_cache, _fake_none, ()),
    ("atb", "_npu_paged_attention", ""): (fa.atb_paged_attention, _fake_none, ("workspace",)),
    ("cann_ops_transformer", "scatter_pa_kv_cache_with_k_scale", ""):
        (cache_write.scatter_pa_kv_cache_with_k_scale, _fake_none, ()),
    ("cann_ops_transformer", "kv_compress_epilog", ""): (cache_write.kv_compress_epilog, _fake_none, ()),
}
