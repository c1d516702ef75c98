"""TND prefill's quantization (the PFA tiling: npu_prompt_flash_attention with input_layout "TND",
FIA "TND" unless IsUsingIFA takes it; families/fa/quant_in.py pfa_tnd_route / tnd_io_reject,
quant_out.py tnd_prefill_io; rules/facts/fa_contracts.toml [fa_contracts.tnd_prefill]):
prompt_flash_attention_tiling.cpp CheckIOType rejects, with layout TND, an all-int8 query, key and
value, an int8 output and KV antiquant, before any other quantization check; FIA checks D's
32-alignment with int8 first, and its CheckDequantParams (antiquant_mode, dequant_scale_query)."""
import torch
from quant_replay import conformance_tests, unchecked_test
from test_quant_prefill import F32, FIA_FULL, FULL, I8, H, m, one

BF = torch.bfloat16
LENS = dict(actual_seq_lengths=[3, 8], actual_seq_lengths_kv=[3, 8])


def fia(dtype=H, kv=None, n=8, n_kv=2, d=128, op="npu_fused_infer_attention_score", **kw):
    """FIA TND prefill: 8 tokens in 2 requests, query (8, n, d), key/value (8, n_kv, d), no mask."""
    kv = kv or dtype
    if op == "npu_fused_infer_attention_score_v2":
        kw = dict(dict(num_query_heads=n, softmax_scale=d ** -0.5, actual_seq_qlen=[3, 8], actual_seq_kvlen=[3, 8]),
                  **kw)
    else:
        kw = dict(dict(num_heads=n, scale=d ** -0.5, **LENS), **kw)
    return (op, (m(8, n, d, dtype=dtype), m(8, n_kv, d, dtype=kv), m(8, n_kv, d, dtype=kv)),
            dict(num_key_value_heads=n_kv, input_layout="TND", **kw))


def pfa(dtype=H, kv=None, **kw):
    """npu_prompt_flash_attention TND: the same shapes."""
    kv = kv or dtype
    return ("npu_prompt_flash_attention", (m(8, 8, 128, dtype=dtype), m(8, 2, 128, dtype=kv), m(8, 2, 128, dtype=kv)),
            dict(num_heads=8, num_key_value_heads=2, input_layout="TND", scale_value=128 ** -0.5, **LENS, **kw))


V2 = "npu_fused_infer_attention_score_v2"

ACCEPTED = {
    "FIA TND prefill fp16": fia(),
    "FIA TND prefill bf16": fia(BF),
    "FIA v2 TND prefill bf16": fia(BF, op=V2),
    "FIA TND prefill, key/value head dims 192 / 128": (
        "npu_fused_infer_attention_score", (m(8, 8, 192), m(8, 2, 192), m(8, 2, 128)),
        dict(num_heads=8, num_key_value_heads=2, input_layout="TND", scale=192 ** -0.5, **LENS)),
    "PFA TND prefill fp16": pfa(),
}

REJECTED = {
    "FIA TND int8 query, key and value (with the BMM factors)": (fia(I8, **FIA_FULL), "all int8"),
    "FIA TND fp16 with an int8 output (quant_scale2)": (fia(quant_scale2=one()), "attention out dataType is int8"),
    "FIA v2 TND bf16 with an int8 output (quant_scale_out)": (
        fia(BF, op=V2, quant_scale_out=one()), "quant_scale_out"),
    "FIA TND fp16 query with an int8 key and value": (fia(kv=I8), "not support KV Antiquant"),
    "FIA TND bf16 query, int8 cache and split antiquant scales": (
        fia(BF, kv=I8, key_antiquant_scale=m(1, 2, 128, dtype=BF), value_antiquant_scale=m(1, 2, 128, dtype=BF)),
        "not support KV Antiquant"),
    "FIA TND int8 with D 48 (not 32-aligned)": (fia(I8, n=8, d=48, **FIA_FULL), "32 elements aligned"),
    "FIA TND prefill antiquant_mode 1 (CheckDequantParams first)": (fia(antiquant_mode=1), "antiquant_mode"),
    "FIA v2 TND prefill with dequant_scale_query and no query_rope": (
        fia(BF, op=V2, dequant_scale_query=m(8, 8, dtype=F32)), "qRope is null"),
    "PFA TND int8 query, key and value": (pfa(I8, **FULL), "all int8"),
    "PFA TND fp16 with an int8 output": (pfa(quant_scale2=one(), quant_offset2=one()), "dataType is int8"),
    "PFA TND fp16 query with an int8 key and value": (pfa(kv=I8), "KV Antiquant"),
}

# IsUsingIFA takes these (D 512 MLA; a paged int8 cache with float32 antiquant_scale and offset), or
# the layout string is not "TND": not CheckIOType's TND branch
NOT_CHECKED = {
    "FIA TND_NTD fp16 with an int8 output": (
        "npu_fused_infer_attention_score", fia()[1], dict(fia()[2], input_layout="TND_NTD", quant_scale2=one())),
}

(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)


def test_outside_the_tnd_io_check_is_not_reported_by_it():
    from quant_replay import bare_call

    from kvlint.runtime.families.fa import contracts
    from kvlint.runtime.families.fa.quant_in import pfa_tnd_route

    def route(case):
        op_name, args, kwargs = case
        call = bare_call(op_name, dict(zip(("query", "key", "value"), args), **kwargs))
        contracts.fa_view(call)
        return pfa_tnd_route(call, call.view)

    assert route(fia()) and route(pfa()) and route(fia(BF, op=V2))
    assert not route(NOT_CHECKED["FIA TND_NTD fp16 with an int8 output"])
    mla = ("npu_fused_infer_attention_score", (m(8, 32, 512, dtype=BF), m(16, 128, 512, dtype=I8),
                                               m(16, 128, 512, dtype=I8)),
           dict(num_heads=32, num_key_value_heads=1, input_layout="TND", **LENS))
    assert not route(mla)  # D 512: IFA
    table = torch.zeros(2, 2, dtype=torch.int32)
    paged = ("npu_fused_infer_attention_score", (m(8, 8, 128), m(4, 128, 256, dtype=I8), m(4, 128, 256, dtype=I8)),
             dict(num_heads=8, num_key_value_heads=2, input_layout="TND", block_table=table, block_size=128, **LENS))
    assert route(paged)
    assert not route((paged[0], paged[1], dict(paged[2], antiquant_scale=m(2, 256, dtype=F32),
                                               antiquant_offset=m(2, 256, dtype=F32))))  # IFA's TND antiquant
    assert route((paged[0], paged[1], dict(paged[2], antiquant_scale=m(2, 256, dtype=F32))))  # no offset: PFA


test_tnd_ntd_is_not_reported = unchecked_test(NOT_CHECKED)
