"""npu_fusion_attention (flash_attention_score) conformance: the contracts of
kvlint/runtime/families/fusion/contracts.py against the operator source (rules/facts/fusion.toml
cites each check). Every call the operator accepts passes under patch(); every loud reject
raises with its code. Cases named `utest:<name>` replay the operator team's unit tests
(attention/flash_attention_score/tests/utest/ts_fa/ts_fa_tc_pse.cpp; their length lists are
per-request, accumulated by tests/comm/src/fa_param.cpp l.117-119: the ends here are the sums).

Tensors are on the meta device (shapes and dtypes only); the stand-in operator may then fail,
which the cases ignore. Cases marked `fa:` are calls the operator accepts that the FA-family
contracts (families/fa/contracts.py) used to reject: they now leave these to the fusion
contracts."""
import pytest
import torch
from test_conformance import _collect, _op  # the same replay helpers (meta tensors, collect mode)

import kvlint

H, BF, F32 = torch.float16, torch.bfloat16, torch.float32
B8 = torch.bool


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def fusion(q, k, v, head_num, layout, op="npu_fusion_attention", **kw):
    kw.setdefault("scale", 0.125)
    return (op, (q, k, v, head_num, layout), kw)


def v2(q, k, v, head_num, layout, **kw):
    return fusion(q, k, v, head_num, layout, op="npu_fusion_attention_v2", **kw)


def bnsd(op="npu_fusion_attention", b=2, n=8, n2=8, s1=8, s2=8, d=64, dtype=H, **kw):
    return fusion(m(b, n, s1, d, dtype=dtype), m(b, n2, s2, d, dtype=dtype), m(b, n2, s2, d, dtype=dtype), n,
                  "BNSD", op=op, **kw)


def bsh(op="npu_fusion_attention", b=2, n=8, n2=2, s1=5, s2=7, d=64, **kw):
    return fusion(m(b, s1, n * d), m(b, s2, n2 * d), m(b, s2, n2 * d), n, "BSH", op=op, **kw)


def tnd(op="npu_fusion_attention", q_ends=(3, 8), kv_ends=(3, 8), n=8, n2=2, d=64, t1=None, t2=None,
        dtype=H, **kw):
    kw.setdefault("actual_seq_qlen", list(q_ends))
    kw.setdefault("actual_seq_kvlen", list(kv_ends))
    t1 = q_ends[-1] if t1 is None else t1
    t2 = kv_ends[-1] if t2 is None else t2
    return fusion(m(t1, n, d, dtype=dtype), m(t2, n2, d, dtype=dtype), m(t2, n2, d, dtype=dtype), n, "TND", op=op,
                  **kw)


def rope(dtype=BF, **kw):
    """A valid npu_fusion_attention_v2 TND call with query_rope/key_rope (bf16, a mask)."""
    args = dict(query_rope=m(8, 8, 64, dtype=BF), key_rope=m(8, 2, 64, dtype=BF), atten_mask=compressed(),
                sparse_mode=3)
    args.update(kw)
    return tnd(op="npu_fusion_attention_v2", dtype=dtype, d=128, **args)


def compressed(*lead):
    return m(*lead, 2048, 2048, dtype=B8)


ACCEPTED = {
    "BSH GQA, no mask": bsh(),
    "SBH GQA": fusion(m(5, 2, 8 * 64), m(7, 2, 2 * 64), m(7, 2, 2 * 64), 8, "SBH"),
    "BNSD (B,1,S1,S2) bool mask, sparse_mode 0": bnsd(atten_mask=m(2, 1, 8, 8, dtype=B8)),
    "BNSD (B, N1, S1, S2) mask": bnsd(atten_mask=m(2, 8, 8, 8, dtype=B8)),
    "BNSD (S1,S2) uint8 mask, causal window (pre >= S1, next 0)": bnsd(
        atten_mask=m(8, 8, dtype=torch.uint8), pre_tockens=8, next_tockens=0),
    "BNSD band, pre 4 next 0 (sparse_mode 4)": bnsd(atten_mask=compressed(), sparse_mode=4, pre_tockens=4,
                                                     next_tockens=0),
    "BNSD band with S1 != S2 counted from the bottom-right": bnsd(
        s1=4, s2=16, atten_mask=compressed(), sparse_mode=4, pre_tockens=2, next_tockens=0),
    "BNSD sparse_mode 0 window pre -2 next 4 (SparseBandModeCheck)": bnsd(
        atten_mask=m(8, 8, dtype=B8), pre_tockens=-2, next_tockens=4),
    "BNSD sparse_mode 3 compressed mask, window ignored": bnsd(
        atten_mask=compressed(), sparse_mode=3, pre_tockens=-5, next_tockens=-5),
    "BSH sparse_mode 7 without a mask takes no effect": bsh(sparse_mode=7),
    "keep_prob 0.9 with a uint8 dropout_mask of B*N1*S1*S2/8 bytes": bnsd(
        keep_prob=0.9, dropout_mask=m(2 * 8 * 8 * 8 // 8, dtype=torch.uint8)),
    "pse (B, N1, S1, S2) in the query dtype": bnsd(pse=m(2, 8, 8, 8)),
    "pse (1, N1, 1, S2)": bnsd(pse=m(1, 8, 1, 8)),
    "pse (B, N1, 1024, S2) with S1 >= 1024": bnsd(s1=2048, s2=2048, pse=m(2, 8, 1024, 2048)),
    "TND causal, compressed mask": tnd(atten_mask=compressed(), sparse_mode=3),
    "TND without a mask": tnd(),
    "TND pse N1 * sum(S2) rows": tnd(pse=m(8 * 8, 8)),
    "TND pse N1 * sum(S1*S2) flattened": tnd(pse=m(8 * (9 + 25))),
    "_v2 float32 BSND": v2(m(2, 5, 8, 64, dtype=F32), m(2, 7, 2, 64, dtype=F32), m(2, 7, 2, 64, dtype=F32), 8,
                           "BSND"),
    "_v2 lower-case layout (upper-cased by op-plugin)": v2(m(2, 5, 8, 64), m(2, 7, 2, 64), m(2, 7, 2, 64), 8, "bsnd"),
    "_v2 key/value head dims 192/128 (kD >= vD)": v2(m(2, 5, 8, 192), m(2, 7, 2, 192), m(2, 7, 2, 128), 8, "BSND"),
    "_v2 pse_type 2 with (B, N1) float32 slopes": v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD",
                                                     pse=m(2, 8, dtype=F32), pse_type=2),
    "_v2 pse_type 3 with (N1,) slopes": v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD",
                                           pse=m(8, dtype=F32), pse_type=3),
    "_v2 pse_type 0 with a pse": v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD",
                                    pse=m(2, 8, 8, 8), pse_type=0),
    "utest:Fa_Pse_Tc_000 (TND, sparse_mode 8, pse_type 2 slopes (B, N1))": tnd(
        op="npu_fusion_attention_v2", q_ends=(4, 12, 28), kv_ends=(4, 12, 28), n=1, n2=1, d=32,
        pse=m(3, 1, dtype=F32), pse_type=2, atten_mask=compressed(), sparse_mode=8, pre_tokens=65535,
        next_tokens=0),
    "_v2 TND sparse_mode 7, pre covers the last request": tnd(
        op="npu_fusion_attention_v2", q_ends=(2, 6), kv_ends=(4, 10), atten_mask=compressed(), sparse_mode=7,
        pre_tokens=6, next_tokens=0),
    "_v2 TND (sum S1, sum S2) mask (ATTEN_1_1_1_T_T)": tnd(op="npu_fusion_attention_v2", atten_mask=m(8, 8, dtype=B8)),
    "sparse_mode 6 with the (3072, 2048) mask and a prefix per request": bnsd(
        sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8), prefix=[8, 4]),
    "sparse_mode 5 with a prefix list and a (B, 1, S1, S2) mask": bnsd(
        sparse_mode=5, atten_mask=m(2, 1, 8, 8, dtype=B8), prefix=[8, 4]),
    "sparse_mode 5 with an out-of-range prefix falls back to the full mask": bnsd(
        sparse_mode=5, atten_mask=m(8, 8, dtype=B8), prefix=[8, 99]),
    "_v2 TND bf16 with query_rope/key_rope and a mask": rope(),
    "_v3 TND with host length tensors": tnd(
        op="npu_fusion_attention_v3", actual_seq_qlen=torch.tensor([3, 8]), actual_seq_kvlen=torch.tensor([3, 8])),
}

# Accepted by the operator, rejected by a FA-family contract (families/fa/contracts.py).
FA_FALSE_REJECTS = {
    "fa: float32 npu_fusion_attention (fa dtypes: query fp16/bf16/int8)": bnsd(dtype=F32),
    "fa: TND sparse_mode 8 with a mask (fa mask: KV212 TND modes 3/4)": tnd(
        q_ends=(4, 8, 16), kv_ends=(4, 8, 16), atten_mask=compressed(), sparse_mode=8, pre_tockens=65535,
        next_tockens=0),
    "fa: TND sparse_mode 0 with a (max S1, max S2) mask (fa mask: KV212)": tnd(atten_mask=m(5, 5, dtype=B8)),
    "fa: a transposed (non-contiguous) query (aclnn Contiguous l.536: made contiguous)": fusion(
        m(2, 8, 8, 64).transpose(1, 2), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BSND"),
    "fa: TND tokens after the last offset (l.1180: T >= sum)": tnd(t1=10, t2=10),
}

REJECTED = {
    # AnalyzeAttrs l.1030-1031
    "keep_prob 0": (bnsd(keep_prob=0.0), "KV116", "(0, 1]"),
    "keep_prob 1.5": (bnsd(keep_prob=1.5), "KV116", "keep_prob"),
    # AnalyzeDtype l.977, aclnn InputDtypeCheck l.397
    "int8 query": (bnsd(dtype=torch.int8), "KV115", "float16 or bfloat16 or float32"),
    "value dtype not the query's": (
        fusion(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64, dtype=BF), 8, "BNSD"), "KV115", "like the query"),
    "_v2 key dtype not the query's": (
        v2(m(2, 8, 8, 64), m(2, 8, 8, 64, dtype=BF), m(2, 8, 8, 64, dtype=BF), 8, "BNSD"), "KV115", "like the query"),
    # aclnn AnalysisInput l.441
    "head dim 1024": (bnsd(d=1024), "KV116", "(0, 768]"),
    # AnalyzeOptionalInput l.1500-1504
    "int8 atten_mask": (bnsd(atten_mask=m(8, 8, dtype=torch.int8)), "KV205", "bool or uint8"),
    # SparseModeProcess l.768 / VarLenSparseModeProcess l.4098
    "sparse_mode 7 with a mask outside TND": (bsh(sparse_mode=7, atten_mask=compressed()), "KV213", "need TND"),
    "_v2 TND sparse_mode 5 with a mask": (
        tnd(op="npu_fusion_attention_v2", sparse_mode=5, atten_mask=m(8, 8, dtype=B8)), "KV213", "TND"),
    # AnalyzeOptionalInput l.1564-1577
    "_v2 TND sparse_mode 7 with a full mask": (
        tnd(op="npu_fusion_attention_v2", sparse_mode=7, atten_mask=m(5, 5, dtype=B8), pre_tokens=8,
            next_tokens=0), "KV206", "(2048, 2048)"),
    "sparse_mode 6 needs the (3072, 2048) prefix mask": (
        bnsd(sparse_mode=6, atten_mask=compressed(), prefix=[8, 8]), "KV206", "(3072, 2048)"),
    # AnalyzeOptionalInput l.1511-1560: exact mask forms
    "mask larger than (S1, S2) with sparse_mode 0": (bnsd(atten_mask=m(16, 16, dtype=B8)), "KV211", "(8, 8)"),
    "3-D mask (B, S1, S2)": (bnsd(atten_mask=m(2, 8, 8, dtype=B8)), "KV211", "a 2-D or 4-D mask"),
    "4-D compressed mask with S 8": (bnsd(atten_mask=compressed(1, 1), sparse_mode=3), "KV206", "2-D"),
    "_v2 TND mask neither (max S1, max S2) nor (sum S1, sum S2)": (
        tnd(op="npu_fusion_attention_v2", atten_mask=m(6, 6, dtype=B8)), "KV211", "(5, 5)"),
    # GetPrefixNList l.1316-1363, VarLenGetPrefixNList l.4038-4095
    "sparse_mode 6 without a prefix": (
        bnsd(sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8)), "KV117", "no prefix list"),
    # SparseModeProcess l.782-787
    "sparse_mode 5 with a prefix list and a 2-D mask (B 2)": (
        bnsd(sparse_mode=5, atten_mask=m(8, 8, dtype=B8), prefix=[8, 4]), "KV211", "sparse_mode=5 with a prefix"),
    "sparse_mode 6 with one prefix for two requests": (
        bnsd(sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8), prefix=[8]), "KV117", "1 prefix entries"),
    "sparse_mode 6 with a prefix past S2": (
        bnsd(sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8), prefix=[8, 9]), "KV117", "prefix[1] = 9"),
    "_v2 TND sparse_mode 6, prefix below S2 - S1": (
        tnd(op="npu_fusion_attention_v2", q_ends=(2, 6), kv_ends=(8, 12), sparse_mode=6,
            atten_mask=m(3072, 2048, dtype=B8), prefix=[5, 4]), "KV117", "prefix[0] = 5 outside [6, 8]"),
    # Analyze3DimLayout l.1174-1186
    "TND length lists of different lengths": (tnd(kv_ends=(8,)), "KV315", "one per request"),
    "_v2 TND last offset past the tokens": (
        tnd(op="npu_fusion_attention_v2", q_ends=(3, 12), t1=8), "KV315", "<= the token count 8"),
    "_v2 TND per-request (not cumulative) lengths": (
        tnd(op="npu_fusion_attention_v2", q_ends=(5, 3), t1=8), "KV315", "cumulative"),
    "_v2 TND without actual_seq_kvlen": (
        tnd(op="npu_fusion_attention_v2", actual_seq_kvlen=None), "KV315", "mandatory"),
    "TND last offset past the tokens": (tnd(q_ends=(3, 12), t1=8), "KV315", "<= the token count 8"),
    "TND per-request (not cumulative) lengths": (tnd(q_ends=(5, 3), t1=8), "KV315", "cumulative"),
    "TND without actual_seq_kvlen": (tnd(actual_seq_kvlen=None), "KV315", "mandatory"),
    # SparseBandModeCheck l.700-764
    "sparse_mode 0 window with both tokens negative": (
        bnsd(atten_mask=m(8, 8, dtype=B8), pre_tockens=-1, next_tockens=-1), "KV117", "no key to attend to"),
    "band pre -10 next 5 with S2 8": (
        bnsd(atten_mask=compressed(), sparse_mode=4, pre_tockens=-10, next_tockens=5), "KV117", "S2=8"),
    "sparse_mode 0 next -3 beyond pre 0": (
        bnsd(atten_mask=m(8, 8, dtype=B8), pre_tockens=0, next_tockens=-3), "KV117", "pre_tockens=0"),
    # varlen CheckPretokenAndNexttoken l.3900-3993
    "TND right-down causal with a request S1 > S2": (
        tnd(q_ends=(4, 8), kv_ends=(2, 8), atten_mask=compressed(), sparse_mode=3), "KV117", "S1=4 > S2=2"),
    "_v2 TND sparse_mode 7 with next_tokens > 0": (
        tnd(op="npu_fusion_attention_v2", q_ends=(2, 6), kv_ends=(4, 10), atten_mask=compressed(), sparse_mode=7,
            pre_tokens=8, next_tokens=1), "KV117", "sparse_mode 7"),
    "_v2 TND band with pre_tokens < 0": (
        tnd(op="npu_fusion_attention_v2", atten_mask=compressed(), sparse_mode=4, pre_tokens=-1, next_tokens=4),
        "KV117", "pre_tokens < 0"),
    "_v2 TND sparse_mode 8, pre_tokens short of the first request": (
        tnd(op="npu_fusion_attention_v2", q_ends=(4, 8), kv_ends=(6, 12), atten_mask=compressed(), sparse_mode=8,
            pre_tokens=2, next_tokens=2), "KV117", "first request"),
    "_v2 TND sparse_mode 0 with next_tokens < 0": (
        tnd(op="npu_fusion_attention_v2", atten_mask=m(5, 5, dtype=B8), pre_tokens=2, next_tokens=-1), "KV117",
        "next_tokens < 0"),
    # AnalyzeOptionalInput l.1414-1488, aclnn InputDtypeCheck l.403-424, AnalyzeAttrs l.1063
    "pse 3-D": (bnsd(pse=m(8, 8, 8)), "KV116", "(1|2, 8, 8, 8)"),
    "pse with the wrong head count": (bnsd(pse=m(2, 4, 8, 8)), "KV116", "pse"),
    "pse (B, N1, 1024, S2) with S1 < 1024": (bnsd(pse=m(2, 8, 1024, 8)), "KV116", "pse"),
    "pse float32 with a float16 query": (bnsd(pse=m(2, 8, 8, 8, dtype=F32)), "KV116", "float16 like the query"),
    "TND pse with neither N1*sum(S2) nor N1*sum(S1*S2) rows": (tnd(pse=m(7, 8)), "KV116", "N1 * sum(S2) = 64"),
    "_v2 pse_type 4": (
        v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD", pse=m(2, 8), pse_type=4), "KV116",
        "[0, 1, 2, 3]"),
    "_v2 pse_type 2 without a pse": (
        v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD", pse_type=2), "KV116", "a tensor"),
    "_v2 pse_type 2 with a 4-D pse": (
        v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD", pse=m(2, 8, 8, 8, dtype=F32), pse_type=2),
        "KV116", "slopes"),
    "_v2 pse_type 3 with float16 slopes": (
        v2(m(2, 8, 8, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD", pse=m(2, 8), pse_type=3), "KV116", "float32"),
    # SetPseAlibiParams (base l.835-853, l.3305-3330, l.3582-3607, varlen l.3748, l.3780-3785)
    "_v2 inner pse (pse_type 2) with S1 != S2": (
        v2(m(2, 8, 4, 64), m(2, 8, 8, 64), m(2, 8, 8, 64), 8, "BNSD", pse=m(2, 8, dtype=F32), pse_type=2), "KV116",
        "S1 == S2"),
    "utest:Fa_Pse_Tc_002 (TND, sparse_mode 7, pse_type 2 slopes)": (
        tnd(op="npu_fusion_attention_v2", q_ends=(1, 17, 49), kv_ends=(1, 17, 49), n=1, n2=1, d=24,
            pse=m(3, 1, dtype=F32), pse_type=2, atten_mask=compressed(), sparse_mode=7, pre_tokens=65535,
            next_tokens=0), "KV116", "sparse_mode=7"),
    "alibi (1024, S2) pse with S1 2048 != S2 4096": (
        bnsd(s1=2048, s2=4096, pse=m(1, 8, 1024, 4096)), "KV116", "S1 == S2"),
    "TND alibi (1024, S2) pse with unequal request lengths": (
        tnd(q_ends=(3, 8), kv_ends=(4, 8), pse=m(1, 8, 1024, 4)), "KV116", "per-request S1 == S2"),
    # aclnn isSupportMultiInput l.710-768 (npu_fusion_attention_v2 with rope)
    "_v2 query_rope without key_rope": (
        rope(key_rope=None), "KV116", "passed together with query_rope"),
    "_v2 rope outside TND": (
        v2(m(2, 5, 8, 128, dtype=BF), m(2, 7, 2, 128, dtype=BF), m(2, 7, 2, 128, dtype=BF), 8, "BSND",
           query_rope=m(2, 5, 8, 64, dtype=BF), key_rope=m(2, 7, 2, 64, dtype=BF), atten_mask=m(5, 7, dtype=B8)),
        "KV116", "outside input_layout 'TND'"),
    "_v2 rope wider than the query's head dim": (
        rope(query_rope=m(8, 8, 192, dtype=BF)), "KV116", "Dr <= the query's head dim 128"),
    "_v2 rope with float16": (
        rope(dtype=H, query_rope=m(8, 8, 64), key_rope=m(8, 2, 64)), "KV116", "bfloat16"),
    "_v2 rope without a mask": (rope(atten_mask=None, sparse_mode=0), "KV116", "a mask"),
    "_v2 rope with sparse_mode 6": (
        rope(sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8), prefix=[3, 5]), "KV116", "not 6"),
    "_v2 rope with a pse": (rope(pse=m(64, 8, dtype=BF)), "KV116", "pse"),
    "_v2 rope with keep_prob 0.9": (rope(keep_prob=0.9), "KV116", "1 with query_rope"),
    # AnalyzeOptionalInput l.1581-1611
    "dropout_mask float with keep_prob 0.9": (
        bnsd(keep_prob=0.9, dropout_mask=m(128, dtype=F32)), "KV116", "uint8"),
    "dropout_mask one byte short": (
        bnsd(keep_prob=0.9, dropout_mask=m(127, dtype=torch.uint8)), "KV116", "at least 128"),
    # _v2/_v3 shape checks (the FA family runs these for npu_fusion_attention only)
    "_v2 FIA-only layout": (v2(m(2, 8, 5, 64), m(2, 8, 7, 64), m(2, 8, 7, 64), 8, "BNSD_BSND"), "KV110", "SBH"),
    "_v2 query rank not the layout's": (v2(m(2, 5, 512), m(2, 7, 512), m(2, 7, 512), 8, "BSND"), "KV110", "4-D"),
    "_v2 head_num not the query's N": (v2(m(2, 5, 8, 64), m(2, 7, 2, 64), m(2, 7, 2, 64), 4, "BSND"), "KV111",
                                       "head count 8"),
    "_v2 BSH hidden not divisible by head_num": (v2(m(2, 5, 500), m(2, 7, 500), m(2, 7, 500), 8, "BSH"), "KV111",
                                                 "divisor"),
    "_v3 N1 % N2 != 0": (fusion(m(2, 5, 8 * 64), m(2, 7, 3 * 64), m(2, 7, 3 * 64), 8, "BSH",
                                op="npu_fusion_attention_v3"), "KV112", "dividing head_num=8"),
    "_v2 value head dim > key's": (v2(m(2, 5, 8, 64), m(2, 7, 2, 64), m(2, 7, 2, 128), 8, "BSND"), "KV113",
                                   "<= the key's"),
    "_v2 key batch not the query's": (v2(m(2, 5, 8, 64), m(3, 7, 2, 64), m(3, 7, 2, 64), 8, "BSND"), "KV113",
                                      "batch 2"),
    "_v2 key head dim not the query's (TND)": (
        v2(m(8, 8, 64), m(8, 2, 32), m(8, 2, 32), 8, "TND", actual_seq_qlen=[3, 8], actual_seq_kvlen=[3, 8]),
        "KV113", "head dim 64"),
}


@pytest.mark.parametrize("name", sorted(FA_FALSE_REJECTS))
def test_accepted_by_the_operator_that_fa_rules_used_to_reject(name):
    findings = [f for f in _collect(FA_FALSE_REJECTS[name]) if f.severity == "error"]
    assert findings == [], [f.message for f in findings]


def _raised(case) -> kvlint.ContractError:
    """The error the guard raises in raise mode before the operator runs."""
    op_name, args, kwargs = case
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        _op(op_name)(*args, **kwargs)
    return info.value


def _bound(args, kwargs):
    return dict(zip(("query", "key", "value", "head_num", "input_layout"), args), **kwargs)


def _checked(case):
    """check_call's findings; the same without the verdict cache, filling it and replaying it."""
    from test_verdict_cache import verdict

    from kvlint.runtime import check_call, registry

    op_name, args, kwargs = case
    registry.clear_verdicts()
    runs = [check_call(op_name, _bound(args, kwargs), cache=cache) for cache in (False, True, True)]  # one site
    assert verdict(runs[1]) == verdict(runs[2]) == verdict(runs[0])
    return runs[0]


def fusion_conformance_tests(accepted: dict, rejected: dict) -> tuple:
    """The four conformance tests of a fusion module, for `(test_accepted_..., test_rejected_...,
    test_check_call_accepts_..., test_check_call_reports_...) = fusion_conformance_tests(ACCEPTED,
    REJECTED)`: `accepted` maps a name to a case, `rejected` to (case, code, words)."""
    @pytest.mark.parametrize("name", sorted(accepted))
    def test_accepted_by_the_operator_passes_the_guard(name):
        findings = [f for f in _collect(accepted[name]) if f.severity == "error"]
        assert findings == [], [f.message for f in findings]

    @pytest.mark.parametrize("name", sorted(rejected))
    def test_rejected_by_the_operator_raises_with_its_code(name):
        case, code, words = rejected[name]
        error = _raised(case)
        assert (error.code, words in str(error)) == (code, True), str(error)

    @pytest.mark.parametrize("name", sorted(accepted))
    def test_check_call_accepts_it_too(name):
        assert [f.message for f in _checked(accepted[name]) if f.severity == "error"] == []

    @pytest.mark.parametrize("name", sorted(rejected))
    def test_check_call_reports_the_same_code_first(name):
        case, code, _ = rejected[name]
        assert [f.code for f in _checked(case)][:1] == [code]

    return (test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_with_its_code,
            test_check_call_accepts_it_too, test_check_call_reports_the_same_code_first)


(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_with_its_code,
 test_check_call_accepts_it_too, test_check_call_reports_the_same_code_first) = fusion_conformance_tests(
    ACCEPTED, REJECTED)


def test_a_shape_the_fa_family_reports_is_reported_once():
    """npu_fusion_attention's heads are checked by the FA family: the fusion contract adds nothing."""
    from kvlint.runtime import check_call

    bound = dict(query=m(2, 5, 8, 64), key=m(2, 7, 2, 64), value=m(2, 7, 2, 64), head_num=4, input_layout="BSND",
                 scale=0.125)
    assert [f.code for f in check_call("npu_fusion_attention", bound)] == ["KV111"]


def test_message_names_the_window_and_the_sizes():
    message = str(_raised(REJECTED["band pre -10 next 5 with S2 8"][0]))
    assert "pre_tockens=-10, next_tockens=5" in message and "sparse_mode=4" in message, message
    assert "no key to attend to with S1=8, S2=8" in message, message
    assert "consequence: the operator rejects the call" in message, message


def test_device_length_tensors_are_not_read_in_meta_mode():
    """_v3 length lists on the meta device: shapes only, no value read, no finding."""
    case = tnd(op="npu_fusion_attention_v3", q_ends=(3, 12), t1=8,
               actual_seq_qlen=m(2, dtype=torch.int64), actual_seq_kvlen=m(2, dtype=torch.int64))
    assert [f for f in _collect(case) if f.severity == "error"] == []


# ------------------------------------------------------------------ verdict cache (fusion_shapes is pure)
CASES = {**ACCEPTED, **{name: case for name, (case, _, _) in REJECTED.items()}}


def test_fusion_shapes_reads_no_values(monkeypatch):
    from test_verdict_cache import _call, bound

    from kvlint.runtime import call as call_module
    from kvlint.runtime.families.fusion.contracts import fusion_shapes

    def no_values(*args, **kwargs):
        raise AssertionError("fusion_shapes read values")
    monkeypatch.setattr(call_module.Call, "int_list", no_values)
    monkeypatch.setattr(call_module.Call, "readable", no_values)
    for case in CASES.values():
        fusion_shapes(_call(*bound(case)))


def test_same_signature_other_lengths_or_prefix_gets_its_own_verdict():
    """The signature holds a list's length, not its entries: fusion_values reads them per call."""
    from test_verdict_cache import bound

    from kvlint.runtime import check_call

    for good, bad in ((tnd(atten_mask=compressed(), sparse_mode=3),
                       tnd(kv_ends=(2, 8), atten_mask=compressed(), sparse_mode=3)),
                      (bnsd(sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8), prefix=[8, 4]),
                       bnsd(sparse_mode=6, atten_mask=m(3072, 2048, dtype=B8), prefix=[8, 9]))):
        assert [f.code for f in check_call(*bound(good))] == []
        assert [f.code for f in check_call(*bound(bad))] == ["KV117"]
        assert [f.code for f in check_call(*bound(good))] == []
