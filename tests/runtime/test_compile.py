"""Under torch.compile the guard checks on fake tensors at trace time and does not break compilation."""
import pytest
import torch
import torch_npu

import kvlint

H = torch.float16


def attn(q, k, v):
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=2, scale=0.25,
                                                       input_layout="BSH")
    return out * 2


def bad_attn(q, k, v):
    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=3, scale=0.25,
                                                       input_layout="BSH")
    return out


@pytest.fixture
def qkv():
    torch._dynamo.reset()
    yield torch.randn(2, 3, 64).to(H), torch.randn(2, 5, 32).to(H), torch.randn(2, 5, 32).to(H)
    torch._dynamo.reset()


def test_compiled_function_runs_and_matches_eager(qkv):
    expected = attn(*qkv)
    with kvlint.patch(mode="collect") as handle:
        got = torch.compile(attn, backend="aot_eager", fullgraph=True)(*qkv)
    assert torch.equal(got, expected)
    assert handle.findings == []


def test_violation_is_reported_at_trace_time(qkv):
    with kvlint.patch():
        with pytest.raises(Exception) as info:
            torch.compile(bad_attn, backend="aot_eager", fullgraph=True)(*qkv)
    chain, exc = [], info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert any(isinstance(e, kvlint.ContractError) and e.code == "KV112" for e in chain)
