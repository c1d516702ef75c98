"""Post-quantization of the attention output (quant_scale2 / quant_offset2; v2: quant_scale_out /
quant_offset_out), families/fa/quant_out.py, against the operator source (rules/facts/fa_contracts.toml
[fa_contracts.post_quant]): IFA ProcessQuant2Dtype / ProcessQuant2 / CheckQuant2Shape, PFA
CheckPostQuantParams. Cases named `utest:<name>` replay attention/incre_flash_attention/tests/utest/
op_host/test_incre_flash_attention_tiling.cpp with its shapes. Meta tensors, as in test_conformance."""
import torch
from quant_replay import conformance_tests
from test_conformance import _collect

H, BF, F32, I8 = torch.float16, torch.bfloat16, torch.float32, torch.int8


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def ifa(n=8, d=128, dtype=H, kv=H, **kw):
    """Decode, BSH query (4, 1, N*D), cache (4, 512, N*D)."""
    kw.setdefault("scale_value", 0.0625)
    return ("npu_incre_flash_attention", (m(4, 1, n * d, dtype=dtype), m(4, 512, n * d, dtype=kv),
                                          m(4, 512, n * d, dtype=kv)), dict(num_heads=n, input_layout="BSH", **kw))


def utest_ifa(scale):
    """case_quantscale2_*: query (4, 1, 10) BSH, 10 heads (D 1), key/value (4, 2048, 10), int8 output."""
    return ("npu_incre_flash_attention", (m(4, 1, 10), m(4, 2048, 10), m(4, 2048, 10)),
            dict(num_heads=10, input_layout="BSH", scale_value=1.0, quant_scale2=m(*scale, dtype=F32)))


def fa(s=1, n=8, d=128, kv=I8, **kw):
    """FIA v1, BSH, Q_S `s` (1: the IFA tiling path), 2 KV heads."""
    kw.setdefault("scale", 0.0625)
    return ("npu_fused_infer_attention_score", (m(4, s, n * d), m(4, 512, 2 * d, dtype=kv), m(4, 512, 2 * d, dtype=kv)),
            dict(num_heads=n, num_key_value_heads=2, input_layout="BSH", **kw))


def fa2(n=8, d=128, **kw):
    kw.setdefault("softmax_scale", 0.0625)
    return ("npu_fused_infer_attention_score_v2", (m(4, 1, n * d), m(4, 512, 2 * d), m(4, 512, 2 * d)),
            dict(num_query_heads=n, num_key_value_heads=2, input_layout="BSH", **kw))


def pfa(n=8, d=128, dtype=H, **kw):
    kw.setdefault("scale_value", 0.0625)
    return ("npu_prompt_flash_attention", (m(4, 256, n * d, dtype=dtype), m(4, 256, n * d, dtype=dtype),
                                           m(4, 256, n * d, dtype=dtype)), dict(num_heads=n, input_layout="BSH", **kw))


ACCEPTED = {
    "IFA per-tensor [1] float32": ifa(quant_scale2=m(1, dtype=F32)),
    "IFA per-tensor [1, 1, 1, 1] with a [1] offset": ifa(quant_scale2=m(1, 1, 1, 1, dtype=F32),
                                                         quant_offset2=m(1, dtype=F32)),
    # IFA checks scale and offset shapes each on its own (ProcessQuant2 l.1128-1153)
    "IFA per-channel (N, D) scale, (1, N*D) offset": ifa(quant_scale2=m(8, 128, dtype=F32),
                                                         quant_offset2=m(1, 1024, dtype=F32)),
    "IFA per-channel [1, N, 1, D], [1, 1, N, D], (N, 1, D), (N*D)": ifa(quant_scale2=m(1, 8, 1, 128, dtype=F32),
                                                                        quant_offset2=m(1, 1, 8, 128, dtype=F32)),
    "IFA (N, 1, D) and (N*D)": ifa(quant_scale2=m(8, 1, 128, dtype=F32), quant_offset2=m(1024, dtype=F32)),
    "IFA bf16 scale and offset with a bf16 query": ifa(dtype=BF, kv=BF, quant_scale2=m(1, 8, 128, dtype=BF),
                                                       quant_offset2=m(1, 8, 128, dtype=BF)),
    "IFA int8 cache, per-channel (1, 1, N*D)": ifa(kv=I8, antiquant_scale=m(2, 1024), quant_scale2=m(1, 1, 1024, dtype=F32)),
    # CheckQuant2Shape rejects ranks 1-4 only; the operator team's antiquant cases pass a 5-D scale
    "utest: 5-D quant_scale2 (case_antiquantscale_*)": ("npu_incre_flash_attention",
        (m(4, 1, 10), m(4, 2048, 10, dtype=I8), m(4, 2048, 10, dtype=I8)),
        dict(num_heads=10, input_layout="BSH", scale_value=1.0, quant_scale2=m(2, 2, 2, 2, 2, dtype=F32),
             antiquant_scale=m(2, 10))),
    "FIA decode int8 cache, per-channel (1, N*D) scale, [1] offset": fa(antiquant_scale=m(2, 256),
        quant_scale2=m(1, 1024, dtype=F32), quant_offset2=m(1, dtype=F32)),
    # FIA prefill (Q_S > 1) is the PFA tiling's: test_quant_prefill
    "FIA v2 decode (N, 1, D) quant_scale_out": fa2(quant_scale_out=m(8, 1, 128, dtype=F32)),
    "PFA fp16 scale with an fp16 query": pfa(quant_scale2=m(1, dtype=H)),
    "PFA (1, N*D) scale, (N, D) offset (same element count)": pfa(quant_scale2=m(1, 1024, dtype=F32),
                                                                  quant_offset2=m(8, 128, dtype=F32)),
    # CheckPostQuantParams reads nothing without an int8 output
    "PFA offset without a scale": pfa(quant_offset2=m(1, dtype=F32)),
    "PFA bf16 scale with a bf16 query": pfa(dtype=BF, quant_scale2=m(1024, dtype=BF)),
    # the empty-tensor path returns before CheckPostQuantParams
    "PFA empty query, scale of another size": ("npu_prompt_flash_attention", (m(0, 256, 1024), m(0, 256, 1024),
        m(0, 256, 1024)), dict(num_heads=8, input_layout="BSH", scale_value=0.0625, quant_scale2=m(8, dtype=F32))),
}

REJECTED = {
    "utest: case_quantscale2_bsh (4, 1, 10)": (utest_ifa((4, 1, 10)), "CheckQuant2Shape"),
    "utest: case_quantscale2_bnsd-like (4, 1, 1, 10)": (utest_ifa((4, 1, 1, 10)), "CheckQuant2Shape"),
    "utest: case_quantscale2_bh (4, 1)": (utest_ifa((4, 1)), "CheckQuant2Shape"),
    "utest: case_quantscale2_b1 [2]": (utest_ifa((2,)), "CheckQuant2Shape"),
    "IFA offset without a scale": (ifa(quant_offset2=m(1, dtype=F32)), "dequant offset exist"),
    "IFA fp16 scale": (ifa(quant_scale2=m(1, dtype=H)), "bfloat16 or float32"),
    "IFA bf16 scale with an fp16 query": (ifa(quant_scale2=m(1, dtype=BF)), "bf16 only with a bf16 query"),
    "IFA offset dtype other than the scale's": (ifa(quant_scale2=m(1, dtype=F32), quant_offset2=m(1, dtype=BF)),
                                                "are not the same"),
    "IFA (N, D) offset shape wrong": (ifa(quant_scale2=m(1, dtype=F32), quant_offset2=m(128, 8, dtype=F32)),
                                      "[8, 128]"),
    "FIA decode [N, 1, 1, D] scale": (fa(antiquant_scale=m(2, 256), quant_scale2=m(8, 1, 1, 128, dtype=F32)),
                                      "CheckQuant2Shape"),
    "FIA decode offset without a scale": (fa(antiquant_scale=m(2, 256), quant_offset2=m(1, dtype=F32)),
                                          "dequant offset exist"),
    "FIA v2 quant_offset_out without quant_scale_out": (fa2(quant_offset_out=m(1, dtype=F32)), "quant_offset_out"),
    "PFA int8 scale": (pfa(quant_scale2=m(1, dtype=I8)), "CheckPostQuantParams"),
    "PFA empty scale": (pfa(quant_scale2=m(0, dtype=F32)), "empty"),
    "PFA offset dtype other than the scale's": (pfa(quant_scale2=m(1, dtype=F32), quant_offset2=m(1, dtype=H)),
                                                "must be consistent"),
    "PFA bf16 scale with an fp16 query": (pfa(quant_scale2=m(1, dtype=BF)), "only with a bfloat16 query"),
    "PFA fp16 scale with a bf16 query": (pfa(dtype=BF, quant_scale2=m(1, dtype=H)), "only with a float16 query"),
    "PFA offset element count other than the scale's": (pfa(quant_scale2=m(1024, dtype=F32),
                                                            quant_offset2=m(1, dtype=F32)), "1024 elements"),
    # 256 = 8 heads * 32: past the per-channel D check (D % 32), then neither 1 nor N*D elements
    "PFA scale of neither 1 nor N*D elements": (pfa(quant_scale2=m(256, dtype=F32)), "H = N*D = 1024"),
}


(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)


def test_old_tiling_cases_are_not_checked():
    """IFA CheckIfRollBack: an int8 query (INT8_INT8 output) and a non-paged D >= 1024 go to the old
    tiling, whose checks are not in the source: a scale of a shape the new tiling rejects passes."""
    odd = m(4, 1, 10, dtype=F32)
    int8_query = ("npu_fused_infer_attention_score", (m(4, 1, 1024, dtype=I8), m(4, 512, 256, dtype=I8),
                                                      m(4, 512, 256, dtype=I8)), dict(fa()[2], quant_scale2=odd))
    for case in (int8_query, ifa(n=2, d=1024, quant_scale2=odd)):
        assert [f for f in _collect(case) if f.severity == "error" and "quant_scale2" in f.message] == [], case[0]
