"""`kvlint.runtime.check_call`: the families' contracts for one call, without patching."""
import torch

from kvlint.runtime import check_call, guard
from kvlint.runtime.errors import Violation

H = torch.float16


def fa_args(**kw):
    args = dict(query=torch.randn(2, 3, 64).to(H), key=torch.randn(2, 5, 32).to(H), value=torch.randn(2, 5, 32).to(H),
                num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")
    args.update(kw)
    return args


def test_valid_call_has_no_findings_and_nothing_is_patched():
    assert check_call("npu_fused_infer_attention_score", fa_args()) == []
    assert not guard.is_patched()


def test_a_broken_call_returns_its_findings():
    findings = check_call("npu_fused_infer_attention_score", fa_args(num_key_value_heads=3))
    assert [f.code for f in findings] == ["KV112"]
    assert isinstance(findings[0], Violation) and findings[0].argument == "num_key_value_heads"


def test_schema_defaults_are_filled_in():
    findings = check_call("npu_fused_infer_attention_score", fa_args(scale=1.0))
    assert [(f.code, f.severity) for f in findings] == [("KV103", "warning")]
    findings = check_call("npu_fused_infer_attention_score", {k: v for k, v in fa_args().items() if k != "scale"})
    assert [f.code for f in findings] == ["KV103"]  # scale defaults to 1.0


def test_workspace_twin_and_unknown_operator():
    assert [f.code for f in check_call("_npu_fused_infer_attention_score_get_max_workspace",
                                       fa_args(num_key_value_heads=3))] == ["KV112"]
    assert check_call("no_such_operator", {}) == []


def test_stateful_kv401_only_on_request():
    lens = torch.tensor([3, 5])
    cache = torch.randn(4, 128, 32).to(H)
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)

    def call(stateful):
        return check_call("npu_fused_infer_attention_score",
                          fa_args(query=torch.randn(2, 1, 64).to(H), key=cache, value=cache, block_table=table,
                                  block_size=128, actual_seq_lengths_kv=lens), stateful=stateful)
    assert call(False) == []
    lens.add_(1)
    assert call(False) == []
