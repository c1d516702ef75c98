"""patch()/unpatch(): modes, nesting, restoration, call paths, messages, results unchanged."""
import os
import threading
import warnings

import pytest
import torch
import torch_npu

import kvlint
from kvlint.runtime import guard

H = dict(dtype=torch.float16)
FA = torch_npu.npu_fused_infer_attention_score
FA_CAPTURED = FA  # a reference captured before any patch()


def qkv():
    torch.manual_seed(0)
    return torch.randn(2, 3, 64, **H), torch.randn(2, 5, 32, **H), torch.randn(2, 5, 32, **H)


GOOD = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")
BAD = dict(GOOD, num_key_value_heads=3)   # KV112


def test_import_kvlint_does_not_need_runtime_names():
    assert kvlint.ContractError.__mro__[1] is ValueError
    assert issubclass(kvlint.ContractWarning, Warning)


def test_stand_in_exposes_packets_like_the_real_package():
    assert torch_npu.npu_fused_infer_attention_score is torch.ops.npu.npu_fused_infer_attention_score
    assert torch_npu._npu_reshape_and_cache is torch.ops.atb._npu_reshape_and_cache
    assert torch_npu.atb.npu_ring_mla is torch.ops.atb.npu_ring_mla


def test_raise_mode_error_attributes_and_message():
    q, k, v = qkv()
    with kvlint.patch():
        with pytest.raises(kvlint.ContractError) as info:
            FA(q, k, v, **BAD)
    err = info.value
    assert (err.code, err.op, err.argument) == ("KV112", "npu_fused_infer_attention_score", "num_key_value_heads")
    first = str(err).splitlines()[0]
    assert first.startswith("KV112 npu_fused_infer_attention_score: num_key_value_heads must be ")
    line = test_raise_mode_error_attributes_and_message.__code__.co_firstlineno + 4
    assert first.endswith(f"got 3 ({os.path.relpath(__file__)}:{line})")  # relative to the working directory
    assert "consequence:" in str(err)


def test_block_table_message_matches_the_documented_form():
    q = torch.randn(2, 1, 64, **H)
    cache = torch.randn(4, 128, 32, **H)
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        FA(q, cache, cache, **GOOD, block_table=torch.zeros(2, 2, dtype=torch.int64), block_size=128,
           actual_seq_lengths_kv=[3, 3])
    assert str(info.value).startswith("KV301 npu_fused_infer_attention_score: block_table must be int32, got int64 "
                                      f"({os.path.relpath(__file__)}:")


def test_warn_mode_warns_and_runs():
    q, k, v = qkv()
    with kvlint.patch(mode="warn"), pytest.warns(kvlint.ContractWarning, match="KV112"):
        with pytest.raises(RuntimeError):  # the emulated operator then rejects the bad head count
            FA(q, k, v, **BAD)


def test_collect_mode_records_and_proceeds():
    q, k, v = qkv()
    with kvlint.patch(mode="collect") as handle:
        FA(q, k, v, **dict(GOOD, scale=1.0))
    assert [f.code for f in handle.findings] == ["KV103"]
    assert handle.findings[0].severity == "warning"


def test_kv103_only_warns_in_raise_mode():
    q, k, v = qkv()
    with kvlint.patch(), pytest.warns(kvlint.ContractWarning, match="KV103"):
        FA(q, k, v, **dict(GOOD, scale=1.0))


@pytest.mark.parametrize("path", ["module", "ops", "default", "captured"])
def test_every_call_path_is_guarded(path):
    q, k, v = qkv()
    fn = {"module": lambda: torch_npu.npu_fused_infer_attention_score,
          "ops": lambda: torch.ops.npu.npu_fused_infer_attention_score,
          "default": lambda: torch.ops.npu.npu_fused_infer_attention_score.default,
          "captured": lambda: FA_CAPTURED}[path]()
    with kvlint.patch(), pytest.raises(kvlint.ContractError):
        fn(q, k, v, **BAD)


def test_out_overload_is_guarded():
    q, k, v = qkv()
    out, lse = torch.empty(0, **H), torch.empty(0)
    with kvlint.patch(), pytest.raises(kvlint.ContractError, match="KV112"):
        torch.ops.npu.npu_fused_infer_attention_score.out(q, k, v, **BAD, attention_out=out, softmax_lse=lse)


def test_guarded_results_are_bitwise_equal():
    q, k, v = qkv()
    plain = FA(q, k, v, **GOOD)
    with kvlint.patch(checks="full"):
        guarded = FA(q, k, v, **GOOD)
    assert all(torch.equal(a, b) for a, b in zip(plain, guarded))


def test_unpatch_restores_the_exact_originals():
    packet = torch.ops.npu.npu_fused_infer_attention_score
    before = (packet._op, packet.default._op, packet.out._op)
    handle = kvlint.patch()
    assert packet._op is not before[0]
    kvlint.unpatch()
    assert (packet._op, packet.default._op, packet.out._op) == before
    assert all(a is b for a, b in zip((packet._op, packet.default._op, packet.out._op), before))
    assert not handle.active
    kvlint.unpatch()  # idempotent


def test_nesting_innermost_mode_wins_and_last_close_unpatches():
    q, k, v = qkv()
    outer = kvlint.patch(mode="raise")
    with kvlint.patch(mode="collect") as inner:
        FA(q, k, v, **dict(GOOD, scale=1.0))
        assert inner.findings
        assert guard.is_patched()
    assert guard.is_patched() and outer.active
    with pytest.raises(kvlint.ContractError):
        FA(q, k, v, **BAD)
    outer.close()
    assert not guard.is_patched()


def test_patch_twice_wraps_once():
    packet = torch.ops.npu.npu_fused_infer_attention_score
    original = packet._op
    a, b = kvlint.patch(), kvlint.patch()
    assert packet._op.__kvlint_original__ is original
    a.close()
    assert guard.is_patched()
    b.close()
    assert packet._op is original


def test_bad_arguments_to_patch():
    with pytest.raises(ValueError, match="mode"):
        kvlint.patch(mode="loud")
    with pytest.raises(ValueError, match="checks"):
        kvlint.patch(checks="some")


def test_thread_safety_of_patch_and_calls():
    q, k, v = qkv()
    errors = []

    def worker():
        try:
            for _ in range(20):
                with kvlint.patch(mode="collect"):
                    FA(q, k, v, **GOOD)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not guard.is_patched()


def test_unrelated_ops_are_untouched():
    add = torch.ops.aten.add.Tensor._op
    with kvlint.patch():
        assert torch.ops.aten.add.Tensor._op is add
        assert torch.add(torch.ones(1), 1).item() == 2


def test_a_crashing_contract_does_not_break_the_call(monkeypatch):
    from kvlint.runtime.families.fa import contracts as fa

    q, k, v = qkv()
    monkeypatch.setattr(fa, "QUERY_DTYPES", None)  # the dtypes contract now raises TypeError
    with kvlint.patch(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, _ = FA(q, k, v, **GOOD)
    assert out.shape == q.shape
    assert any("could not check" in str(w.message) for w in caught)


def test_meta_mode_reads_no_device_values(monkeypatch):
    """Pretend CPU is a device: meta mode must skip value checks, full mode must run them."""
    from kvlint.runtime import call as call_module

    k = torch.randn(4, 2, 16, **H)
    cache = torch.zeros(2, 128, 2, 16, **H)
    slots = torch.tensor([0, 0, 1, 2], dtype=torch.int32)
    monkeypatch.setattr(call_module, "HOST_DEVICES", frozenset())
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: pytest.fail("meta mode read values"), raising=True)
    with kvlint.patch(mode="collect") as handle:
        torch_npu.npu_scatter_pa_kv_cache(k, k, cache, cache.clone(), slots, cache_mode="Norm")
    assert handle.findings == []
    monkeypatch.undo()
    monkeypatch.setattr(call_module, "HOST_DEVICES", frozenset())
    with kvlint.patch(mode="collect", checks="full") as handle:
        torch_npu.npu_scatter_pa_kv_cache(k, k, cache, cache.clone(), slots, cache_mode="Norm")
    assert [f.code for f in handle.findings] == ["KV319"]
