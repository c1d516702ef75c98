"""GQA with an int8 NZ cache (a 5-D paged key without rope) on the IFA tiling: families/fa/quant_in.py
gqa_kv_nz against incre_flash_attention_tiling_check.cpp ProcessPseShift, CheckGqaTensor
(CheckGqaIOTensor, CheckGqaAntiquantTensor / Type, CheckGqaBlockTable, CheckGqaTensorEmpty) and
CheckGqaAttribute (rules/facts/fa_contracts.toml [fa_contracts.gqa_kv_nz]). Every accepted
combination passes under patch(); every reject raises with the code naming what the operator
rejects (KV518 for the quantization and the path's own limits, KV112 heads, KV110 layout, KV311
block_size, KV213 sparse_mode / mask)."""
import pytest
import torch
from quant_replay import coded_conformance_tests

from kvlint.runtime import check_call

BF, H, F32, I8 = torch.bfloat16, torch.float16, torch.float32, torch.int8
V2 = "npu_fused_infer_attention_score_v2"


def m(*shape, dtype=BF):
    return torch.empty(*shape, dtype=dtype, device="meta")


def nz(nb=4, n_kv=8, d=128, bs=128, dtype=I8, last=32):
    return m(nb, n_kv, d // last, bs, last, dtype=dtype)


def gqa(op="npu_fused_infer_attention_score", s=1, n=64, n_kv=8, d=128, bs=128, q=BF, kv=None, mode=0, **kw):
    """FIA GQA decode (Q_S 1) or MTP (Q_S 2-16, sparse_mode 3 and the 2048 mask), BSH, an int8 NZ
    cache (4, N_kv, D/32, block_size, 32), block_table (2, 2), split per-channel bf16 (mode 0) or
    per-token float32 (mode 1) dequant scales, inner_precise 1."""
    kv = kv if kv is not None else nz(n_kv=n_kv, d=d, bs=bs)
    scale = BF if mode == 0 else F32
    v2 = op == V2
    args = {"num_query_heads" if v2 else "num_heads": n, "num_key_value_heads": n_kv, "input_layout": "BSH",
            "block_table": torch.zeros(2, 2, dtype=torch.int32), "block_size": bs, "inner_precise": 1,
            "actual_seq_kvlen" if v2 else "actual_seq_lengths_kv": [200, 256],
            "softmax_scale" if v2 else "scale": d ** -0.5,
            "dequant_scale_key" if v2 else "key_antiquant_scale": m(1, n_kv, 1, d, dtype=scale),
            "dequant_scale_value" if v2 else "value_antiquant_scale": m(1, n_kv, 1, d, dtype=scale),
            "key_quant_mode" if v2 else "key_antiquant_mode": mode,
            "value_quant_mode" if v2 else "value_antiquant_mode": mode}
    if s > 1:
        args.update(sparse_mode=3, atten_mask=m(2048, 2048, dtype=torch.bool))
    args.update(kw)
    return (op, (m(2, s, n * d, dtype=q), kv, kv), args)


ACCEPTED = {
    "FIA GQA decode, NZ per-channel bf16 scales": gqa(),
    "FIA GQA decode, NZ per-token float32 scales": gqa(mode=1),
    "FIA GQA MTP (Q_S 4), sparse_mode 3 with the 2048 mask": gqa(s=4),
    "FIA GQA decode, 10 query heads on 1 KV head, block_size 512": gqa(n=10, n_kv=1, bs=512),
    "FIA GQA decode, 128 / 16 heads": gqa(n=128, n_kv=16),
    "FIA v2 GQA decode, NZ per-channel": gqa(V2),
    "FIA v2 GQA decode, NZ per-token": gqa(V2, mode=1),
}

REJECTED = {
    "a pse_shift": (gqa(pse_shift=m(2, 64, 1, 256)), "KV518", "PseShift is not supported"),
    "key / value modes 2 / 2": (gqa(key_antiquant_mode=2, value_antiquant_mode=2), "KV518", "should be 0 or 1"),
    "a bf16 NZ cache (no antiquant)": (gqa(kv=nz(dtype=BF, last=16)), "KV518", "only antiquant"),
    "an fp16 query": (gqa(q=H, key_antiquant_scale=m(1, 8, 1, 128, dtype=H), value_antiquant_scale=m(1, 8, 1, 128,
                                                                                                     dtype=H)),
                      "KV518", "BFLOAT16"),
    "an int8 output (quant_scale2)": (gqa(quant_scale2=m(1, dtype=F32)), "KV518", "attenOut"),
    "an int8 cache in the 16-wide NZ form": (gqa(kv=nz(last=16)), "KV518", "the int8 NZ layout"),
    "no value dequant scale": (gqa(value_antiquant_scale=None), "KV518", "value_antiquant_scale"),
    "per-channel float32 scales": (gqa(key_antiquant_scale=m(1, 8, 1, 128, dtype=F32),
                                       value_antiquant_scale=m(1, 8, 1, 128, dtype=F32)), "KV518", "bfloat16 in "
                                                                                                  "per-channel"),
    "per-token bf16 scales": (gqa(mode=1, key_antiquant_scale=m(1, 8, 1, 128), value_antiquant_scale=m(1, 8, 1, 128)),
                              "KV518", "float32 in per-token"),
    "a key dequant offset": (gqa(key_antiquant_offset=m(1, 8, 1, 128), value_antiquant_offset=m(1, 8, 1, 128)),
                             "KV518", "key_antiquant_offset is not supported"),
    "a combined antiquant_offset": (gqa(antiquant_offset=m(2, 1024)), "KV518", "antiquant_offset is not supported"),
    "v2 a dequant_scale_query": (gqa(V2, dequant_scale_query=m(2, 1, 64, dtype=F32)), "KV518",
                                 "dequant_scale_query is not supported"),
    "head dim 64": (gqa(d=64, n=64, n_kv=8), "KV518", "only support 128"),
    "32 query heads on 4 KV heads": (gqa(n=32, n_kv=4), "KV112", "CheckGqaHeadsNum"),
    "block_size 256": (gqa(bs=256), "KV311", "128 and 512"),
    "inner_precise 0": (gqa(inner_precise=0), "KV518", "precision mode"),
    "decode with a mask": (gqa(atten_mask=m(2, 256, dtype=torch.bool)), "KV213", "CheckGqaSeqSize"),
    "MTP with sparse_mode 0": (gqa(s=4, sparse_mode=0, atten_mask=m(2, 4, 256, dtype=torch.bool)), "KV213",
                               "sparse_mode 3"),
    "softmax LSE": (gqa(softmax_lse_flag=True), "KV518", "SoftmaxLse"),
    "v2 query_quant_mode 3": (gqa(V2, query_quant_mode=3), "KV518", "query's quant mode"),
    "npu_incre_flash_attention with an NZ cache": (
        ("npu_incre_flash_attention", (m(2, 1, 64 * 128), nz(), nz()),
         dict(num_heads=64, num_key_value_heads=8, input_layout="BSH", block_table=torch.zeros(2, 2, dtype=torch.int32),
              block_size=128, actual_seq_lengths=[200, 256], scale_value=128 ** -0.5, antiquant_scale=m(2, 1024))),
        "KV518", "only npu_fused_infer_attention_score"),
}

# not judged by these checks: the key 0 / value 1 mixed mode (antiquantMode_ PER_CHANNEL_TOKEN_MODE), and
# the inputs FIA hands the IFA tiling without a desc, which CheckGqaTensorEmpty cannot see
NOT_JUDGED = {"key per-channel, value per-token": gqa(key_antiquant_mode=0, value_antiquant_mode=1,
                                                      value_antiquant_scale=m(1, 8, 1, 128, dtype=F32)),
              "query lengths": gqa(actual_seq_lengths=[1, 1]),
              "v2 query lengths": gqa(V2, actual_seq_qlen=[1, 1]),
              "dequant_scale1": gqa(dequant_scale1=m(1, dtype=F32))}


def _bound(args, kwargs):
    return dict(zip(("query", "key", "value"), args), **kwargs)


(test_accepted_by_the_operator_passes_the_guard, test_check_call_accepts_it_too,
 test_rejected_by_the_operator_raises_with_its_code,
 test_check_call_reports_the_same_code_first) = coded_conformance_tests(ACCEPTED, REJECTED)


@pytest.mark.parametrize("name", sorted(NOT_JUDGED))
def test_not_judged_here(name):
    op_name, args, kwargs = NOT_JUDGED[name]
    assert [f.message for f in check_call(op_name, _bound(args, kwargs)) if f.code == "KV518"] == []


def test_other_routes_are_not_these_checks():
    """MLA (rope) keeps its own NZ checks; Q_S 32 goes to the PFA tiling; a 4-D cache is not NZ."""
    from quant_replay import bare_call

    from kvlint.runtime.families.fa import contracts
    from kvlint.runtime.families.fa.quant_in import gqa_nz_route

    def route(case):
        op_name, args, kwargs = case
        call = bare_call(op_name, _bound(args, kwargs))
        contracts.fa_view(call)
        return gqa_nz_route(call, call.view)

    assert route(gqa()) and route(gqa(s=16))
    assert not route(gqa(s=32))
    assert not route(gqa(query_rope=m(2, 1, 64 * 64), key_rope=m(4, 8, 2, 128, 32)))
    assert not route(gqa(kv=m(4, 8, 128, 128, dtype=I8)))
    assert not route(gqa(inner_precise=2, actual_seq_lengths=[1, 1]))  # the ATB branch
