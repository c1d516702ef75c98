"""Per-call overhead of kvlint's runtime guard (a script, not a test).

    python benchmarks/runtime_overhead.py [--rounds N] [--number N]

Times each operator on tiny CPU tensors through kvlint.emulate's torch_npu: unguarded, under
`kvlint.patch(checks="meta")` and under `checks="full"`, and, for comparison, under a no-op
`torch.overrides.TorchFunctionMode` (the other mechanism considered). Cases: FA v1 (paged
decode, the guard's most expensive path), FA's `_get_max_workspace` twin (same arguments and
contracts, a trivial body: the dispatch-only baseline the issue's target is about), a cache
write (slot values are read: host tensors), and an unrelated op (torch.add).

The four variants are measured in turn within each round, so a change in machine load hits
them alike; the figures are medians over the rounds (µs per call), the ratios are median /
median(unguarded), and "added" is the median of the per-round differences to the unguarded
call. The load average is printed before and after: on a busy machine, rerun.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

import kvlint  # noqa: E402
import kvlint.emulate  # noqa: E402

kvlint.emulate.install(force=True)
import torch_npu  # noqa: E402

torch.set_num_threads(1)
H = torch.float16
VARIANTS = ("unguarded", "meta", "full", "TorchFunctionMode")


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
    return {  # name: (callable, calls per timing)
        "npu_fused_infer_attention_score (paged decode)": (lambda: torch_npu.npu_fused_infer_attention_score(
            q, cache, cache, **fa_kw), 100),
        "_npu_fused_infer_attention_score_get_max_workspace": (lambda: ws(q, cache, cache, **fa_kw), 1000),
        "npu_scatter_pa_kv_cache": (lambda: torch_npu.npu_scatter_pa_kv_cache(key, key, kc, vc, slots,
                                                                              cache_mode="Norm"), 500),
        "torch.add (unrelated)": (lambda: torch.add(a, b), 5000),
    }


class NoOpMode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def per_call(fn, number: int, variant: str) -> float:
    """µs per call of `fn` under `variant` (best of 3 timings of `number` calls)."""
    if variant == "unguarded":
        context = contextlib.nullcontext()
    elif variant == "TorchFunctionMode":
        context = NoOpMode()
    else:
        context = kvlint.patch(mode="raise", checks=variant)
    with context:
        fn()
        return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def measure(fn, number: int, rounds: int):
    samples = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            samples[variant].append(per_call(fn, number, variant))
    return samples


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="rounds per operator (default 11)")
    parser.add_argument("--number", type=float, default=1.0, help="scale the calls per timing")
    options = parser.parse_args(argv)
    load_before = os.getloadavg()
    print(f"load average (1/5/15 min): {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"{os.cpu_count()} CPUs; torch {torch.__version__}; {options.rounds} rounds, medians in µs per call")
    header = (f"{'operator':52} {'unguarded':>9} {'meta':>8} {'ratio':>6} {'added':>7} {'full':>8} {'ratio':>6} "
              f"{'added':>7} {'TorchFunctionMode':>18}")
    print(header)
    for name, (fn, number) in cases().items():
        samples = measure(fn, max(1, int(number * options.number)), options.rounds)
        median = {v: statistics.median(s) for v, s in samples.items()}
        base = median["unguarded"]

        def added(variant, samples=samples):
            return statistics.median(x - b for x, b in zip(samples[variant], samples["unguarded"]))
        tfm = median["TorchFunctionMode"]
        print(f"{name:52} {base:9.1f} {median['meta']:8.1f} {median['meta'] / base:5.2f}x {added('meta'):+7.1f} "
              f"{median['full']:8.1f} {median['full'] / base:5.2f}x {added('full'):+7.1f} "
              f"{tfm:9.1f} {tfm / base:5.2f}x")
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print("ratio: median / median(unguarded); added: median of the per-round differences to the unguarded call.")


if __name__ == "__main__":
    main()
