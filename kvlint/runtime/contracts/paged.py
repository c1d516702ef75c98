"""Paged-attention contracts: block_table (dtype, rank, rows, ids), block_size, cache shape vs
block_size, per-request KV lengths. For the FA family (block_table given) and ATB's
_npu_paged_attention (block size = the cache's dim 1)."""
from __future__ import annotations

import torch

from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.contracts import contract
from kvlint.runtime.contracts.fa import fa_view
from kvlint.runtime.data import contracts_data

PAGED_FA_OPS = ("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
                "npu_incre_flash_attention")


def check_table(call: Call, table, batch, block_size, kv_lens_arg, num_blocks) -> None:
    """The checks every paged operator shares. `num_blocks` bounds the ids (None: unknown)."""
    if table.dtype != torch.int32:
        call.fail("KV301", "block_table", "int32", dtype_name(table.dtype),
                  "the operator rejects the table or reads its ids with the wrong width")
        return
    if table.dim() != 2 or (batch is not None and int(table.shape[0]) != batch):
        call.fail("KV310", "block_table", f"2-D with one row per request ({batch}, max_blocks)",
                  shape_of(table), "requests read other requests' blocks")
        return
    kv_lens = call.get(kv_lens_arg)
    if kv_lens is None:
        call.fail("KV302", kv_lens_arg, "the per-request KV lengths (mandatory with a block_table)", "None",
                  "the operator does not know how many cached tokens to read")
        return
    values = call.int_list(kv_lens)
    capacity = int(table.shape[1]) * block_size
    if values is not None:
        if batch is not None and len(values) != batch:
            call.fail("KV314", kv_lens_arg, f"one length per request ({batch})", f"{len(values)} entries",
                      "requests read other requests' lengths")
            return
        bad = [v for v in values if v < 0 or v > capacity]
        if bad:
            call.fail("KV314", kv_lens_arg, f"per-request lengths in [0, block_table.shape[1] * block_size = "
                      f"{capacity}]", str(values), "the paged read runs past the request's blocks "
                      "(cumulative lengths passed where per-request ones are expected?)")
            return
    if num_blocks is not None and call.readable(table) and values is not None:
        for row, kv in zip(table.tolist(), values):
            used = row[: -(-kv // block_size)] if block_size else row
            wrong = [i for i in used if not 0 <= i < num_blocks]
            if wrong:
                call.fail("KV313", "block_table", f"block ids in [0, {num_blocks}) (the cache's blocks)",
                          f"{wrong[:4]}", "the kernel reads (and the writer wrote) memory outside the cache")
                return


@contract(*PAGED_FA_OPS)
def fa_paged(call: Call) -> None:
    view = fa_view(call)
    if view is None or not view.paged:
        return
    data = contracts_data()["fa"]
    bs_arg = view.roles["block_size"]
    bs = view.block_size
    if bs == 0:
        call.fail("KV302", bs_arg, "the cache's block size (mandatory with a block_table)", "0 (the default)",
                  "the operator cannot address the paged cache")
        return
    cache = view.k
    block_axis = data["paged_cache_block_axis"][str(cache.dim())]
    if int(cache.shape[block_axis]) != bs:
        call.fail("KV312", bs_arg, f"the cache's block dimension {int(cache.shape[block_axis])} "
                  f"(dim {block_axis} of {shape_of(cache)})", str(bs),
                  "every block is read with the wrong stride: tokens come from the wrong slots")
        return
    q_seq = view.q_seq if view.q_seq is not None else 2
    if view.head_dim == data["mla_latent_dim"] and view.query_rope is not None:
        ok, expected = bs in data["mla_block_sizes"], f"one of {data['mla_block_sizes']} (MLA, D=512)"
    elif q_seq > 1:
        step = data["prefill_block_multiple"]
        ok = step <= bs <= data["max_block_size"] and bs % step == 0
        expected = f"a multiple of {step} in [{step}, {data['max_block_size']}] (query length > 1)"
    else:
        align = data["decode_block_alignment"].get(dtype_name(view.q.dtype), 16)
        ok = 0 < bs <= data["max_block_size"] and bs % align == 0
        expected = f"a multiple of {align} <= {data['max_block_size']} (decode)"
    if not ok:
        call.fail("KV311", bs_arg, expected, str(bs), "the operator rejects the block size")
        return
    check_table(call, view.block_table, view.batch, bs, view.roles["kv_lens"], int(cache.shape[0]))


@contract("_npu_paged_attention")
def atb_paged(call: Call) -> None:
    roles = contracts_data()["paged_atb"][call.name]
    query, cache, table = call.get(roles["query"]), call.get(roles["cache"]), call.get(roles["block_table"])
    if not all(isinstance(t, torch.Tensor) for t in (query, cache, table)):
        return
    if cache.dim() != 4:
        call.fail("KV312", roles["cache"], "4-D (num_blocks, block_size, kv_heads, head_dim)", shape_of(cache),
                  "the paged read addresses the wrong memory")
        return
    n, kv = int(call.get(roles["num_heads"])), int(call.get(roles["kv_heads"]))
    if query.dim() == 3 and int(query.shape[1]) != n:
        call.fail("KV111", roles["num_heads"], f"the query's head count {int(query.shape[1])}", str(n),
                  "the operator splits the query into the wrong heads")
        return
    if kv <= 0 or n % kv or int(cache.shape[2]) != kv:
        call.fail("KV112", roles["kv_heads"], f"the cache's head count {int(cache.shape[2])}, dividing {n}",
                  str(kv), "grouped-query attention maps query heads to the wrong KV heads")
        return
    check_table(call, table, int(query.shape[0]), int(cache.shape[1]), roles["kv_lens"], int(cache.shape[0]))
