"""Attention test cases built from per-request dense tensors, and the independent truth.

Each case draws, per request b, Q_b (N, sq_b, D), K_b (N_kv, skv_b, D), V_b (N_kv, skv_b, Dv)
(+ ropes), packs them into the layout under test (dense layouts, TND/NTD, paged caches of every
form through a shuffled block table, with explicit index loops) and computes the expected output
with plain float64 softmax attention over an explicitly built boolean mask. Nothing here calls
kvlint's reference code."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional

import torch

COMPRESSED = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # the documented mask


@dataclass
class Case:
    layout: str = "BNSD"
    q_lens: List[int] = field(default_factory=lambda: [3, 3])
    kv_lens: List[int] = field(default_factory=lambda: [5, 5])
    heads: int = 4
    kv_heads: int = 2
    dim: int = 16
    value_dim: Optional[int] = None
    rope_dim: int = 0
    sparse: int = 0
    pre: int = 2147483647
    nxt: int = 2147483647
    user_mask: bool = False      # sparse 0/1: a random (B, 1, Sq, Skv) mask
    paged: Optional[str] = None  # "3d" (nb, bs, N*D), "4d" (nb, N, bs, D), "nz" (nb, N, D/16, bs, 16)
    block_size: int = 128
    pass_lengths: bool = True    # non-TND: pass actual_seq_lengths(_kv)
    seed: int = 0

    @property
    def mla_absorb(self) -> bool:
        """The MLA kernel (512-wide latent + rope) has no softmax LSE output."""
        return self.dim == 512 and self.rope_dim > 0

    @property
    def name(self) -> str:
        parts = [self.layout, f"gqa{self.heads}/{self.kv_heads}", f"sparse{self.sparse}"]
        if self.user_mask:
            parts.append("mask")
        if self.pre < 2147483647 or self.nxt < 2147483647:
            parts.append(f"band{self.pre},{self.nxt}")
        if self.paged:
            parts.append(f"paged-{self.paged}-bs{self.block_size}")
        if self.rope_dim:
            parts.append(f"rope{self.rope_dim}")
        if self.value_dim and self.value_dim != self.dim:
            parts.append(f"dv{self.value_dim}")
        parts.append("q" + ",".join(map(str, self.q_lens)) + "-kv" + ",".join(map(str, self.kv_lens)))
        return " ".join(parts)


def masked_matrix(case: Case, sq: int, skv: int, user: Optional[torch.Tensor]) -> torch.Tensor:
    """The documented meaning of each sparse mode, written out directly (True = masked)."""
    i = torch.arange(sq).view(-1, 1)
    j = torch.arange(skv).view(1, -1)
    off = skv - sq
    mode = case.sparse
    if mode == 0:
        if user is None:
            return torch.zeros(sq, skv, dtype=torch.bool)
        return user | (j - i > case.nxt) | (i - j > case.pre)
    if mode == 1:
        return user
    if mode == 2:
        return j > i
    if mode == 3:
        return j > i + off
    if mode == 4:
        return (j - i - off > case.nxt) | (i + off - j > case.pre)
    raise ValueError(mode)


def truth(q, k, v, masked, scale, rq=None, rk=None):
    """float64 softmax attention with an explicit mask; fully masked rows -> 0 and lse +inf."""
    q, k, v = q.double(), k.double(), v.double()
    group = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(group, 0)
    v = v.repeat_interleave(group, 0)
    scores = q @ k.transpose(-1, -2)
    if rq is not None:
        scores = scores + rq.double() @ rk.double().repeat_interleave(group, 0).transpose(-1, -2)
    scores = scores * scale
    scores = scores.masked_fill(masked, float("-inf"))
    lse = torch.logsumexp(scores, -1)
    dead = torch.isinf(lse)
    probs = torch.softmax(scores.masked_fill(dead.unsqueeze(-1), 0.0), -1).masked_fill(dead.unsqueeze(-1), 0.0)
    return probs @ v, lse.masked_fill(dead, float("inf"))


def _pack_dense(per_request, layout, lens):
    """per-request (N, s_b, D) -> the layout's tensor (padded to max(lens) outside TND/NTD)."""
    base = layout.split("_")[0]
    if base in ("TND", "NTD"):
        tnd = torch.cat([t.transpose(0, 1) for t in per_request], 0)
        return tnd if base == "TND" else tnd.transpose(0, 1).contiguous()
    n, _, d = per_request[0].shape
    s = max(lens)
    dense = torch.zeros(len(per_request), n, s, d)
    for b, t in enumerate(per_request):
        dense[b, :, :t.shape[1]] = t
    if base == "BNSD":
        return dense
    if base == "BSND":
        return dense.transpose(1, 2).contiguous()
    if base == "BSH":
        return dense.transpose(1, 2).reshape(len(per_request), s, n * d)
    if base == "NSD":
        return dense[0]
    raise ValueError(layout)


def _paged_cache(per_request, form, block_size, kv_lens, generator):
    """Write each request's tokens into a paged cache through a shuffled block table."""
    n, _, d = per_request[0].shape
    need = [-(-kv // block_size) for kv in kv_lens]
    width = max(need)
    total = sum(need) + 1
    order = torch.randperm(total, generator=generator).tolist()
    table = torch.zeros(len(kv_lens), width, dtype=torch.int32)
    used = 0
    for b, count in enumerate(need):
        for i in range(count):
            table[b, i] = order[used]
            used += 1
    return _with_table(per_request, form, block_size, kv_lens, table, total), table


def build(case: Case, dtype=torch.float32, v2: bool = False):
    """-> (kwargs for npu_fused_infer_attention_score(_v2), expected per-request outputs,
    expected per-request lse, unpack function)."""
    g = torch.Generator().manual_seed(case.seed)
    dv = case.value_dim or case.dim
    batch = len(case.q_lens)
    rnd = lambda *shape: torch.randn(*shape, generator=g).to(dtype).float()  # noqa: E731 - values exact in dtype
    qs = [rnd(case.heads, s, case.dim) for s in case.q_lens]
    ks = [rnd(case.kv_heads, s, case.dim) for s in case.kv_lens]
    vs = [rnd(case.kv_heads, s, dv) for s in case.kv_lens]
    rqs = [rnd(case.heads, s, case.rope_dim) for s in case.q_lens] if case.rope_dim else None
    rks = [rnd(case.kv_heads, s, case.rope_dim) for s in case.kv_lens] if case.rope_dim else None
    scale = 1.0 / math.sqrt(case.dim + case.rope_dim)
    token_major = case.layout.split("_")[0] in ("TND", "NTD")
    kv_width = max(case.kv_lens)
    mask = None
    if case.user_mask:
        mask = torch.rand(batch, 1, max(case.q_lens), kv_width if not case.paged else
                          -(-kv_width // case.block_size) * case.block_size, generator=g) < 0.3
    elif case.sparse in (2, 3, 4):
        mask = COMPRESSED
    expected, expected_lse = [], []
    for b in range(batch):
        sq, skv = case.q_lens[b], case.kv_lens[b]
        user = None if mask is None or mask is COMPRESSED else mask[b, 0, :sq, :skv]
        masked = masked_matrix(case, sq, skv, user)
        out, lse = truth(qs[b], ks[b], vs[b], masked, scale, rqs[b] if rqs else None, rks[b] if rks else None)
        expected.append(out)
        expected_lse.append(lse)
    names = ("num_query_heads", "softmax_scale", "actual_seq_qlen", "actual_seq_kvlen", "return_softmax_lse") \
        if v2 else ("num_heads", "scale", "actual_seq_lengths", "actual_seq_lengths_kv", "softmax_lse_flag")
    kw = {names[0]: case.heads, names[1]: scale, "num_key_value_heads": case.kv_heads, "input_layout": case.layout,
          "sparse_mode": case.sparse, names[4]: not case.mla_absorb}
    if case.pre < 2147483647:
        kw["pre_tokens"] = case.pre
    if case.nxt < 2147483647:
        kw["next_tokens"] = case.nxt
    if mask is not None:
        kw["atten_mask"] = mask
    query = _pack_dense(qs, case.layout, case.q_lens).to(dtype)
    if rqs:
        kw["query_rope"] = _pack_dense(rqs, case.layout, case.q_lens).to(dtype)
    if case.paged:
        key, table = _paged_cache(ks, case.paged, case.block_size, case.kv_lens, g)
        value = _with_table(vs, case.paged, case.block_size, case.kv_lens, table, key.shape[0])
        if rks:
            kw["key_rope"] = _with_table(rks, case.paged, case.block_size, case.kv_lens, table, key.shape[0]).to(dtype)
        kw["block_table"] = table
        kw["block_size"] = case.block_size
        kw[names[3]] = list(case.kv_lens)
        if token_major:
            kw[names[2]] = [sum(case.q_lens[:b + 1]) for b in range(batch)]
        elif case.pass_lengths:
            kw[names[2]] = list(case.q_lens)
    else:
        key = _pack_dense(ks, case.layout, case.kv_lens)
        value = _pack_dense(vs, case.layout, case.kv_lens)
        if rks:
            kw["key_rope"] = _pack_dense(rks, case.layout, case.kv_lens).to(dtype)
        if token_major:
            kw[names[2]] = [sum(case.q_lens[:b + 1]) for b in range(batch)]
            kw[names[3]] = [sum(case.kv_lens[:b + 1]) for b in range(batch)]
        elif case.pass_lengths:
            kw[names[2]] = list(case.q_lens)
            kw[names[3]] = list(case.kv_lens)
    return (query, key.to(dtype), value.to(dtype)), kw, expected, expected_lse


def _with_table(per_request, form, block_size, kv_lens, table, total):
    n, _, d = per_request[0].shape
    if form == "3d":
        cache = torch.zeros(total, block_size, n * d)
    elif form == "4d":
        cache = torch.zeros(total, n, block_size, d)
    else:
        cache = torch.zeros(total, n, d // 16, block_size, 16)
    for b, tokens in enumerate(per_request):
        for t in range(kv_lens[b]):
            blk, off = int(table[b, t // block_size]), t % block_size
            if form == "3d":
                cache[blk, off] = tokens[:, t].reshape(-1)
            elif form == "4d":
                cache[blk, :, off] = tokens[:, t]
            else:
                for h in range(n):
                    cache[blk, h, :, off, :] = tokens[h, t].reshape(d // 16, 16)
    return cache


def per_request_output(out, case: Case):
    """The operator's output (in the output layout) -> per-request (N, sq_b, Dv) and the dense
    (B, N, S, Dv) tensor (None for token-major outputs), to compare padding rows too."""
    base = case.layout.split("_")[-1]
    if base in ("TND", "NTD"):
        tnd = out if base == "TND" else out.transpose(0, 1)
        ends = [sum(case.q_lens[:b + 1]) for b in range(len(case.q_lens))]
        return [tnd[s:e].transpose(0, 1) for s, e in zip([0] + ends[:-1], ends)], None
    if base == "BNSD":
        dense = out
    elif base == "BSND":
        dense = out.transpose(1, 2)
    elif base == "NBSD":
        dense = out.permute(1, 0, 2, 3)
    elif base == "NSD":
        dense = out.unsqueeze(0)
    else:  # BSH
        b, s, h = out.shape
        dense = out.reshape(b, s, case.heads, h // case.heads).transpose(1, 2)
    return [dense[b, :, :case.q_lens[b]] for b in range(len(case.q_lens))], dense


def per_request_lse(lse, case: Case):
    base = case.layout.split("_")[0]
    if base in ("TND", "NTD"):
        ends = [sum(case.q_lens[:b + 1]) for b in range(len(case.q_lens))]
        return [lse[s:e, :, 0].transpose(0, 1) for s, e in zip([0] + ends[:-1], ends)]
    return [lse[b, :, :case.q_lens[b], 0] for b in range(len(case.q_lens))]


def max_error(got: List[torch.Tensor], want: List[torch.Tensor]) -> float:
    worst = 0.0
    for g, w in zip(got, want):
        finite = torch.isfinite(w)
        if not torch.equal(torch.isfinite(g.double()), finite):
            return float("inf")
        if finite.any():
            worst = max(worst, float((g.double()[finite] - w[finite]).abs().max()))
    return worst
