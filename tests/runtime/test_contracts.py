"""Every runtime contract: one violating call (exact code) and one valid call (no finding)."""
import cann_ops_transformer
import pytest
import torch
import torch_npu

H = torch.float16
FA = torch_npu.npu_fused_infer_attention_score
FA2 = torch_npu.npu_fused_infer_attention_score_v2
OMIT = object()
MASK = torch.ones(2048, 2048, dtype=torch.bool).triu(1)


def t(*shape, dtype=H):
    return torch.randn(*shape).to(dtype)


def bsh(**kw):
    """A valid BSH call: B=2, S=3, 4 query heads, 2 KV heads, D=16."""
    args = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")
    args.update(kw)
    q = args.pop("q", t(2, 3, 64))
    k = args.pop("k", t(2, 5, 32))
    v = args.pop("v", k.clone() if "k_same" not in args else args.pop("k_same"))
    return lambda: FA(q, k, v, **args)


def bnsd(**kw):
    args = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BNSD")
    args.update(kw)
    args = {k: v for k, v in args.items() if v is not OMIT}
    q = args.pop("q", t(2, 4, 3, 16))
    k = args.pop("k", t(2, 2, 5, 16))
    v = args.pop("v", t(2, 2, 5, 16))
    return lambda: FA(q, k, v, **args)


def paged(**kw):
    """A valid paged decode call: 3-D cache (4 blocks of 128), int32 table (2, 2)."""
    args = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH", block_size=128,
                block_table=torch.arange(4, dtype=torch.int32).reshape(2, 2), actual_seq_lengths_kv=[3, 130])
    args.update(kw)
    q = args.pop("q", t(2, 1, 64))
    cache = args.pop("cache", t(4, 128, 32))
    return lambda: FA(q, cache, cache, **args)


def tnd(**kw):
    args = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="TND", sparse_mode=3,
                atten_mask=MASK, actual_seq_lengths=[3, 8], actual_seq_lengths_kv=[3, 8])
    args.update(kw)
    return lambda: FA(t(8, 4, 16), t(8, 2, 16), t(8, 2, 16), **args)


def scatter_pa(slots=(0, 1, 130), key=None, cache=None, **kw):
    key = key if key is not None else t(3, 2, 16)
    cache = cache if cache is not None else torch.zeros(2, 128, 2, 16, dtype=H)
    kw.setdefault("cache_mode", "Norm")
    slot = slots if isinstance(slots, torch.Tensor) else torch.tensor(slots, dtype=torch.int32)
    return lambda: torch_npu.npu_scatter_pa_kv_cache(key, key.clone(), cache, cache.clone(), slot, **kw)


def k_scale(slots=(0, 1, 17), dtype=torch.float8_e4m3fn, key_cache=None, scale_cache=None, **kw):
    key = torch.randn(3, 2, 16).to(dtype)
    key_cache = key_cache if key_cache is not None else torch.zeros(2, 2, 16, 16).to(dtype)
    scale_cache = scale_cache if scale_cache is not None else torch.zeros(2, 2, 16, 1)
    slot = torch.tensor(slots, dtype=torch.int32)
    return lambda: cann_ops_transformer.scatter_pa_kv_cache_with_k_scale(
        key, key.clone(), key_cache, key_cache.clone(), slot, torch.rand(3, 2), scale_cache, **kw)


def epilog(d=256, head_dim=384, dtype=torch.bfloat16, slots=(0, 1, -1), **kw):
    cache = torch.zeros(4, 16, 1, head_dim, dtype=torch.uint8)
    x = torch.randn(3, d).to(dtype)
    return lambda: cann_ops_transformer.kv_compress_epilog(cache, x, torch.tensor(slots, dtype=torch.int32), **kw)


def rmsnorm(k_cache=None, ckv_cache=None, v2=True):
    kv = t(2, 1, 1, 48 + 16)
    gamma, cos = t(48), t(2, 1, 1, 16)
    k_cache = k_cache if k_cache is not None else torch.zeros(2, 16, 1, 16, dtype=H)
    ckv_cache = ckv_cache if ckv_cache is not None else torch.zeros(2, 16, 1, 48, dtype=H)
    op = torch_npu.npu_kv_rmsnorm_rope_cache_v2 if v2 else torch_npu.npu_kv_rmsnorm_rope_cache
    return lambda: op(kv, gamma, cos, cos.clone(), torch.tensor([0, 17]), k_cache, ckv_cache, cache_mode="PA")


def scatter_update(indices=(0, 3), dtype=torch.int64):
    cache = torch.zeros(2, 8, 32, dtype=H)
    return lambda: torch_npu.scatter_update_(cache, torch.tensor(indices, dtype=dtype), t(2, 1, 32), 1)


def atb_paged(table_dtype=torch.int32, num_kv_heads=2):
    q, cache = t(2, 4, 16), t(4, 128, 2, 16)
    out = torch.empty(2, 4, 16, dtype=H)
    table = torch.arange(4, dtype=table_dtype).reshape(2, 2)
    return lambda: torch_npu._npu_paged_attention(q, cache, cache, num_kv_heads, 4, 0.25, table,
                                                  torch.tensor([3, 5], dtype=torch.int32), out)


def reshape_and_cache(slots=(0, 1, 129)):
    key, cache = t(3, 2, 16), torch.zeros(2, 128, 2, 16, dtype=H)
    return lambda: torch_npu._npu_reshape_and_cache(key, key.clone(), cache, cache.clone(),
                                                    torch.tensor(slots, dtype=torch.int32))


def fusion_bsnd(**kw):
    q, k = t(2, 3, 4, 16), t(2, 5, 2, 16)
    kw.setdefault("scale", 0.25)
    return lambda: torch_npu.npu_fusion_attention(q, k, k.clone(), 4, "BSND", **kw)


CASES = {
    # code: (violating call, valid call)
    "KV104": (bnsd(num_heads=OMIT, num_key_value_heads=1), bnsd()),
    "KV110": (bsh(q=t(2, 3, 4, 16)), bsh()),
    "KV111": (bnsd(num_heads=8), bnsd()),
    "KV112": (bsh(num_key_value_heads=3), bsh()),
    "KV113": (bnsd(v=t(2, 2, 6, 16)), bnsd()),
    "KV114": (bnsd(q=t(2, 3, 4, 16).transpose(1, 2)), bnsd(q=t(2, 3, 4, 16).transpose(1, 2).contiguous())),
    "KV115": (bsh(q=t(2, 3, 64, dtype=torch.float32)), bsh()),
    "KV201": (bsh(sparse_mode=3), bsh(sparse_mode=3, atten_mask=MASK)),
    "KV205": (bsh(atten_mask=torch.zeros(3, 5)), bsh(atten_mask=torch.zeros(3, 5, dtype=torch.bool))),
    "KV206": (bsh(sparse_mode=3, atten_mask=torch.ones(3, 5, dtype=torch.bool).triu(1)),
              bsh(sparse_mode=3, atten_mask=MASK[None])),
    "KV210": (bsh(atten_mask=torch.zeros(3, 3, dtype=torch.bool)), bsh(atten_mask=torch.zeros(2, 1, 3, 5, dtype=torch.bool))),
    "KV211": (bsh(atten_mask=torch.zeros(2, 4, 3, 5, dtype=torch.bool)), bsh(atten_mask=torch.zeros(1, 1, 3, 5, dtype=torch.bool))),
    "KV212": (tnd(sparse_mode=1, atten_mask=torch.zeros(8, 8, dtype=torch.bool)), tnd()),
    "KV213": (bsh(sparse_mode=6), bsh(sparse_mode=0)),
    "KV301": (paged(block_table=torch.arange(4).reshape(2, 2)), paged()),
    "KV302": (paged(block_size=0), paged()),
    "KV310": (paged(block_table=torch.arange(4, dtype=torch.int32)), paged()),
    "KV311": (paged(q=t(2, 2, 64), cache=t(4, 64, 32), block_size=64), paged(cache=t(4, 64, 32), block_size=64, actual_seq_lengths_kv=[3, 100])),
    "KV312": (paged(block_size=256), paged()),
    "KV313": (paged(block_table=torch.tensor([[0, 1], [2, 9]], dtype=torch.int32)),
              paged(block_table=torch.tensor([[0, 9], [2, 3]], dtype=torch.int32))),  # unused id 9: fine
    "KV314": (paged(actual_seq_lengths_kv=[3, 300]), paged()),
    "KV315": (tnd(actual_seq_lengths=[3, 5]), tnd()),
    "KV316": (bsh(actual_seq_lengths_kv=[6, 5]), bsh(actual_seq_lengths_kv=[4, 5])),
    "KV317": (scatter_pa(slots=torch.tensor([0, 1], dtype=torch.int32)), scatter_pa()),
    "KV318": (k_scale(slots=(0, -1, 17)), k_scale()),
    "KV319": (scatter_pa(slots=(0, 1, 1)), scatter_pa(slots=(0, 1, -1))),
    "KV510": (bnsd(q=t(2, 4, 3, 128), k=t(2, 2, 5, 128), v=t(2, 2, 5, 128), query_rope=t(2, 4, 3, 64)),
              bnsd(q=t(2, 4, 3, 128), k=t(2, 2, 5, 128), v=t(2, 2, 5, 128), query_rope=t(2, 4, 3, 64),
                   key_rope=t(2, 2, 5, 64))),
    "KV511": (k_scale(dtype=torch.bfloat16), k_scale()),
    "KV512": (k_scale(key_cache=torch.zeros(2, 16, 2, 16).to(torch.float8_e4m3fn)), k_scale()),
    "KV513": (epilog(d=100), epilog()),
    "KV514": (epilog(head_dim=256), epilog(head_dim=323)),
    "KV515": (rmsnorm(k_cache=torch.zeros(2, 16, 1, 48, dtype=H), ckv_cache=torch.zeros(2, 16, 1, 16, dtype=H)),
              rmsnorm()),
    "KV516": (scatter_update(indices=(0, 8)), scatter_update()),
    "KV517": (scatter_pa(cache_mode="PA_NZ"), scatter_pa()),
    "KV518": (bsh(q=t(2, 1, 64), k=torch.zeros(2, 5, 32, dtype=torch.int8), antiquant_scale=t(1, 32)),
              bsh(key_antiquant_mode=1)),
    "KV116": (fusion_bsnd(keep_prob=0.0), fusion_bsnd(keep_prob=1.0)),
    "KV117": (fusion_bsnd(atten_mask=torch.zeros(3, 5, dtype=torch.bool), pre_tockens=-1, next_tockens=-1),
              fusion_bsnd(atten_mask=torch.zeros(3, 5, dtype=torch.bool), pre_tockens=3, next_tockens=0)),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_violation_reports_exactly_its_code(code, collect):
    bad, _ = CASES[code]
    codes = collect(lambda: _run(bad))
    assert codes and set(codes) == {code}, codes


@pytest.mark.parametrize("code", sorted(CASES))
def test_valid_call_is_silent(code, collect):
    _, good = CASES[code]
    assert collect(good) == []


def _run(fn):
    """Collect mode lets the call proceed; the emulated operator may then reject the input itself
    (or not emulate it: hifloat8_fp4)."""
    try:
        fn()
    except (RuntimeError, IndexError, ValueError, TypeError, KeyError, ZeroDivisionError):
        pass


def test_kv104_uses_default_only_when_not_passed(collect):
    assert collect(lambda: _run(bnsd(num_heads=8))) == ["KV111"]


def test_tnd_lengths_must_end_at_token_count(collect):
    assert collect(lambda: _run(tnd(actual_seq_lengths=[3, 7], actual_seq_lengths_kv=[3, 7]))) == ["KV315"]


def test_v2_names_are_understood(collect):
    q, k = t(2, 3, 64), t(2, 5, 32)
    assert collect(lambda: FA2(q, k, k.clone(), num_query_heads=4, num_key_value_heads=2, softmax_scale=0.25,
                               input_layout="BSH")) == []
    assert collect(lambda: _run(lambda: FA2(q, k, k.clone(), num_query_heads=4, num_key_value_heads=3,
                                            softmax_scale=0.25, input_layout="BSH"))) == ["KV112"]


def test_ifa_actual_seq_lengths_are_kv_lengths(collect):
    q, cache = t(2, 1, 64), t(4, 128, 32)
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)
    def ok():
        return torch_npu.npu_incre_flash_attention(q, cache, cache, num_heads=4, num_key_value_heads=2,
                                                   scale_value=0.25, block_table=table, block_size=128,
                                                   actual_seq_lengths=[3, 200])
    assert collect(ok) == []
    def bad():
        return torch_npu.npu_incre_flash_attention(q, cache, cache, num_heads=4, num_key_value_heads=2,
                                                   scale_value=0.25, block_table=table.long(), block_size=128,
                                                   actual_seq_lengths=[3, 200])
    assert collect(lambda: _run(bad)) == ["KV301"]


def test_atb_paged_attention(collect):
    assert collect(atb_paged()) == []
    assert collect(lambda: _run(atb_paged(table_dtype=torch.int64))) == ["KV301"]
    assert collect(lambda: _run(atb_paged(num_kv_heads=4))) == ["KV112"]


def test_atb_reshape_and_cache_slots(collect):
    assert collect(reshape_and_cache()) == []
    assert collect(lambda: _run(reshape_and_cache(slots=(0, 0, 5)))) == ["KV319"]
    assert collect(lambda: _run(reshape_and_cache(slots=(0, 1, 256)))) == ["KV318"]


def test_rmsnorm_v1_swapped_caches(collect):
    swapped = rmsnorm(k_cache=torch.zeros(2, 16, 1, 48, dtype=H), ckv_cache=torch.zeros(2, 16, 1, 16, dtype=H), v2=False)
    assert collect(lambda: _run(swapped)) == ["KV515"]


def test_epilog_mode2_group(collect):
    assert collect(lambda: _run(epilog(quant_mode="hifloat8_fp4", quant_group_size=48))) == ["KV514"]
    assert collect(lambda: _run(epilog(quant_mode="hifloat8_fp4", quant_group_size=64, head_dim=224))) == []
    assert collect(lambda: _run(epilog(quant_mode="bogus"))) == ["KV513"]


def test_kv_cache_col_matches_the_seed():
    from kvlint.facts import load_facts
    from kvlint.runtime.families.cache_write.contracts import kv_cache_col

    data = load_facts().table("kv_compress_epilog")
    assert kv_cache_col(256, 1, 64, data) == 323
    assert kv_cache_col(512, 1, 64, data) == 583


def test_every_runtime_code_is_documented_and_tested():
    from kvlint.catalog import load_catalog

    rules = load_catalog().rules
    for code in CASES:
        assert "runtime" in rules[code].checked, code
        assert rules[code].what and rules[code].why and rules[code].example and rules[code].use_instead
    runtime_only = {c for c, r in rules.items() if r.checked == ("runtime",)}
    assert runtime_only <= set(CASES), runtime_only - set(CASES)
