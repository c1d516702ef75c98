"""FA-family contracts: layout vs rank, heads, key/value shapes, contiguity, dtypes, scale,
MLA rope, attention mask (dtype, sparse-mode forms, coverage) and length lists.

One `FaView` per call derives batch, sequence, heads and head size from the layout; every check
reads it. The operators' keyword names come from rules/contracts.toml ([fa.ops.*])."""
from __future__ import annotations

from typing import Optional

import torch

from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.contracts import contract
from kvlint.runtime.data import contracts_data

FA_OPS = ("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
          "npu_incre_flash_attention", "npu_prompt_flash_attention", "npu_fusion_attention")
INT_MAX = 2147483647


def _data():
    return contracts_data()["fa"]


class FaView:
    __slots__ = ("roles", "layout", "base", "q", "k", "v", "num_heads", "kv_heads", "batch", "q_seq",
                 "q_heads", "head_dim", "paged", "tnd", "sparse", "mask", "block_table", "block_size",
                 "query_rope", "key_rope", "scale")


def fa_view(call: Call) -> Optional[FaView]:
    """The derived view, or None when the layout/rank is unusable (reported as KV110)."""
    if "fa" in call.memo:
        return call.memo["fa"]
    call.memo["fa"] = None
    data = _data()
    roles = data["ops"][call.name]
    view = FaView()
    view.roles = roles
    get = call.get
    view.q, view.k, view.v = get("query"), get("key"), get("value")
    if not all(isinstance(t, torch.Tensor) for t in (view.q, view.k, view.v)):
        return None  # tensor lists / odd inputs: the dispatcher reports those itself
    view.layout = layout = get(roles.get("layout"), "BSH")
    rank = data["layout_rank"].get(layout)
    if rank is None:
        call.fail("KV110", roles["layout"], f"one of {', '.join(data['layout_rank'])}", repr(layout),
                  "the operator rejects the call")
        return None
    view.base = base = layout.split("_")[0]
    view.tnd = base in ("TND", "NTD")
    view.block_table = get(roles.get("block_table"))
    view.paged = isinstance(view.block_table, torch.Tensor)
    q = view.q
    if q.dim() != rank:
        call.fail("KV110", "query", f"{rank}-D for input_layout {layout!r}", f"{q.dim()}-D {shape_of(q)}",
                  "the operator errors out, or reads the axes in the wrong order")
        return None
    if view.paged:
        if view.k.dim() not in data["paged_cache_ranks"]:
            call.fail("KV110", "key", "a 3-D (nb,bs,H), 4-D (nb,N,bs,D) or 5-D NZ paged cache",
                      f"{view.k.dim()}-D {shape_of(view.k)}", "the paged read addresses the wrong memory")
            return None
    else:
        for name, t in (("key", view.k), ("value", view.v)):
            if t.dim() != rank:
                call.fail("KV110", name, f"{rank}-D like the query (input_layout {layout!r})",
                          f"{t.dim()}-D {shape_of(t)}", "the operator errors out or mixes up axes")
                return None
    view.num_heads = int(get(roles["num_heads"], 1))
    view.kv_heads = int(get(roles.get("kv_heads"), 0) or 0)
    axis = data["head_axis"].get(base)
    view.q_heads = int(q.shape[axis]) if axis is not None else None
    if base == "BSH":
        view.batch, view.q_seq = int(q.shape[0]), int(q.shape[1])
        view.head_dim = int(q.shape[2]) // view.num_heads if view.num_heads > 0 and q.shape[2] % view.num_heads == 0 else None
    elif base == "BSND":
        view.batch, view.q_seq, view.head_dim = int(q.shape[0]), int(q.shape[1]), int(q.shape[3])
    elif base == "BNSD":
        view.batch, view.q_seq, view.head_dim = int(q.shape[0]), int(q.shape[2]), int(q.shape[3])
    elif base == "NSD":
        view.batch, view.q_seq, view.head_dim = 1, int(q.shape[1]), int(q.shape[2])
    else:  # TND / NTD: batch from the length list
        q_lens = call.get(roles.get("q_lens"))
        view.batch = len(q_lens) if q_lens is not None and not isinstance(q_lens, torch.Tensor) else (
            int(q_lens.numel()) if isinstance(q_lens, torch.Tensor) else None)
        view.q_seq, view.head_dim = None, int(q.shape[2])
    view.sparse = int(get(roles.get("sparse_mode"), 0) or 0)
    view.mask = get(roles.get("mask"))
    view.block_size = int(get(roles.get("block_size"), 0) or 0)
    view.query_rope, view.key_rope = get(roles.get("query_rope")), get(roles.get("key_rope"))
    view.scale = get(roles.get("scale"))
    call.memo["fa"] = view
    return view


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
    view = fa_view(call)
    if view is None:
        return
    roles, n = view.roles, view.num_heads
    name = roles["num_heads"]
    if n <= 0:
        call.fail("KV111", name, "> 0", str(n), "the operator rejects the call")
        return
    if view.q_heads is not None and view.q_heads != n:
        if name not in call.given:
            call.fail("KV104", name, f"the query's head count {view.q_heads} (input_layout {view.layout!r})",
                      f"the default {n} (not passed)", "attention runs as if there were one head")
        else:
            call.fail("KV111", name, f"the query's head count {view.q_heads} (input_layout {view.layout!r})",
                      str(n), "the operator splits the query into the wrong heads")
        return
    if view.base == "BSH" and view.q.shape[2] % n:
        call.fail("KV111", name, f"a divisor of the query's hidden size {int(view.q.shape[2])}", str(n),
                  "the operator cannot split H into heads")
        return
    kv = view.kv_heads or n
    group = _data()["max_group"]
    if n % kv or n // kv > group:
        call.fail("KV112", roles.get("kv_heads", "num_key_value_heads"),
                  f"a divisor of {name}={n} with {name}/kv_heads <= {group}", str(kv),
                  "grouped-query attention maps query heads to the wrong KV heads")
        return
    k = view.k
    if view.paged:
        if k.dim() == 4 and view.query_rope is None and int(k.shape[1]) != kv:
            call.fail("KV112", roles.get("kv_heads", "num_key_value_heads"),
                      f"the paged cache's head count {int(k.shape[1])} (cache (nb,N,bs,D))", str(kv),
                      "the paged read strides over the wrong heads")
        return
    if view.base in ("BSND", "BNSD", "TND", "NTD", "NSD"):
        axis = _data()["head_axis"][view.base]
        if int(k.shape[axis]) != kv:
            call.fail("KV112", roles.get("kv_heads", "num_key_value_heads"),
                      f"the key's head count {int(k.shape[axis])}", str(kv),
                      "grouped-query attention maps query heads to the wrong KV heads")
    elif view.base == "BSH" and view.head_dim and view.query_rope is None and int(k.shape[2]) != kv * view.head_dim:
        call.fail("KV112", roles.get("kv_heads", "num_key_value_heads"),
                  f"key hidden size / head dim = {int(k.shape[2]) / view.head_dim:g}", str(kv),
                  "the key is split into the wrong number of heads")


@contract(*FA_OPS)
def key_value_shapes(call: Call) -> None:
    view = fa_view(call)
    if view is None:
        return
    q, k, v = view.q, view.k, view.v
    mla = view.query_rope is not None or (view.head_dim == _data()["mla_latent_dim"])
    if not mla and k.shape != v.shape:
        call.fail("KV113", "value", f"the key's shape {shape_of(k)}", shape_of(v),
                  "the operator errors out or reads past the value tensor")
        return
    if view.paged or view.tnd:
        if view.tnd and int(k.shape[2]) != int(q.shape[2]) and view.query_rope is None:
            call.fail("KV113", "key", f"head dim {int(q.shape[2])} like the query", str(int(k.shape[2])),
                      "Q.K^T is undefined")
        return
    if int(k.shape[0]) != int(q.shape[0]):
        call.fail("KV113", "key", f"batch {int(q.shape[0])} like the query", str(int(k.shape[0])),
                  "requests attend to other requests' keys")
    elif view.base in ("BSND", "BNSD") and int(k.shape[3]) != int(q.shape[3]) and view.query_rope is None:
        call.fail("KV113", "key", f"head dim {int(q.shape[3])} like the query", str(int(k.shape[3])),
                  "Q.K^T is undefined")


@contract(*FA_OPS)
def contiguity(call: Call) -> None:
    view = fa_view(call)
    if view is None:
        return
    for name, t in (("query", view.q), ("key", view.k), ("value", view.v),
                    (view.roles.get("mask", "atten_mask"), view.mask),
                    ("query_rope", view.query_rope), ("key_rope", view.key_rope)):
        if isinstance(t, torch.Tensor) and not t.is_contiguous():
            call.fail("KV114", name, "contiguous", f"strides {tuple(t.stride())} for shape {shape_of(t)}",
                      "the kernel reads memory in storage order, i.e. the wrong elements")
            return


@contract(*FA_OPS)
def dtypes(call: Call) -> None:
    view = fa_view(call)
    if view is None:
        return
    data = _data()
    q, k, v = view.q, view.k, view.v
    if dtype_name(q.dtype) not in data["query_dtypes"]:
        call.fail("KV115", "query", " or ".join(data["query_dtypes"]), dtype_name(q.dtype),
                  "the operator rejects the dtype")
        return
    for name, t in (("key", k), ("value", v)):
        if dtype_name(t.dtype) not in data["kv_dtypes"]:
            call.fail("KV115", name, " or ".join(data["kv_dtypes"]), dtype_name(t.dtype),
                      "the operator rejects the dtype")
            return
    if q.is_floating_point() and k.is_floating_point() and k.dtype != q.dtype:
        call.fail("KV115", "key", f"{dtype_name(q.dtype)} like the query", dtype_name(k.dtype),
                  "mixed floating dtypes are not supported")
    elif q.dtype == torch.int8 and view.paged:
        call.fail("KV115", "query", "float16 or bfloat16 with a block_table (paged attention)", "int8",
                  "paged attention does not take an int8 query")


@contract(*FA_OPS)
def scale(call: Call) -> None:
    view = fa_view(call)
    if view is None or view.scale is None:
        return
    if float(view.scale) == 1.0 and (view.head_dim or 0) > 1:
        call.fail("KV103", view.roles["scale"], f"1/sqrt(head_dim) = {view.head_dim ** -0.5:.4g}",
                  "1.0" + ("" if view.roles["scale"] in call.given else " (the default)"),
                  "scores are not scaled: softmax is far too sharp", severity="warning")


@contract("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2")
def mla_rope(call: Call) -> None:
    view = fa_view(call)
    if view is None:
        return
    data = _data()
    qr, kr = view.query_rope, view.key_rope
    if (qr is None) != (kr is None):
        given, missing = ("query_rope", "key_rope") if qr is not None else ("key_rope", "query_rope")
        call.fail("KV510", missing, f"passed together with {given}", "None",
                  "the rope half of the scores is dropped or the operator errors out")
        return
    if qr is None:
        return
    for name, t in (("query_rope", qr), ("key_rope", kr)):
        if int(t.shape[-1]) != data["mla_rope_dim"]:
            call.fail("KV510", name, f"head dim {data['mla_rope_dim']}", str(int(t.shape[-1])),
                      "the operator rejects the call")
            return
    d = view.head_dim
    if d not in data["mla_query_dims"]:
        call.fail("KV510", "query", f"head dim in {data['mla_query_dims']} with rope", str(d),
                  "the MLA kernel does not exist for this size")
        return
    if d == data["mla_latent_dim"]:
        kv = view.kv_heads or view.num_heads
        if kv != 1:
            call.fail("KV510", view.roles["kv_heads"], "1 for the 512-wide latent (MLA absorb)", str(kv),
                      "the operator rejects the call")
        elif not view.paged:
            call.fail("KV510", "block_table", "a paged cache for the 512-wide latent (MLA absorb)", "None",
                      "the operator rejects the call")


# ------------------------------------------------------------------------------ mask
@contract(*FA_OPS)
def mask(call: Call) -> None:
    view = fa_view(call)
    if view is None:
        return
    data = _data()
    name = view.roles.get("mask", "atten_mask")
    m, sparse = view.mask, view.sparse
    if "sparse_mode" in view.roles and sparse not in data["sparse_modes"]:
        call.fail("KV213", "sparse_mode", f"one of {data['sparse_modes']}", str(sparse),
                  "modes 5-8 are not implemented; others error out")
        return
    if m is not None and dtype_name(m.dtype) not in data["mask_dtypes"]:
        call.fail("KV205", name, " or ".join(data["mask_dtypes"]), dtype_name(m.dtype),
                  "a float mask is rejected (or, in older builds, misread as a boolean one)")
        return
    if view.tnd and "sparse_mode" in view.roles:
        if (m is None and sparse != 0) or (m is not None and sparse not in data["tnd_sparse_with_mask"]):
            call.fail("KV212", "sparse_mode", "0 without atten_mask, or 3/4 with the 2048x2048 mask (TND)",
                      f"{sparse} {'without' if m is None else 'with'} a mask", "TND attention is masked wrongly")
            return
    if sparse in data["optimized_sparse_modes"]:
        if m is None:
            call.fail("KV201", name, f"the 2048x2048 causal mask for sparse_mode={sparse}", "None",
                      "the operator errors out, or attends to future tokens")
        elif [int(s) for s in m.shape] not in data["optimized_mask_shapes"]:
            call.fail("KV206", name, "(2048, 2048), (1, 2048, 2048) or (1, 1, 2048, 2048) for "
                      f"sparse_mode={sparse}", shape_of(m), "the operator errors out or reads the mask out of bounds")
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
    view = fa_view(call)
    if view is None:
        return
    roles = view.roles
    q_arg, kv_arg = roles.get("q_lens"), roles.get("kv_lens")
    if view.tnd:
        _tnd_lengths(call, view, q_arg, kv_arg)
        return
    if view.paged:
        return  # per-batch paged lengths: paged.py
    batch = view.batch
    for arg, limit in ((q_arg, view.q_seq), (kv_arg, kv_seq(view))):
        values = call.int_list(call.get(arg))
        if not values:
            continue
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
