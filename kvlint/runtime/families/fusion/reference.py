"""Reference semantics of `npu_fusion_attention` (forward), in plain torch (float32 math).

Source: ops-transformer attention/flash_attention_score/docs/aclnnFlashAttentionScore.md and
docs/context/sparse_mode参数说明.md. Layouts BSH, SBH, BSND, BNSD, TND (cumulative
`actual_seq_qlen`/`actual_seq_kvlen`; outside TND the lists never reach the kernel: both
given is rejected by the guard's KV316, one alone is ignored); the KV head count is read from the key (GQA); sparse
modes 0-4 as in the FA family, except that without `atten_mask` "sparseMode, preTokens and
nextTokens have no effect: full attention" (doc, constraints), so causal modes without a mask
silently attend to the future. Outputs: attention_out (query layout and dtype), softmax_max
and softmax_sum (float32, (B, N, S1, 8) or (T, N, 8), the value repeated over the last axis),
an empty softmax_out, seed, offset and the dropout-mask element count (0: keep_prob 1)."""
from __future__ import annotations

import torch

from kvlint.runtime.families.fa.reference import INT_MAX, attention, split_layout

STAT_WIDTH = 8


def kv_heads_of(query: torch.Tensor, key: torch.Tensor, head_num: int, layout: str) -> int:
    base = split_layout(layout)[0]
    if base in ("BSH", "SBH"):
        head_dim = query.shape[-1] // head_num
        return int(key.shape[-1]) // head_dim
    return int(key.shape[{"BSND": 2, "BNSD": 1, "TND": 1}[base]])


def fusion_attention(query, key, value, head_num, input_layout, *, atten_mask=None, scale=1.0,
                     pre_tockens=INT_MAX, next_tockens=INT_MAX, actual_seq_qlen=None, actual_seq_kvlen=None,
                     sparse_mode=0, seed=0, offset=0, query_rope=None, key_rope=None, **_precision):
    if str(input_layout).upper() != "TND":
        # outside TND no length list reaches the kernel (rules/facts/fusion.toml [fusion.lengths])
        actual_seq_qlen = actual_seq_kvlen = None
    out, lse, rowmax = attention(
        query, key, value, num_heads=head_num, kv_heads=kv_heads_of(query, key, head_num, input_layout),
        scale=scale, layout=input_layout, atten_mask=atten_mask, sparse_mode=sparse_mode, pre_tokens=pre_tockens,
        next_tokens=next_tockens, q_lens=actual_seq_qlen, kv_lens=actual_seq_kvlen, query_rope=query_rope,
        key_rope=key_rope, mask_needed=False, with_max=True)
    row_sum = torch.where(torch.isinf(lse), torch.zeros_like(lse), torch.exp(lse - rowmax))
    shape = tuple(lse.shape[:-1]) + (STAT_WIDTH,)
    return (out, rowmax.expand(shape).contiguous(), row_sum.expand(shape).contiguous(),
            query.new_empty((0,)), int(seed), int(offset), 0)


def fusion_attention_v2(query, key, value, head_num, input_layout, *, pre_tokens=INT_MAX, next_tokens=INT_MAX,
                        query_rope=None, key_rope=None, **kw):
    """npu_fusion_attention_v2: the same forward under the spelled-out pre_tokens/next_tokens,
    plus rope tensors (their dot product added to the scores)."""
    return fusion_attention(query, key, value, head_num, input_layout, pre_tockens=pre_tokens,
                            next_tockens=next_tokens, query_rope=query_rope, key_rope=key_rope, **kw)


def fusion_attention_v3(query, key, value, head_num, input_layout, **kw):
    """npu_fusion_attention_v3: length lists as tensors; seed and offset returned as tensors."""
    out, smax, ssum, sout, seed, offset, _ = fusion_attention(query, key, value, head_num, input_layout, **kw)
    return out, smax, ssum, sout, torch.tensor([seed]), torch.tensor([offset])


fusion_attention_v2.__wrapped__ = fusion_attention  # the keywords it reads: its own and fusion_attention's
fusion_attention_v3.__wrapped__ = fusion_attention
