"""FA-family contracts: layout vs rank, heads, key/value shapes, contiguity, dtypes, scale,
MLA rope, attention mask (dtype, sparse-mode forms, coverage) and length lists.

`fa_view`, the family's first contract, derives batch, sequence, heads and head size from the
layout once per call (`call.view`); every other check reads it. The operators' keyword names
and limits come from rules/facts/ (kvlint.facts), read once, at import."""
from __future__ import annotations

from typing import Optional

import torch

from kvlint.runtime.call import Call, dtype_name, dtypes as _dtypes, shape_of
from kvlint.runtime.contracts import contract
from kvlint.facts import load_facts

FACTS = load_facts()
FA_OPS = FACTS.family("fa_layout")
DATA = FACTS.fa
LAYOUT_RANK = DATA.layout_rank
LAYOUT_BASE = {layout: layout.split("_")[0] for layout in LAYOUT_RANK}
HEAD_AXIS = DATA.head_axis
QUERY_DTYPES = _dtypes(DATA.query_dtypes)
KV_DTYPES = _dtypes(DATA.kv_dtypes)
MASK_DTYPES = _dtypes(DATA.mask.dtypes)
PAGED_CACHE_RANKS = frozenset(DATA.paged_cache_ranks)
OPTIMIZED_SPARSE_MODES = frozenset(DATA.mask.compressed_modes)
TND_SPARSE_WITH_MASK = frozenset(DATA.mask.tnd_modes_with_mask)
_SQ = "x".join(map(str, DATA.mask.compressed_shapes[0]))   # the compressed mask, for messages
_SHAPES = [tuple(s) for s in DATA.mask.compressed_shapes]
_SHOWN_SHAPES = ", ".join(map(str, _SHAPES[:-1])) + f" or {_SHAPES[-1]}"
_Tensor = torch.Tensor


class Roles:
    """Role -> keyword name of one FA-like operator (rules/facts/operators.toml); None when it
    has no such role. `sparse_modes`: the values the operator accepts."""

    __slots__ = ("num_heads", "kv_heads", "scale", "q_lens", "kv_lens", "sparse_mode", "layout", "mask",
                 "block_table", "block_size", "query_rope", "key_rope", "kv_heads_arg", "mask_arg",
                 "sparse_modes")

    def __init__(self, op):
        for slot in self.__slots__:
            setattr(self, slot, op.keyword(slot))
        self.kv_heads_arg = self.kv_heads or "num_key_value_heads"   # for messages
        self.mask_arg = self.mask or "atten_mask"
        self.sparse_modes = frozenset(op.sparse_modes or ())


ROLES = {name: Roles(FACTS.operator(name)) for name in FA_OPS}


class FaView:
    __slots__ = ("roles", "layout", "base", "q", "k", "v", "num_heads", "kv_heads", "batch", "q_seq",
                 "q_heads", "head_dim", "paged", "tnd", "sparse", "mask", "block_table", "block_size",
                 "query_rope", "key_rope", "scale")


@contract(*FA_OPS)
def fa_view(call: Call) -> None:
    """Sets `call.view`, or leaves it None when the layout/rank is unusable (reported as KV110)."""
    roles = ROLES[call.name]
    args = call.args
    q, k, v = args.get("query"), args.get("key"), args.get("value")
    if not (isinstance(q, _Tensor) and isinstance(k, _Tensor) and isinstance(v, _Tensor)):
        return  # tensor lists / odd inputs: the dispatcher reports those itself
    layout = args.get(roles.layout, "BSH") if roles.layout else "BSH"
    rank = LAYOUT_RANK.get(layout)
    if rank is None:
        call.fail("KV110", roles.layout, f"one of {', '.join(LAYOUT_RANK)}", repr(layout),
                  "the operator rejects the call")
        return
    view = FaView()
    view.roles, view.q, view.k, view.v, view.layout = roles, q, k, v, layout
    view.base = base = LAYOUT_BASE[layout]
    view.tnd = base in ("TND", "NTD")
    view.block_table = table = args.get(roles.block_table) if roles.block_table else None
    view.paged = paged = isinstance(table, _Tensor)
    if q.dim() != rank:
        call.fail("KV110", "query", f"{rank}-D for input_layout {layout!r}", f"{q.dim()}-D {shape_of(q)}",
                  "the operator errors out, or reads the axes in the wrong order")
        return
    if paged:
        if k.dim() not in PAGED_CACHE_RANKS:
            call.fail("KV110", "key", "a 3-D (nb,bs,H), 4-D (nb,N,bs,D) or 5-D NZ paged cache",
                      f"{k.dim()}-D {shape_of(k)}", "the paged read addresses the wrong memory")
            return
    else:
        for name, t in (("key", k), ("value", v)):
            if t.dim() != rank:
                call.fail("KV110", name, f"{rank}-D like the query (input_layout {layout!r})",
                          f"{t.dim()}-D {shape_of(t)}", "the operator errors out or mixes up axes")
                return
    view.num_heads = n = int(args.get(roles.num_heads, 1))
    view.kv_heads = int((args.get(roles.kv_heads) if roles.kv_heads else 0) or 0)
    qs = q.shape
    axis = HEAD_AXIS.get(base)
    view.q_heads = int(qs[axis]) if axis is not None else None
    if base == "BSH":
        view.batch, view.q_seq = int(qs[0]), int(qs[1])
        view.head_dim = int(qs[2]) // n if n > 0 and qs[2] % n == 0 else None
    elif base == "BSND":
        view.batch, view.q_seq, view.head_dim = int(qs[0]), int(qs[1]), int(qs[3])
    elif base == "BNSD":
        view.batch, view.q_seq, view.head_dim = int(qs[0]), int(qs[2]), int(qs[3])
    elif base == "NSD":
        view.batch, view.q_seq, view.head_dim = 1, int(qs[1]), int(qs[2])
    else:  # TND / NTD: batch from the length list
        q_lens = args.get(roles.q_lens) if roles.q_lens else None
        view.batch = len(q_lens) if q_lens is not None and not isinstance(q_lens, _Tensor) else (
            int(q_lens.numel()) if isinstance(q_lens, _Tensor) else None)
        view.q_seq, view.head_dim = None, int(qs[2])
    get = call.get
    view.sparse = int(get(roles.sparse_mode, 0) or 0)
    view.mask = get(roles.mask)
    view.block_size = int(get(roles.block_size, 0) or 0)
    view.query_rope, view.key_rope = get(roles.query_rope), get(roles.key_rope)
    view.scale = get(roles.scale)
    call.view = view


_KV_SEQ_AXIS = {"BSH": 1, "BSND": 1, "BNSD": 2, "NSD": 1}


def kv_seq(view: FaView) -> Optional[int]:
    """KV sequence length a mask must cover: the key's S, or table width * block_size (paged)."""
    if view.paged:
        if view.block_table.dim() == 2 and view.block_size:
            return int(view.block_table.shape[1]) * view.block_size
        return None
    axis = _KV_SEQ_AXIS.get(view.base)
    return int(view.k.shape[axis]) if axis is not None else None


@contract(*FA_OPS)
def heads(call: Call) -> None:
    view = call.view
    if view is None:
        return
    roles, n = view.roles, view.num_heads
    name = roles.num_heads
    if n <= 0:
        call.fail("KV111", name, "> 0", str(n), "the operator rejects the call")
        return
    if view.q_heads is not None and view.q_heads != n:
        if not call.passed(name):
            call.fail("KV104", name, f"the query's head count {view.q_heads} (input_layout {view.layout!r})",
                      f"the default {n} (not passed)", "attention runs as if there were one head")
        else:
            call.fail("KV111", name, f"the query's head count {view.q_heads} (input_layout {view.layout!r})",
                      str(n), "the operator splits the query into the wrong heads")
        return
    base = view.base
    if base == "BSH" and view.q.shape[2] % n:
        call.fail("KV111", name, f"a divisor of the query's hidden size {int(view.q.shape[2])}", str(n),
                  "the operator cannot split H into heads")
        return
    kv = view.kv_heads or n
    group = DATA.max_group
    if n % kv or n // kv > group:
        call.fail("KV112", roles.kv_heads_arg, f"a divisor of {name}={n} with {name}/kv_heads <= {group}", str(kv),
                  "grouped-query attention maps query heads to the wrong KV heads")
        return
    k = view.k
    if view.paged:
        if view.query_rope is None and k.dim() == 4 and int(k.shape[1]) != kv:
            call.fail("KV112", roles.kv_heads_arg,
                      f"the paged cache's head count {int(k.shape[1])} (cache (nb,N,bs,D))", str(kv),
                      "the paged read strides over the wrong heads")
        return
    if base == "BSH":
        if view.head_dim and view.query_rope is None and int(k.shape[2]) != kv * view.head_dim:
            call.fail("KV112", roles.kv_heads_arg,
                      f"key hidden size / head dim = {int(k.shape[2]) / view.head_dim:g}", str(kv),
                      "the key is split into the wrong number of heads")
        return
    axis = HEAD_AXIS.get(base)
    if axis is not None and int(k.shape[axis]) != kv:
        call.fail("KV112", roles.kv_heads_arg, f"the key's head count {int(k.shape[axis])}", str(kv),
                  "grouped-query attention maps query heads to the wrong KV heads")


@contract(*FA_OPS)
def key_value_shapes(call: Call) -> None:
    view = call.view
    if view is None:
        return
    q, k, v = view.q, view.k, view.v
    rope = view.query_rope
    mla = rope is not None or (view.head_dim == DATA.mla_latent_dim)
    if not mla and k.shape != v.shape:
        call.fail("KV113", "value", f"the key's shape {shape_of(k)}", shape_of(v),
                  "the operator errors out or reads past the value tensor")
        return
    if view.paged or view.tnd:
        if view.tnd and rope is None and int(k.shape[2]) != int(q.shape[2]):
            call.fail("KV113", "key", f"head dim {int(q.shape[2])} like the query", str(int(k.shape[2])),
                      "Q.K^T is undefined")
        return
    qs, ks = q.shape, k.shape
    if int(ks[0]) != int(qs[0]):
        call.fail("KV113", "key", f"batch {int(qs[0])} like the query", str(int(ks[0])),
                  "requests attend to other requests' keys")
    elif view.base in ("BSND", "BNSD") and rope is None and int(ks[3]) != int(qs[3]):
        call.fail("KV113", "key", f"head dim {int(qs[3])} like the query", str(int(ks[3])),
                  "Q.K^T is undefined")


@contract(*FA_OPS)
def contiguity(call: Call) -> None:
    view = call.view
    if view is None:
        return
    m, qr, kr = view.mask, view.query_rope, view.key_rope
    if (view.q.is_contiguous() and view.k.is_contiguous() and view.v.is_contiguous()
            and (m is None or not isinstance(m, _Tensor) or m.is_contiguous())
            and (qr is None or not isinstance(qr, _Tensor) or qr.is_contiguous())
            and (kr is None or not isinstance(kr, _Tensor) or kr.is_contiguous())):
        return
    for name, t in (("query", view.q), ("key", view.k), ("value", view.v), (view.roles.mask_arg, view.mask),
                    ("query_rope", view.query_rope), ("key_rope", view.key_rope)):
        if isinstance(t, _Tensor) and not t.is_contiguous():
            call.fail("KV114", name, "contiguous", f"strides {tuple(t.stride())} for shape {shape_of(t)}",
                      "the kernel reads memory in storage order, i.e. the wrong elements")
            return


@contract(*FA_OPS)
def dtypes(call: Call) -> None:
    view = call.view
    if view is None:
        return
    q, k, v = view.q, view.k, view.v
    qd, kd = q.dtype, k.dtype
    if qd not in QUERY_DTYPES:
        call.fail("KV115", "query", " or ".join(DATA.query_dtypes), dtype_name(qd),
                  "the operator rejects the dtype")
        return
    for name, t in (("key", k), ("value", v)):
        if t.dtype not in KV_DTYPES:
            call.fail("KV115", name, " or ".join(DATA.kv_dtypes), dtype_name(t.dtype),
                      "the operator rejects the dtype")
            return
    if kd != qd and q.is_floating_point() and k.is_floating_point():
        call.fail("KV115", "key", f"{dtype_name(qd)} like the query", dtype_name(kd),
                  "mixed floating dtypes are not supported")
    elif qd == torch.int8 and view.paged:
        call.fail("KV115", "query", "float16 or bfloat16 with a block_table (paged attention)", "int8",
                  "paged attention does not take an int8 query")


@contract(*FA_OPS)
def scale(call: Call) -> None:
    view = call.view
    if view is None or view.scale is None:
        return
    if float(view.scale) == 1.0 and (view.head_dim or 0) > 1:
        name = view.roles.scale
        call.fail("KV103", name, f"1/sqrt(head_dim) = {view.head_dim ** -0.5:.4g}",
                  "1.0" + ("" if call.passed(name) else " (the default)"),
                  "scores are not scaled: softmax is far too sharp", severity="warning")


@contract("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2")
def mla_rope(call: Call) -> None:
    view = call.view
    if view is None:
        return
    qr, kr = view.query_rope, view.key_rope
    if qr is None and kr is None:
        return
    if (qr is None) != (kr is None):
        given, missing = ("query_rope", "key_rope") if qr is not None else ("key_rope", "query_rope")
        call.fail("KV510", missing, f"passed together with {given}", "None",
                  "the rope half of the scores is dropped or the operator errors out")
        return
    for name, t in (("query_rope", qr), ("key_rope", kr)):
        if int(t.shape[-1]) != DATA.mla_rope_dim:
            call.fail("KV510", name, f"head dim {DATA.mla_rope_dim}", str(int(t.shape[-1])),
                      "the operator rejects the call")
            return
    d = view.head_dim
    if d not in DATA.mla_query_dims:
        call.fail("KV510", "query", f"head dim in {list(DATA.mla_query_dims)} with rope", str(d),
                  "the MLA kernel does not exist for this size")
        return
    if d == DATA.mla_latent_dim:
        kv = view.kv_heads or view.num_heads
        if kv != 1:
            call.fail("KV510", view.roles.kv_heads, "1 for the 512-wide latent (MLA absorb)", str(kv),
                      "the operator rejects the call")
        elif not view.paged:
            call.fail("KV510", "block_table", "a paged cache for the 512-wide latent (MLA absorb)", "None",
                      "the operator rejects the call")


# ------------------------------------------------------------------------------ mask
@contract(*FA_OPS)
def mask(call: Call) -> None:
    view = call.view
    if view is None:
        return
    roles = view.roles
    m, sparse = view.mask, view.sparse
    if m is None and sparse == 0 and not view.tnd:
        return  # the common no-mask call: nothing below applies
    name = roles.mask_arg
    if roles.sparse_mode and sparse not in roles.sparse_modes:
        call.fail("KV213", roles.sparse_mode, f"one of {sorted(roles.sparse_modes)}", str(sparse),
                  f"{call.name} does not implement it and errors out")
        return
    if m is not None and m.dtype not in MASK_DTYPES:
        call.fail("KV205", name, " or ".join(DATA.mask.dtypes), dtype_name(m.dtype),
                  "a float mask is rejected (or, in older builds, misread as a boolean one)")
        return
    if view.tnd and roles.sparse_mode:
        if (m is None and sparse != 0) or (m is not None and sparse not in TND_SPARSE_WITH_MASK):
            call.fail("KV212", "sparse_mode", f"0 without atten_mask, or {'/'.join(map(str, sorted(TND_SPARSE_WITH_MASK)))} with the {_SQ} mask (TND)",
                      f"{sparse} {'without' if m is None else 'with'} a mask", "TND attention is masked wrongly")
            return
    if sparse in OPTIMIZED_SPARSE_MODES:
        if m is None:
            call.fail("KV201", name, f"the {_SQ} causal mask for sparse_mode={sparse}", "None",
                      "the operator errors out, or attends to future tokens")
        elif not DATA.mask.is_compressed_shape(m.shape):
            call.fail("KV206", name, f"{_SHOWN_SHAPES} for sparse_mode={sparse}", shape_of(m), "the operator errors out or reads the mask out of bounds")
        return
    if m is None or sparse not in (0, 1) or view.tnd:
        return
    q_seq, batch, dims = view.q_seq, view.batch, [int(s) for s in m.shape]
    lead_ok = m.dim() < 3 or dims[0] in (1, batch)
    if m.dim() < 2 or m.dim() > 4 or not lead_ok or (m.dim() == 4 and dims[1] != 1):
        call.fail("KV211", name, "(Q_S,KV_S), (B|1,Q_S,KV_S) or (B|1,1,Q_S,KV_S) (decode also (B,KV_S))",
                  shape_of(m), "the operator applies the mask to the wrong rows, or ignores it")
        return
    decode_2d = m.dim() == 2 and q_seq == 1  # (B, KV_S) or (1, KV_S)
    kv = kv_seq(view)
    if (not decode_2d and dims[-2] < q_seq) or (kv is not None and dims[-1] < kv):
        call.fail("KV210", name, f"last dims covering (Q_S, KV_S) = ({q_seq}, {kv})", shape_of(m),
                  "rows or keys outside the mask are silently left unmasked")


# ------------------------------------------------------------------------------ length lists
@contract(*FA_OPS)
def lengths(call: Call) -> None:
    view = call.view
    if view is None:
        return
    roles = view.roles
    q_arg, kv_arg = roles.q_lens, roles.kv_lens
    if view.tnd:
        _tnd_lengths(call, view, q_arg, kv_arg)
        return
    if view.paged:
        return  # per-batch paged lengths: paged.py
    batch = view.batch
    for arg, is_q in ((q_arg, True), (kv_arg, False)):
        values = call.int_list(call.get(arg))
        if not values:
            continue
        limit = view.q_seq if is_q else kv_seq(view)
        if len(values) != 1 and len(values) < batch:
            call.fail("KV316", arg, f"1 or >= batch ({batch}) entries", f"{len(values)} entries",
                      "requests past the list are computed with garbage lengths")
        elif min(values) < 0:
            call.fail("KV316", arg, "non-negative lengths", str(values), "the operator errors out")
        elif limit is not None and max(values) > limit:
            call.fail("KV316", arg, f"each <= the sequence length {limit}", str(values),
                      "the kernel reads past the end of the sequence")


def _tnd_lengths(call: Call, view: FaView, q_arg, kv_arg) -> None:
    total_q = int(view.q.shape[0] if view.base == "TND" else view.q.shape[1])
    for arg, total, cumulative in ((q_arg, total_q, True), (kv_arg, None, not view.paged)):
        if not arg:
            continue
        raw = call.get(arg)
        if raw is None:
            call.fail("KV315", arg, "a length list (mandatory for input_layout TND)", "None",
                          "the operator cannot split the packed tokens into requests")
            return
        values = call.int_list(raw)
        if values is None:
            continue
        if not values or min(values) < 0:
            call.fail("KV315", arg, "non-negative entries", str(values), "the operator errors out")
            return
        if cumulative:
            if any(b < a for a, b in zip(values, values[1:])):
                call.fail("KV315", arg, "cumulative (non-decreasing) end offsets for TND",
                              str(values), "requests are cut at the wrong tokens: per-request lengths are "
                              "read as offsets")
                return
            if total is None and not view.paged:
                total = int(view.k.shape[0] if view.base == "TND" else view.k.shape[1])
            if total is not None and values[-1] != total:
                call.fail("KV315", arg, f"a last entry equal to the token count {total}",
                              str(values[-1]), "tokens past the last offset are never attended / read")
                return
