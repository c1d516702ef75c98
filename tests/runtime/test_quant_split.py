"""KV int8 antiquant with separate key / value parameters (split mode: key_antiquant_scale,
value_antiquant_scale, their offsets and modes; v2 dequant_scale_key ...), families/fa/quant_in.py,
against the IFA tiling (rules/facts/fa_contracts.toml [fa_contracts.antiquant_split]). Cases named
`utest:<name>` replay attention/fused_infer_attention_score/tests/utest/op_host/
test_fused_infer_attention_score_tiling.cpp with its shapes and dtypes. Meta tensors, collect and
raise mode under patch(), and check_call(), as test_post_quant does."""
import torch
from quant_replay import conformance_tests, passes, raises_kv518, unchecked_test
from test_conformance import _collect

H, BF, F32, I8 = torch.float16, torch.bfloat16, torch.float32, torch.int8


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def utest(dtype=H, **kw):
    """The utest cases' FIA decode: BSH query (4, 1, 10) fp16, 10 heads (D 1), int8 key/value
    (4, 2048, 10), int8 output (quantScale2 5-D), combined antiquant scale/offset also given."""
    kw.setdefault("quant_scale2", m(2, 2, 2, 2, 2, dtype=F32))
    kw.setdefault("antiquant_scale", m(2, dtype=dtype))
    kw.setdefault("antiquant_offset", m(2, dtype=F32))
    return ("npu_fused_infer_attention_score", (m(4, 1, 10, dtype=dtype), m(4, 2048, 10, dtype=I8),
                                                m(4, 2048, 10, dtype=I8)),
            dict(num_heads=10, input_layout="BSH", scale=1.0, **kw))


def kvsep(ks=H, ko=H, vs=F32, vo=F32):
    """case_antiquant_mode_msd_kvSep*: query (4, 1, 128) fp16, 1 head, int8 key/value (4, 16, 128),
    key mode 0 (key scale / offset (1, 128)), value mode 1 (value scale / offset (1, 4, 16)); the
    scale 1/sqrt(D) instead of the case's 1.0 (KV103 is not under test)."""
    return ("npu_fused_infer_attention_score", (m(4, 1, 128), m(4, 16, 128, dtype=I8), m(4, 16, 128, dtype=I8)),
            dict(num_heads=1, input_layout="BSH", scale=128 ** -0.5, key_antiquant_mode=0, value_antiquant_mode=1,
                 antiquant_scale=m(2, dtype=F32), antiquant_offset=m(2, dtype=F32),
                 key_antiquant_scale=m(1, 128, dtype=ks), key_antiquant_offset=m(1, 128, dtype=ko),
                 value_antiquant_scale=m(1, 4, 16, dtype=vs), value_antiquant_offset=m(1, 4, 16, dtype=vo)))


def fa(mode=0, scale=None, offset=None, value_scale=None, value_offset=None, dtype=BF, layout="BNSD", s=1,
       kv=I8, value_mode=None, **kw):
    """FIA v1 BNSD decode (query (2, 8, s, 128), key/value (2, 2, 512, 128): 8 heads, 2 KV heads, B 2,
    KV_S 512), key mode `mode`, the value's mode and parameters the key's unless given."""
    q, k = (m(2, 8, s, 128, dtype=dtype), m(2, 2, 512, 128, dtype=kv)) if layout == "BNSD" else (
        m(2, s, 8 * 128, dtype=dtype), m(2, 512, 2 * 128, dtype=kv))
    kw.setdefault("scale", 0.088)
    args = dict(num_heads=8, num_key_value_heads=2, input_layout=layout, key_antiquant_mode=mode,
                value_antiquant_mode=mode if value_mode is None else value_mode, **kw)
    for name, t in (("key_antiquant_scale", scale), ("key_antiquant_offset", offset),
                    ("value_antiquant_scale", scale if value_scale is None else value_scale),
                    ("value_antiquant_offset", offset if value_offset is None else value_offset)):
        if t is not None:
            args[name] = t
    return ("npu_fused_infer_attention_score", (q, k, k.clone()), args)


def paged(mode, scale, dtype=BF, **kw):
    """FIA v1 paged BSH decode: query (2, 1, 1024), cache (10, 128, 256) int8 (10 blocks of 128,
    2 KV heads of D 128), block_table (2, 4): KV_S 512."""
    kw.setdefault("actual_seq_lengths_kv", [300, 512])
    return ("npu_fused_infer_attention_score", (m(2, 1, 1024, dtype=dtype), m(10, 128, 256, dtype=I8),
                                                m(10, 128, 256, dtype=I8)),
            dict(num_heads=8, num_key_value_heads=2, input_layout="BSH", scale=0.088, block_size=128,
                 block_table=torch.zeros(2, 4, dtype=torch.int32), key_antiquant_mode=mode,
                 value_antiquant_mode=mode, key_antiquant_scale=scale, value_antiquant_scale=scale, **kw))


def fa2(mode=0, scale=None, offset=None, **kw):
    """FIA v2 BSH decode: query (2, 1, 1024) bf16, key/value (2, 512, 256) int8, v2 names."""
    args = dict(num_query_heads=8, num_key_value_heads=2, input_layout="BSH", softmax_scale=0.088,
                key_quant_mode=mode, value_quant_mode=mode, **kw)
    if scale is not None:
        args.update(dequant_scale_key=scale, dequant_scale_value=scale)
    if offset is not None:
        args.update(dequant_offset_key=offset, dequant_offset_value=offset)
    return ("npu_fused_infer_attention_score_v2", (m(2, 1, 1024, dtype=BF), m(2, 512, 256, dtype=I8),
                                                   m(2, 512, 256, dtype=I8)), args)


ACCEPTED = {
    "utest: case_antiquant_mode_msd_kvSep (key 0 / value 1)": kvsep(),
    # the PFA tiling (Q_S 6: not the IFA path): not these checks
    "utest: case_antiquant_mode_msd (Q_S 6, per-token (4, 16))": ("npu_fused_infer_attention_score",
        (m(4, 6, 128, dtype=BF), m(4, 16, 128, dtype=I8), m(4, 16, 128, dtype=I8)),
        dict(num_heads=1, input_layout="BSH", scale=128 ** -0.5, key_antiquant_mode=1, value_antiquant_mode=1,
             key_antiquant_scale=m(4, 16, dtype=F32), value_antiquant_scale=m(4, 16, dtype=F32),
             key_antiquant_offset=m(4, 16, dtype=F32), value_antiquant_offset=m(4, 16, dtype=F32))),
    "per-tensor (1,) of the query's dtype": fa(0, m(1, dtype=BF), m(1, dtype=BF)),
    "per-channel (1, N_kv, 1, D)": fa(0, m(1, 2, 1, 128, dtype=BF), m(1, 2, 1, 128, dtype=BF)),
    "per-channel (1, 1, N_kv, D)": fa(0, m(1, 1, 2, 128, dtype=BF)),
    "per-channel (1, N_kv, D)": fa(0, m(1, 2, 128, dtype=BF)),
    "per-channel (1, N_kv*D), BSH": fa(0, m(1, 256, dtype=BF), layout="BSH"),
    "per-token (1, B, S) float32": fa(1, m(1, 2, 512, dtype=F32), m(1, 2, 512, dtype=F32)),
    "per-token (B, S) float32, S longer than the KV length": fa(1, m(2, 600, dtype=F32)),
    "per-tensor-head (N_kv,) of the query's dtype": fa(2, m(2, dtype=BF), m(2, dtype=BF)),
    "per-token-head (B, N_kv, S) float32": fa(3, m(2, 2, 512, dtype=F32)),
    "key 0 / value 1: value scale of another shape": fa(0, m(1, 256, dtype=BF), value_mode=1,
                                                        value_scale=m(1, 2, 512, dtype=F32), layout="BSH"),
    "mode 4 paged (num_blocks, block_size)": paged(4, m(10, 128, dtype=F32)),
    "mode 5 paged (num_blocks, N_kv, block_size)": paged(5, m(10, 2, 128, dtype=F32)),
    "paged per-token (B, S >= table width * block_size)": paged(1, m(2, 512, dtype=F32)),
    "v2 per-channel (1, N_kv*D) bf16": fa2(0, m(1, 256, dtype=BF), m(1, 256, dtype=BF)),
    "v2 per-token (1, B, S) float32": fa2(1, m(1, 2, 512, dtype=F32)),
    # modes other than the split ones do not matter without key/value scales
    "key/value modes with the combined scale only": fa(3, dtype=H, layout="BSH", antiquant_scale=m(2, 256),
                                                       antiquant_offset=m(2, 256)),
}

REJECTED = {
    "utest: case_value_antiquant_scale (key scale only)": (utest(key_antiquant_scale=m(2, dtype=F32)),
                                                           "value_antiquant_scale"),
    "utest: case_key_antiquant_scale_1 (value scale only)": (utest(value_antiquant_scale=m(2, dtype=F32)),
                                                             "key_antiquant_scale"),
    "utest: case_value_antiquant_offset (key offset only)": (utest(key_antiquant_offset=m(2, dtype=F32)),
                                                             "value_antiquant_offset"),
    "utest: case_key_antiquant_scale_2 (value offset only)": (utest(value_antiquant_offset=m(2, dtype=F32)),
                                                              "key_antiquant_offset"),
    "utest: case_compare_key_value_offset": (utest(key_antiquant_scale=m(2, dtype=F32),
                                                   value_antiquant_scale=m(2, dtype=F32),
                                                   key_antiquant_offset=m(2, 3, dtype=F32),
                                                   value_antiquant_offset=m(2, 4, dtype=F32)), "same shape"),
    "utest: case_compare_key_value_scale": (utest(key_antiquant_scale=m(2, 3, dtype=F32),
                                                  value_antiquant_scale=m(2, 4, dtype=F32),
                                                  key_antiquant_offset=m(2, 3, dtype=F32),
                                                  value_antiquant_offset=m(2, 3, dtype=F32)), "same shape"),
    "utest: case_compare_key_antiquant_mode (1 / 3)": (utest(key_antiquant_mode=1, value_antiquant_mode=3, **{
        name: m(2, 3, dtype=F32) for name in ("key_antiquant_scale", "value_antiquant_scale", "key_antiquant_offset",
                                              "value_antiquant_offset")}), "CheckKvAntiquant4SplitMode"),
    "utest: case_antiquant_mode_1 (per-channel (2, 3))": (utest(**{
        name: m(2, 3, dtype=F32) for name in ("key_antiquant_scale", "value_antiquant_scale", "key_antiquant_offset",
                                              "value_antiquant_offset")}), "CheckKVAntiQuantParaShapeLegal"),
    "utest: case_antiquant_mode_msd_kvSep_0 (float32 key scale)": (kvsep(ks=F32, ko=F32), "the query's dtype"),
    "utest: case_antiquant_mode_msd_kvSep_1 (key offset dtype)": (kvsep(ko=F32), "its scale's dtype"),
    "utest: case_antiquant_mode_msd_kvSep_2 (fp16 value scale)": (kvsep(vs=H, vo=H), "per-token"),
    "utest: case_antiquant_mode_msd_kvSep_3 (value offset dtype)": (kvsep(vo=H), "its scale's dtype"),
    "split parameters on a float cache": (fa(0, m(1, dtype=BF), kv=BF), "antiquant needs an int8 key"),
    "key_rope_antiquant_scale on a float cache": (fa(0, kv=BF, key_rope_antiquant_scale=m(1, dtype=BF)),
                                                  "key_rope_antiquant_scale"),
    "key offset without a key scale": (fa(0, offset=m(1, dtype=BF)), "key's dequant offset exist"),
    "offsets of different dtypes": (fa(0, m(1, dtype=BF), m(1, dtype=BF), value_offset=m(1, dtype=F32)),
                                    "same data type"),
    "offset of another rank than the scale": (fa(0, m(1, 256, dtype=BF), m(256, dtype=BF), layout="BSH"),
                                              "different layouts"),
    "per-tensor (2,): split mode has one tensor per side": (fa(0, m(2, dtype=BF)), "(1,) per-tensor"),
    "per-channel (2, N_kv*D) (the combined form)": (fa(0, m(2, 256, dtype=BF), layout="BSH"), "(1, 256)"),
    "per-channel (1, N_q, D): query heads instead of KV heads": (fa(0, m(1, 8, 128, dtype=BF)), "N_kv = 2"),
    "per-channel scale of another dtype than the query": (fa(0, m(1, 2, 128, dtype=F32)), "bfloat16"),
    "per-token (1, B, S) shorter than the KV length": (fa(1, m(1, 2, 256, dtype=F32)), "S >= 512"),
    "per-token (2, B, S) (the combined form)": (fa(1, m(2, 2, 512, dtype=F32)), "per-token"),
    "per-token bf16 scale": (fa(1, m(1, 2, 512, dtype=BF)), "float32"),
    "per-token offset dtype other than the scale's": (fa(1, m(1, 2, 512, dtype=F32), m(1, 2, 512, dtype=BF)),
                                                      "CheckAntiquantOffsetType"),
    "per-tensor-head (1,)": (fa(2, m(1, dtype=BF)), "per-tensor-head"),
    "per-tensor-head float32 scale with a bf16 query": (fa(2, m(2, dtype=F32)), "illegal datatype"),
    "per-token-head (B, N_q, S)": (fa(3, m(2, 8, 512, dtype=F32)), "per-token-head"),
    "modes 4 / 5 without a block_table": (fa(4, m(10, 128, dtype=F32)), "page attention"),
    "mode 4 (num_blocks, S) instead of (num_blocks, block_size)": (paged(4, m(10, 512, dtype=F32)),
                                                                   "(10, 128)"),
    "mode 5 (num_blocks, N_q, block_size)": (paged(5, m(10, 8, 128, dtype=F32)), "(10, 2, 128)"),
    "paged per-token S shorter than table width * block_size": (paged(1, m(2, 300, dtype=F32)), "S >= 512"),
    "v2 per-channel scale of the combined form": (fa2(0, m(2, 256, dtype=BF)), "dequant_scale_key"),
    "v2 dequant_scale_key without dequant_scale_value": (("npu_fused_infer_attention_score_v2",
        fa2()[1], dict(fa2()[2], dequant_scale_key=m(1, dtype=BF))), "dequant_scale_value"),
}


# not the IFA tiling path (the PFA tiling; an int8 query's full quantization): not these checks
NOT_CHECKED = {
    "prefill (Q_S 16), a shape the decode path rejects": fa(0, m(7, dtype=BF), s=16),
    "int8 query (full quantization)": ("npu_fused_infer_attention_score",
        (m(2, 1, 1024, dtype=I8), m(2, 512, 256, dtype=I8), m(2, 512, 256, dtype=I8)),
        dict(num_heads=8, num_key_value_heads=2, input_layout="BSH", scale=0.088,
             key_antiquant_scale=m(7, dtype=F32), value_antiquant_scale=m(7, dtype=F32))),
}

(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)
test_outside_the_mirrored_checks_is_not_reported = unchecked_test(NOT_CHECKED)


def test_a_cached_verdict_reports_again():
    """The contract is pure (its verdict is cached per call signature): the same rejected call
    raises every time, and an accepted one of another signature still passes."""
    for _ in range(3):
        raises_kv518(*REJECTED["per-token bf16 scale"])
    passes(ACCEPTED["per-token (1, B, S) float32"])


def test_the_atb_branch_is_not_checked():
    """FIA paged decode with an int8 cache, inner_precise 2 and query lengths takes the IFA
    tiling's ATB branch (AtbCheckFlag910), which skips ProcessAntiQuant: a key scale the IFA path
    rejects is not reported there, and is without the query lengths."""
    bad = m(7, dtype=F32)
    (op_name, args, kwargs) = paged(1, bad)
    atb = (op_name, args, dict(kwargs, inner_precise=2, actual_seq_lengths=[1, 1]))
    assert [f for f in _collect(atb) if f.severity == "error" and "antiquant" in f.message] == []
    assert "KV518" in [f.code for f in _collect((op_name, args, dict(kwargs, inner_precise=2)))]


def test_v2_dtype_overrides_are_not_checked():
    """v2's dequant_scale_key_dtype / ..._dtype hand the operator other dtypes than the tensors':
    the bf16 per-token scale rejected above is not reported with them."""
    case = fa2(1, m(1, 2, 512, dtype=BF), dequant_scale_key_dtype=0, dequant_scale_value_dtype=0)
    assert [f for f in _collect(case) if f.severity == "error" and "dequant_scale" in f.message] == []
    assert "KV518" in [f.code for f in _collect(fa2(1, m(1, 2, 512, dtype=BF)))]
