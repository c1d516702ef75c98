"""The guard's cheap paths: value checks on big tensors (vectorised) agree with the small-tensor
(Python) path, and the happy path walks no frames when the layer is known by its KV cache."""
import pytest
import torch
import torch_npu

import kvlint
from kvlint.runtime import callsite
from kvlint.runtime.call import SMALL

H = torch.float16


def _run(fn):
    try:
        fn()
    except (RuntimeError, IndexError, ValueError):
        pass  # collect mode lets a bad call through; the emulated operator may then reject it itself


def scatter(slots, num_blocks=4):
    key = torch.randn(len(slots), 2, 16).to(H)
    cache = torch.zeros(num_blocks, 128, 2, 16, dtype=H)
    slot = torch.tensor(slots, dtype=torch.int32)
    return lambda: torch_npu.npu_scatter_pa_kv_cache(key, key.clone(), cache, cache.clone(), slot, cache_mode="Norm")


@pytest.mark.parametrize("n", [3, SMALL + 37])
def test_slot_values_small_and_big(n, collect):
    ok = list(range(n))
    assert collect(scatter(ok)) == []
    assert collect(scatter([-1] * 2 + ok[2:])) == []                     # -1 = skip, repeated: fine
    assert collect(lambda: _run(scatter(ok[:-1] + [ok[0]]))) == ["KV319"]
    assert collect(lambda: _run(scatter(ok[:-1] + [512]))) == ["KV318"]  # 4 blocks * 128 slots
    assert collect(lambda: _run(scatter(ok[:-1] + [-2]))) == ["KV318"]


def test_big_slot_messages_match_the_small_ones(collect):
    def message(slots):
        collect(lambda: _run(scatter(slots)))
        return collect.handle.findings[-1].given
    small_dup, big_dup = [0, 5, 5, 7, 7], list(range(SMALL + 10)) + [5, 7, 7]
    assert message(small_dup) == message(big_dup) == "duplicates [5, 7]"
    small_bad, big_bad = [0, 600, 1, 700], list(range(SMALL + 10)) + [600, 700]
    assert message(small_bad) == message(big_bad) == "[600, 700]"


def paged(batch, width, kv_lens, bad=None, pad=None):
    """Paged decode: `width` blocks per request, ids 0..batch*width-1; optionally one used id
    replaced by `bad`, and the last (unused) column filled with `pad`."""
    num_blocks = batch * width
    table = torch.arange(num_blocks, dtype=torch.int32).reshape(batch, width)
    if pad is not None:
        table[:, -1] = pad
    if bad is not None:
        table[batch - 1, 0] = bad
    q, cache = torch.randn(batch, 1, 64).to(H), torch.randn(num_blocks, 128, 32).to(H)
    return lambda: torch_npu.npu_fused_infer_attention_score(
        q, cache, cache, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH", block_table=table,
        block_size=128, actual_seq_lengths_kv=torch.tensor(kv_lens))


@pytest.mark.parametrize("batch, width", [(2, 3), (8, SMALL // 8 + 2)])
def test_block_ids_small_and_big_tables(batch, width, collect):
    lens = [130] * batch                                # two blocks used per request
    assert collect(paged(batch, width, lens)) == []
    assert collect(paged(batch, width, lens, pad=10 ** 6)) == []     # unused padding: not read
    assert collect(lambda: _run(paged(batch, width, lens, bad=10 ** 6))) == ["KV313"]
    assert collect(lambda: _run(paged(batch, width, lens, bad=-3))) == ["KV313"]
    assert collect.handle.findings[-1].given == "[-3]"  # the used ids outside the cache, in row order


def test_paged_happy_path_walks_no_frames(monkeypatch):
    """The layer is known by its KV cache: neither the user frame nor the module is looked up."""
    def no_walk(*args):
        raise AssertionError("frame walk on the happy path")
    monkeypatch.setattr(callsite, "user_frame", no_walk)
    monkeypatch.setattr(callsite, "layer_key", no_walk)
    with kvlint.patch(mode="collect") as handle:
        paged(2, 3, [130, 3])()
        scatter([0, 1, 2])()
    assert handle.findings == []


def test_kv401_per_layer_free_functions_are_told_apart_by_their_caches(collect):
    """Two layers calling FA from the same free-function line, each with its own cache: a length
    tensor mutated between them is caught; advancing it between steps is not."""
    q = torch.randn(2, 1, 64).to(H)
    caches = [torch.randn(4, 128, 32).to(H) for _ in range(2)]
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)
    kv_len = torch.tensor([3, 5])

    def attend(cache):
        torch_npu.npu_fused_infer_attention_score(q, cache, cache, num_heads=4, num_key_value_heads=2, scale=0.25,
                                                  input_layout="BSH", block_table=table, block_size=128,
                                                  actual_seq_lengths_kv=kv_len)

    def step(bump_inside):
        for i, cache in enumerate(caches):
            attend(cache.view(4, 128, 32))  # a fresh view each call, like real model code
            if bump_inside and i == 0:
                kv_len.add_(1)

    def run(steps, bump_inside):
        for _ in range(steps):
            step(bump_inside)
            kv_len.add_(1)  # the runner advances kv_len between steps: fine
    assert collect(lambda: run(3, False)) == []
    assert collect(lambda: run(1, True)) == ["KV401"]


def test_kv401_a_new_tensor_with_a_dead_ones_id_and_address_is_not_a_mutation(monkeypatch, collect):
    """A runner that builds its block table afresh may get a freed table's id and data pointer
    back (CPython and the allocator both reuse them): a new layer reading the new table at another
    version is not a mutation between layers (a CI run once saw this KV401 in the padded call of
    test_block_ids_small_and_big_tables). Reuse is forced: every object gets one id, the second
    table is a new tensor on the first one's storage."""
    from kvlint.runtime.families.kvlen import contracts
    monkeypatch.setattr(contracts, "id", lambda obj: 0, raising=False)  # what an id-keyed state would see
    q, lens = torch.randn(2, 1, 64).to(H), torch.tensor([130, 130])
    first = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    second = torch.empty(0, dtype=torch.int32).set_(first.untyped_storage(), 0, (2, 3), (3, 1))
    second[:, -1] = 5
    assert second.data_ptr() == first.data_ptr() and second._version != first._version

    # two layers, each with its own cache, both alive (a freed cache's address given to the next
    # one would make the second call the first layer again: a new step, whatever the state holds)
    caches = [torch.randn(6, 128, 32).to(H) for _ in range(2)]

    def attend(table, cache):
        torch_npu.npu_fused_infer_attention_score(q, cache, cache, num_heads=4, num_key_value_heads=2, scale=0.25,
                                                  input_layout="BSH", block_table=table, block_size=128,
                                                  actual_seq_lengths_kv=lens)
    assert collect(lambda: attend(first, caches[0])) == []
    assert collect(lambda: attend(second, caches[1])) == []


def test_paged_values_are_read_once_per_step_and_again_after_a_change(monkeypatch, collect):
    """The layers of a step pass the same table and lengths: read once; an in-place change, a
    new tensor or a dead tensor's reused id are read again."""
    from kvlint.runtime.families.fa import paged as paged_module

    reads = []
    original = paged_module._check_values
    def spy(call, *rest):
        if isinstance(call.args.get("actual_seq_lengths_kv"), torch.Tensor):  # the guard's read (an emulated
            reads.append(1)   # operator gets the lengths as a list from the dispatcher, and reads them each time)
        return original(call, *rest)
    monkeypatch.setattr(paged_module, "_check_values", spy)
    q, cache = torch.randn(2, 1, 64).to(H), torch.randn(4, 128, 32).to(H)
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)
    kv_len = torch.tensor([3, 130])

    def call(t=table, lens=kv_len):
        torch_npu.npu_fused_infer_attention_score(q, cache, cache, num_heads=4, num_key_value_heads=2, scale=0.25,
                                                  input_layout="BSH", block_table=t, block_size=128,
                                                  actual_seq_lengths_kv=lens)
    assert collect(lambda: [call() for _ in range(4)]) == []
    assert len(reads) == 1
    table[1, 0] = 10 ** 6                                 # in place: a new version, read again
    assert collect(lambda: _run(call)) == ["KV313"]
    assert len(reads) == 2
    table[1, 0] = 2
    assert collect(lambda: [call(lens=torch.tensor([3, 130])) for _ in range(2)]) == []
    assert len(reads) == 4                                # each new lengths tensor is read
    with torch.inference_mode():
        lens = torch.tensor([3, 130])
    assert collect(lambda: [call(lens=lens) for _ in range(2)]) == []
    assert len(reads) == 6                                # no version counter: always read
