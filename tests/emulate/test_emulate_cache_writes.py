"""The cache writers against explicit per-token index arithmetic (Python loops over slots), through
the emulated operators: ND and NZ paged caches, legacy contiguous caches, slot -1 skipped, a
duplicated slot keeps the last token, writes in place (the schema's `(a!)` tensors)."""
import math

import cann_ops_transformer
import pytest
import torch
import torch_npu


def _expected_nd(cache, tokens, slots):
    """cache (nb, bs, ...) ; token t goes to block s // bs, offset s % bs; -1 skipped; last wins."""
    out = cache.clone()
    bs = cache.shape[1]
    for t, s in enumerate(slots):
        if s >= 0:
            out[s // bs, s % bs] = tokens[t].reshape(out[s // bs, s % bs].shape)
    return out


SLOTS = [5, -1, 0, 17, 5, 30]  # a skipped token and a duplicate (the later token must win)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_scatter_pa_kv_cache_nd(dtype):
    torch.manual_seed(0)
    key, value = torch.randn(6, 2, 16, dtype=dtype), torch.randn(6, 2, 8, dtype=dtype)
    key_cache, value_cache = torch.randn(4, 8, 2, 16, dtype=dtype), torch.randn(4, 8, 2, 8, dtype=dtype)
    want_k, want_v = _expected_nd(key_cache, key, SLOTS), _expected_nd(value_cache, value, SLOTS)
    ptr = key_cache.data_ptr()
    result = torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache,
                                               torch.tensor(SLOTS, dtype=torch.int32), cache_mode="Norm")
    assert result is None and key_cache.data_ptr() == ptr
    assert torch.equal(key_cache, want_k) and torch.equal(value_cache, want_v)


def test_scatter_pa_kv_cache_nz_is_the_default_mode():
    torch.manual_seed(1)
    n, d, bs, last = 2, 32, 8, 16
    key = torch.randn(6, n, d, dtype=torch.float16)
    cache = torch.zeros(4, n * d // last, bs, last, dtype=torch.float16)
    value_cache = cache.clone()
    want = cache.clone()
    for t, s in enumerate(SLOTS):
        if s < 0:
            continue
        flat = key[t].reshape(-1)
        for c in range(n * d // last):
            want[s // bs, c, s % bs, :] = flat[c * last:(c + 1) * last]
    torch_npu.npu_scatter_pa_kv_cache(key, key.clone(), cache, value_cache, torch.tensor(SLOTS, dtype=torch.int32))
    assert torch.equal(cache, want) and torch.equal(value_cache, want)


def test_reshape_and_cache():
    torch.manual_seed(2)
    key, value = torch.randn(6, 2, 16, dtype=torch.float16), torch.randn(6, 2, 16, dtype=torch.float16)
    key_cache, value_cache = torch.zeros(4, 8, 2, 16, dtype=torch.float16), torch.zeros(4, 8, 2, 16,
                                                                                        dtype=torch.float16)
    want_k, want_v = _expected_nd(key_cache, key, SLOTS), _expected_nd(value_cache, value, SLOTS)
    torch_npu._npu_reshape_and_cache(key, value, key_cache, value_cache, torch.tensor(SLOTS, dtype=torch.int32))
    assert torch.equal(key_cache, want_k) and torch.equal(value_cache, want_v)


def test_scatter_update_legacy_bsh_cache():
    torch.manual_seed(3)
    cache = torch.randn(3, 10, 32, dtype=torch.float16)
    updates = torch.randn(3, 2, 32, dtype=torch.float16)
    positions = [4, 0, 8]
    want = cache.clone()
    for b, p in enumerate(positions):
        want[b, p:p + 2] = updates[b]
    result = torch_npu.scatter_update_(cache, torch.tensor(positions, dtype=torch.int64), updates, -2)
    assert result is cache and torch.equal(cache, want)


def test_scatter_nd_update_on_a_paged_cache_view():
    torch.manual_seed(4)
    cache = torch.randn(4, 8, 2, 16, dtype=torch.bfloat16)
    x = torch.randn(5, 2, 16, dtype=torch.bfloat16)
    slots = [3, 9, 31, 3, 12]
    want = cache.clone().view(-1, 2, 16)
    for t, s in enumerate(slots):
        want[s] = x[t]
    view = cache.view(-1, 2, 16)
    result = torch_npu.npu_scatter_nd_update_(view, torch.tensor(slots, dtype=torch.int64).view(-1, 1), x)
    assert result is view and torch.equal(cache.view(-1, 2, 16), want)


def _rmsnorm_rope_inputs():
    torch.manual_seed(5)
    b, s, dc, dr = 2, 3, 512, 64
    kv = torch.randn(b, 1, s, dc + dr, dtype=torch.bfloat16)
    gamma = torch.randn(dc, dtype=torch.bfloat16)
    angle = torch.randn(b, 1, s, dr // 2)
    cos = torch.cat([angle.cos()] * 2, -1).to(torch.bfloat16)
    sin = torch.cat([angle.sin()] * 2, -1).to(torch.bfloat16)
    index = torch.tensor([0, 5, 9, 17, -1, 2], dtype=torch.int64)
    k_cache = torch.zeros(3, 8, 1, dr, dtype=torch.bfloat16)
    ckv_cache = torch.zeros(3, 8, 1, dc, dtype=torch.bfloat16)
    return kv, gamma, cos, sin, index, k_cache, ckv_cache


def _rmsnorm_rope_expected(kv, gamma, cos, sin, index, k_cache, ckv_cache, eps=1e-5):
    dc = gamma.numel()
    x = kv[..., :dc].float()
    c_kv = (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * gamma.float()).to(kv.dtype)
    r = kv[..., dc:].float()
    half = r.shape[-1] // 2
    k_rope = torch.empty_like(r)
    k_rope[..., :half] = r[..., :half] * cos[..., :half].float() - r[..., half:] * sin[..., :half].float()
    k_rope[..., half:] = r[..., half:] * cos[..., half:].float() + r[..., :half] * sin[..., half:].float()
    k_rope = k_rope.to(kv.dtype)
    want_k, want_c = k_cache.clone(), ckv_cache.clone()
    bs = k_cache.shape[1]
    b, _, s, _ = kv.shape
    for token in range(b * s):
        slot = int(index[token])
        if slot < 0:
            continue
        want_k[slot // bs, slot % bs, 0] = k_rope[token // s, 0, token % s]
        want_c[slot // bs, slot % bs, 0] = c_kv[token // s, 0, token % s]
    return k_rope, c_kv, want_k, want_c


def test_kv_rmsnorm_rope_cache_v2_writes_in_place():
    kv, gamma, cos, sin, index, k_cache, ckv_cache = _rmsnorm_rope_inputs()
    k_rope, c_kv, want_k, want_c = _rmsnorm_rope_expected(kv, gamma, cos, sin, index, k_cache, ckv_cache)
    got_rope, got_ckv = torch_npu.npu_kv_rmsnorm_rope_cache_v2(kv, gamma, cos, sin, index, k_cache, ckv_cache,
                                                               cache_mode="PA", is_output_kv=True)
    assert (got_rope.float() - k_rope.float()).abs().max() <= 2e-2
    assert (got_ckv.float() - c_kv.float()).abs().max() <= 2e-2
    assert (k_cache.float() - want_k.float()).abs().max() <= 2e-2
    assert (ckv_cache.float() - want_c.float()).abs().max() <= 2e-2


def test_kv_rmsnorm_rope_cache_v1_returns_four_outputs():
    kv, gamma, cos, sin, index, k_cache, ckv_cache = _rmsnorm_rope_inputs()
    _, _, want_k, want_c = _rmsnorm_rope_expected(kv, gamma, cos, sin, index, k_cache, ckv_cache)
    outs = torch_npu.npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache, cache_mode="PA",
                                               is_output_kv=True)
    assert len(outs) == 4
    assert (outs[0].float() - want_k.float()).abs().max() <= 2e-2
    assert (ckv_cache.float() - want_c.float()).abs().max() <= 2e-2


def test_scatter_pa_kv_cache_with_k_scale_bnbd():
    torch.manual_seed(6)
    t, n, dk, dv, nb, bs = 4, 2, 32, 16, 3, 8
    key = torch.randn(t, n, dk).to(torch.float8_e4m3fn)
    value = torch.randn(t, n, dv).to(torch.float8_e4m3fn)
    key_scale = torch.rand(t, n)
    key_cache = torch.zeros(nb, n, bs, dk).to(torch.float8_e4m3fn)
    value_cache = torch.zeros(nb, n, bs, dv).to(torch.float8_e4m3fn)
    scale_cache = torch.zeros(nb, n, bs, 1)
    slots = [9, 0, 23, 9]
    want_k = key_cache.view(torch.uint8).clone()
    want_v = value_cache.view(torch.uint8).clone()
    want_s = scale_cache.clone()
    for i, s in enumerate(slots):
        want_k[s // bs, :, s % bs] = key[i].view(torch.uint8)
        want_v[s // bs, :, s % bs] = value[i].view(torch.uint8)
        want_s[s // bs, :, s % bs, 0] = key_scale[i]
    cann_ops_transformer.scatter_pa_kv_cache_with_k_scale(key, value, key_cache, value_cache,
                                                          torch.tensor(slots, dtype=torch.int32), key_scale,
                                                          scale_cache)
    assert torch.equal(key_cache.view(torch.uint8), want_k) and torch.equal(value_cache.view(torch.uint8), want_v)
    assert torch.equal(scale_cache, want_s)


def _epilog_row(x_row, mode):
    """One token's bytes, written out for modes 0/1 (seed 004): [rope bf16][nope fp8][scales]."""
    d = x_row.numel()
    rope = x_row[d - 64:].to(torch.bfloat16).view(torch.uint8).tolist()
    nope_bytes, scale_bytes = [], []
    for g in range(0, d - 64, 64):
        group = x_row[g:g + 64].float()
        scale = max(float(group.abs().max()), 1e-30) / 448.0
        scale = 2.0 ** math.ceil(math.log2(scale))  # round_scale=True (and always in mode 1)
        nope_bytes += (group / scale).to(torch.float8_e4m3fn).view(torch.uint8).tolist()
        if mode == 1:
            scale_bytes.append(int(round(math.log2(scale))) + 127)
        else:
            scale_bytes += torch.tensor([scale], dtype=torch.bfloat16).view(torch.uint8).tolist()
    row = rope + nope_bytes + scale_bytes
    col = len(row) if mode == 1 else -(-len(row) // 32) * 32
    return row + [0] * (col - len(row))


@pytest.mark.parametrize("mode, name", [(0, "fp8_bf16"), (1, "FP8_E8M0")])
def test_kv_compress_epilog(mode, name):
    torch.manual_seed(7)
    d, nb, bs, head_dim = 256, 2, 4, 384
    x = torch.randn(5, d, dtype=torch.bfloat16)
    cache = torch.full((nb, bs, 1, head_dim), 0xAB, dtype=torch.uint8)
    slots = [6, -1, 0, 6, 3]
    want = cache.clone().view(-1, head_dim)
    for t, s in enumerate(slots):
        if s >= 0:
            row = _epilog_row(x[t], mode)
            want[s, :len(row)] = torch.tensor(row, dtype=torch.uint8)
    cann_ops_transformer.kv_compress_epilog(cache, x, torch.tensor(slots, dtype=torch.int32), quant_mode=name)
    assert torch.equal(cache.view(-1, head_dim), want)
    assert (cache.view(-1, head_dim)[1] == 0xAB).all()  # untouched slot rows keep their bytes


def test_kv_compress_epilog_mode_2_is_not_emulated():
    x = torch.randn(2, 256, dtype=torch.bfloat16)
    cache = torch.zeros(1, 4, 1, 384, dtype=torch.uint8)
    with pytest.raises(NotImplementedError, match="hifloat8"):
        cann_ops_transformer.kv_compress_epilog(cache, x, torch.tensor([0, 1], dtype=torch.int32),
                                                quant_mode="hifloat8_fp4")
