"""KV int4 packed eight to an int32 element ([fa_contracts] int4_*, [fa_contracts.int4]): the key's
and value's last dim is one eighth of the real one (aclnnFusedInferAttentionScoreV4.md l.1903-1904),
so the heads and head-dim checks compare the unpacked size (they used to reject every int4 call as
wrong KV heads or head dim); D a multiple of 64 (IFA GetRopeAndGqaFlag l.372-375); on the IFA tiling
no paged cache with a BNSD query (InputAttrsPreProcess l.492-495), no int8 output (ProcessQuant2
l.1099-1102), no non-empty kv_padding_size (CheckSupportKVLeftPadding l.890-892). Cases named
`utest:<name>` replay the operator team's unit tests."""
import torch
from quant_replay import coded_conformance_tests

from kvlint.runtime import check_call

H, F32, I32 = torch.float16, torch.float32, torch.int32
FIA, IFA = "npu_fused_infer_attention_score", "npu_incre_flash_attention"


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def int4(op=FIA, layout="BSH", d=128, paged=False, **kw):
    """Decode (Q_S 1), 8 query heads on 2 KV heads, an int32-packed int4 cache (last dim / 8),
    per-channel fp16 antiquant_scale / offset (2, N_kv * D) or (2, N_kv, 1, D)."""
    n, n_kv = 8, 2
    if layout == "BSH":
        q = m(2, 1, n * d)
        kv = m(4, 128, n_kv * d // 8, dtype=I32) if paged else m(2, 256, n_kv * d // 8, dtype=I32)
        scale = m(2, n_kv * d)
    else:  # BNSD
        q = m(2, n, 1, d)
        kv = m(4, n_kv, 128, d // 8, dtype=I32) if paged else m(2, n_kv, 256, d // 8, dtype=I32)
        scale = m(2, n_kv, 1, d)
    args = dict(num_heads=n, num_key_value_heads=n_kv, input_layout=layout, antiquant_scale=scale,
                antiquant_offset=scale)
    args["scale" if op == FIA else "scale_value"] = d ** -0.5
    if paged:
        args.update(block_table=torch.zeros(2, 2, dtype=torch.int32), block_size=128)
        args["actual_seq_lengths_kv" if op == FIA else "actual_seq_lengths"] = [100, 200]
    args.update(kw)
    return (op, (q, kv, kv), args)


ACCEPTED = {
    "FIA BSH int4 cache": int4(),
    "FIA BNSD int4 cache": int4(layout="BNSD"),
    "FIA BSH paged int4 cache": int4(paged=True),
    "IFA BSH int4 cache": int4(IFA),
    "IFA BSH paged int4 cache": int4(IFA, paged=True),
    "FIA BSH int4 cache, D 64": int4(d=64),
}

REJECTED = {
    "FIA int4 cache with D 96": (int4(d=96), "KV518", "multiple of 64"),
    "IFA int4 cache with D 32": (int4(IFA, d=32), "KV518", "multiple of 64"),
    "FIA BNSD paged int4 cache": (int4(layout="BNSD", paged=True), "KV110", "BSH_BSND"),
    # incre_flash_attention/tests/utest/op_host/test_incre_flash_attention_tiling.cpp case_pa_int4_bnsd (expects
    # failure): B 50, 8 heads on 1, BNSD, block_size 128, table (50, 129), int4 cache (6450, 1, 128, 128) ->
    # int32-packed (6450, 1, 128, 16)
    "utest:case_pa_int4_bnsd": (
        (IFA, (m(50, 8, 1, 128), m(6450, 1, 128, 16, dtype=I32), m(6450, 1, 128, 16, dtype=I32)),
         dict(num_heads=8, num_key_value_heads=1, input_layout="BNSD", scale_value=1.0, block_size=128,
              block_table=torch.zeros(50, 129, dtype=torch.int32), actual_seq_lengths=[16 * 1024] * 50)),
        "KV110", "BSH_BSND"),
    "IFA int4 cache with an int8 output": (int4(IFA, quant_scale2=m(1, dtype=F32)), "KV518", "PostQuant"),
    "FIA int4 cache with kv_padding_size": (
        int4(kv_padding_size=torch.zeros(1, dtype=torch.int64), actual_seq_lengths=[1, 1]), "KV518",
        "KvLeftPadding"),
}


def _bound(args, kwargs):
    return dict(zip(("query", "key", "value"), args), **kwargs)


(test_accepted_by_the_operator_passes_the_guard, test_check_call_accepts_it_too,
 test_rejected_by_the_operator_raises_with_its_code,
 test_check_call_reports_the_same_code_first) = coded_conformance_tests(ACCEPTED, REJECTED)


def test_a_packed_cache_with_the_wrong_heads_is_still_reported():
    """Unpacking does not hide a real heads mismatch: 2 KV heads declared, 4 in the packed cache."""
    op_name, args, kwargs = int4()
    wrong = (m(2, 256, 4 * 128 // 8, dtype=I32),) * 2
    assert [f.code for f in check_call(op_name, _bound((args[0], *wrong), kwargs))][:1] == ["KV112"]
    assert [f.code for f in check_call(op_name, _bound((args[0], m(2, 256, 2 * 128, dtype=I32),
                                                        m(2, 256, 2 * 128, dtype=I32)), kwargs))][:1] == ["KV112"]
