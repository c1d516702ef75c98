"""Reference semantics of ATB's `npu_ring_mla`, in plain torch (float32 math).

TND inputs split by `seqlen` (per-request lengths, equal for queries and keys), scores
(q_nope.k_nope + q_rope.k_rope) * qk_scale, right-down causal when `mask_type` asks for the
triangular mask, no mask otherwise. Returns (out (T, N, Dv), lse (N, T)). `pre_out`/`prev_lse`
(the ring's running result) are not emulated."""
from __future__ import annotations

import torch

from kvlint.runtime.families.fa.reference import attention


def ring_mla(q_nope, q_rope, k_nope, k_rope, value, mask, seqlen, head_num, kv_head_num, *, qk_scale=1.0,
             mask_type=None, **_precision):
    lens = [int(x) for x in seqlen.reshape(-1, seqlen.shape[-1])[0].tolist()]
    ends = torch.tensor(lens).cumsum(0).tolist()
    sparse = 3 if (mask_type or "").endswith("triu") else 0
    out, lse = attention(q_nope, k_nope, value, num_heads=head_num, kv_heads=kv_head_num, scale=qk_scale,
                         layout="TND", sparse_mode=sparse, q_lens=ends, kv_lens=ends, query_rope=q_rope,
                         key_rope=k_rope)
    return out, lse.squeeze(-1).transpose(0, 1).contiguous()
