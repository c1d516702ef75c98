"""KV115 judges only the dtypes the pinned operator source knows: an FP8 / MXFP8 call of FIA v2
(CANN >= 9.1; cann-recipes-infer module/fa_quant/fa_quant.py) or one that sets v2's dtype
overrides is not rejected, while a float32 query still is."""
import torch
from test_conformance import _collect

import kvlint
from kvlint.runtime import check_call

FP8 = torch.float8_e4m3fn


def fp8_v2(**overrides):
    b, s, n, d = 1, 128, 8, 128
    q = torch.empty(b * s, n, d, dtype=FP8, device="meta")
    k = torch.empty(b * s, n, d, dtype=FP8, device="meta")
    kwargs = dict(actual_seq_qlen=[s], actual_seq_kvlen=[s], num_query_heads=n, num_key_value_heads=n,
                  softmax_scale=d ** -0.5, input_layout="TND", sparse_mode=0, out_dtype=torch.bfloat16)
    kwargs.update(overrides)
    return "npu_fused_infer_attention_score_v2", (q, k, k.clone()), kwargs


def codes(case):
    return [f.code for f in _collect(case)]


def test_an_fp8_call_with_the_dtype_overrides_passes():
    case = fp8_v2(query_quant_mode=6, key_quant_mode=6, value_quant_mode=8, query_dtype=FP8, key_dtype=FP8,
                  value_dtype=FP8)
    assert "KV115" not in codes(case)
    name, (q, k, v), kwargs = case
    assert "KV115" not in [f.code for f in check_call(name, dict(query=q, key=k, value=v, **kwargs))]


def test_fp8_tensors_alone_are_not_judged():
    assert "KV115" not in codes(fp8_v2())


def test_a_float32_query_is_still_rejected():
    q = torch.empty(1, 128, 8 * 64, device="meta")
    with kvlint.patch(mode="collect") as handle:
        try:
            torch.ops.npu.npu_fused_infer_attention_score(q, q, q, num_heads=8, input_layout="BSH", scale=0.125)
        except Exception:  # noqa: BLE001 - the stand-in may not run meta tensors
            pass
    assert "KV115" in [f.code for f in handle.findings]
