"""The combined KV int8 antiquant parameters (antiquant_scale / antiquant_offset, key and value
stacked on dim 0; families/fa/contracts.py antiquant_params) in the modes and shapes the IFA
tiling reads (rules/facts/fa_contracts.toml [fa_contracts.antiquant]): mode 2 is shaped like
mode 0 (CheckKVAntiQuantParaShapeLegal) with no scale dtype check (CheckAntiQuantParam reads the
dtype in modes 0 and 1 only); per-token S covers the KV length (CheckKVAntiQuantPerToken).
The operator team's combined-mode cases are in test_conformance (utest:case_antiquantscale_*)."""
import torch
from quant_replay import conformance_tests, unchecked_test
from test_conformance import _collect

H, F32, I8 = torch.float16, torch.float32, torch.int8


def m(*shape, dtype=H):
    return torch.empty(*shape, dtype=dtype, device="meta")


def ifa(mode, scale, offset=None, s=2048, **kw):
    """FIA decode on the IFA tiling path: BSH query (4, 1, 1024) fp16, 8 heads, 2 KV heads of D 128,
    int8 key/value (4, s, 256). (npu_incre_flash_attention has no antiquant_mode: always mode 0.)"""
    args = dict(num_heads=8, num_key_value_heads=2, input_layout="BSH", scale=0.088, antiquant_mode=mode,
                antiquant_scale=scale, **kw)
    if offset is not None:
        args["antiquant_offset"] = offset
    return ("npu_fused_infer_attention_score", (m(4, 1, 1024), m(4, s, 256, dtype=I8), m(4, s, 256, dtype=I8)),
            args)


def paged(scale):
    """Paged BSH decode: cache (16, 128, 256) int8, block_table (4, 4): KV_S 512, per-token mode."""
    return ("npu_fused_infer_attention_score", (m(4, 1, 1024), m(16, 128, 256, dtype=I8), m(16, 128, 256, dtype=I8)),
            dict(num_heads=8, num_key_value_heads=2, input_layout="BSH", scale=0.088, antiquant_mode=1,
                 antiquant_scale=scale, block_table=torch.zeros(4, 4, dtype=torch.int32), block_size=128,
                 actual_seq_lengths_kv=[512] * 4))


ACCEPTED = {
    "mode 2, per-channel (2, N_kv*D)": ifa(2, m(2, 256), m(2, 256)),
    "mode 2, per-tensor (2,)": ifa(2, m(2)),
    "mode 2, (2, N_kv, 1, D), float32 scale with an fp16 query (no dtype check in mode 2)": ifa(
        2, m(2, 2, 1, 128, dtype=F32), m(2, 2, 1, 128, dtype=F32)),
    "per-token (2, B, S) longer than the KV length": ifa(1, m(2, 4, 4096, dtype=F32)),
    "paged per-token (2, B, table width * block_size)": paged(m(2, 4, 512, dtype=F32)),
}

REJECTED = {
    "mode 2, (1, N_kv*D): not stacked for key and value": (ifa(2, m(1, 256)), "[2, 256]"),
    "mode 2, (2, N_q*D): query heads instead of KV heads": (ifa(2, m(2, 1024)), "CheckKVAntiQuantParaShapeLegal"),
    "mode 2, offset dtype other than the scale's": (ifa(2, m(2, 256), m(2, 256, dtype=F32)), "like antiquant_scale"),
    "per-token S shorter than the KV length": (ifa(1, m(2, 4, 1024, dtype=F32)), "S >= 2048"),
    "paged per-token S shorter than table width * block_size": (paged(m(2, 4, 256, dtype=F32)), "S >= 512"),
}


NOT_CHECKED = {
    "empty key, per-token S 0 (the empty-tensor path)": ifa(1, m(2, 4, 0, dtype=F32), s=0),
}

(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)
test_outside_the_mirrored_checks_is_not_reported = unchecked_test(NOT_CHECKED)


def test_old_tiling_calls_are_not_checked():
    """IFA CheckIfRollBack: a non-paged npu_incre_flash_attention call with D >= 1024 goes to the old
    tiling before ProcessAntiQuant, whose checks are not in the source: a combined scale of a shape
    the new tiling rejects is not reported."""
    case = ("npu_incre_flash_attention", (m(4, 1, 2048), m(4, 512, 2048, dtype=I8), m(4, 512, 2048, dtype=I8)),
            dict(num_heads=2, input_layout="BSH", scale_value=1024 ** -0.5, antiquant_scale=m(1, 7)))
    assert [f for f in _collect(case) if f.severity == "error" and "antiquant" in f.message] == []
    paged = ("npu_incre_flash_attention", (m(4, 1, 2048), m(16, 128, 2048, dtype=I8), m(16, 128, 2048, dtype=I8)),
             dict(num_heads=2, input_layout="BSH", scale_value=1024 ** -0.5, antiquant_scale=m(1, 7),
                  block_table=torch.zeros(4, 4, dtype=torch.int32), block_size=128, actual_seq_lengths=[512] * 4))
    assert "KV518" in [f.code for f in _collect(paged)]  # paged: never the old tiling
