"""Reference semantics of the KV-cache writers, in plain torch. Every write is in place, into
the tensors the schema marks `(a!)` (`npu_kv_rmsnorm_rope_cache` v1, whose schema marks
nothing, writes its caches too and returns copies, as the operator's four outputs).

Slot rules, as the kernels apply them (domain.md 1.9-1.11; seeds 002 and 004): a slot < 0 (vLLM's
PAD_SLOT_ID = -1) or >= the cache's slot count is skipped, and when two tokens name one slot the
later token's row is the one left in the cache (the NPU does not promise this; the emulation
makes it deterministic). Writes go through byte views, so fp8 and every other dtype behave alike."""
from __future__ import annotations

import math

import torch

from kvlint.facts import load_facts

_EPILOG = load_facts().table("kv_compress_epilog")
QUANT_MODES = dict(_EPILOG["quant_modes"])      # quant_mode string -> aclnn int
ROPE_COLUMNS = int(_EPILOG["rope_cols"])        # the last 64 columns of x are rope
SCALE_BYTES = {int(k): int(v) for k, v in _EPILOG["scale_bytes"].items()}
ROW_ALIGN = int(_EPILOG["row_align"])
FP8_E4M3FN_MAX = 448.0                          # seed 004: kv_compress_epilog_common.h


def last_writers(slots: torch.Tensor, num_slots: int) -> torch.Tensor:
    """Token positions whose row reaches the cache: slot in [0, num_slots), and the last token
    of each slot. Returns the positions in token order."""
    slots = slots.reshape(-1).long()
    position = torch.arange(slots.numel(), device=slots.device)
    keep = (slots >= 0) & (slots < num_slots)
    slots, position = slots[keep], position[keep]
    if slots.numel() == 0:
        return position
    unique, inverse = torch.unique(slots, return_inverse=True)
    last = torch.full((unique.numel(),), -1, dtype=torch.long, device=slots.device)
    last.scatter_reduce_(0, inverse, position, reduce="amax")
    return last.sort().values


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8) if t.dtype != torch.uint8 else t.contiguous()


def write_rows(cache: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor) -> None:
    """cache viewed as (num_slots, row) <- rows (tokens, row) at `slots`, skip / last-writer rules."""
    if rows.shape[0] == 0:
        return
    width = rows[0].numel()
    num_slots = cache.numel() // width
    keep = last_writers(slots, num_slots)
    target = (cache.view(torch.uint8) if cache.dtype != torch.uint8 else cache).view(num_slots, -1)
    source = _bytes(rows.reshape(rows.shape[0], width).to(cache.dtype))
    target[slots.reshape(-1).long()[keep]] = source[keep]


def write_block_major(cache: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor, block_size: int) -> None:
    """cache (nb, C, bs, x) with the slot on dim 2 (NZ and BNBD forms) <- rows (tokens, C, x)."""
    nb = cache.shape[0]
    keep = last_writers(slots, nb * block_size)
    chosen = slots.reshape(-1).long()[keep]
    target = cache.view(torch.uint8) if cache.dtype != torch.uint8 else cache
    source = _bytes(rows.to(cache.dtype)).reshape(rows.shape[0], target.shape[1], target.shape[3])
    target[chosen // block_size, :, chosen % block_size, :] = source[keep]


# --------------------------------------------------------------------------- torch_npu writers
def scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping, *, cache_mode="PA_NZ", **_unused):
    """npu_scatter_pa_kv_cache. PA_NZ (the default): caches (nb, N*D/x, bs, x), token t's
    N*D values cut into rows of x; Norm (or None): ND caches (nb, bs, N, D)."""
    for src, cache in ((key, key_cache), (value, value_cache)):
        if cache_mode == "PA_NZ":
            last = cache.shape[3]
            write_block_major(cache, src.reshape(src.shape[0], -1, last), slot_mapping, cache.shape[2])
        else:
            write_rows(cache, src.reshape(src.shape[0], -1), slot_mapping)


def reshape_and_cache(key, value, key_cache, value_cache, slot_indices):
    """ATB _npu_reshape_and_cache: ND caches (nb, bs, N, D), one slot per token."""
    write_rows(key_cache, key.reshape(key.shape[0], -1), slot_indices)
    write_rows(value_cache, value.reshape(value.shape[0], -1), slot_indices)


def scatter_update_(self, indices, updates, axis):
    """scatter_update_: for each b, updates[b] is written into self[b] along `axis` starting at
    indices[b] (2-D indices: the last column). Out-of-range starts are not checked by the
    operator; here they raise (torch cannot write outside the tensor)."""
    axis = axis % self.dim()
    starts = indices.tolist()
    for b in range(updates.shape[0]):
        start = int(starts[b][-1]) if indices.dim() == 2 else int(starts[b])
        self[b].narrow(axis - 1, start, updates.shape[axis]).copy_(updates[b])
    return self


def scatter_nd_update_(self, indices, updates):
    """npu_scatter_nd_update_: self[indices[i]] = updates[i] (indices' last axis indexes self's
    leading dims); a duplicate index keeps the last update."""
    k = indices.shape[-1]
    flat = indices.reshape(-1, k).long()
    rows = updates.reshape(flat.shape[0], -1)
    lead = torch.tensor(self.shape[:k], device=flat.device)
    strides = torch.ones(k, dtype=torch.long, device=flat.device)
    for i in range(k - 2, -1, -1):
        strides[i] = strides[i + 1] * lead[i + 1]
    linear = (flat * strides).sum(-1)
    keep = last_writers(linear, int(lead.prod()))
    self.view(-1, rows.shape[1])[linear[keep]] = rows[keep].to(self.dtype)
    return self


def rms_norm(x, gamma, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * gamma.float()).to(x.dtype)


def rope(x, cos, sin):
    """Rotate-half rotary embedding in float32, cast back to x's dtype."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return (x.float() * cos.float() + rotated.float() * sin.float()).to(x.dtype)


def kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache, *, epsilon=1e-5, cache_mode="Norm",
                          **_unused):
    """kv (B, N, S, Dc + Dr): RMSNorm of the first Dc = gamma.numel() columns -> c_kv, rotary
    embedding of the last Dr = cos.shape[-1] -> k_rope; k_rope goes to k_cache, c_kv to
    ckv_cache at the slots in `index` (paged modes: one slot per token, B*S; 'Norm': the
    caches (B, N, S_cache, D) are written at position index[b, s] of request b)."""
    dc = gamma.shape[0]
    c_kv = rms_norm(kv[..., :dc], gamma, epsilon)
    k_rope = rope(kv[..., dc:], cos, sin)
    for cache, src in ((k_cache, k_rope), (ckv_cache, c_kv)):
        b, n, s, d = src.shape
        if cache_mode == "Norm":
            pos = index.reshape(b, -1).long()
            for i in range(b):
                for j in range(s):
                    p = int(pos[i, j])
                    if 0 <= p < cache.shape[2]:
                        cache[i, :, p] = src[i, :, j].to(cache.dtype)
        elif cache_mode in ("PA_NZ", "PA_BLK_NZ"):
            write_block_major(cache, src.transpose(1, 2).reshape(b * s, -1, cache.shape[-1]).to(cache.dtype),
                              index, cache.shape[2])
        else:  # PA / PA_BNSD / PA_BLK_BNSD: (nb, bs, N, D)
            write_rows(cache, src.transpose(1, 2).reshape(b * s, -1).to(cache.dtype), index)
    return k_rope, c_kv


# --------------------------------------------------------------------------- cann_ops_transformer
def scatter_pa_kv_cache_with_k_scale(key, value, key_cache, value_cache, slot_mapping, key_scale,
                                     key_scale_cache, *, cache_layout="BNBD"):
    """Seed 002. BNBD caches (nb, N, bs, D): cache[s // bs, :, s % bs] = key[t]; key_scale (T, N)
    into key_scale_cache (nb, N, bs, 1)."""
    bs = key_cache.shape[2]
    write_block_major(key_cache, key, slot_mapping, bs)
    write_block_major(value_cache, value, slot_mapping, bs)
    write_block_major(key_scale_cache, key_scale.float().reshape(key.shape[0], key.shape[1], 1), slot_mapping, bs)


def kv_cache_col(d: int, mode: int, group: int = 64) -> int:
    """Bytes per row kv_compress_epilog writes for x of width d (seed 004, tiling arch35)."""
    nope = d - ROPE_COLUMNS
    if mode == 2:
        concat = ROPE_COLUMNS + nope // 2 + (nope // group) * 2
    else:
        concat = nope + 2 * ROPE_COLUMNS + math.ceil(nope / 64) * SCALE_BYTES[mode]
    return concat if mode == 1 else -(-concat // ROW_ALIGN) * ROW_ALIGN


def quant_mode_number(quant_mode) -> int:
    return QUANT_MODES[quant_mode.lower()] if isinstance(quant_mode, str) else int(quant_mode)


def compress_rows(x: torch.Tensor, mode: int, round_scale: bool) -> torch.Tensor:
    """One cache row per token, modes 0/1 (seed 004): [rope 64 x bf16 = 128 B][nope fp8 e4m3fn,
    one byte per column][one scale per 64 nope columns: bf16 (mode 0) or e8m0 (mode 1)], zero
    padded to kvCacheCol. scale = amax / 448, rounded up to a power of two in mode 1 and with
    round_scale."""
    tokens, d = x.shape
    nope = x[:, :d - ROPE_COLUMNS].float().reshape(tokens, -1, 64)
    amax = nope.abs().amax(-1, keepdim=True).clamp_min(1e-30)
    scale = amax / FP8_E4M3FN_MAX
    if mode == 1 or round_scale:
        scale = torch.exp2(torch.ceil(torch.log2(scale)))
    quantised = (nope / scale).to(torch.float8_e4m3fn).view(torch.uint8).reshape(tokens, -1)
    rope_bytes = x[:, d - ROPE_COLUMNS:].to(torch.bfloat16).contiguous().view(torch.uint8)
    if mode == 1:
        scales = (torch.log2(scale).reshape(tokens, -1) + 127).to(torch.uint8)
    else:
        scales = scale.to(torch.bfloat16).reshape(tokens, -1).contiguous().view(torch.uint8)
    packed = torch.cat([rope_bytes, quantised, scales], -1)
    row = torch.zeros((tokens, kv_cache_col(d, mode)), dtype=torch.uint8, device=x.device)
    row[:, :packed.shape[1]] = packed
    return row


def kv_compress_epilog(cache, x, slot_mapping, *, quant_group_size=64, quant_mode="fp8_e8m0", round_scale=True,
                       x_scale=1.0):
    """Seed 004: quantise each token of x (bs, d) and write its kvCacheCol bytes at the start of
    its slot's row of the uint8 cache (nb, bs, 1, headDim); the rest of the row is untouched;
    slot -1 skipped. Mode 2 (hifloat8 + fp4) has no torch dtype: not emulated."""
    mode = quant_mode_number(quant_mode)
    if mode not in (0, 1):
        raise NotImplementedError(f"kv_compress_epilog quant_mode {quant_mode!r} (hifloat8/fp4) is not emulated")
    rows = compress_rows(x.reshape(-1, x.shape[-1]), mode, round_scale)
    head_dim = cache.shape[-1]
    table = cache.view(-1, head_dim)
    keep = last_writers(slot_mapping, table.shape[0])
    table[slot_mapping.reshape(-1).long()[keep], :rows.shape[1]] = rows[keep]
