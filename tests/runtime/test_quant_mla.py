"""Quantized MLA (query_rope / key_rope with an int8 cache or query) on the IFA tiling, which is
where FIA sends it (IsUsingIFA; RouteToFia keeps only MLA without quantization for FIA's own
tiling): families/fa/quant_in.py mla_antiquant and quant_out.py post_quant_mla against
incre_flash_attention_tiling_check.cpp CheckMlaMisc / CheckDefaultMisc and
incre_flash_attention_tiling.cpp ProcessQuant2Dtype (rules/facts/fa_contracts.toml
[fa_contracts.mla_quant]). MLA without quantization: test_conformance (CheckParaExistenceMlaNoquant)."""
import torch
from quant_replay import conformance_tests, unchecked_test

BF, F32, I8 = torch.bfloat16, torch.float32, torch.int8


def m(*shape, dtype=BF):
    return torch.empty(*shape, dtype=dtype, device="meta")


def table(b, width):
    return torch.zeros(b, width, dtype=torch.int32)


def mla(q=BF, kv=I8, s=1, n=64, **kw):
    """MLA BSH paged (test_conformance.mla_bsh's shapes): query (4, s, n*512), cache (8, 128, 512),
    rope 64 (bf16), block_table (4, 2), KV lengths 256."""
    args = dict(num_heads=n, num_key_value_heads=1, input_layout="BSH", block_table=table(4, 2), block_size=128,
                actual_seq_lengths_kv=[256] * 4, query_rope=m(4, s, n * 64), key_rope=m(8, 128, 64),
                scale=512 ** -0.5)
    if s > 1:
        args.update(sparse_mode=3, atten_mask=torch.zeros(2048, 2048, dtype=torch.bool, device="meta"))
    args.update(kw)
    return ("npu_fused_infer_attention_score", (m(4, s, n * 512, dtype=q), m(8, 128, 512, dtype=kv),
                                                m(8, 128, 512, dtype=kv)), args)


def mla_tnd(kv=I8, **kw):
    """MLA TND: 6 tokens in 3 requests, 32 heads, cache (16, 128, 512)."""
    args = dict(num_heads=32, num_key_value_heads=1, input_layout="TND", block_table=table(3, 2), block_size=128,
                actual_seq_lengths=[2, 4, 6], actual_seq_lengths_kv=[200] * 3, query_rope=m(6, 32, 64),
                key_rope=m(16, 128, 64), sparse_mode=3, scale=512 ** -0.5,
                atten_mask=torch.zeros(2048, 2048, dtype=torch.bool, device="meta"))
    args.update(kw)
    return ("npu_fused_infer_attention_score", (m(6, 32, 512), m(16, 128, 512, dtype=kv), m(16, 128, 512, dtype=kv)),
            args)


def full(layout="BSH", **kw):
    """v2 MLA full quantization, decode: int8 query, int8 NZ cache (8, 1, 16, 128, 32), bf16 rope
    (key_rope NZ (8, 1, 4, 128, 16)), block_table (4, 2), dequant scales float32: the query's
    (B, S, N), the key's and value's (1,), query_quant_mode 3."""
    q, qr, dq = {"BSH": (m(4, 1, 64 * 512, dtype=I8), m(4, 1, 64 * 64), m(4, 1, 64, dtype=F32)),
                 "BSND": (m(4, 1, 64, 512, dtype=I8), m(4, 1, 64, 64), m(4, 1, 64, dtype=F32)),
                 "BSND_NBSD": (m(4, 1, 64, 512, dtype=I8), m(4, 1, 64, 64), m(4, 1, 64, dtype=F32)),
                 "TND_NTD": (m(4, 64, 512, dtype=I8), m(4, 64, 64), m(4, 64, dtype=F32))}[layout]
    if layout == "TND_NTD":
        kw = dict(dict(actual_seq_qlen=[1, 2, 3, 4], sparse_mode=3,
                       atten_mask=torch.zeros(2048, 2048, dtype=torch.bool, device="meta")), **kw)
    args = dict(num_query_heads=64, num_key_value_heads=1, input_layout=layout, block_table=table(4, 2),
                block_size=128, actual_seq_kvlen=[256] * 4, query_rope=qr, key_rope=m(8, 1, 4, 128, 16),
                softmax_scale=512 ** -0.5, dequant_scale_query=dq, dequant_scale_key=m(1, dtype=F32),
                dequant_scale_value=m(1, dtype=F32), query_quant_mode=3)
    args.update(kw)
    return ("npu_fused_infer_attention_score_v2", (q, m(8, 1, 16, 128, 32, dtype=I8), m(8, 1, 16, 128, 32, dtype=I8)),
            args)


ACCEPTED = {
    "v2 MLA full quantization, BSH": full(),
    "v2 MLA full quantization, BSND (query scale (B, S, N))": full("BSND"),
    # vllm-ascend mla_v1.py's decode forms (fa_quant_layer): BSND_NBSD with a (B, 1, N) query scale,
    # TND_NTD with an int8 query (T, N, D) and a (T, N) query scale
    "v2 MLA full quantization, BSND_NBSD (vllm-ascend)": full("BSND_NBSD"),
    "v2 MLA full quantization, TND_NTD (vllm-ascend)": full("TND_NTD"),
    "MLA without quantization, bf16 decode": mla(kv=BF),
    "MLA without quantization, TND": mla_tnd(kv=BF),
}

REJECTED = {
    "MLA decode, bf16 query with an int8 cache": (mla(), "antiquant is not supported in MLA"),
    "MLA MTP (Q_S 4), bf16 query with an int8 cache": (mla(s=4), "antiquant is not supported in MLA"),
    "MLA TND, bf16 query with an int8 cache": (mla_tnd(), "antiquant is not supported in MLA"),
    "MLA decode, int8 query and cache, quant_scale2": (mla(q=I8, quant_scale2=m(1, dtype=F32)),
                                                       "PostQuant is not supported in MLA"),
    "MLA decode, int8 query and cache, quant_offset2 without quant_scale2": (
        mla(q=I8, quant_offset2=m(1, dtype=F32)), "dequant offset exist"),
    "v2 MLA decode, int8 query and cache, quant_scale_out": (("npu_fused_infer_attention_score_v2", mla(q=I8)[1],
        dict(num_query_heads=64, num_key_value_heads=1, input_layout="BSH", block_table=table(4, 2), block_size=128,
             actual_seq_kvlen=[256] * 4, query_rope=m(4, 1, 64 * 64), key_rope=m(8, 128, 64),
             softmax_scale=512 ** -0.5, quant_scale_out=m(1, dtype=F32))), "quant_scale_out"),
}

REJECTED.update({
    "MLA int8 query with an ND paged cache": (mla(q=I8), "KV layout must be NZ"),
    "FIA v1 MLA int8 query (no dequant_scale_query keyword)": (("npu_fused_infer_attention_score",
        full()[1], dict(num_heads=64, num_key_value_heads=1, input_layout="BSH", block_table=table(4, 2),
                        block_size=128, actual_seq_lengths_kv=[256] * 4, query_rope=m(4, 1, 64 * 64),
                        key_rope=m(8, 1, 4, 128, 16), scale=512 ** -0.5, key_antiquant_scale=m(1, dtype=F32),
                        value_antiquant_scale=m(1, dtype=F32))), "only npu_fused_infer_attention_score_v2"),
    "v2 full quantization without dequant_scale_query": (full(dequant_scale_query=None), "dequant_scale_query"),
    "v2 full quantization with a key dequant offset": (full(dequant_offset_key=m(1, dtype=F32),
                                                            dequant_offset_value=m(1, dtype=F32)), "dequant_offset_key"),
    "v2 full quantization, query scale (B, N)": (full(dequant_scale_query=m(4, 64, dtype=F32)), "(4, 1, 64)"),
    "v2 full quantization, key scale (1, 1)": (full(dequant_scale_key=m(1, 1, dtype=F32)), "CheckKVQuantParam4FullQuant"),
    "v2 full quantization, query_quant_mode 0": (full(query_quant_mode=0), "query_quant_mode"),
    "v2 full quantization, key_quant_mode 1": (full(key_quant_mode=1, value_quant_mode=1), "key_quant_mode"),
    "v2 full quantization, bf16 key scale": (full(dequant_scale_key=m(1)), "float32"),
    "v2 full quantization, fp16 rope": (full(query_rope=m(4, 1, 64 * 64, dtype=torch.float16)), "bfloat16"),
})

# not the IFA tiling (Q_S 32 > 16: the PFA tiling) or its ATB branch: not these checks
NOT_CHECKED = {
    "MLA prefill (Q_S 32), bf16 query with an int8 cache": mla(s=32),
    "MLA decode with an int8 cache, inner_precise 2 and query lengths (ATB)": mla(
        inner_precise=2, actual_seq_lengths=[1] * 4),
}

(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)
test_outside_the_mirrored_checks_is_not_reported = unchecked_test(NOT_CHECKED)
