"""Paged-attention contracts: block_table (dtype, rank, rows, ids), block_size, cache shape vs
block_size, per-request KV lengths. For the FA family (block_table given) and ATB's
_npu_paged_attention (block size = the cache's dim 1)."""
from __future__ import annotations

import weakref
from itertools import chain

import torch

from kvlint.facts import load_facts
from kvlint.runtime.call import SMALL, Call, dtype_name, shape_of
from kvlint.runtime.families.fa import contracts as fa  # noqa: F401  (fa_view, which sets call.view, registers first)
from kvlint.runtime.registry import contract

FACTS = load_facts()
PAGED_FA_OPS = FACTS.family("paged_readers")
FA = FACTS.fa
BLOCK_SIZE = FA.block_size
BLOCK_AXIS = dict(FA.paged_cache_block_axis)
_Tensor = torch.Tensor
_chain = chain.from_iterable
SLIDING_MODE = FACTS.table("fa_contracts")["mla"]["sliding_mode"]
_BLOCK_SIZE_OK: set = set()  # (block_size, prefill, mla, query dtype) found allowed


def check_table(call: Call, table, batch, block_size, kv_lens_arg, num_blocks, exact: bool = True) -> None:
    """The checks every paged operator shares: `table_form`, then `table_values`."""
    if table_form(call, table, batch, kv_lens_arg, exact):
        table_values(call, table, batch, block_size, kv_lens_arg, num_blocks, exact)


def table_form(call: Call, table, batch, kv_lens_arg, exact: bool = True) -> bool:
    """The table's dtype and rows, and the KV lengths given: shape-only. False when reported.
    `exact`: one table row and one KV length per request (FA in TND, ATB); otherwise the table
    may have more rows than requests and the length list more entries, or one for all (FIA
    tiling_check_consistency.cpp CheckBlockTable, CheckActualSeqLensKv)."""
    if table.dtype != torch.int32:
        call.fail("KV301", "block_table", "int32", dtype_name(table.dtype),
                  "the operator rejects the table or reads its ids with the wrong width")
        return False
    rows = int(table.shape[0]) if table.dim() else 0
    if table.dim() != 2 or (batch is not None and (rows != batch if exact else rows < batch)):
        per = "one row per request" if exact else "at least one row per request"
        call.fail("KV310", "block_table", f"2-D with {per} ({batch}, max_blocks)",
                  shape_of(table), "requests read other requests' blocks, or rows past the table")
        return False
    if call.get(kv_lens_arg) is None:
        call.fail("KV302", kv_lens_arg, "the per-request KV lengths (mandatory with a block_table)", "None",
                  "the operator does not know how many cached tokens to read")
        return False
    return True


def table_values(call: Call, table, batch, block_size, kv_lens_arg, num_blocks, exact: bool = True,
                 params=None) -> None:
    """The KV lengths and the block ids the requests use (`num_blocks` bounds the ids; None:
    unknown). Read once per decode step: the last verdict is kept per parameters (_VERIFIED;
    `params`: that key, when the caller has it)."""
    kv_lens = call.get(kv_lens_arg)
    if params is None:
        params = (call.name, kv_lens_arg, batch, block_size, num_blocks, exact, call.full)
    seen = _VERIFIED.get(params)
    if seen is not None and _unchanged(seen, table, kv_lens):
        return  # the same table and lengths, unchanged since they passed (the other layers of a step)
    values = call.int_list(kv_lens)
    if values is None:
        return
    before = len(call.findings)
    _check_values(call, table, values, batch, block_size, kv_lens_arg, num_blocks, exact)
    if len(call.findings) == before and call.readable(table) and call.readable(kv_lens):
        state = _state(table, kv_lens)  # only a verdict on values actually read
        if state is not None:
            _VERIFIED[params] = state


# The last verdict per (operator, argument, parameters): the table and length tensors (by weak
# reference, so a new tensor reusing a dead one's id never matches) at their versions and data
# pointers. The layers of one decode step pass the very same table and lengths: their values
# are read once per step.
_VERIFIED: dict = {}


def _state(table, kv_lens):
    if type(kv_lens) is not _Tensor or type(table) is not _Tensor:
        return None
    try:
        return (weakref.ref(table), weakref.ref(kv_lens), table._version, kv_lens._version,
                table.data_ptr(), kv_lens.data_ptr())
    except (RuntimeError, TypeError):  # inference tensors have no version counter: always read
        return None


def _unchanged(seen, table, kv_lens) -> bool:
    return (seen[0]() is table and seen[1]() is kv_lens and seen[2] == table._version
            and seen[3] == kv_lens._version and seen[4] == table.data_ptr() and seen[5] == kv_lens.data_ptr())


def _check_values(call: Call, table, values, batch, block_size, kv_lens_arg, num_blocks, exact) -> None:
    capacity = int(table.shape[1]) * block_size
    if batch is not None and (len(values) != batch if exact else len(values) < batch and len(values) != 1):
        expected = f"one length per request ({batch})" if exact else f"1 or >= batch ({batch}) entries"
        call.fail("KV314", kv_lens_arg, expected, f"{len(values)} entries", "requests read other requests' lengths")
        return
    if batch is not None and len(values) > batch:
        values = values[:batch]  # entries past the batch are not read
    elif batch and len(values) == 1:
        values = values * batch  # one length for every request
    if values and (min(values) < 0 or max(values) > capacity):
        call.fail("KV314", kv_lens_arg, f"per-request lengths in [0, block_table.shape[1] * block_size = "
                  f"{capacity}]", str(values), "the paged read runs past the request's blocks "
                  "(cumulative lengths passed where per-request ones are expected?)")
        return
    if num_blocks is not None and call.readable(table):
        wrong = _used_ids_outside(table, values, block_size, num_blocks)
        if wrong:
            call.fail("KV313", "block_table", f"block ids in [0, {num_blocks}) (the cache's blocks)",
                      f"{wrong[:4]}", "the kernel reads (and the writer wrote) memory outside the cache")


def _used_ids_outside(table, kv_lens, block_size, num_blocks):
    """The block ids a request uses (its first ceil(kv_len / block_size) entries) that are not in
    [0, num_blocks), in row order; only the first row holding one. Unused entries may be padding."""
    if table.is_cpu and table.numel() <= SMALL:
        rows = table.tolist()
        if not rows or not rows[0] or (min(_chain(rows)) >= 0 and max(_chain(rows)) < num_blocks):
            return []  # every entry (used or not) is valid: the common case
        for row, kv in zip(rows, kv_lens):
            used = row[: -(-kv // block_size)] if block_size else row
            wrong = [i for i in used if not 0 <= i < num_blocks]
            if wrong:
                return wrong
        return []
    rows = min(len(kv_lens), int(table.shape[0]))
    if not rows or not table.shape[1]:
        return []
    table = table[:rows]
    lo, hi = torch.aminmax(table)
    if int(lo) >= 0 and int(hi) < num_blocks:
        return []  # one reduction answers the common case: every entry (used or not) is valid
    if block_size:
        used = torch.tensor([-(-kv // block_size) for kv in kv_lens[:rows]], device=table.device)
        used = torch.arange(table.shape[1], device=table.device) < used[:, None]
    else:
        used = torch.ones_like(table, dtype=torch.bool)
    bad = used & ((table < 0) | (table >= num_blocks))
    if not bool(bad.any()):
        return []
    row = int(bad.any(dim=1).nonzero()[0])
    return table[row][bad[row]].tolist()


@contract(*PAGED_FA_OPS, pure=True)
def fa_paged(call: Call) -> None:
    """Block size, the cache's block dimension, the table's form (shape-only); its values:
    fa_paged_values."""
    view = call.view
    if view is None or not view.paged or view.cache_broken:
        return
    bs_arg = view.roles.block_size
    bs = view.block_size
    if bs == 0:
        call.fail("KV302", bs_arg, "the cache's block size (mandatory with a block_table)", "0 (the default)",
                  "the operator cannot address the paged cache")
        return
    cache = view.k
    block_axis = BLOCK_AXIS[cache.dim()]
    cache_shape = cache.shape
    if int(cache_shape[block_axis]) != bs:
        call.fail("KV312", bs_arg, f"the cache's block dimension {int(cache_shape[block_axis])} "
                  f"(dim {block_axis} of {shape_of(cache)})", str(bs),
                  "every block is read with the wrong stride: tokens come from the wrong slots")
        return
    q_seq = view.q_seq if view.q_seq is not None else 2
    mla = view.head_dim == FA.mla_latent_dim and view.query_rope is not None
    if mla and view.sparse == SLIDING_MODE:
        mla = None  # sliding attention: its block sizes are checked with its other rules (fa contracts)
    key = (bs, q_seq > 1, mla, view.q.dtype)
    if key not in _BLOCK_SIZE_OK:
        rule = {"prefill": q_seq > 1, "mla": mla, "dtype": dtype_name(view.q.dtype)}
        if mla is not None and not BLOCK_SIZE.allowed(bs, **rule):
            call.fail("KV311", bs_arg, BLOCK_SIZE.expected(**rule), str(bs), "the operator rejects the block size")
            return
        _BLOCK_SIZE_OK.add(key)
    if table_form(call, view.block_table, view.batch, view.roles.kv_lens, exact=view.tnd):
        params = (call.name, view.roles.kv_lens, view.batch, bs, int(cache_shape[0]), view.tnd)
        view.table_check = (params + (False,), params + (True,))  # the _VERIFIED keys, meta / full


def _paged_values_work(call: Call) -> bool:
    """Has fa_paged_values anything to check (the table's form passed: fa_paged)?"""
    view = call.view
    return view is not None and view.table_check is not None


@contract(*PAGED_FA_OPS, works=_paged_values_work, detached=True)
def fa_paged_values(call: Call) -> None:
    """The KV lengths and used block ids of a paged call whose form passed (fa_paged). Reads its
    tensors from the call's arguments: a cache hit may hand it the verdict's detached view."""
    if not _paged_values_work(call):
        return
    view = call.view
    params = view.table_check[call.full]
    args = call.args
    table, kv_lens = args.get(view.roles.block_table), args.get(params[1])
    seen = _VERIFIED.get(params)
    if seen is not None and seen[0]() is table and seen[1]() is kv_lens:
        stamps = (table, table._version, table.data_ptr(), kv_lens, kv_lens._version, kv_lens.data_ptr())
        if seen[2] == stamps[1] and seen[3] == stamps[4] and seen[4] == stamps[2] and seen[5] == stamps[5]:
            call.stamps = stamps  # read once: KV401 tracks these two tensors too
            return  # table_values' own first test (_unchanged), inline: the hit path of every decode layer
    _, kv_lens_arg, batch, bs, num_blocks, exact, _ = params
    table_values(call, table, batch, bs, kv_lens_arg, num_blocks, exact, params)


@contract("_npu_paged_attention")
def atb_paged(call: Call) -> None:
    roles = FACTS.operator(call.name).roles
    query, cache, table = call.get(roles["query"]), call.get(roles["cache"]), call.get(roles["block_table"])
    if not all(isinstance(t, _Tensor) for t in (query, cache, table)):
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
