"""The prefill path's quantization parameters (the PFA tiling: npu_prompt_flash_attention and FIA
prefill, families/fa/quant_in.py and quant_out.py; rules/facts/fa_contracts.toml
[fa_contracts.prefill_quant], [fa_contracts.post_quant]): an int8 query's BMM factors, none of them
with an fp16 query and an int8 output, FIA prefill's antiquant_mode and query dequant (and FIA
decode's: no query dequant scale with a float query), and the
post-quant scale on FIA prefill with its per-channel limits. Cases named `utest:<name>` replay
attention/prompt_flash_attention/tests/utest/op_host/test_prompt_flash_attention_tiling.cpp (its
PfaCase harness: QuantShapeType ALL_1 / POST_1 give [1] float32 tensors)."""
import torch
from quant_replay import conformance_tests, unchecked_test

H, BF, F32, I8 = torch.float16, torch.bfloat16, torch.float32, torch.int8


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def one(dtype=F32):
    return m(1, dtype=dtype)


def pfa(dtype=H, kv=None, n=40, s=1, d=128, **kw):
    """npu_prompt_flash_attention BNSD: query (1, n, s, d), key/value (1, n, 1000, d)."""
    kv = kv or dtype
    kw.setdefault("scale_value", d ** -0.5)
    return ("npu_prompt_flash_attention", (m(1, n, s, d, dtype=dtype), m(1, n, 1000, d, dtype=kv),
                                           m(1, n, 1000, d, dtype=kv)), dict(num_heads=n, input_layout="BNSD", **kw))


def fa(dtype=H, kv=None, s=256, n=8, d=128, **kw):
    """FIA v1 prefill, BSH: query (2, s, n*d), key/value (2, 512, 2*d), 2 KV heads."""
    kv = kv or dtype
    kw.setdefault("scale", d ** -0.5)
    return ("npu_fused_infer_attention_score", (m(2, s, n * d, dtype=dtype), m(2, 512, 2 * d, dtype=kv),
                                                m(2, 512, 2 * d, dtype=kv)),
            dict(num_heads=n, num_key_value_heads=2, input_layout="BSH", **kw))


def fa2(s=256, **kw):
    kw.setdefault("softmax_scale", 128 ** -0.5)
    return ("npu_fused_infer_attention_score_v2", (m(2, s, 1024, dtype=BF), m(2, 512, 256, dtype=BF),
                                                   m(2, 512, 256, dtype=BF)),
            dict(num_query_heads=8, num_key_value_heads=2, input_layout="BSH", **kw))


FULL = dict(deq_scale1=one(), quant_scale1=one(), deq_scale2=one())
FIA_FULL = dict(dequant_scale1=one(), quant_scale1=one(), dequant_scale2=one())

ACCEPTED = {
    "utest: case_invalid_quant_1 (int8 in, int8 out, every factor [1])": pfa(
        I8, quant_scale2=one(), quant_offset2=one(), **FULL),
    "utest: case_quant_1 (fp16 in, int8 out, [1] scale and offset)": pfa(quant_scale2=one(), quant_offset2=one()),
    "PFA int8 query, fp16 output": pfa(I8, s=256, **FULL),
    "PFA int8 query, per-channel int8 output": pfa(I8, s=256, quant_scale2=m(40, 128, dtype=F32), **FULL),
    "FIA prefill int8 query, int8 output": fa(I8, quant_scale2=one(), **FIA_FULL),
    "FIA prefill per-channel (1, N*D) float32": fa(quant_scale2=m(1, 1024, dtype=F32), quant_offset2=m(1024, dtype=F32)),
    "FIA prefill bf16 per-channel (N, D) bf16": fa(BF, quant_scale2=m(8, 128, dtype=BF)),
    "FIA prefill per-tensor with a softmax LSE": fa(quant_scale2=one(), softmax_lse_flag=True),
    # case_antiquant_mode_msd's form (bf16 query, per-token (B, S) float32) with B 2, S 512
    "FIA prefill int8 cache, key/value modes (the msd path)": fa(BF, kv=I8, key_antiquant_mode=1,
                                                                value_antiquant_mode=1,
                                                                key_antiquant_scale=m(2, 512, dtype=F32),
                                                                value_antiquant_scale=m(2, 512, dtype=F32)),
    "FIA decode, antiquant_mode 1 (the IFA tiling: not CheckDequantParams)": fa(
        kv=I8, s=1, antiquant_mode=1, antiquant_scale=m(2, 2, 512, dtype=F32)),
    "v2 prefill, quant_scale_out (N*D,) float32": fa2(quant_scale_out=m(1024, dtype=F32)),
}

REJECTED = {
    "PFA int8 query without quant_scale1": (pfa(I8, deq_scale1=one(), deq_scale2=one()), "quant_scale1"),
    "PFA int8 query, empty deq_scale2": (pfa(I8, deq_scale1=one(), quant_scale1=one(), deq_scale2=m(0, dtype=F32)),
                                         "empty"),
    "FIA prefill int8 query without dequant_scale2": (fa(I8, dequant_scale1=one(), quant_scale1=one()),
                                                      "dequant_scale2"),
    "PFA fp16 query, int8 output, deq_scale1": (pfa(quant_scale2=one(), deq_scale1=one()), "should be null"),
    "FIA prefill fp16 query, int8 output, quant_scale1": (fa(quant_scale2=one(), quant_scale1=one()), "quant_scale1"),
    "PFA int8 query, fp16 output, quant_offset2": (pfa(I8, quant_offset2=one(), **FULL), "fp16 output"),
    "PFA int8 query, bf16 quant_scale2": (pfa(I8, quant_scale2=one(BF), **FULL), "only with a bfloat16 query"),
    "FIA prefill antiquant_mode 1": (fa(kv=I8, antiquant_mode=1, antiquant_scale=m(2, 2, 512, dtype=F32)),
                                     "antiquant_mode is not supported"),
    "v2 prefill dequant_scale_query without query_rope": (fa2(dequant_scale_query=m(2, 8, 1, dtype=F32)),
                                                          "dequantScaleQuery"),
    "v2 prefill query_quant_mode 3": (fa2(query_quant_mode=3), "query dequant"),
    # decode (the IFA tiling): IFA ProcessQuant
    "v2 decode dequant_scale_query with a bf16 query": (fa2(s=1, dequant_scale_query=m(2, 8, 1, dtype=F32)),
                                                        "query is not int8"),
    # not the IFA tiling path, but the PFA one: CheckPostQuantParams (D per head = 40 / 8 = 5)
    "FIA prefill, scale of another shape (4, 1, 10)": (fa(s=16, quant_scale2=m(4, 1, 10, dtype=F32)),
                                                       "non-32-byte aligned"),
    "FIA prefill per-channel with softmax_lse_flag": (fa(quant_scale2=m(1024, dtype=F32), softmax_lse_flag=True),
                                                      "ring attention"),
    "v2 prefill per-channel with return_softmax_lse": (fa2(quant_scale_out=m(1024, dtype=F32),
                                                           return_softmax_lse=True), "return_softmax_lse"),
    "FIA prefill per-channel with kv_padding_size": (fa(quant_scale2=m(1024, dtype=F32), kv_padding_size=m(1, dtype=torch.int64),
                                                        actual_seq_lengths_kv=[512, 512]), "left padding"),
    "FIA prefill int8 output with D 48": (fa(d=48, quant_scale2=one()), "32 elements aligned"),
    "PFA per-channel with D 48": (pfa(d=48, s=256, quant_scale2=m(40 * 48, dtype=F32)), "non-32-byte aligned"),
    "FIA prefill offset element count other than the scale's": (fa(quant_scale2=m(1024, dtype=F32),
                                                                   quant_offset2=one()), "1024 elements"),
    "FIA prefill fp16 scale with a bf16 query": (fa(BF, quant_scale2=one(H)), "only with a float16 query"),
}

# v2's out_dtype (not the int8 branch), the empty-tensor path: not these checks
NOT_CHECKED = {
    "v2 prefill, out_dtype given (not the int8 branch)": fa2(quant_scale_out=m(7, dtype=F32), out_dtype=1),
    "PFA empty query, factors missing (the empty-tensor path)": ("npu_prompt_flash_attention",
        (m(0, 40, 1, 128, dtype=I8), m(0, 40, 1000, 128, dtype=I8), m(0, 40, 1000, 128, dtype=I8)),
        dict(num_heads=40, input_layout="BNSD", scale_value=0.088)),
}

(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)
test_outside_the_mirrored_checks_is_not_reported = unchecked_test(NOT_CHECKED)
