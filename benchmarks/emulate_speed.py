"""Speed of kvlint.emulate's reference kernels (a script, not a test).

    python benchmarks/emulate_speed.py [--repeat N]

Two workloads, bf16 on the CPU, each timed through the emulated operator (dispatcher, loud
contracts, reference kernel) and as the same math written in plain torch in the same run
(gather the blocks, float32 scaled-dot-product attention):

- a paged decode step: batch 8, 32 query heads, 8 KV heads, head dim 128, 4k context per
  request, block size 128, `npu_fused_infer_attention_score` BNSD query on a (nb, N, bs, D) cache;
- a 2k-token TND prefill: 4 requests of 512 tokens, same heads, right-down causal
  (sparse_mode 3 with the 2048x2048 mask), no cache.

Figures: median and min over the repeats (ms), the ratio emulated / plain, the max abs difference
between the two results, and the load average before and after (a busy machine: rerun).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kvlint.emulate  # noqa: E402

kvlint.emulate.install(force=True)
import torch_npu  # noqa: E402

DT = torch.bfloat16
HEADS, KV_HEADS, DIM = 32, 8, 128
SCALE = DIM ** -0.5


def _time(fn, repeat):
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times), result


def decode_case():
    batch, context, block = 8, 4096, 128
    g = torch.Generator().manual_seed(0)
    blocks_per_request = context // block
    num_blocks = batch * blocks_per_request
    table = torch.randperm(num_blocks, generator=g).to(torch.int32).reshape(batch, blocks_per_request)
    key_cache = torch.randn(num_blocks, KV_HEADS, block, DIM, generator=g).to(DT)
    value_cache = torch.randn(num_blocks, KV_HEADS, block, DIM, generator=g).to(DT)
    query = torch.randn(batch, HEADS, 1, DIM, generator=g).to(DT)
    lengths = [context] * batch

    def emulated():
        return torch_npu.npu_fused_infer_attention_score(
            query, key_cache, value_cache, num_heads=HEADS, num_key_value_heads=KV_HEADS, scale=SCALE,
            input_layout="BNSD", block_table=table, block_size=block, actual_seq_lengths_kv=lengths)[0]

    def plain():
        ids = table.long()
        k = key_cache[ids].permute(0, 2, 1, 3, 4).reshape(batch, KV_HEADS, -1, DIM).float()
        v = value_cache[ids].permute(0, 2, 1, 3, 4).reshape(batch, KV_HEADS, -1, DIM).float()
        return F.scaled_dot_product_attention(query.float(), k, v, scale=SCALE, enable_gqa=True).to(DT)

    return "paged decode (B=8, 32/8 heads, D=128, 4k ctx, bs=128)", emulated, plain


def prefill_case():
    requests, length = 4, 512
    tokens = requests * length
    g = torch.Generator().manual_seed(1)
    query = torch.randn(tokens, HEADS, DIM, generator=g).to(DT)
    key = torch.randn(tokens, KV_HEADS, DIM, generator=g).to(DT)
    value = torch.randn(tokens, KV_HEADS, DIM, generator=g).to(DT)
    ends = [length * (i + 1) for i in range(requests)]
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)

    def emulated():
        return torch_npu.npu_fused_infer_attention_score(
            query, key, value, num_heads=HEADS, num_key_value_heads=KV_HEADS, scale=SCALE, input_layout="TND",
            sparse_mode=3, atten_mask=mask, actual_seq_lengths=ends, actual_seq_lengths_kv=ends)[0]

    def plain():
        outs = []
        for start in range(0, tokens, length):
            q = query[start:start + length].transpose(0, 1).float()
            k = key[start:start + length].transpose(0, 1).float()
            v = value[start:start + length].transpose(0, 1).float()
            outs.append(F.scaled_dot_product_attention(q, k, v, scale=SCALE, is_causal=True,
                                                       enable_gqa=True).transpose(0, 1))
        return torch.cat(outs, 0).to(DT)

    return "TND prefill (2048 tokens = 4 x 512, 32/8 heads, D=128, causal)", emulated, plain


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs; torch "
          f"{torch.__version__}; {torch.get_num_threads()} threads; {args.repeat} repeats; bf16")
    print(f"{'workload':<64} {'emulated ms (median/min)':>26} {'plain torch ms':>18} {'ratio':>7} {'max |diff|':>11}")
    for name, emulated, plain in (decode_case(), prefill_case()):
        e_med, e_min, e_out = _time(emulated, args.repeat)
        p_med, p_min, p_out = _time(plain, args.repeat)
        diff = float((e_out.float() - p_out.float()).abs().max())
        print(f"{name:<64} {e_med:>14.1f} / {e_min:<9.1f} {p_med:>8.1f} / {p_min:<7.1f} {e_med / p_med:>6.2f}x "
              f"{diff:>11.2e}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
