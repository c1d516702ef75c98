"""Cache-write contracts: slot_mapping (dtype, rank, length; values: range, -1, duplicates) for
every writer in rules/facts/cache_write.toml [writers.*], and each writer's own shapes and dtypes:
npu_scatter_pa_kv_cache / _npu_reshape_and_cache (KV517), scatter_pa_kv_cache_with_k_scale
(KV511/KV512), kv_compress_epilog (KV513/KV514), npu_kv_rmsnorm_rope_cache (KV515),
scatter_update_ (KV516)."""
from __future__ import annotations

import collections
import math

import torch

from kvlint.facts import load_facts
from kvlint.runtime.call import SMALL, Call, dtype_name, shape_of
from kvlint.runtime.call import dtypes as _dtypes
from kvlint.runtime.registry import contract

FACTS = load_facts()
WRITERS = FACTS.family("slot_writers")


def _tensors(call: Call, *names):
    """The named arguments, or None unless every one is a tensor."""
    args, values = call.args, []
    for name in names:
        value = args.get(name)
        if not isinstance(value, torch.Tensor):
            return None
        values.append(value)
    return values


@contract("npu_scatter_pa_kv_cache", "_npu_reshape_and_cache")
def pa_cache_shapes(call: Call) -> None:
    got = _tensors(call, "key", "value", "key_cache", "value_cache")
    if got is None:
        return
    key, value, key_cache, value_cache = got
    if not (key.dtype == value.dtype == key_cache.dtype == value_cache.dtype):
        call.fail("KV517", "key_cache", f"dtype {dtype_name(key.dtype)} like key/value",
                  f"key {dtype_name(key.dtype)}, value {dtype_name(value.dtype)}, caches "
                  f"{dtype_name(key_cache.dtype)}/{dtype_name(value_cache.dtype)}", "the operator rejects the call")
        return
    for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
        if cache.dim() != 4 or not cache.is_contiguous():
            call.fail("KV517", name, "a contiguous 4-D cache", f"{cache.dim()}-D {shape_of(cache)}",
                      "the operator rejects the cache or writes to the wrong offsets")
            return
    if key.dim() != 3:
        return
    ks, vs, cs = key.shape, value.shape, key_cache.shape
    if int(ks[0]) != int(vs[0]) or int(ks[1]) != int(vs[1]):
        call.fail("KV517", "value", f"the key's first two dims {tuple(ks[:2])}", shape_of(value),
                  "keys and values of different tokens are paired")
        return
    n, d = int(ks[1]), int(ks[2])
    mode = call.args.get("cache_mode", "Norm") if call.name == "npu_scatter_pa_kv_cache" else "Norm"
    if mode == "PA_NZ":
        last = int(cs[3])
        if int(cs[1]) * last != n * d:
            call.fail("KV517", "key_cache", f"NZ (nb, N*D/{last}, bs, {last}) with N*D = {n * d} "
                      "(cache_mode 'PA_NZ' is the default)", shape_of(key_cache),
                      "an ND cache written as NZ is scrambled (pass cache_mode='Norm' for ND caches)")
    elif int(cs[2]) != n or int(cs[3]) != d:
        call.fail("KV517", "key_cache", f"(num_blocks, block_size, {n}, {d}) for key {shape_of(key)}",
                  shape_of(key_cache), "tokens are written with the wrong head stride")


@contract("scatter_pa_kv_cache_with_k_scale")
def with_k_scale(call: Call) -> None:
    got = _tensors(call, "key", "value", "key_cache", "value_cache", "key_scale", "key_scale_cache")
    if got is None:
        return
    key, value, key_cache, value_cache, key_scale, key_scale_cache = got
    data = FACTS.table("with_k_scale")
    for name, t in (("key", key), ("value", value), ("key_cache", key_cache), ("value_cache", value_cache)):
        if dtype_name(t.dtype) not in data["kv_dtypes"] or t.dtype != key.dtype:
            call.fail("KV511", name, f"{' or '.join(data['kv_dtypes'])}, one dtype for key/value/caches",
                      dtype_name(t.dtype), "the operator rejects the call (Ascend 950 FP8 path only)")
            return
    for name, t in (("key_scale", key_scale), ("key_scale_cache", key_scale_cache)):
        if dtype_name(t.dtype) != data["scale_dtype"]:
            call.fail("KV511", name, data["scale_dtype"], dtype_name(t.dtype), "the operator rejects the call")
            return
    layout = call.get("cache_layout")
    if layout not in data["layouts"]:
        call.fail("KV512", "cache_layout", " or ".join(data["layouts"]), repr(layout),
                  "the caches are addressed in an undefined layout")
        return
    if key.dim() != 3 or value.dim() != 3 or key.shape[:2] != value.shape[:2]:
        call.fail("KV512", "value", f"(T, N, Dv) with (T, N) = {tuple(key.shape[:2])} like key {shape_of(key)}",
                  shape_of(value), "keys and values of different tokens are paired")
        return
    t_, n = int(key.shape[0]), int(key.shape[1])
    for name, cache, d in (("key_cache", key_cache, int(key.shape[2])), ("value_cache", value_cache, int(value.shape[2]))):
        if cache.dim() != 4 or int(cache.shape[1]) != n or int(cache.shape[3]) != d:
            call.fail("KV512", name, f"BNBD (num_blocks, {n}, block_size, {d}) - heads before block slots",
                      shape_of(cache), "a (nb, bs, N, D) cache written as BNBD scrambles heads and slots")
            return
    if [int(s) for s in key_scale.shape] != [t_, n]:
        call.fail("KV512", "key_scale", f"({t_}, {n})", shape_of(key_scale), "scales land on the wrong tokens")
        return
    expected = [int(key_cache.shape[0]), n, int(key_cache.shape[2]), 1]
    if [int(s) for s in key_scale_cache.shape] != expected or not key_scale_cache.is_contiguous():
        call.fail("KV512", "key_scale_cache", f"contiguous {tuple(expected)}",
                  shape_of(key_scale_cache) + ("" if key_scale_cache.is_contiguous() else " (non-contiguous)"),
                  "scales are written to the wrong slots")


def _quant_mode(call: Call, data):
    raw = call.get("quant_mode")
    if isinstance(raw, str):
        return data["quant_modes"].get(raw.lower())
    return None


def kv_cache_col(d: int, mode: int, group: int, data) -> int:
    """The bytes kv_compress_epilog writes per token for x of width d (the kernel's kvCacheCol)."""
    nope = d - data["rope_cols"]
    if mode == 2:
        concat = data["rope_cols"] + nope // 2 + (nope // group) * 2
    else:
        concat = nope + 2 * data["rope_cols"] + math.ceil(nope / 64) * data["scale_bytes"][str(mode)]
    align = data["row_align"]
    return concat if mode == 1 else -(-concat // align) * align


@contract("kv_compress_epilog")
def kv_compress_epilog(call: Call) -> None:
    if call.op.namespace != FACTS.epilog.limits_namespace:
        return  # the _C_ascend / custom bindings share the name but not the contract
    got = _tensors(call, "cache", "x")
    if got is None:
        return
    cache, x = got
    data = FACTS.table("kv_compress_epilog")
    mode = _quant_mode(call, data)
    if mode is None:
        call.fail("KV513", "quant_mode", f"one of {', '.join(data['quant_modes'])}", repr(call.get("quant_mode")),
                  "the binding rejects the mode")
        return
    d = int(x.shape[-1]) if x.dim() else 0
    if dtype_name(x.dtype) != data["x_dtype"] or x.dim() != 2:
        call.fail("KV513", "x", f"2-D {data['x_dtype']} (tokens, d)", f"{x.dim()}-D {dtype_name(x.dtype)}",
                  "the operator rejects the input")
        return
    if d % data["d_multiple"] or not data["d_min_exclusive"] < d <= data["d_max"]:
        call.fail("KV513", "x", f"d % {data['d_multiple']} == 0 and {data['d_min_exclusive']} < d <= "
                  f"{data['d_max']} (last 64 columns are rope)", f"d = {d}", "the tiling rejects the shape")
        return
    group = int(call.get("quant_group_size", 64))
    if mode == 2 and (group not in data["mode2_groups"] or (d - data["rope_cols"]) % group):
        call.fail("KV514", "quant_group_size", f"one of {list(data['mode2_groups'])} dividing d - 64 = "
                  f"{d - data['rope_cols']} (hifloat8_fp4)", str(group), "the operator rejects the call")
        return
    if dtype_name(cache.dtype) != data["cache_dtype"] or cache.dim() != 4 or int(cache.shape[2]) != 1:
        call.fail("KV514", "cache", f"4-D {data['cache_dtype']} (block_num, block_size, 1, head_dim)",
                  f"{cache.dim()}-D {dtype_name(cache.dtype)} {shape_of(cache)}",
                  "the operator rejects the cache (view an fp8 cache as uint8)")
        return
    col = kv_cache_col(d, mode, group, data)
    if int(cache.shape[3]) < col:
        call.fail("KV514", "cache", f"head_dim >= kvCacheCol = {col} for d={d}, quant_mode "
                  f"{call.get('quant_mode')!r}", f"head_dim {int(cache.shape[3])}",
                  "each token's row overflows into the next slot")


@contract("npu_kv_rmsnorm_rope_cache", "npu_kv_rmsnorm_rope_cache_v2")
def rmsnorm_caches(call: Call) -> None:
    got = _tensors(call, "kv", "gamma", "cos", "sin", "k_cache", "ckv_cache")
    if got is None:
        return
    kv, gamma, cos, sin, k_cache, ckv_cache = got
    if kv.dim() != 4 or gamma.dim() != 1 or cos.dim() != 4 or sin.shape != cos.shape:
        call.fail("KV515", "kv", "kv 4-D (B,N,S,D), gamma 1-D, cos/sin 4-D of one shape",
                  f"kv {shape_of(kv)}, gamma {shape_of(gamma)}, cos {shape_of(cos)}, sin {shape_of(sin)}",
                  "the operator rejects the call")
        return
    dr, dc = int(cos.shape[-1]), int(gamma.shape[0])
    if int(kv.shape[-1]) != dr + dc:
        call.fail("KV515", "kv", f"head dim gamma + rope = {dc} + {dr}", str(int(kv.shape[-1])),
                  "norm and rope parts are split at the wrong column")
        return
    v = call.get("v")
    if isinstance(v, torch.Tensor) and (v.dtype != kv.dtype or v.dim() != 4 or v.shape[:3] != kv.shape[:3]):
        call.fail("KV515", "v", f"4-D {dtype_name(kv.dtype)} with kv's first three dims {tuple(kv.shape[:3])}",
                  f"{dtype_name(v.dtype)} {shape_of(v)}", "the operator rejects the call")
        return
    kw, cw = int(k_cache.shape[-1]), int(ckv_cache.shape[-1])
    if str(call.get("cache_mode", "")).endswith("NZ"):
        return  # NZ caches fold D; widths are not comparable
    if kw == dc and cw == dr and dr != dc:
        call.fail("KV515", "k_cache", f"the rope cache (last dim {dr} = cos.size(-1)); ckv_cache the nope cache "
                  f"({dc} = gamma.size(0))", f"k_cache width {kw}, ckv_cache width {cw}: swapped",
                  "rope and nope caches are swapped")
    elif kw != dr:
        call.fail("KV515", "k_cache", f"last dim {dr} (= cos.size(-1), the rope cache)", str(kw),
                  "rope keys are written into a cache of the wrong width")
    elif cw != dc:
        call.fail("KV515", "ckv_cache", f"last dim {dc} (= gamma.size(0), the nope cache)", str(cw),
                  "compressed KV is written into a cache of the wrong width")


@contract("scatter_update_")
def scatter_update(call: Call) -> None:
    got = _tensors(call, "self", "indices", "updates")
    if got is None:
        return
    data_, indices, updates = got
    spec = FACTS.table("scatter_update")
    if not spec["min_rank"] <= data_.dim() <= spec["max_rank"] or updates.dim() != data_.dim():
        call.fail("KV516", "updates", f"the cache's rank {data_.dim()} (2-8)", f"{updates.dim()}-D {shape_of(updates)}",
                  "the operator rejects the call")
        return
    if dtype_name(indices.dtype) not in spec["index_dtypes"] or indices.dim() not in (1, 2):
        call.fail("KV516", "indices", "1-D or 2-D int32/int64", f"{indices.dim()}-D {dtype_name(indices.dtype)}",
                  "the operator rejects the indices")
        return
    if dtype_name(data_.dtype) not in spec["dtypes"] or updates.dtype != data_.dtype:
        call.fail("KV516", "updates", f"the cache's dtype {dtype_name(data_.dtype)} (one of {list(spec['dtypes'])})",
                  dtype_name(updates.dtype), "the operator rejects the call")
        return
    axis = int(call.get("axis")) % data_.dim()
    if int(indices.shape[0]) != int(updates.shape[0]):
        call.fail("KV516", "indices", f"one entry per batch row ({int(updates.shape[0])})", shape_of(indices),
                  "rows are written at other rows' positions")
        return
    if call.readable(indices):
        starts = indices[:, -1] if indices.dim() == 2 else indices
        limit = int(data_.shape[axis]) - int(updates.shape[axis])
        if starts.numel() and (int(starts.max()) > limit or int(starts.min()) < 0):
            call.fail("KV516", "indices", f"positions in [0, {limit}] (cache length {int(data_.shape[axis])} minus "
                      f"update length {int(updates.shape[axis])} along axis {axis})", str(starts.tolist()),
                      "out-of-range positions are not checked by the operator: memory past the row is overwritten")


class _Writer:
    """One [writers.X] entry of rules/facts/cache_write.toml."""

    __slots__ = ("slot", "tokens", "cache", "block_axis", "skip_allowed", "token_dims", "slot_rank_from_tokens")

    def __init__(self, spec: dict):
        self.slot, self.tokens, self.cache = spec["slot"], spec["tokens"], spec["cache"]
        self.block_axis = spec["block_axis"]
        self.skip_allowed = spec["skip_allowed"]
        self.token_dims = spec.get("token_dims")
        self.slot_rank_from_tokens = spec.get("slot_rank_from_tokens", False)


WRITER_SPECS = {name: _Writer(spec) for name, spec in FACTS.table("writers").items()}
SLOT_DTYPES = _dtypes(FACTS.table("slots")["dtypes"])


# Registered last so the writers' own shape checks run first: slot values are only judged
# against a cache whose shape passed.
@contract(*WRITERS)
def slots(call: Call) -> None:
    spec = WRITER_SPECS[call.name]
    if call.name == FACTS.epilog.name and call.op.namespace != FACTS.epilog.limits_namespace:
        return  # other bindings of that name differ
    args = call.args
    slot, tokens, cache = args.get(spec.slot), args.get(spec.tokens), args.get(spec.cache)
    if not (isinstance(slot, torch.Tensor) and isinstance(tokens, torch.Tensor) and isinstance(cache, torch.Tensor)):
        return
    arg = spec.slot
    if slot.dtype not in SLOT_DTYPES:
        call.fail("KV317", arg, "int32 or int64", dtype_name(slot.dtype), "the operator rejects the slots")
        return
    if spec.token_dims is not None:
        n_tokens = math.prod(int(tokens.shape[d]) for d in spec.token_dims if d < tokens.dim())
        if slot.numel() != n_tokens:
            call.fail("KV317", arg, f"one slot per token ({n_tokens})", f"{slot.numel()} slots",
                      "tokens are written to the wrong slots or not at all")
            return
    else:
        rank = tokens.dim() - 1 if spec.slot_rank_from_tokens else (2 if tokens.dim() == 4 else 1)
        expected_shape = tokens.shape[:rank]
        if slot.shape != expected_shape:
            call.fail("KV317", arg, f"shape {tuple(int(s) for s in expected_shape)} (one slot per token)", shape_of(slot),
                      "tokens are written to the wrong slots or not at all")
            return
    mode = args.get("cache_mode") or "default"
    axis = spec.block_axis.get(mode, spec.block_axis.get("default"))
    if call.findings or axis is None or cache.dim() <= axis or not call.readable(slot):
        return
    num_slots = int(cache.shape[0]) * int(cache.shape[axis])
    low = -1 if spec.skip_allowed else 0
    if slot.is_cpu and slot.numel() <= SMALL:
        bad, duplicates = _slot_errors_small(slot, low, num_slots)
    else:
        bad, duplicates = _slot_errors_vectorised(slot, low, num_slots)
    if bad:
        allowed = f"[{low}, {num_slots - 1}]" + (" (-1 = skip)" if low < 0 else " (-1 is not a skip marker here)")
        call.fail("KV318", arg, f"slots in {allowed}", f"{bad[:4]}",
                  "the kernel writes outside the cache or silently drops the token")
    elif duplicates:
        call.fail("KV319", arg, "unique slots", f"duplicates {duplicates[:4]}",
                  "two tokens land in one slot: the last writer wins, the other token is lost")


def _slot_errors_small(slot, low, num_slots):
    """(out-of-range slots in order, sorted duplicated slots >= 0) of a small host tensor, in Python."""
    values = slot.tolist() if slot.dim() == 1 else slot.reshape(-1).tolist()
    if not values:
        return [], []
    lo = min(values)
    if lo < low or max(values) >= num_slots:
        return [v for v in values if v < low or v >= num_slots], []
    kept = [v for v in values if v >= 0] if lo < 0 else values
    if len(set(kept)) == len(kept):
        return [], []
    return [], sorted(v for v, n in collections.Counter(kept).items() if n > 1)


def _slot_errors_vectorised(slot, low, num_slots):
    """The same for big or device tensors: one min/max reduction, one `unique` (device values
    are read only in full mode; the results cross to the host, not the slots)."""
    values = slot.reshape(-1)
    if not values.numel():
        return [], []
    lo, hi = torch.stack(torch.aminmax(values)).tolist()
    if lo < low or hi >= num_slots:
        return values[(values < low) | (values >= num_slots)][:4].tolist(), []
    kept = values if lo >= 0 else values[values >= 0]
    if kept.numel() < 2:
        return [], []
    uniq, counts = torch.unique(kept, return_counts=True)
    if uniq.numel() == kept.numel():
        return [], []
    return [], uniq[counts > 1][:4].tolist()
