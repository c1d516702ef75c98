"""Quantized MLA on the IFA tiling: what it refuses besides the quantization itself (families/fa/
quant_in.py `_mla_misc`, rules/facts/fa_contracts.toml [fa_contracts.mla_quant_misc]): a non-empty
kv_padding_size (incre_flash_attention_tiling_check.cpp CheckSupportKVLeftPadding l.894-896), a
pse_shift and the softmax LSE (CheckMlaMisc -> CheckDefaultMisc l.1771-1787), a shared prefix
(SharedPrefixCheckBasic l.925: MLA there is always paged). Checked once the full-quantization checks
pass: v2 with an int8 query and NZ cache (the only quantized MLA call the source accepts)."""
import torch
from quant_replay import bare_call, conformance_tests
from test_quant_mla import F32, full, m

from kvlint.runtime.families.fa.quant_in import _mla_misc

ACCEPTED = {
    "v2 MLA full quantization, return_softmax_lse False": full(return_softmax_lse=False),
    "v2 MLA full quantization, TND_NTD, return_softmax_lse False": full("TND_NTD", return_softmax_lse=False),
}

REJECTED = {
    "v2 MLA full quantization with a pse_shift (B, N, 1, S)": (
        full(pse_shift=m(4, 64, 1, 256)), "PseShift is not supported in MLA"),
    "v2 MLA full quantization with a (1, N, 1, S) pse_shift, BSND": (
        full("BSND", pse_shift=m(1, 64, 1, 256)), "PseShift is not supported in MLA"),
    "v2 MLA full quantization returning the softmax LSE": (
        full(return_softmax_lse=True), "SoftmaxLse output is not supported in MLA"),
    "v2 MLA full quantization, TND_NTD, returning the softmax LSE": (
        full("TND_NTD", return_softmax_lse=True), "return_softmax_lse"),
}

(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
 test_check_call_agrees_with_the_guard) = conformance_tests(ACCEPTED, REJECTED)


def _misc(op_name, **args):
    call = bare_call(op_name, args)
    _mla_misc(call)
    return [(f.argument, f.consequence) for f in call.findings]


def test_v1_names_kv_padding_and_shared_prefix():
    """FIA v1 spells them (v2 has no such tensors). A v1 int8-query MLA call is rejected earlier
    (no dequant_scale_query), so the helper is run directly here."""
    v1 = "npu_fused_infer_attention_score"
    assert _misc(v1) == []
    assert _misc(v1, kv_padding_size=torch.empty(0, dtype=torch.int64)) == []  # empty: skipped (l.1646)
    assert _misc(v1, kv_padding_size=torch.zeros(1, dtype=torch.int64)) == [
        ("kv_padding_size", "the operator rejects the call (IFA CheckSupportKVLeftPadding: kvPadding is not "
                            "supported in MLA)")]
    assert [a for a, _ in _misc(v1, key_shared_prefix=m(1, 16, 512), value_shared_prefix=m(1, 16, 512))] == [
        "key_shared_prefix"]
    assert [a for a, _ in _misc(v1, value_shared_prefix=m(1, 16, 512))] == ["value_shared_prefix"]
    assert [a for a, _ in _misc(v1, softmax_lse_flag=True)] == ["softmax_lse_flag"]


def test_v2_spells_the_lse_flag_its_own_way():
    v2 = "npu_fused_infer_attention_score_v2"
    assert [a for a, _ in _misc(v2, return_softmax_lse=True)] == ["return_softmax_lse"]
    assert _misc(v2, pse_shift=None, return_softmax_lse=False) == []


def test_the_quantization_reject_comes_first():
    """A call with a bad query scale and a pse_shift: the quantization check reports, once."""
    from kvlint.runtime import check_call

    op_name, args, kwargs = full(dequant_scale_query=m(4, 64, dtype=F32), pse_shift=m(4, 64, 1, 256))
    found = check_call(op_name, dict(zip(("query", "key", "value"), args), **kwargs))
    assert [(f.code, f.argument) for f in found] == [("KV518", "dequant_scale_query")]
