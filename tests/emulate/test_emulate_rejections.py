"""Loud rejections raise as on the NPU (EmulatedOperatorError, a RuntimeError naming the code and
the call site); silent pitfalls compute what the NPU computes, wrong numbers and all."""
import cann_ops_transformer
import pytest
import torch
import torch_npu
from cases import COMPRESSED, Case, build, max_error, per_request_output

from kvlint.emulate import EmulatedOperatorError

FA = torch_npu.npu_fused_infer_attention_score
H = dict(dtype=torch.float16)


def _qkv(s=4):
    torch.manual_seed(0)
    return torch.randn(2, 4, s, 16, **H), torch.randn(2, 2, s, 16, **H), torch.randn(2, 2, s, 16, **H)


GOOD = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BNSD")


@pytest.mark.parametrize("code, call", [
    ("KV201", lambda q, k, v: FA(q, k, v, **GOOD, sparse_mode=3)),
    ("KV206", lambda q, k, v: FA(q, k, v, **GOOD, sparse_mode=3, atten_mask=torch.ones(4, 4, dtype=torch.bool))),
    ("KV205", lambda q, k, v: FA(q, k, v, **GOOD, atten_mask=torch.zeros(2, 1, 4, 4))),
    ("KV213", lambda q, k, v: FA(q, k, v, **GOOD, sparse_mode=6, atten_mask=COMPRESSED)),
    ("KV115", lambda q, k, v: FA(q.float(), k.float(), v.float(), **GOOD)),
    ("KV112", lambda q, k, v: FA(q, k, v, **dict(GOOD, num_key_value_heads=3))),
    ("KV110", lambda q, k, v: FA(q, k, v, **dict(GOOD, input_layout="BSH"))),
    ("KV301", lambda q, k, v: FA(q[:, :, :1], torch.zeros(4, 16, 32, **H), torch.zeros(4, 16, 32, **H),
                                 **dict(GOOD, input_layout="BNSD"), block_table=torch.zeros(2, 2, dtype=torch.int64),
                                 block_size=16, actual_seq_lengths_kv=[3, 3])),
    ("KV302", lambda q, k, v: FA(q[:, :, :1], torch.zeros(4, 16, 32, **H), torch.zeros(4, 16, 32, **H),
                                 **GOOD, block_table=torch.zeros(2, 2, dtype=torch.int32), actual_seq_lengths_kv=[3, 3])),
])
def test_loud_rejections(code, call):
    q, k, v = _qkv()
    with pytest.raises(EmulatedOperatorError) as info:
        call(q, k, v)
    assert info.value.code == code
    assert isinstance(info.value, RuntimeError)
    assert f"{code} npu_fused_infer_attention_score" in str(info.value)
    assert "test_emulate_rejections.py:" in str(info.value)  # the user's line, not kvlint's


def test_loud_cache_writer_rejection():
    x = torch.randn(2, 100, dtype=torch.bfloat16)  # d % 64 != 0
    with pytest.raises(EmulatedOperatorError) as info:
        cann_ops_transformer.kv_compress_epilog(torch.zeros(1, 4, 1, 384, dtype=torch.uint8), x,
                                                torch.tensor([0, 1], dtype=torch.int32))
    assert info.value.code == "KV513"


def _out(case, **changes):
    (q, k, v), kw, expected, _ = build(case, torch.bfloat16)
    kw.update(changes)
    out, _ = FA(q, k, v, **kw)
    return per_request_output(out.float(), case)[0], expected


def test_silent_non_cumulative_tnd_lengths_cut_requests_wrongly():
    """Per-request lengths [3, 2] passed where TND wants end offsets [3, 5]: no error, the second
    request is read as tokens 3..2 (empty) - wrong numbers, as on the NPU (KV315 in the guard)."""
    case = Case(layout="TND", q_lens=[3, 2], kv_lens=[3, 2])
    (q, k, v), kw, expected, _ = build(case, torch.bfloat16)
    right, _ = FA(q, k, v, **kw)
    wrong, _ = FA(q, k, v, **dict(kw, actual_seq_lengths=[3, 2], actual_seq_lengths_kv=[3, 2]))
    assert max_error(per_request_output(right.float(), case)[0], expected) <= 2e-2
    assert not wrong[3:].any()  # the second request's rows were never computed
    assert torch.equal(wrong[:3], right[:3])


def test_silent_band_without_mask_is_ignored():
    """sparse_mode 0, pre/next tokens and no mask: the window is silently dropped (KV203/KV208)."""
    full, expected = _out(Case(q_lens=[4, 4], kv_lens=[4, 4]), pre_tokens=0, next_tokens=0)
    assert max_error(full, expected) <= 2e-2


def test_silent_tril_mask_is_read_as_given():
    """A causal mask built with torch.tril and not inverted (KV220) passes every shape check; the
    kernel reads it and computes something that is not causal attention."""
    case = Case(sparse=3, q_lens=[4, 4], kv_lens=[6, 6])
    good, expected = _out(case)
    bad, _ = _out(case, atten_mask=torch.tril(torch.ones(2048, 2048, dtype=torch.bool)))
    assert max_error(good, expected) <= 2e-2
    assert max_error(bad, expected) > 0.1


def test_silent_default_head_count():
    """num_heads left at 1 with a BSH query: one head of width H (KV104), no error."""
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 3, 32, **H) for _ in range(3))
    out, _ = FA(q, k, v, scale=32 ** -0.5)
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    assert float((out.float() - want).abs().max()) <= 2e-2


def test_silent_duplicate_slots_last_writer_wins():
    key = torch.arange(2 * 32, dtype=torch.float16).reshape(2, 1, 32)
    cache = torch.zeros(1, 16, 1, 32, dtype=torch.float16)
    torch_npu._npu_reshape_and_cache(key, key.clone(), cache, cache.clone(), torch.tensor([3, 3], dtype=torch.int32))
    assert torch.equal(cache[0, 3, 0], key[1, 0])


def test_rejections_under_the_guard_are_the_guards():
    """With kvlint.patch() in raise mode the guard speaks first (ContractError); in collect mode
    the call goes on and the emulated operator still rejects it."""
    import kvlint

    q, k, v = _qkv()
    with kvlint.patch(), pytest.raises(kvlint.ContractError):
        FA(q, k, v, **dict(GOOD, num_key_value_heads=3))
    with kvlint.patch(mode="collect") as handle, pytest.raises(EmulatedOperatorError):
        FA(q, k, v, **dict(GOOD, num_key_value_heads=3))
    assert [f.code for f in handle.findings] == ["KV112"]
