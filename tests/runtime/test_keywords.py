"""A keyword the schema does not have (a v1/v2 keyword through **kwargs): the guard names the
keyword meant instead of the dispatcher's schema dump; nothing is paid on the happy path."""
import pytest
import torch
import torch_npu

import kvlint

H = torch.float16


def fa_kwargs(**extra):
    kw = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")
    kw.update(extra)
    return kw


def qkv():
    return torch.randn(2, 3, 64).to(H), torch.randn(2, 5, 32).to(H), torch.randn(2, 5, 32).to(H)


def call_v1(**kwargs):
    q, k, v = qkv()
    return torch_npu.npu_fused_infer_attention_score(q, k, v, **kwargs)


def test_v2_keyword_in_v1_through_kwargs_names_the_v1_keyword():
    kwargs = fa_kwargs(softmax_scale=0.25)
    del kwargs["scale"]
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        call_v1(**kwargs)
    err = info.value
    assert (err.code, err.argument) == ("KV101", "softmax_scale")
    first = str(err).splitlines()[0]
    assert first.startswith("KV101 npu_fused_infer_attention_score: softmax_scale must be 'scale', got "
                            "'softmax_scale', a keyword of npu_fused_infer_attention_score_v2")
    assert "Schema:" not in str(err)
    assert "test_keywords.py" in first


def test_v1_keyword_in_v2():
    q, k, v = qkv()
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_heads=4, num_key_value_heads=2, softmax_scale=0.25,
                                                     input_layout="BSH")
    assert (info.value.code, info.value.argument) == ("KV101", "num_heads")
    assert "must be 'num_query_heads'" in str(info.value)


def test_habit_and_typo_are_kv102():
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        call_v1(**fa_kwargs(scale_value=0.25))
    assert (info.value.code, info.value.argument) == ("KV102", "scale_value")
    assert "must be 'scale'" in str(info.value)
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        call_v1(**fa_kwargs(input_layuot="BSH"))
    assert "must be 'input_layout'" in str(info.value)


def test_collect_mode_records_and_keeps_the_dispatchers_error():
    with kvlint.patch(mode="collect") as handle, pytest.raises(RuntimeError, match="Unknown keyword"):
        call_v1(**fa_kwargs(return_softmax_lse=True))
    assert [(f.code, f.argument) for f in handle.findings] == [("KV101", "return_softmax_lse")]


def test_other_operator_errors_pass_through_unchanged():
    q, k, v = qkv()
    with kvlint.patch(mode="collect"), pytest.raises(RuntimeError) as info:
        torch_npu.npu_fused_infer_attention_score(q, k[:, :, :16], v, **fa_kwargs(num_key_value_heads=3))
    assert not isinstance(info.value, kvlint.ContractError)


def test_ring_mla_compressed_mask_is_512x512():
    from kvlint.runtime import check_call

    base = dict(q_nope=torch.empty(4, 2, 128, device="meta"), q_rope=torch.empty(4, 2, 64, device="meta"),
                k_nope=torch.empty(4, 2, 128, device="meta"), k_rope=torch.empty(4, 2, 64, device="meta"),
                value=torch.empty(4, 2, 128, device="meta"), seqlen=torch.tensor([4], dtype=torch.int32),
                head_num=2, kv_head_num=2, mask_type="mask_type_triu")
    assert check_call("npu_ring_mla", dict(base, mask=torch.empty(512, 512, device="meta"))) == []
    findings = check_call("npu_ring_mla", dict(base, mask=torch.empty(2048, 2048, device="meta")))
    assert [(f.code, f.argument) for f in findings] == [("KV206", "mask")]
    assert check_call("npu_ring_mla", dict(base, mask=torch.empty(2048, 2048, device="meta"), mask_type="no_mask")) == []
