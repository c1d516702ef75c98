"""npu_fusion_attention (+ _v2, _v3): the softmax scale (KV103), contiguity, length lists outside
TND (KV316), TND trailing zeros (KV315) and inner alibi slopes with TND sparse_mode 8 (KV116),
against the operator source (rules/facts/fusion.toml cites each check). Every call the operator
accepts passes under patch(); every loud reject raises with its code; the silent ones warn.
Cases named `utest:<name>` replay attention/flash_attention_score/tests/utest/ts_fa/ts_fa_tc_pse.cpp,
whose ActualSeqQLenList / ActualSeqKVLenList are per-request lengths (the harness accumulates
them: tests/comm/src/fa_param.cpp l.117-119), so the cumulative lists here are their sums."""
from itertools import accumulate

import pytest
import torch
from test_conformance import _collect
from test_fusion_contracts import B8, F32, H, bnsd, compressed, fusion, fusion_conformance_tests, m, tnd, v2

OPS = ("npu_fusion_attention", "npu_fusion_attention_v2", "npu_fusion_attention_v3")


def bsnd(op, **kw):
    return fusion(m(2, 5, 8, 64), m(2, 7, 2, 64), m(2, 7, 2, 64), 8, "BSND", op=op, **kw)


def lists(op, q, kv):
    """Length lists as op takes them: int lists, host int64 tensors for _v3."""
    if op == "npu_fusion_attention_v3":
        return dict(actual_seq_qlen=torch.tensor(q), actual_seq_kvlen=torch.tensor(kv))
    return dict(actual_seq_qlen=list(q), actual_seq_kvlen=list(kv))


def pse_case(name, q_lens, kv_lens, d, mode, pse_type, slopes, q_start=None, kv_start=None):
    """A ts_fa_tc_pse.cpp case: TND fp16, N1 = N2 = 1, pre 65535, next 0, the 2048 bool mask."""
    q_ends, kv_ends = tuple(accumulate(q_lens)), tuple(accumulate(kv_lens))
    kw = dict(pse=m(*((len(q_lens), 1) if slopes == "B_N1" else (1,)), dtype=F32), pse_type=pse_type,
              atten_mask=compressed(), sparse_mode=mode, pre_tokens=65535, next_tokens=0)
    if q_start is not None:
        kw.update(q_start_idx=q_start, kv_start_idx=kv_start)
    return tnd(op="npu_fusion_attention_v2", q_ends=q_ends, kv_ends=kv_ends, n=1, n2=1, d=d, **kw)


ACCEPTED = {
    # API Contiguous l.536-570: every aclnn entry makes the inputs contiguous
    **{f"{op}: a transposed (non-contiguous) query": fusion(
        m(2, 8, 5, 64).transpose(1, 2), m(2, 7, 2, 64), m(2, 7, 2, 64), 8, "BSND", op=op) for op in OPS},
    **{f"{op}: a non-contiguous mask": bnsd(op=op, atten_mask=m(8, 16, dtype=B8)[:, ::2]) for op in OPS},
    # torch_npu counts an empty list as not given (op-plugin `!ac_seq_qlen.empty()`)
    **{f"{op}: BSND with empty length lists": bsnd(op, **lists(op, [], [])) for op in OPS},
    # _op_plugin_docs.py l.1695: trailing zeros leave requests out (GetActualSeqLenData clamps)
    **{f"{op}: TND trailing zeros for requests left out": tnd(
        op=op, q_ends=(2, 5, 9, 0, 0), kv_ends=(2, 5, 9, 0, 0), t1=9, t2=9, **lists(op, (2, 5, 9, 0, 0),
                                                                                     (2, 5, 9, 0, 0))) for op in OPS},
    "_v2 TND trailing zeros with a causal mask": tnd(
        op="npu_fusion_attention_v2", q_ends=(3, 8, 0), kv_ends=(3, 8, 0), t1=8, t2=8, atten_mask=compressed(),
        sparse_mode=3),
    # varlen SetPseAlibiParams l.3750-3765 (request 0 offset by the start indices, the rest equal)
    "utest:Fa_Pse_Tc_000 (sparse_mode 8, pse_type 2, (B, N1) slopes, equal lengths)": pse_case(
        "000", (4, 8, 16), (4, 8, 16), 32, 8, 2, "B_N1"),
    "utest:Fa_Pse_Tc_001 (sparse_mode 8, pse_type 3)": pse_case("001", (4, 8, 16), (4, 8, 16), 92, 8, 3, "B_N1"),
    "utest:Fa_Pse_Tc_004 (sparse_mode 8, request 0 offset by q_start_idx 2 / kv_start_idx 1)": pse_case(
        "004", (10, 24, 32), (11, 24, 32), 88, 8, 2, "N1", [2], [1]),
    "utest:Fa_Pse_Tc_005 (the same with pse_type 3)": pse_case(
        "005", (10, 24, 32), (11, 24, 32), 88, 8, 3, "N1", [2], [1]),
    "sparse_mode 8 without a mask takes no effect: unequal lengths with inner slopes": tnd(
        op="npu_fusion_attention_v2", q_ends=(3, 8), kv_ends=(4, 9), pse=m(8, dtype=F32), pse_type=2,
        sparse_mode=8),
    "sparse_mode 8 with a bias pse (pse_type 1): not the inner-alibi check": tnd(
        op="npu_fusion_attention_v2", q_ends=(3, 8), kv_ends=(4, 9), pse=m(8 * 9, 9), atten_mask=compressed(),
        sparse_mode=8, pre_tokens=65535, next_tokens=0),
}

REJECTED = {
    # both lists outside TND: aclnnFlashAttentionVarLenScore* 'Layout %s is not TND' (l.875, 1036, 1125, 1213)
    **{f"{op}: BSND with both length lists": (bsnd(op, **lists(op, [5, 5], [7, 7])), "KV316", "'TND' only")
       for op in OPS},
    "BNSD with both length lists, valid per request": (
        bnsd(actual_seq_qlen=[8, 8], actual_seq_kvlen=[8, 8]), "KV316", "both given"),
    # varlen SetPseAlibiParams l.3750-3765
    "utest:Fa_Pse_Tc_008 (request 0: S1 10 != S2 11, no start indices)": (
        pse_case("008", (10, 23, 31), (11, 24, 32), 64, 8, 2, "B_N1"), "KV116", "request 0: S1 10 - S2 11"),
    "utest:Fa_Pse_Tc_009 (equal lengths, start indices 2 / 1)": (
        pse_case("009", (11, 24, 32), (11, 24, 32), 92, 8, 2, "B_N1", [2], [1]), "KV116", "= 1"),
    "utest:Fa_Pse_Tc_010 (request 1: S1 22 != S2 24)": (
        pse_case("010", (10, 22, 31), (11, 24, 32), 98, 8, 3, "N1", [2], [1]), "KV116", "request 1: S1 22 != S2 24"),
    "utest:Fa_Pse_Tc_011 (request 1: S1 24 != S2 23)": (
        pse_case("011", (11, 24, 32), (11, 23, 32), 16, 8, 3, "N1"), "KV116", "request 1"),
    "utest:Fa_Pse_Tc_012 (four requests, request 0: 3 != 4)": (
        pse_case("012", (3, 52, 77, 125), (4, 52, 77, 125), 88, 8, 2, "B_N1"), "KV116", "sparse mode 8"),
    "utest:Fa_Pse_Tc_013 (equal lengths, start indices 2 / 1)": (
        pse_case("013", (4, 52, 77, 125), (4, 52, 77, 125), 64, 8, 3, "N1", [2], [1]), "KV116",
        "qStartIdx - actualSeqLenKvData[0] - kvStartIdx == 0"),
    # a decrease to a non-zero entry is a per-request list (the tiling would clamp it to 0)
    "_v2 TND a decrease before the trailing zeros": (
        tnd(op="npu_fusion_attention_v2", q_ends=(5, 3, 8, 0), kv_ends=(5, 6, 8, 0)), "KV315", "cumulative"),
    "_v2 TND trailing zeros, last offset past the tokens": (
        tnd(op="npu_fusion_attention_v2", q_ends=(3, 12, 0), kv_ends=(3, 8, 0), t1=8), "KV315",
        "last offset <= the token count 8"),
}


def _errors(case):
    return [f.message for f in _collect(case) if f.severity == "error"]


(test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_with_its_code,
 test_check_call_accepts_it_too, test_check_call_reports_the_same_code_first) = fusion_conformance_tests(
    ACCEPTED, REJECTED)


# ------------------------------------------------------------------ warnings (silent pitfalls)
def _warnings(case, code):
    return [f for f in _collect(case) if f.code == code and f.severity == "warning"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("which", ["actual_seq_qlen", "actual_seq_kvlen"])
def test_one_length_list_outside_tnd_is_ignored_and_warned(op, which):
    """aclnnFlashAttentionScore takes no length list: one list alone never reaches the kernel."""
    case = bsnd(op, **{which: lists(op, [3, 5], [3, 5])[which]})
    found = _warnings(case, "KV316")
    assert [f.argument for f in found] == [which], [f.message for f in found]
    assert "ignored" in found[0].message and "S1=5, S2=7" in found[0].message
    assert _errors(case) == []


def test_the_fa_rule_no_longer_judges_a_fusion_list_outside_tnd():
    """The FIA rule (1 or >= B entries, each <= S) used to reject this; the operator ignores it."""
    case = bnsd(actual_seq_qlen=[100])
    assert _errors(case) == [] and [f.code for f in _warnings(case, "KV316")] == ["KV316"]


@pytest.mark.parametrize("op", OPS)
def test_default_scale_warns_on_every_fusion_operator(op):
    case = bsnd(op)
    del case[2]["scale"]
    found = _warnings(case, "KV103")
    assert len(found) == 1, [f.message for f in _collect(case)]
    assert "1/sqrt(head_dim) = 0.125" in found[0].message and "(the default)" in found[0].message


@pytest.mark.parametrize("op", OPS)
def test_explicit_scale_one_warns_and_a_real_scale_does_not(op):
    found = _warnings(bsnd(op, scale=1.0), "KV103")
    assert len(found) == 1 and "(the default)" not in found[0].message
    assert _warnings(bsnd(op, scale=0.125), "KV103") == []


def test_scale_is_positional_argument_8_in_v1_and_v3():
    from kvlint.runtime import check_call

    for op in ("npu_fusion_attention", "npu_fusion_attention_v3"):
        bound = dict(query=m(2, 5, 8, 64), key=m(2, 7, 2, 64), value=m(2, 7, 2, 64), head_num=8,
                     input_layout="BSND", scale=0.125)
        assert [f.code for f in check_call(op, bound)] == []
        bound["scale"] = 1.0
        assert [f.code for f in check_call(op, bound)] == ["KV103"]


def test_an_unscaled_v2_call_still_reports_its_shape_error():
    """KV103 is its own contract: a broken call gets both findings, the error first."""
    case = v2(m(2, 5, 8, 64), m(3, 7, 2, 64), m(3, 7, 2, 64), 8, "BSND")
    del case[2]["scale"]
    assert [f.code for f in _collect(case)] == ["KV113", "KV103"]


def test_reference_ignores_a_length_list_outside_tnd():
    """The emulation computes what the NPU computes: one list outside TND changes nothing."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 8, 4, 16, dtype=H) for _ in range(3))
    full = torch.ops.npu.npu_fusion_attention(q, k, v, 4, "BSND", scale=0.25)[0]
    with_list = torch.ops.npu.npu_fusion_attention(q, k, v, 4, "BSND", scale=0.25, actual_seq_qlen=[3, 5])[0]
    assert torch.equal(full, with_list)


def test_the_new_shape_checks_read_no_values(monkeypatch):
    """fusion_shapes (with the length lists outside TND) and fusion_scale are pure: their verdict is
    cached per signature, which holds a list's length, never its entries."""
    from test_verdict_cache import _call, bound

    from kvlint.runtime import call as call_module
    from kvlint.runtime.families.fusion.contracts import fusion_scale, fusion_shapes

    def no_values(*args, **kwargs):
        raise AssertionError("a pure contract read values")
    monkeypatch.setattr(call_module.Call, "int_list", no_values)
    monkeypatch.setattr(call_module.Call, "readable", no_values)
    cases = [*ACCEPTED.values(), *(case for case, _, _ in REJECTED.values())]
    cases += [bsnd(op, **{which: lists(op, [3, 5], [3, 5])[which]}) for op in OPS
              for which in ("actual_seq_qlen", "actual_seq_kvlen")]
    for case in cases:
        call = _call(*bound(case))
        fusion_shapes(call)
        if call.name != "npu_fusion_attention":  # fusion_scale's operators: _v2 and _v3
            fusion_scale(call)
