"""Conformance with the operator source (hicann/ops-transformer, rules/facts/fa_contracts.toml):
every call the real operator accepts passes under patch(); every loud reject raises with the
code naming what the operator rejects. Cases named `utest:<name>` replay the operator team's
unit tests (attention/fused_infer_attention_score/tests/utest/op_host/
test_fused_infer_attention_score_tiling.cpp) with the shapes given there.

Tensors are on the meta device: shapes and dtypes only, so big MLA shapes cost nothing and the
cases do not depend on which stand-in (fixtures/torch_npu or kvlint.emulate) provides the ops;
the operator itself may then fail on meta tensors, which the cases ignore."""
import pytest
import torch

import kvlint

H, BF = torch.float16, torch.bfloat16
I32 = torch.int32


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def table(rows, width):
    return m(rows, width, dtype=I32)


def mask(*shape):
    return m(*shape, dtype=torch.int8)


def fa(q, k, v, **kw):
    kw.setdefault("scale", 0.0625)
    return ("npu_fused_infer_attention_score", (q, k, v), kw)


def pfa(q, k, v, **kw):
    kw.setdefault("scale_value", 0.0625)
    return ("npu_prompt_flash_attention", (q, k, v), kw)


def mla_bsh(b=4, s=1, n=64, nb=8, bs=128, width=32, **kw):
    """utest MLA_NOQUANT defaults (FiaCase::InitEnhanceParam): BSH, N1 64, N2 1, D 512, rope 64,
    block 128, 3-D cache (nb, bs, 512), kv lens = table width * block size."""
    args = dict(num_heads=n, num_key_value_heads=1, input_layout="BSH", block_table=table(b, width),
                block_size=bs, actual_seq_lengths_kv=[width * bs] * b, query_rope=m(b, s, n * 64),
                key_rope=m(nb, bs, 64))
    args.update(kw)
    return fa(m(b, s, n * 512), m(nb, bs, 512), m(nb, bs, 512), **args)


def mla_sliding(n=128, bs=128, layout="BSND", **kw):
    """MLA with sparse_mode 4 = sliding attention (FiaInfoParser: slidingFlag = sparse_mode == 4)."""
    q, qr = (m(4, 1, n, 512), m(4, 1, n, 64)) if layout == "BSND" else (m(4, 1, n * 512), m(4, 1, n * 64))
    args = dict(num_heads=n, num_key_value_heads=1, input_layout=layout, block_table=table(4, 4), block_size=bs,
                actual_seq_lengths_kv=[4 * bs] * 4, query_rope=qr, key_rope=m(16, bs, 64), sparse_mode=4,
                atten_mask=mask(2048, 2048))
    args.update(kw)
    return fa(q, m(16, bs, 512), m(16, bs, 512), **args)


def mla_bnsd(b=32, s=2, n=32, sparse=3, atten_mask="default", cache=(64, 1, 128, 512), rope=(64, 1, 128, 64), **kw):
    """utest case_deepseek_mla_witmask: BNSD, 4-D cache (64, 1, 128, 512), table (32, 2)."""
    args = dict(num_heads=n, num_key_value_heads=1, input_layout="BNSD", block_table=table(b, 2), block_size=128,
                actual_seq_lengths_kv=[256] * b, query_rope=m(b, n, s, 64), key_rope=m(*rope), sparse_mode=sparse,
                atten_mask=mask(2048, 2048) if atten_mask == "default" else atten_mask)
    args.update(kw)
    return fa(m(b, n, s, 512), m(*cache), m(*cache), **args)


def mla_nz(layout="BSH", bs=128, **kw):
    """utest case_deepseek_mla_kv_nz: BSH query (32, 2, 32*512), NZ cache (64, 1, 32, 128, 16)."""
    q, qr = (m(32, 2, 32 * 512), m(32, 2, 32 * 64)) if layout == "BSH" else (m(32, 2, 32, 512), m(32, 2, 32, 64))
    if layout == "BNSD":
        q, qr = m(32, 32, 2, 512), m(32, 32, 2, 64)
    args = dict(num_heads=32, num_key_value_heads=1, input_layout=layout, block_table=table(32, 2), block_size=bs,
                actual_seq_lengths_kv=[256] * 32, query_rope=qr, key_rope=m(64, 1, 4, bs, 16), sparse_mode=3,
                atten_mask=mask(2048, 2048))
    args.update(kw)
    return fa(q, m(64, 1, 32, bs, 16), m(64, 1, 32, bs, 16), **args)


def mla_tnd(per_request=(2, 2, 2), n=32, sparse=3, atten_mask="default", **kw):
    """MLA TND (MTP decode): T tokens, cumulative query lengths, per-request paged KV lengths."""
    ends = [sum(per_request[:i + 1]) for i in range(len(per_request))]
    t, b = ends[-1], len(per_request)
    args = dict(num_heads=n, num_key_value_heads=1, input_layout="TND", block_table=table(b, 2), block_size=128,
                actual_seq_lengths=ends, actual_seq_lengths_kv=[200] * b, query_rope=m(t, n, 64),
                key_rope=m(16, 128, 64), sparse_mode=sparse,
                atten_mask=mask(2048, 2048) if atten_mask == "default" else atten_mask)
    args.update(kw)
    return fa(m(t, n, 512), m(16, 128, 512), m(16, 128, 512), **args)


def gqa_paged(layout="BSH", b=2, n=8, kv=2, d=128, dv=None, cache="3d", bs=128, width=4, rows=None, lens=None, **kw):
    """GQA paged decode (Q_S 1). cache: '3d' (nb, bs, N_kv*D), '4d' (nb, N_kv, bs, D), 'nd4d' (nb, bs, N_kv, D)."""
    dv = dv or d
    nb = b * width
    q = {"BSH": m(b, 1, n * d), "BSND": m(b, 1, n, d), "BNSD": m(b, n, 1, d)}[layout.split("_")[0]]
    shapes = {"3d": ((nb, bs, kv * d), (nb, bs, kv * dv)), "4d": ((nb, kv, bs, d), (nb, kv, bs, dv)),
              "nd4d": ((nb, bs, kv, d), (nb, bs, kv, dv))}[cache]
    args = dict(num_heads=n, num_key_value_heads=kv, input_layout=layout, block_table=table(rows or b, width),
                block_size=bs, actual_seq_lengths_kv=lens if lens is not None else [bs * width] * b)
    args.update(kw)
    return fa(q, m(*shapes[0]), m(*shapes[1]), **args)


def gqa_tnd_paged(per_request=(1, 1, 1, 1), n=32, kv=8, d=128, rows=None, lens=None, cache_heads=None, **kw):
    """vllm-ascend's main decode path: TND query, (num_blocks, block_size, N_kv*D) cache view."""
    ends = [sum(per_request[:i + 1]) for i in range(len(per_request))]
    b = len(per_request)
    h = (cache_heads or kv) * d
    args = dict(num_heads=n, num_key_value_heads=kv, input_layout="TND", block_table=table(rows or b, 4),
                block_size=128, actual_seq_lengths=ends, actual_seq_lengths_kv=lens or [300] * b)
    args.update(kw)
    return fa(m(ends[-1], n, d), m(16, 128, h), m(16, 128, h), **args)


def fusion(q, k, v, head_num, layout, **kw):
    kw.setdefault("scale", 0.0625)
    return ("npu_fusion_attention", (q, k, v, head_num, layout), kw)


I8, F32 = torch.int8, torch.float32


def ifa(q, k, v, **kw):
    kw.setdefault("scale_value", 0.0625)
    return ("npu_incre_flash_attention", (q, k, v), kw)


def kv_int8(b=4, n=8, kv=2, d=128, s=2048, dtype=H, op="fa", **kw):
    """KV int8 decode on the IFA tiling path: BSH query (B, 1, N*D), int8 key/value (B, S, N_kv*D)."""
    q, k = m(b, 1, n * d, dtype=dtype), m(b, s, kv * d, dtype=I8)
    if op == "ifa":
        return ifa(q, k, m(b, s, kv * d, dtype=I8), num_heads=n, num_key_value_heads=kv, input_layout="BSH", **kw)
    return fa(q, k, m(b, s, kv * d, dtype=I8), num_heads=n, num_key_value_heads=kv, input_layout="BSH", **kw)


def utest_ifa(**kw):
    """test_incre_flash_attention_tiling.cpp case_antiquantscale_*: query (4, 1, 10) BSH, 10 heads,
    int8 key/value (4, 2048, 10), int8 output with a 5-D quant_scale2."""
    return ifa(m(4, 1, 10), m(4, 2048, 10, dtype=I8), m(4, 2048, 10, dtype=I8), num_heads=10, input_layout="BSH",
               quant_scale2=m(2, 2, 2, 2, 2, dtype=F32), **kw)


ACCEPTED = {
    "npu_fusion_attention SBH (flash_attention_score_infershape.cpp layouts)": fusion(
        m(5, 2, 8 * 64), m(7, 2, 8 * 64), m(7, 2, 8 * 64), 8, "SBH"),
    "npu_fusion_attention SBH GQA (N2 from the key)": fusion(m(5, 2, 8 * 64), m(7, 2, 2 * 64), m(7, 2, 2 * 64), 8,
                                                             "SBH"),
    "npu_fusion_attention BSH GQA": fusion(m(2, 5, 8 * 64), m(2, 7, 2 * 64), m(2, 7, 2 * 64), 8, "BSH"),
    "npu_fusion_attention BSND GQA": fusion(m(2, 5, 8, 64), m(2, 7, 2, 64), m(2, 7, 2, 64), 8, "BSND"),
    "npu_fusion_attention BNSD causal": fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD",
                                               sparse_mode=3, atten_mask=m(2048, 2048, dtype=torch.bool)),
    "npu_fusion_attention TND": fusion(m(8, 8, 64), m(8, 2, 64), m(8, 2, 64), 8, "TND", actual_seq_qlen=[3, 8],
                                       actual_seq_kvlen=[3, 8], sparse_mode=3,
                                       atten_mask=m(2048, 2048, dtype=torch.bool)),
    "utest:MLA_NOQUANT defaults (BSH, 3-D cache)": mla_bsh(),
    "MLA BSH, group 128": mla_bsh(n=128),
    "MLA BSH, block_size 16": mla_bsh(bs=16, width=256, key_rope=m(8, 16, 64)),
    "MLA BSND decode": fa(m(4, 1, 64, 512), m(8, 128, 512), m(8, 128, 512), num_heads=64, num_key_value_heads=1,
                          input_layout="BSND", block_table=table(4, 2), block_size=128, actual_seq_lengths_kv=[256] * 4,
                          query_rope=m(4, 1, 64, 64), key_rope=m(8, 128, 64)),
    "utest:case_deepseek_mla_witmask (BNSD, 4-D cache, MTP)": mla_bnsd(),
    # torch_npu's own MLA example (op-plugin docs @517f2e7, torch_npu-npu_fused_infer_attention_score.md):
    # a contiguous BNSD latent without block_table, which a later CheckFeatureMlaNoquant accepts
    # (it no longer runs CheckFeatureMlaNoquantPa; torch_npu 2.14.0's docs still require paging)
    "doc: MLA BNSD decode, contiguous latent (no block_table)": fa(
        m(1, 16, 1, 512), m(1, 1, 2048, 512), m(1, 1, 2048, 512), num_heads=16, num_key_value_heads=1,
        input_layout="BNSD", sparse_mode=0, query_rope=m(1, 16, 1, 64), key_rope=m(1, 1, 2048, 64)),
    "MLA BSND decode, contiguous latent": fa(
        m(2, 1, 16, 512), m(2, 64, 1, 512), m(2, 64, 1, 512), num_heads=16, num_key_value_heads=1,
        input_layout="BSND", query_rope=m(2, 1, 16, 64), key_rope=m(2, 64, 1, 64)),
    "utest:case_deepseek_mla_kv_nz (BSH, NZ cache)": mla_nz(),
    "utest:case_deepseek_mla_kv_nz_bsnd": mla_nz(layout="BSND"),
    "MLA TND, 2 tokens per request, sparse 3": mla_tnd(),
    "MLA TND, no mask, sparse 0": mla_tnd(sparse=0, atten_mask=None),
    "MLA sliding attention (sparse 4): BSND, group 128, block 128": mla_sliding(),
    "MLA sliding attention, block 64, query lengths given": mla_sliding(bs=64, actual_seq_lengths=[1] * 4),
    "utest:case_ifa_sliding_pa_kv_unequal_bsh (D_k 192, D_v 128, more table rows and lengths than requests)":
        fa(m(4, 1, 192), m(64, 128, 192), m(64, 128, 128), num_heads=1, num_key_value_heads=1, input_layout="BSH",
           block_table=table(32, 2), block_size=128, actual_seq_lengths_kv=[128] * 32, pre_tokens=128),
    "vllm-ascend TND decode with a (nb, bs, N_kv*D) cache": gqa_tnd_paged(),
    "TND paged, several tokens per request": gqa_tnd_paged(per_request=(3, 1, 2, 1)),
    "GQA BSH paged decode, 3-D cache": gqa_paged(),
    "GQA paged decode, per-token-head PA antiquant mode 5": gqa_paged(key_antiquant_mode=5, value_antiquant_mode=5),
    "GQA BSND paged decode, 3-D cache": gqa_paged(layout="BSND"),
    "GQA BNSD paged decode, 3-D cache": gqa_paged(layout="BNSD"),
    "GQA BNSD paged decode, 4-D cache": gqa_paged(layout="BNSD", cache="4d"),
    "GQA BNSD_NBSD paged decode, 4-D cache": gqa_paged(layout="BNSD_NBSD", cache="4d"),
    "GQA BSH, 4-D cache with inner_precise 2": gqa_paged(cache="4d", inner_precise=2),
    "paged, D_k 192 / D_v 128 (3-D)": gqa_paged(d=192, dv=128),
    "block table with more rows than requests": gqa_paged(rows=8),
    "KV length list longer than the batch": gqa_paged(lens=[512, 512, 0, 0]),
    "one KV length for every request": gqa_paged(lens=[512]),
    "PFA TND, D_qk 192 / D_v 128": pfa(m(8, 4, 192), m(8, 4, 192), m(8, 4, 128), num_heads=4, num_key_value_heads=4,
                                       input_layout="TND", actual_seq_lengths=[3, 8], actual_seq_lengths_kv=[3, 8],
                                       sparse_mode=3, atten_mask=m(2048, 2048, dtype=torch.bool)),
    "BSND, D_v < D_qk (rope combined)": fa(m(2, 3, 4, 192), m(2, 5, 2, 192), m(2, 5, 2, 128), num_heads=4,
                                           num_key_value_heads=2, input_layout="BSND"),
    "NSD: dim 0 is the head count (GQA)": fa(m(4, 3, 16), m(2, 5, 16), m(2, 5, 16), num_heads=4, num_key_value_heads=2,
                                             input_layout="NSD"),
    "TND non-paged: KV heads from key.shape[1]": fa(m(8, 4, 16), m(8, 2, 16), m(8, 2, 16), num_heads=4,
                                                    num_key_value_heads=2, input_layout="TND",
                                                    actual_seq_lengths=[3, 8], actual_seq_lengths_kv=[3, 8]),
    # KV int8 antiquant (IFA CheckKVAntiQuantParaShapeLegal / PerChannel / PerToken, CheckAntiQuantParam)
    "antiquant per-tensor [2]": kv_int8(antiquant_scale=m(2), antiquant_offset=m(2)),
    "antiquant per-channel [2, N*D]": kv_int8(antiquant_scale=m(2, 256), antiquant_offset=m(2, 256)),
    "antiquant per-channel [2, N, D]": kv_int8(antiquant_scale=m(2, 2, 128)),
    "antiquant per-channel [2, N, 1, D]": kv_int8(antiquant_scale=m(2, 2, 1, 128), antiquant_offset=m(2, 2, 1, 128)),
    "antiquant per-channel [2, 1, N, D]": kv_int8(antiquant_scale=m(2, 1, 2, 128)),
    "antiquant per-channel bf16 query, bf16 scale": kv_int8(dtype=BF, antiquant_scale=m(2, 256, dtype=BF)),
    "antiquant per-token [2, B, S] float32": kv_int8(antiquant_mode=1, antiquant_scale=m(2, 4, 2048, dtype=F32),
                                                     antiquant_offset=m(2, 4, 2048, dtype=F32)),
    "npu_incre_flash_attention antiquant per-channel [2, N*D]": kv_int8(op="ifa", antiquant_scale=m(2, 256)),
    "antiquant_mode 2 on a float cache (read only when antiquant is on: IFA tiling.cpp l.1440)": gqa_paged(
        antiquant_mode=2),
    "key_antiquant_mode 6 on a float cache (FIA's CheckSingleParaKeyAntiquantMode runs only for MLA)": gqa_paged(
        key_antiquant_mode=6),
    "antiquant_mode 2 (per-tensor-head) with KV int8 (IFA CheckAntiQuantParam: 0, 1 or 2)": kv_int8(
        antiquant_mode=2, antiquant_scale=m(2)),
    "antiquant split mode (key_/value_antiquant_*: not the combined checks)": kv_int8(
        key_antiquant_scale=m(1, 256), value_antiquant_scale=m(1, 256)),
    # npu_fusion_attention tiling (flash_attention_score_tiling_general.cpp AnalyzeAttrs / AnalyzeOptionalInput)
    "npu_fusion_attention mask (B, N1, S1, S2)": fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD",
                                                        atten_mask=m(2, 8, 5, 7, dtype=torch.bool)),
    "npu_fusion_attention mask (1, 1, S1, S2) uint8": fusion(m(2, 5, 8, 64), m(2, 7, 8, 64), m(2, 7, 8, 64), 8, "BSND",
                                                             atten_mask=m(1, 1, 5, 7, dtype=torch.uint8)),
    "npu_fusion_attention mask (B, 1, S1, S2)": fusion(m(2, 5, 8 * 64), m(2, 7, 8 * 64), m(2, 7, 8 * 64), 8, "BSH",
                                                       atten_mask=m(2, 1, 5, 7, dtype=torch.bool)),
    "npu_fusion_attention mask (S1, S2) SBH": fusion(m(5, 2, 8 * 64), m(7, 2, 8 * 64), m(7, 2, 8 * 64), 8, "SBH",
                                                     atten_mask=m(5, 7, dtype=torch.bool)),
    "npu_fusion_attention sparse 3, mask (2048, 2048)": fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8,
                                                               "BNSD", atten_mask=m(2048, 2048, dtype=torch.bool),
                                                               sparse_mode=3),
    "npu_fusion_attention sparse 6 (prefix compressed), mask (3072, 2048)": fusion(
        m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", atten_mask=m(3072, 2048, dtype=torch.bool),
        sparse_mode=6, prefix=[2, 3]),  # each in [max(S2 - S1, 0), S2] = [2, 7]: GetPrefixNList l.1347-1349
    "npu_fusion_attention keep_prob 0.9": fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD",
                                                 keep_prob=0.9),
    "npu_fusion_attention pse (B, N1, S1, S2)": fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD",
                                                      pse=m(2, 8, 5, 7)),
    "npu_fusion_attention pse (1, N1, 1, S2)": fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD",
                                                     pse=m(1, 8, 1, 7)),
    "npu_fusion_attention pse alibi (1, N1, 1024, S2), S1 2048": fusion(
        m(1, 8, 2048, 64), m(1, 8, 2048, 64), m(1, 8, 2048, 64), 8, "BNSD", pse=m(1, 8, 1024, 2048)),
}


REJECTED = {
    # name: (call, code, words the message must hold)
    "npu_fusion_attention with a FIA-only layout (BNSD_BSND)": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD_BSND"), "KV110", "SBH"),
    "npu_fusion_attention head_num not dividing by the key's heads": (
        fusion(m(2, 5, 8 * 64), m(2, 7, 3 * 64), m(2, 7, 3 * 64), 8, "BSH"), "KV112", "dividing head_num=8"),
    "npu_fusion_attention head_num against the query (BSND dim 2)": (
        fusion(m(2, 5, 8, 64), m(2, 7, 2, 64), m(2, 7, 2, 64), 4, "BSND"), "KV111", "head count 8"),
    "4-D cache with a BSH query (IFATiling::ProcessPageAttentionFlag)": (gqa_paged(cache="4d"), "KV110", "3-D"),
    "4-D cache with a BSND query": (gqa_paged(layout="BSND", cache="4d"), "KV110", "inner_precise=2"),
    "ND (nb, bs, N, D) cache read as (nb, N, bs, D)": (gqa_paged(layout="BNSD", cache="nd4d"), "KV312",
                                                       "key.view(8, 128, 256)"),
    "ND 4-D cache with a BSH query": (gqa_paged(cache="nd4d"), "KV312", "key.view("),
    "block table with fewer rows than requests (reads past it)": (gqa_paged(b=3, rows=2), "KV310", "at least one row"),
    "utest:case_CheckBlockTable_mla_078 (TND table rows != batch)": (mla_tnd(block_table=table(2, 2)), "KV310",
                                                                     "one row per request"),
    "TND table with more rows than requests": (gqa_tnd_paged(rows=6), "KV310", "one row per request"),
    "KV lengths shorter than the batch": (gqa_paged(b=3, lens=[512, 512]), "KV314", ">= batch"),
    "utest:case_CheckActualSeqLensKv_mla_076 (TND kv lengths != batch)": (
        mla_tnd(actual_seq_lengths_kv=[200, 200]), "KV314", "one length per request"),
    "TND paged cache with the wrong KV heads": (gqa_tnd_paged(cache_heads=4), "KV112", "hidden size"),
    "value head dim above the key's": (gqa_paged(d=128, dv=192), "KV113", "<="),
    "MLA block_size 64 (CheckFeatureMlaNoquantPa)": (mla_bsh(bs=64, width=64, key_rope=m(8, 64, 64)), "KV311", "16"),
    "MLA NZ block_size 16 (CheckFeatureMlaNoquantPa)": (mla_nz(bs=16, actual_seq_lengths_kv=[32] * 32), "KV311",
                                                         "NZ"),
    "utest:case_CheckFeatureMlaNoquantUnsupported_mla_072 (softmax_lse_flag)": (
        mla_bsh(softmax_lse_flag=True), "KV510", "softmax_lse"),
    "utest:case_CheckInnerPrecise_mla_043 / _075 (inner_precise 3)": (mla_bsh(inner_precise=3), "KV510",
                                                                      "inner_precise"),
    "utest:case_deepseek_mla_witmask_sparsemode (Q_S 1, sparse 3)": (mla_bnsd(s=1), "KV213", "Q_S = 1"),
    "utest:case_deepseek_mla_witmask_mtp_sparsemode_err (Q_S 2, sparse 0)": (mla_bnsd(sparse=0), "KV213",
                                                                                "Q_S = 2"),
    "utest:case_CheckAttentionMask_mla_045 (decode, sparse 0 with a mask)": (mla_bsh(atten_mask=mask(1, 1)), "KV213",
                                                                             "sparse_mode 0 takes no mask"),
    "utest:case_deepseek_mla_witmask_mtp_maskshape_error (2048x2047)": (mla_bnsd(atten_mask=mask(2048, 2047)),
                                                                        "KV206", "2048"),
    "utest:case_ifa_exception_ds_pa_000002 (Q_S 17, sparse 0)": (
        fa(m(24, 64, 17, 512, dtype=BF), m(200, 128, 512, dtype=BF), m(200, 128, 512, dtype=BF), num_heads=64,
           num_key_value_heads=1, input_layout="BNSD", block_table=table(24, 9), block_size=128,
           actual_seq_lengths_kv=[1] * 24, query_rope=m(24, 64, 17, 64, dtype=BF), key_rope=m(200, 128, 64, dtype=BF)),
        "KV213", "Q_S = 17"),
    "MLA TND sparse 4 (sliding: BSND only)": (mla_tnd(sparse=4), "KV110", "sparse_mode 4"),
    "MLA sliding attention with BSH (CheckFeatureMlaNoQuantLayout)": (mla_sliding(layout="BSH"), "KV110", "BSND"),
    "MLA sliding attention with group 64 (CheckFeatureMlaNoQuantShape)": (mla_sliding(n=64), "KV112", "128"),
    "MLA sliding attention with block 16 (CheckFeatureMlaNoquantPa)": (
        mla_sliding(bs=16, key_rope=m(16, 16, 64)), "KV311", "[64, 128]"),
    "MLA sliding attention with a (1, 2048, 2048) mask (CheckAttentionMask)": (
        mla_sliding(atten_mask=mask(1, 2048, 2048)), "KV206", "sparse_mode 4"),
    "MLA TND mask (1, 2048, 2048)": (mla_tnd(atten_mask=mask(1, 2048, 2048)), "KV206", "exactly"),
    "MLA query lengths outside TND (CheckFeatureActualSeqLensExistence)": (
        mla_bsh(actual_seq_lengths=[1] * 4), "KV316", "only in TND"),
    "MLA TND, 17 query tokens in a request (CheckFeatureActualSeqLensQData)": (mla_tnd(per_request=(17, 1)),
                                                                              "KV315", "16"),
    "MLA group 256": (mla_bsh(n=256), "KV112", "128"),
    "utest:case_deepseek_mla_keyrope_null": (mla_bnsd(key_rope=None), "KV510", "key_rope"),
    "utest:case_ifa_exception_ds_pa_000001 (rope with D 192)": (
        fa(m(24, 64, 1, 192, dtype=BF), m(200, 128, 192, dtype=BF), m(200, 128, 192, dtype=BF), num_heads=64,
           num_key_value_heads=1, input_layout="BNSD", block_table=table(24, 9), block_size=128,
           actual_seq_lengths_kv=[1] * 24, query_rope=m(24, 64, 1, 64, dtype=BF), key_rope=m(200, 128, 64, dtype=BF)),
        "KV510", "head dim in"),
    "BSH query_rope not (B, S, N*64)": (mla_bsh(query_rope=m(4, 1, 64 * 32)), "KV510", "num_heads * 64"),
    "query_rope with another sequence length": (mla_bsh(query_rope=m(4, 2, 64 * 64)), "KV510", "batch, sequence"),
    "key_rope not following the key cache": (mla_bsh(key_rope=m(8, 64, 64)), "KV510", "key_rope"),
    "NZ key_rope with the wrong D0": (mla_nz(key_rope=m(64, 1, 8, 128, 8)), "KV510", "key_rope"),
    "MLA BSH with a 4-D cache (CheckFeatureMlaNoQuantLayout)": (
        fa(m(4, 1, 64 * 512), m(8, 1, 128, 512), m(8, 1, 128, 512), num_heads=64, num_key_value_heads=1,
           input_layout="BSH", block_table=table(4, 2), block_size=128, actual_seq_lengths_kv=[256] * 4,
           query_rope=m(4, 1, 64 * 64), key_rope=m(8, 1, 128, 64), inner_precise=2), "KV110", "BNSD or TND"),
    "MLA without quantization given key_antiquant_scale (CheckParaExistenceMlaNoquant)": (
        mla_bsh(key_antiquant_scale=m(1, 512)), "KV518", "without quantization"),
    "MLA without quantization given quant_scale2 (post-quant)": (mla_bsh(quant_scale2=m(1)), "KV518", "quant_scale2"),
    "MLA without quantization, key_antiquant_mode 1": (mla_bsh(key_antiquant_mode=1), "KV518", "default"),
    "key_antiquant_mode 6 with a KV int8 split antiquant (IFA CheckKVAntiQuantMode)": (
        kv_int8(key_antiquant_scale=m(1, 256), value_antiquant_scale=m(1, 256), key_antiquant_mode=6,
                value_antiquant_mode=6), "KV518", "0, 1, 2"),
    "utest:case_CheckFeatureMlaNoQuantLayout_mla_058 (NZ cache with BNSD)": (mla_nz(layout="BNSD"), "KV110", "NZ"),
    # KV int8 antiquant: the operator team's IFA unit tests, and the checks they exercise
    "utest:case_antiquantscale_nullptr (antiquant on, no scale)": (
        utest_ifa(antiquant_offset=m(2, 2, 2, 2, 2, dtype=F32)), "KV518", "antiquant scale is NULL"),
    "utest:case_antiquantscale_dim (offset of another rank)": (
        utest_ifa(antiquant_scale=m(2, 2, 2, 2, dtype=F32), antiquant_offset=m(2, 2, 2, 2, 2, dtype=F32)),
        "KV518", "different layouts"),
    "utest:case_antiquantScale_dim_bnsd ([2, 2, 2, 2] for N 10, D 1)": (
        utest_ifa(antiquant_scale=m(2, 2, 2, 2, dtype=F32), antiquant_offset=m(2, 2, 2, 2, dtype=F32)),
        "KV518", "[2, 10, 1, 1]"),
    "utest:case_antiquantscale_dim_bh ([2, 2] for N*D 10)": (
        utest_ifa(antiquant_scale=m(2, 2, dtype=F32), antiquant_offset=m(2, 2, dtype=F32)), "KV518", "[2, 10]"),
    "utest:case_antiquantscale_antiquantoffset (fp16 scale, fp32 offset)": (
        utest_ifa(antiquant_scale=m(2), antiquant_offset=m(2, dtype=F32)), "KV518", "like antiquant_scale"),
    "antiquant scale not stacked for key and value ([1, N*D])": (kv_int8(antiquant_scale=m(1, 256)), "KV518",
                                                                 "per-channel"),
    "antiquant per-channel scale of another dtype than the query": (
        kv_int8(antiquant_scale=m(2, 256, dtype=F32)), "KV518", "like the query"),
    "antiquant per-token with a float16 scale": (
        kv_int8(antiquant_mode=1, antiquant_scale=m(2, 4, 2048)), "KV518", "float32"),
    "antiquant per-token with another batch": (
        kv_int8(antiquant_mode=1, antiquant_scale=m(2, 3, 2048, dtype=F32)), "KV518", "(2, 4, S >= 2048)"),
    "antiquant parameters on a float16 cache (ProcessAntiQuant)": (
        gqa_paged(antiquant_scale=m(2, 256)), "KV518", "antiquant needs an int8"),
    "npu_incre_flash_attention antiquant scale [2, N, D] with N 3": (
        kv_int8(op="ifa", antiquant_scale=m(2, 3, 128)), "KV518", "per-channel"),
    # npu_fusion_attention tiling (flash_attention_score_tiling_general.cpp)
    "npu_fusion_attention keep_prob 0 (AnalyzeAttrs)": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", keep_prob=0.0), "KV116", "keep_prob"),
    "npu_fusion_attention keep_prob 1.5": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", keep_prob=1.5), "KV116", "(0, 1]"),
    "npu_fusion_attention head dim 1024 (AnalyzeLayout)": (
        fusion(m(2, 8, 5, 1024), m(2, 8, 7, 1024), m(2, 8, 7, 1024), 8, "BNSD"), "KV116", "(0, 768]"),
    "npu_fusion_attention int8 mask (bool or uint8 only)": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", atten_mask=m(5, 7, dtype=torch.int8)),
        "KV205", "bool or uint8"),
    "npu_fusion_attention 3-D mask": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", atten_mask=m(1, 5, 7, dtype=torch.bool)),
        "KV211", "2-D or 4-D"),
    "npu_fusion_attention sparse 3 with a 3-D compressed mask": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", atten_mask=m(1, 2048, 2048, dtype=torch.bool),
               sparse_mode=3), "KV206", "2-D or 4-D"),
    "npu_fusion_attention sparse 6 with a (2048, 2048) mask": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", atten_mask=m(2048, 2048, dtype=torch.bool),
               sparse_mode=6, prefix=[1, 2]), "KV206", "(3072, 2048)"),
    "npu_fusion_attention mask (S1 + 1, S2)": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", atten_mask=m(6, 7, dtype=torch.bool)),
        "KV211", "exactly"),
    "npu_fusion_attention pse 3-D": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", pse=m(8, 5, 7)), "KV116", "pse"),
    "npu_fusion_attention pse batch 3 for B 2": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", pse=m(3, 8, 5, 7)), "KV116", "1|2"),
    "npu_fusion_attention pse alibi rows with S1 < 1024": (
        fusion(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD", pse=m(1, 8, 1024, 7)), "KV116", "pse"),
}


def _op(name):
    return getattr(torch.ops.npu, name)


def _collect(case):
    name, args, kwargs = case
    with kvlint.patch(mode="collect") as handle:
        try:
            _op(name)(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the stand-in may not run meta tensors; findings are in
            pass
    return handle.findings


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_by_the_operator_passes_the_guard(name):
    findings = [f for f in _collect(ACCEPTED[name]) if f.severity == "error"]
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_by_the_operator_raises_with_its_code(name):
    (op_name, args, kwargs), code, words = REJECTED[name]
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        _op(op_name)(*args, **kwargs)
    assert info.value.code == code, str(info.value)
    assert words in str(info.value), str(info.value)


def test_nd_cache_message_says_what_fa_reads():
    (op_name, args, kwargs), _, _ = REJECTED["ND (nb, bs, N, D) cache read as (nb, N, bs, D)"]
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        _op(op_name)(*args, **kwargs)
    message = str(info.value)
    assert "FA reads dim 1 as the 2 KV heads and dim 2 as block_size 128" in message
    assert "pass key.view(8, 128, 256)" in message
    assert "KV112" not in message


def test_check_call_agrees_with_the_guard():
    from kvlint.runtime import check_call

    positional = ("query", "key", "value", "head_num", "input_layout")
    for name, (op_name, args, kwargs) in ACCEPTED.items():
        bound = dict(zip(positional, args), **kwargs)
        assert [f for f in check_call(op_name, bound) if f.severity == "error"] == [], name
    for name, ((op_name, args, kwargs), code, _) in REJECTED.items():
        bound = dict(zip(positional, args), **kwargs)
        assert [f.code for f in check_call(op_name, bound)][:1] == [code], name


def test_vllm_ascend_15503_silent_mask_combination_warns():
    """Paged decode, sparse_mode 0, a bool [1, 1, 1, S] mask, KV > 512: silent on the NPU."""
    def case(width, shape):
        return gqa_paged(b=2, width=width, atten_mask=m(*shape, dtype=torch.bool))
    findings = _collect(case(8, (1, 1, 1, 1024)))
    assert [(f.code, f.severity) for f in findings] == [("KV211", "warning")]
    assert "15503" in findings[0].message
    assert _collect(case(4, (1, 1, 1, 512))) == []        # KV 512: fine
    assert _collect(case(8, (2, 1, 1, 1024))) == []       # one row per request: fine
    with kvlint.patch():                                  # a warning: raise mode does not stop the call
        with pytest.warns(kvlint.ContractWarning, match="KV211"):
            name, args, kwargs = case(8, (1, 1, 1, 1024))
            try:
                _op(name)(*args, **kwargs)
            except RuntimeError:
                pass
