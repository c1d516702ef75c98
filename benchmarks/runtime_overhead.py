"""Per-call overhead of kvlint's runtime guard (a script, not a test).

    PYTHONPATH=fixtures:. python benchmarks/runtime_overhead.py

Times, in one run, each operator unguarded and under `kvlint.patch(checks="meta")` and
`checks="full"`, on tiny CPU tensors through the stand-in torch_npu: FA v1 (paged decode, the
guard's most expensive path), FA's `_get_max_workspace` twin (same arguments and contracts, a
trivial body: the dispatch-only baseline), a cache write, and an unrelated op (torch.add). For
comparison it also times a no-op `torch.overrides.TorchFunctionMode`, the other mechanism
considered. Prints microseconds per call and the ratio to the unguarded call.
"""
from __future__ import annotations

import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "fixtures"), str(ROOT)]

import torch  # noqa: E402

import kvlint  # noqa: E402
import torch_npu  # noqa: E402

torch.set_num_threads(1)
H = torch.float16


def cases():
    q, cache = torch.randn(2, 1, 64).to(H), torch.randn(4, 128, 32).to(H)
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)
    kv_len = torch.tensor([3, 130], dtype=torch.int64)
    fa_kw = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH", block_table=table,
                 block_size=128, actual_seq_lengths_kv=kv_len)
    key, kc = torch.randn(2, 2, 16).to(H), torch.zeros(4, 128, 2, 16, dtype=H)
    vc, slots = kc.clone(), torch.tensor([3, 130], dtype=torch.int32)
    a, b = torch.ones(4), torch.ones(4)
    ws = torch.ops.npu._npu_fused_infer_attention_score_get_max_workspace
    return {
        "npu_fused_infer_attention_score (paged decode)": lambda: torch_npu.npu_fused_infer_attention_score(
            q, cache, cache, **fa_kw),
        "_npu_fused_infer_attention_score_get_max_workspace": lambda: ws(q, cache, cache, **fa_kw),
        "npu_scatter_pa_kv_cache": lambda: torch_npu.npu_scatter_pa_kv_cache(key, key, kc, vc, slots,
                                                                             cache_mode="Norm"),
        "torch.add (unrelated)": lambda: torch.add(a, b),
    }


def per_call(fn, number):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


class NoOpMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def main() -> None:
    rows = []
    for name, fn in cases().items():
        number = 200 if "paged" in name else 2000
        base = per_call(fn, number)
        timings = {"unguarded": base}
        for checks in ("meta", "full"):
            with kvlint.patch(mode="raise", checks=checks):
                timings[checks] = per_call(fn, number)
        with NoOpMode():
            timings["TorchFunctionMode"] = per_call(fn, number)
        rows.append((name, timings))
    print(f"{'operator':52} {'unguarded':>10} {'meta':>16} {'full':>16} {'no-op TorchFunctionMode':>24}")
    for name, t in rows:
        base = t["unguarded"]
        cells = [f"{t[k]:7.1f}us {t[k] / base:5.2f}x" for k in ("meta", "full", "TorchFunctionMode")]
        print(f"{name:52} {base:8.1f}us {cells[0]:>16} {cells[1]:>16} {cells[2]:>24}")
    print("\nmeta/full columns: per-call time with kvlint.patch() active, and its ratio to the unguarded call.")


if __name__ == "__main__":
    main()
