"""KV401's per-call bookkeeping: its lock and layer lookup only for a call passing a tracked
tensor, the lock released when the bookkeeping fails, and the state it keeps unchanged by the
inline unchanged-tensor path (a mutation between layers is still caught after many hits)."""
import threading
import warnings

import torch
import torch_npu

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
