"""Every attention reference kernel against plain float64 softmax attention with explicit masks
(cases.py), over layouts, sparse modes, masks, GQA, paged caches of every form, MLA ropes and
per-request lengths. fp32: the reference kernels called directly (the FA operators do not take
fp32 queries on the NPU, and the emulation rejects them as the NPU does); fp16/bf16: through the
emulated torch_npu operators, dispatcher, contracts and all. Bounds: 1e-4 (fp32), 2e-2 (bf16/fp16)."""
import math

import pytest
import torch
import torch_npu
from cases import COMPRESSED, Case, build, max_error, per_request_lse, per_request_output
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.runtime.families.fa import reference as fa_ref
from kvlint.runtime.families.fusion import reference as fusion_ref

FP32, LOW = 1e-4, 2e-2

DENSE = [
    Case(layout="BSH"), Case(layout="BSND"), Case(layout="BNSD"),
    Case(layout="NSD", q_lens=[4], kv_lens=[6]),
    Case(layout="BNSD_BSND"), Case(layout="BSH_BNSD"), Case(layout="BSND_NBSD"),
    Case(layout="TND", q_lens=[3, 2], kv_lens=[5, 4]), Case(layout="NTD", q_lens=[3, 2], kv_lens=[5, 4]),
    Case(layout="TND_NTD", q_lens=[2, 3], kv_lens=[4, 6]), Case(layout="NTD_TND", q_lens=[2, 3], kv_lens=[4, 6]),
    # GQA / MHA / MQA
    Case(heads=8, kv_heads=2), Case(heads=4, kv_heads=4), Case(heads=4, kv_heads=1, layout="BSH"),
    # per-request lengths, padding rows
    Case(q_lens=[3, 1], kv_lens=[5, 2]), Case(layout="BSH", q_lens=[2, 4], kv_lens=[7, 3]),
    # sparse modes
    Case(sparse=0, user_mask=True), Case(sparse=0, user_mask=True, pre=2, nxt=0, q_lens=[4, 4], kv_lens=[6, 6]),
    Case(sparse=1, user_mask=True, layout="BSH"),
    Case(sparse=2, q_lens=[4, 4], kv_lens=[6, 6]), Case(sparse=2, q_lens=[5, 5], kv_lens=[3, 3]),
    Case(sparse=3, q_lens=[4, 4], kv_lens=[6, 6]), Case(sparse=3, q_lens=[3, 2], kv_lens=[6, 4]),
    Case(sparse=3, q_lens=[5, 5], kv_lens=[3, 3]),
    Case(sparse=4, pre=3, nxt=1, q_lens=[4, 4], kv_lens=[8, 8]), Case(sparse=4, pre=2, nxt=0, q_lens=[1, 1],
                                                                      kv_lens=[9, 5]),
    Case(sparse=3, layout="TND", q_lens=[3, 4], kv_lens=[5, 4]),
    Case(sparse=4, pre=2, nxt=0, layout="TND", q_lens=[3, 4], kv_lens=[6, 4]),
    # MLA-style rope (D 128 + rope 64), dense
    Case(dim=128, rope_dim=64, q_lens=[2, 2], kv_lens=[5, 5], heads=2, kv_heads=1),
]
PAGED = [
    Case(paged="3d", layout="BSH", q_lens=[1, 1], kv_lens=[130, 40], block_size=16),
    Case(paged="3d", layout="BSND", q_lens=[1, 1], kv_lens=[33, 7], block_size=16),
    Case(paged="3d", layout="BNSD", q_lens=[3, 2], kv_lens=[200, 130], block_size=128, sparse=3),
    Case(paged="4d", layout="BNSD", q_lens=[1, 1], kv_lens=[50, 17], block_size=16, heads=8, kv_heads=2),
    Case(paged="4d", layout="BNSD", q_lens=[1, 1], kv_lens=[60, 9], block_size=16, user_mask=True),
    Case(paged="3d", layout="TND", q_lens=[2, 3], kv_lens=[140, 9], block_size=128, sparse=3),
    Case(paged="4d", layout="TND", q_lens=[1, 2], kv_lens=[170, 20], block_size=128),
    Case(paged="3d", layout="BNSD", q_lens=[1, 1], kv_lens=[40, 12], block_size=16, sparse=4, pre=8, nxt=0),
]
NZ = [
    Case(paged="nz", layout="BSH", q_lens=[1, 1], kv_lens=[150, 20], block_size=128, dim=32, heads=2, kv_heads=1),
    Case(paged="nz", layout="TND", q_lens=[2, 1], kv_lens=[129, 3], block_size=128, dim=32, heads=2, kv_heads=1,
         sparse=3),
]
MLA = [  # absorb form: 512-wide latent, one KV head, rope 64, paged
    Case(paged="3d", layout="BNSD", q_lens=[1, 1], kv_lens=[140, 30], block_size=128, dim=512, rope_dim=64,
         heads=4, kv_heads=1),
    # and contiguous (torch_npu's own MLA example passes no block_table)
    Case(layout="BNSD", q_lens=[1, 1], kv_lens=[48, 48], dim=512, rope_dim=64, heads=4, kv_heads=1,
         pass_lengths=False),
    Case(paged="nz", layout="BSH", q_lens=[1, 1], kv_lens=[20, 129], block_size=128, dim=512, rope_dim=64,
         heads=2, kv_heads=1),
]


def _check(case, out, lse, expected, expected_lse, bound):
    got, dense = per_request_output(out.float(), case)
    assert max_error(got, expected) <= bound, case.name
    if case.mla_absorb:
        assert lse.shape == (1,)  # no LSE in MLA: the placeholder
    else:
        assert max_error(per_request_lse(lse, case), expected_lse) <= max(bound, 1e-4), case.name
    if dense is not None:  # rows past a request's length are zero
        for b, q_len in enumerate(case.q_lens):
            assert not dense[b, :, q_len:].any(), case.name


@pytest.mark.parametrize("case", DENSE + PAGED + NZ + MLA, ids=lambda c: c.name)
def test_fa_reference_fp32(case):
    (q, k, v), kw, expected, expected_lse = build(case)
    out, lse = fa_ref.fused_infer_attention_score(q, k, v, **kw)
    _check(case, out, lse, expected, expected_lse, FP32)




THROUGH_OPERATOR = DENSE + PAGED + MLA


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("case", THROUGH_OPERATOR, ids=lambda c: c.name)
def test_fa_v1_operator_low_precision(case, dtype):
    (q, k, v), kw, expected, expected_lse = build(case, dtype)
    out, lse = torch_npu.npu_fused_infer_attention_score(q, k, v, **kw)
    assert out.dtype == dtype
    _check(case, out, lse, expected, expected_lse, LOW)


@pytest.mark.parametrize("case", [DENSE[2], DENSE[7], DENSE[19], PAGED[0], PAGED[3], MLA[0]], ids=lambda c: c.name)
def test_fa_v2_operator(case):
    (q, k, v), kw, expected, expected_lse = build(case, torch.bfloat16, v2=True)
    out, lse = torch_npu.npu_fused_infer_attention_score_v2(q, k, v, **kw)
    _check(case, out, lse, expected, expected_lse, LOW)


def test_fa_out_overload_writes_the_given_tensors():
    case = DENSE[2]
    (q, k, v), kw, expected, expected_lse = build(case, torch.float16)
    out, lse = torch.empty_like(q), torch.empty(1)
    res = torch.ops.npu.npu_fused_infer_attention_score.out(q, k, v, **kw, workspace=None, attention_out=out,
                                                            softmax_lse=lse)
    assert res[0] is out and res[1] is lse
    _check(case, out, lse, expected, expected_lse, LOW)


def test_lse_placeholder_without_the_flag():
    (q, k, v), kw, _, _ = build(DENSE[2], torch.float16)
    kw.pop("softmax_lse_flag")
    _, lse = torch_npu.npu_fused_infer_attention_score(q, k, v, **kw)
    assert lse.shape == (1,) and not lse.any()


def _ifa_kwargs(kw):
    out = {"num_heads": kw["num_heads"], "scale_value": kw["scale"], "input_layout": kw["input_layout"],
           "num_key_value_heads": kw["num_key_value_heads"], "actual_seq_lengths": kw["actual_seq_lengths_kv"]}
    for name in ("block_table", "block_size", "atten_mask"):
        if name in kw:
            out[name] = kw[name]
    return out


@pytest.mark.parametrize("case", [
    Case(layout="BSH", q_lens=[1, 1], kv_lens=[7, 3]), Case(layout="BNSD", q_lens=[1, 1], kv_lens=[5, 5],
                                                              heads=8, kv_heads=2),
    Case(layout="BSND", q_lens=[1, 1], kv_lens=[6, 2], user_mask=True),
    PAGED[0], PAGED[3],
], ids=lambda c: c.name)
def test_incre_flash_attention(case):
    (q, k, v), kw, expected, _ = build(case, torch.bfloat16)
    out = torch_npu.npu_incre_flash_attention(q, k, v, **_ifa_kwargs(kw))
    got, _ = per_request_output(out.float(), case)
    assert max_error(got, expected) <= LOW


def _pfa_kwargs(kw, case):
    out = {"num_heads": kw["num_heads"], "scale_value": kw["scale"], "input_layout": kw["input_layout"],
           "num_key_value_heads": kw["num_key_value_heads"], "sparse_mode": kw["sparse_mode"],
           "pre_tokens": case.pre, "next_tokens": case.nxt}
    for src, dst in (("actual_seq_lengths", "actual_seq_lengths"), ("actual_seq_lengths_kv", "actual_seq_lengths_kv"),
                     ("atten_mask", "atten_mask")):
        if src in kw:
            out[dst] = kw[src]
    return out


@pytest.mark.parametrize("case", [
    Case(layout="BSH", q_lens=[4, 4], kv_lens=[4, 4]), Case(layout="BNSD", sparse=3, q_lens=[4, 4], kv_lens=[6, 6]),
    Case(layout="BSND", sparse=0, user_mask=True, q_lens=[3, 3], kv_lens=[5, 5]),
    Case(layout="BNSD", sparse=4, pre=2, nxt=0, q_lens=[5, 5], kv_lens=[5, 5], heads=8, kv_heads=2),
    Case(layout="TND", sparse=3, q_lens=[3, 5], kv_lens=[3, 5]),
], ids=lambda c: c.name)
def test_prompt_flash_attention(case):
    (q, k, v), kw, expected, _ = build(case, torch.bfloat16)
    out = torch_npu.npu_prompt_flash_attention(q, k, v, **_pfa_kwargs(kw, case))
    got, _ = per_request_output(out.float(), case)
    assert max_error(got, expected) <= LOW


def test_prompt_flash_attention_next_tokens_default_is_a_causal_band_on_the_mask():
    """PFA's next_tokens defaults to 0: with sparse_mode 0 a (here all-visible) mask is combined
    with the top-left causal band - silently causal."""
    case = Case(layout="BNSD", q_lens=[4, 4], kv_lens=[4, 4], sparse=0)
    (q, k, v), kw, _, _ = build(case, torch.bfloat16)
    mask = torch.zeros(2, 1, 4, 4, dtype=torch.bool)
    out = torch_npu.npu_prompt_flash_attention(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BNSD",
                                               scale_value=kw["scale"], atten_mask=mask)
    causal = Case(layout="BNSD", q_lens=[4, 4], kv_lens=[4, 4], sparse=2)
    _, _, expected, _ = build(causal, torch.bfloat16)
    got, _ = per_request_output(out.float(), case)
    assert max_error(got, expected) <= LOW


# --------------------------------------------------------------------------- npu_fusion_attention
def _fusion_inputs(case, dtype):
    (q, k, v), kw, expected, expected_lse = build(case, dtype)
    layout = case.layout
    args = dict(scale=kw["scale"], sparse_mode=case.sparse)
    if "atten_mask" in kw:
        args["atten_mask"] = kw["atten_mask"]
    if case.pre < 2147483647:
        args["pre_tockens"] = case.pre
    if case.nxt < 2147483647:
        args["next_tockens"] = case.nxt
    if layout == "TND":
        args["actual_seq_qlen"] = kw["actual_seq_lengths"]
        args["actual_seq_kvlen"] = kw["actual_seq_lengths_kv"]
    return (q, k, v), args, expected, expected_lse


FUSION = [
    Case(layout="BSH", q_lens=[3, 3], kv_lens=[5, 5]), Case(layout="BSND", q_lens=[3, 3], kv_lens=[5, 5]),
    Case(layout="BNSD", q_lens=[4, 4], kv_lens=[4, 4], sparse=2), Case(layout="BNSD", sparse=3, q_lens=[3, 3],
                                                                         kv_lens=[6, 6], heads=8, kv_heads=2),
    Case(layout="BSH", sparse=0, user_mask=True, q_lens=[3, 3], kv_lens=[5, 5]),
    Case(layout="BNSD", sparse=4, pre=2, nxt=1, q_lens=[5, 5], kv_lens=[7, 7]),
    Case(layout="TND", sparse=3, q_lens=[3, 5], kv_lens=[4, 5]),
]


def _check_fusion(case, res, expected, expected_lse, bound):
    out, smax, ssum, sout, seed, offset, numels = res
    got, _ = per_request_output(out.float(), case)
    assert max_error(got, expected) <= bound, case.name
    assert smax.shape[-1] == 8 and ssum.shape[-1] == 8 and sout.numel() == 0 and numels == 0
    lse = smax[..., :1] + torch.log(ssum[..., :1])
    assert max_error(per_request_lse(lse, case), expected_lse) <= max(bound, 1e-4), case.name


@pytest.mark.parametrize("case", FUSION, ids=lambda c: c.name)
def test_fusion_reference_fp32(case):
    (q, k, v), args, expected, expected_lse = _fusion_inputs(case, torch.float32)
    res = fusion_ref.fusion_attention(q, k, v, case.heads, case.layout, **args)
    _check_fusion(case, res, expected, expected_lse, FP32)


# Through the operator without GQA: the guard's npu_fusion_attention contracts on main compare
# the key's heads with head_num (GQA rejected; the real operator accepts N1 % N2 == 0).
# Through the operator without GQA: the guard's npu_fusion_attention contract compares the key's
# heads with head_num (KV112), while the operator takes N1 % N2 == 0 (GQA); the reference's GQA is
# covered in fp32 above.
@pytest.mark.parametrize("case", [Case(**{**c.__dict__, "kv_heads": c.heads}) for c in FUSION], ids=lambda c: c.name)
def test_fusion_operator_bf16(case):
    (q, k, v), args, expected, expected_lse = _fusion_inputs(case, torch.bfloat16)
    res = torch_npu.npu_fusion_attention(q, k, v, case.heads, case.layout, **args)
    _check_fusion(case, res, expected, expected_lse, LOW)


def test_fusion_sbh_layout():
    case = Case(layout="BSH", q_lens=[3, 3], kv_lens=[5, 5])
    (q, k, v), args, expected, _ = _fusion_inputs(case, torch.float32)
    sbh = [t.transpose(0, 1).contiguous() for t in (q, k, v)]
    out = fusion_ref.fusion_attention(*sbh, case.heads, "SBH", **args)[0]
    got, _ = per_request_output(out.transpose(0, 1), case)
    assert max_error(got, expected) <= FP32


def test_fusion_causal_mode_without_mask_is_full_attention():
    """npu_fusion_attention without atten_mask ignores sparse_mode: sparse_mode=3 attends to the
    future, silently (flash_attention_score doc, constraints)."""
    full = Case(layout="BNSD", q_lens=[4, 4], kv_lens=[4, 4], sparse=0, kv_heads=4)
    (q, k, v), args, expected, _ = _fusion_inputs(full, torch.bfloat16)
    out = torch_npu.npu_fusion_attention(q, k, v, 4, "BNSD", scale=args["scale"], sparse_mode=3)[0]
    got, _ = per_request_output(out.float(), full)
    assert max_error(got, expected) <= LOW


# --------------------------------------------------------------------------- SDPA as the truth
@pytest.mark.parametrize("causal", [False, True])
def test_against_scaled_dot_product_attention(causal):
    """sparse_mode 2 (left-up causal) is SDPA's is_causal; sparse_mode 0 without mask is plain SDPA."""
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 8, 6, 32), torch.randn(2, 2, 9, 32), torch.randn(2, 2, 9, 32)
    out, _ = fa_ref.fused_infer_attention_score(
        q, k, v, num_heads=8, num_key_value_heads=2, scale=32 ** -0.5, input_layout="BNSD",
        sparse_mode=2 if causal else 0, atten_mask=COMPRESSED if causal else None)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    assert float((out - want).abs().max()) <= FP32


def test_decode_step_bf16_against_sdpa():
    torch.manual_seed(2)
    q = torch.randn(3, 8, 1, 64).bfloat16()
    k, v = torch.randn(3, 2, 40, 64).bfloat16(), torch.randn(3, 2, 40, 64).bfloat16()
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, num_key_value_heads=2,
                                                       scale=0.125, input_layout="BNSD")
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
    assert float((out.float() - want).abs().max()) <= LOW


# --------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None)
@given(layout=st.sampled_from(["BNSD", "BSH", "BSND", "TND"]), batch=st.integers(1, 3),
       kv_heads=st.sampled_from([1, 2]), group=st.sampled_from([1, 2, 4]),
       sparse=st.sampled_from([0, 2, 3, 4]), data=st.data())
def test_property_dense_attention(layout, batch, kv_heads, group, sparse, data):
    tnd = layout == "TND"
    if tnd and sparse == 2:
        sparse = 3
    q_lens = data.draw(st.lists(st.integers(1, 6), min_size=batch, max_size=batch))
    kv_lens = data.draw(st.lists(st.integers(1, 8), min_size=batch, max_size=batch))
    if not tnd:  # dense layouts: one tensor length; actual lengths may be shorter
        q_lens = q_lens if data.draw(st.booleans()) else [max(q_lens)] * batch
    pre, nxt = (data.draw(st.integers(0, 6)), data.draw(st.integers(0, 3))) if sparse == 4 else (2147483647,) * 2
    case = Case(layout=layout, q_lens=q_lens, kv_lens=kv_lens, heads=kv_heads * group, kv_heads=kv_heads,
                sparse=sparse, pre=pre, nxt=nxt, seed=data.draw(st.integers(0, 1000)))
    (q, k, v), kw, expected, expected_lse = build(case)
    out, lse = fa_ref.fused_infer_attention_score(q, k, v, **kw)
    _check(case, out, lse, expected, expected_lse, FP32)


def test_default_scale_is_one():
    """scale left at its default 1.0: the scores are not scaled (what KV103 warns about)."""
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 2, 3, 16).half() for _ in range(3))
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=2, input_layout="BNSD")
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=1.0)
    assert float((out.float() - want).abs().max()) <= LOW
    assert math.isclose(1.0, 1.0)


def test_fusion_attention_v2_and_v3():
    """v2 spells pre_tokens/next_tokens out; v3 takes the TND lengths as tensors and returns seed
    and offset as tensors; v3.out writes the given tensors."""
    case = Case(layout="TND", sparse=4, pre=2, nxt=0, q_lens=[3, 5], kv_lens=[4, 5], kv_heads=4)
    (q, k, v), args, expected, _ = _fusion_inputs(case, torch.bfloat16)
    v2_args = {k: v for k, v in args.items() if not k.endswith("tockens")}
    v2_args.update(pre_tokens=args["pre_tockens"], next_tokens=args["next_tockens"])
    out2 = torch_npu.npu_fusion_attention_v2(q, k, v, 4, "TND", **v2_args)[0]
    lens = {name: torch.tensor(args[name]) for name in ("actual_seq_qlen", "actual_seq_kvlen")}
    res3 = torch_npu.npu_fusion_attention_v3(q, k, v, 4, "TND", **dict(args, **lens))
    assert len(res3) == 6 and all(isinstance(t, torch.Tensor) for t in res3)
    targets = [torch.empty(0, dtype=t.dtype) for t in res3]
    res_out = torch.ops.npu.npu_fusion_attention_v3.out(
        q, k, v, 4, "TND", **dict(args, **lens), attention_score=targets[0], softmax_max=targets[1],
        softmax_sum=targets[2], softmax_out=targets[3], seed=targets[4], offset=targets[5])
    assert res_out[0] is targets[0]
    for out in (out2, res3[0], targets[0]):
        got, _ = per_request_output(out.float(), case)
        assert max_error(got, expected) <= LOW
