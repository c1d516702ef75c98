"""KV401's per-call bookkeeping: its lock and layer lookup only for a call passing a tracked
tensor, the lock released when the bookkeeping fails, and the state it keeps unchanged by the
inline unchanged-tensor path (a mutation between layers is still caught after many hits)."""
import threading
import warnings

import torch
import torch_npu
from hypothesis import given, settings
from hypothesis import strategies as st

import kvlint
from kvlint.runtime.families.kvlen import contracts as kvlen

H = torch.float16


class _CountingLock:
    def __init__(self):
        self.lock, self.acquired, self.released = threading.Lock(), 0, 0

    def acquire(self, *args):
        self.acquired += 1
        return self.lock.acquire(*args)

    def release(self):
        self.released += 1
        self.lock.release()

    def __enter__(self):  # kvlen.reset(), when the guard comes off
        self.lock.acquire()

    def __exit__(self, *exc):
        self.lock.release()


def _fa(cache, **extra):
    q = torch.randn(2, 1, 64).to(H)
    return torch_npu.npu_fused_infer_attention_score(q, cache, cache, num_heads=4, num_key_value_heads=2,
                                                     scale=0.25, input_layout="BSH", **extra)


def test_lock_only_for_a_call_passing_a_tracked_tensor(monkeypatch, collect):
    lock = _CountingLock()
    monkeypatch.setattr(kvlen, "_lock", lock)
    dense = torch.randn(2, 8, 32).to(H)
    assert collect(lambda: _fa(dense)) == []  # no length tensor, no table: KV401 has nothing to track
    assert (lock.acquired, lock.released) == (0, 0)
    assert collect(lambda: _fa(dense, actual_seq_lengths_kv=[8, 8])) == []  # a list: not a tensor either
    assert (lock.acquired, lock.released) == (0, 0)
    assert collect(lambda: _fa(dense, actual_seq_lengths_kv=torch.tensor([8, 8]))) == []
    assert (lock.acquired, lock.released) == (1, 1)


def test_lock_released_when_the_bookkeeping_fails(monkeypatch):
    def broken(*args):
        raise ValueError("broken state")
    monkeypatch.setattr(kvlen, "_observe", broken)
    kvlen.reset()
    dense = torch.randn(2, 8, 32).to(H)
    with kvlint.patch(mode="raise"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fa(dense, actual_seq_lengths_kv=torch.tensor([8, 8]))
    assert any("kv_len_discipline" in str(w.message) for w in caught)  # reported as a crash, the call ran
    assert kvlen._lock.acquire(blocking=False)  # and the lock is free
    kvlen._lock.release()


def test_mutation_caught_after_many_unchanged_hits(collect):
    caches = [torch.randn(4, 128, 32).to(H) for _ in range(3)]
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)
    kv_len = torch.tensor([3, 5])

    def step(bump_after=None):
        for i, cache in enumerate(caches):
            _fa(cache, block_table=table, block_size=128, actual_seq_lengths_kv=kv_len)
            if i == bump_after:
                kv_len.add_(1)
    assert collect(lambda: [step() for _ in range(5)]) == []  # every layer after the first: the inline path
    kv_len.add_(1)                                             # between steps: fine
    assert collect(step) == []
    assert collect(lambda: step(bump_after=0)) == ["KV401"]   # inside a step: caught


# ------------------------------------------------------------------ the generated discipline vs the plain rule
class _Reference:
    """KV401's rule written plainly: per tracked argument, the tensor last seen (identity, data
    pointer, version) and the layers that saw that version; a layer seen again starts a new step;
    a new version seen by a layer that has not run yet in this step is a mutation."""

    def __init__(self):
        self.state = {}

    def call(self, layer, tensors):
        mutated = []
        for arg, tensor in tensors.items():
            if not isinstance(tensor, torch.Tensor):
                continue
            version, pointer = tensor._version, tensor.data_ptr()
            seen = self.state.get(arg)
            if seen is None or seen[0] is not tensor or seen[1] != pointer:
                self.state[arg] = [tensor, pointer, version, {layer}]
                continue
            layers = seen[3]
            changed = version != seen[2]
            seen[2] = version
            if layer in layers:
                layers.clear()
            elif changed:
                mutated.append(arg)
            layers.add(layer)
        return mutated


_which = st.sampled_from([0, 0, 0, 1, None, "list"])
_events = st.lists(st.one_of(
    # a forward step: layers 0, 1, 2 with the same tensors, one of them bumped after one layer
    st.tuples(st.just("step"), _which, st.sampled_from([0, 0, 1]), st.sampled_from([None, None, 0, 1, 2]),
              st.sampled_from(["kv", "table"])),
    st.tuples(st.just("call"), st.integers(0, 2), _which, st.integers(0, 1)),
    st.tuples(st.just("bump"), st.sampled_from(["kv", "table"]), st.integers(0, 1)),
    st.tuples(st.just("new"), st.sampled_from(["kv", "table"]), st.integers(0, 1))), min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(_events)
def test_property_generated_discipline_follows_the_plain_rule(events):
    """Layers (their own caches), length tensors and tables passed, bumped in place and replaced
    in any order: KV401 (its generated code, the paged memo's shared reads, cache hits) reports
    what the plain rule reports."""
    from kvlint.runtime import check_call

    kvlen.reset()
    caches = [torch.zeros(4, 128, 32, dtype=H) for _ in range(3)]
    pool = {"kv": [torch.tensor([3, 5]) for _ in range(2)],
            "table": [torch.arange(4, dtype=torch.int32).reshape(2, 2) for _ in range(2)]}
    reference = _Reference()
    calls = []
    for event in events:
        if event[0] == "step":
            _, kv, table, after, what = event
            for layer in range(3):
                calls.append((layer, kv, table))
                if layer == after:
                    calls.append(("bump", what, table if what == "table" else kv if isinstance(kv, int) else 0))
        elif event[0] == "call":
            calls.append(event[1:])
        else:
            calls.append(event)
    for event in calls:
        if event[0] == "bump":
            pool[event[1]][event[2]].add_(0)  # a new version, the same values
            continue
        if event[0] == "new":
            pool[event[1]][event[2]] = pool[event[1]][event[2]].clone()
            continue
        layer, kv, table = event
        lens = [3, 5] if kv == "list" else None if kv is None else pool["kv"][kv]
        args = dict(query=torch.zeros(2, 1, 64, dtype=H), key=caches[layer], value=caches[layer], num_heads=4,
                    num_key_value_heads=2, scale=0.25, input_layout="BSH", block_table=pool["table"][table],
                    block_size=128, actual_seq_lengths_kv=lens)
        found = [f.argument for f in check_call("npu_fused_infer_attention_score", args, stateful=True)
                 if f.code == "KV401"]
        expected = reference.call(caches[layer].data_ptr(), {"actual_seq_lengths_kv": lens,
                                                              "block_table": pool["table"][table]})
        assert found == expected, event
