"""FA-family contracts: layout vs rank, heads, key/value shapes, contiguity, dtypes, scale,
MLA rope, attention mask (dtype, sparse-mode forms, coverage) and length lists.

`fa_view`, the family's first contract, derives batch, sequence, heads and head size from the
layout once per call (`call.view`); every other check reads it. The operators' keyword names
and limits come from rules/facts/ (kvlint.facts), read once, at import."""
from __future__ import annotations

from typing import Optional

import torch

from kvlint.facts import load_facts
from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.call import dtypes as _dtypes
from kvlint.runtime.registry import contract

FACTS = load_facts()
FA_OPS = FACTS.family("fa_layout")
DATA = FACTS.fa
LAYOUT_RANK = DATA.layout_rank
LAYOUT_BASE = {layout: layout.split("_")[0] for layout in LAYOUT_RANK}
LAYOUT_BASE["SBH"] = "SBH"
HEAD_AXIS = DATA.head_axis
QUERY_DTYPES = _dtypes(DATA.query_dtypes)
KV_DTYPES = _dtypes(DATA.kv_dtypes)
UNJUDGED_DTYPES = DATA.unjudged_dtype_prefixes
MASK_DTYPES = _dtypes(DATA.mask.dtypes)
PAGED_CACHE_RANKS = frozenset(DATA.paged_cache_ranks)
OPTIMIZED_SPARSE_MODES = frozenset(DATA.mask.compressed_modes)
TND_SPARSE_WITH_MASK = frozenset(DATA.mask.tnd_modes_with_mask)
_SQ = "x".join(map(str, DATA.mask.compressed_shapes[0]))   # the compressed mask, for messages
_SHAPES = [tuple(s) for s in DATA.mask.compressed_shapes]
_SHOWN_SHAPES = ", ".join(map(str, _SHAPES[:-1])) + f" or {_SHAPES[-1]}"
# rules/facts/fa_contracts.toml: the contracts mirrored from hicann/ops-transformer
CONTRACTS = FACTS.table("fa_contracts")
# v2 calls that set a dtype override may hand the operator other dtypes than the tensors'
DTYPE_OVERRIDES = tuple(CONTRACTS["antiquant_split"]["dtype_overrides"])
MLA = CONTRACTS["mla"]
MLA_DTYPES = frozenset((torch.float16, torch.bfloat16))
MLA_FULL_QUANT_MAX_QUERY = CONTRACTS["mla_quant"]["mtp_max_query"]
BNNBSD_LAYOUTS = tuple(CONTRACTS["bnnbsd_layouts"])
BNNBSD_ANY_PRECISE = CONTRACTS["bnnbsd_any_layout_inner_precise"]
GROUP_MAX_WITH_ROPE = CONTRACTS["group_max_with_rope"]
OP_LAYOUT_RANK = {"npu_fusion_attention": dict(CONTRACTS["fusion"]["layouts"])}
# flash_attention_score's own checks (families/fusion/contracts.py, rules/facts/fusion.toml) replace
# the FIA-derived ones for these: dtypes (fp32 accepted, AnalyzeDtype l.985), contiguity (aclnn
# makes every input contiguous, Contiguous l.536-570), TND masks per sparse_mode (l.4098, l.1549),
# TND length lists (T >= the sum of the lengths, l.1180-1186), layout case (infershape l.57-63)
FUSION_OPS = frozenset(FACTS.family("fusion_attention"))
NOT_FUSION_OPS = tuple(op for op in FA_OPS if op not in FUSION_OPS)  # the dtype and contiguity checks
NZ_BYTES = CONTRACTS["nz_bytes"]
INT4_PACKED = getattr(torch, CONTRACTS["int4_packed_dtype"])
INT4_PER_ELEMENT = CONTRACTS["int4_per_element"]
SILENT_MASK_LEAD = list(CONTRACTS["silent_decode_mask"]["lead_dims"])
SILENT_MASK_KV = CONTRACTS["silent_decode_mask"]["kv_above"]
_Tensor = torch.Tensor


def unpacked(t: "torch.Tensor") -> int:
    """The real size of a KV tensor's last dim: eight int4 values per int32 element (rules/facts/
    fa_contracts.toml int4_*)."""
    return int(t.shape[-1]) * INT4_PER_ELEMENT if t.dtype == INT4_PACKED else int(t.shape[-1])


class Roles:
    """Role -> keyword name of one FA-like operator (rules/facts/operators.toml); None when it
    has no such role. `sparse_modes`: the values the operator accepts."""

    __slots__ = ("num_heads", "kv_heads", "scale", "q_lens", "kv_lens", "sparse_mode", "layout", "mask",
                 "block_table", "block_size", "query_rope", "key_rope", "kv_heads_arg", "mask_arg",
                 "sparse_modes", "lse_flag", "inner_precise")

    def __init__(self, op):
        for slot in self.__slots__:
            setattr(self, slot, op.keyword(slot))
        self.inner_precise = self.inner_precise or "inner_precise"  # same name in v1, v2, IFA, PFA
        self.kv_heads_arg = self.kv_heads or "num_key_value_heads"   # for messages
        self.mask_arg = self.mask or "atten_mask"
        self.sparse_modes = frozenset(op.sparse_modes or ())


ROLES = {name: Roles(FACTS.operator(name)) for name in FA_OPS}


class FaView:
    """What the FA contracts derive from one call. The numbers are a function of the call's
    signature (kvlint.runtime.registry): a cached verdict keeps them `detached()` from the
    call's tensors, and `attached(args)` gives them the next call's tensors. `table_check` and
    `mla_tokens` are set by the shape checks for the value checks that follow them."""

    __slots__ = ("roles", "layout", "base", "q", "k", "v", "num_heads", "kv_heads", "batch", "q_seq",
                 "q_heads", "head_dim", "paged", "tnd", "sparse", "mask", "block_table", "block_size",
                 "query_rope", "key_rope", "scale", "cache_broken", "table_check", "mla_tokens", "numbers")

    def detached(self) -> "FaView":
        view = FaView()
        view.numbers = (self.roles, self.layout, self.base, self.num_heads, self.kv_heads, self.batch, self.q_seq,
                        self.q_heads, self.head_dim, self.paged, self.tnd, self.sparse, self.block_size,
                        self.scale, self.cache_broken, self.table_check, self.mla_tokens)
        view._set_numbers()
        view.q = view.k = view.v = view.mask = view.block_table = view.query_rope = view.key_rope = None
        return view

    def _set_numbers(self) -> None:
        (self.roles, self.layout, self.base, self.num_heads, self.kv_heads, self.batch, self.q_seq, self.q_heads,
         self.head_dim, self.paged, self.tnd, self.sparse, self.block_size, self.scale, self.cache_broken,
         self.table_check, self.mla_tokens) = self.numbers

    def attached(self, args) -> "FaView":
        """A copy of a detached view's numbers with the tensors of the call whose bound
        arguments are `args` (one unpacking of the numbers: the cache's hit path)."""
        view = FaView()
        numbers = view.numbers = self.numbers
        (view.roles, view.layout, view.base, view.num_heads, view.kv_heads, view.batch, view.q_seq, view.q_heads,
         view.head_dim, view.paged, view.tnd, view.sparse, view.block_size, view.scale, view.cache_broken,
         view.table_check, view.mla_tokens) = numbers
        roles, get = numbers[0], args.get
        view.q, view.k, view.v = args["query"], args["key"], args["value"]
        view.mask, view.query_rope, view.key_rope = get(roles.mask), get(roles.query_rope), get(roles.key_rope)
        view.block_table = get(roles.block_table) if roles.block_table else None
        return view


@contract(*FA_OPS, pure=True)
def fa_view(call: Call) -> None:
    """Sets `call.view`, or leaves it None when the layout/rank is unusable (reported as KV110)."""
    roles = ROLES[call.name]
    args = call.args
    q, k, v = args.get("query"), args.get("key"), args.get("value")
    if not (isinstance(q, _Tensor) and isinstance(k, _Tensor) and isinstance(v, _Tensor)):
        return  # tensor lists / odd inputs: the dispatcher reports those itself
    layout = args.get(roles.layout, "BSH")
    if call.name in FUSION_OPS and isinstance(layout, str):
        layout = layout.upper()  # op-plugin upper-cases it (flash_attention_score_infershape.cpp)
    ranks = OP_LAYOUT_RANK.get(call.name, LAYOUT_RANK)
    rank = ranks.get(layout)
    if rank is None:
        call.fail("KV110", roles.layout, f"one of {', '.join(ranks)}", repr(layout),
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
    # sizes are plain ints here (traced calls arrive concrete: kvlint.runtime.tracing); a role
    # the operator lacks is None, never a key of args, so args.get(None, d) is d
    view.num_heads = n = int(args.get(roles.num_heads, 1))
    view.kv_heads = int(args.get(roles.kv_heads) or 0)
    qs = q.shape
    axis = HEAD_AXIS.get(base)
    view.q_heads = qs[axis] if axis is not None else None
    if base == "BSH" or base == "SBH":
        view.batch, view.q_seq = (qs[0], qs[1]) if base == "BSH" else (qs[1], qs[0])
        view.head_dim = qs[2] // n if n > 0 and qs[2] % n == 0 else None
    elif base == "BSND":
        view.batch, view.q_seq, view.head_dim = qs[0], qs[1], qs[3]
    elif base == "BNSD":
        view.batch, view.q_seq, view.head_dim = qs[0], qs[2], qs[3]
    elif base == "NSD":
        view.batch, view.q_seq, view.head_dim = 1, qs[1], qs[2]
    else:  # TND / NTD: batch from the length list
        q_lens = args.get(roles.q_lens)
        view.batch = len(q_lens) if q_lens is not None and not isinstance(q_lens, _Tensor) else (
            q_lens.numel() if isinstance(q_lens, _Tensor) else None)
        view.q_seq, view.head_dim = None, qs[2]
    view.sparse = int(args.get(roles.sparse_mode) or 0)
    view.mask = args.get(roles.mask)
    view.block_size = int(args.get(roles.block_size) or 0)
    view.query_rope, view.key_rope = args.get(roles.query_rope), args.get(roles.key_rope)
    view.scale = args.get(roles.scale)
    view.cache_broken = False  # set when the paged cache's form is reported: later checks skip it
    view.table_check = None    # fa_paged_values' memos (paged._Memo, meta and full mode)
    view.mla_tokens = False    # MLA in TND passed its shape checks: mla_query_tokens reads the lengths
    call.view = view


_KV_SEQ_AXIS = {"BSH": 1, "BSND": 1, "BNSD": 2, "NSD": 1, "SBH": 0}


def kv_seq(view: FaView) -> Optional[int]:
    """KV sequence length a mask must cover: the key's S, or table width * block_size (paged)."""
    if view.paged:
        if view.block_table.dim() == 2 and view.block_size:
            return int(view.block_table.shape[1]) * view.block_size
        return None
    axis = _KV_SEQ_AXIS.get(view.base)
    return int(view.k.shape[axis]) if axis is not None else None


def _paged_heads(call: Call, view: FaView, kv: int) -> None:
    """The paged cache's head count, by form (FIA tiling_check_consistency.cpp
    CheckKVShapeForPageAttention; rules/facts/fa_contracts.toml): 3-D (nb, bs, N_kv*D) against
    the query's head dim, 4-D (nb, N_kv, bs, D) and 5-D NZ (nb, N_kv, D/D0, bs, D0) dim 1."""
    k, roles = view.k, view.roles
    ks = k.shape
    if len(ks) == 4 and ks[1] != kv and ks[2] == kv and ks[1] == view.block_size:
        nb, bs, n_kv, d = ks
        call.fail("KV312", "key", f"a 4-D paged cache laid out (num_blocks, N_kv, block_size, D): FA reads dim 1 "
                  f"as the {kv} KV heads and dim 2 as block_size {view.block_size}",
                  f"{shape_of(k)}, an ND (num_blocks, block_size, N_kv, D) cache; pass key.view({nb}, {bs}, "
                  f"{n_kv * d}) (and the value likewise) for the 3-D (num_blocks, block_size, N_kv*D) form",
                  "heads and block slots are swapped: every token is read from the wrong place")
        view.cache_broken = True
        return
    if k.dim() == 4 and view.layout not in BNNBSD_LAYOUTS and call.get(roles.inner_precise) != BNNBSD_ANY_PRECISE:
        call.fail("KV110", "key", f"a 3-D (num_blocks, block_size, N_kv*D) paged cache with input_layout "
                  f"{view.layout!r} (a 4-D (num_blocks, N_kv, block_size, D) cache needs one of "
                  f"{', '.join(BNNBSD_LAYOUTS)}, or inner_precise={BNNBSD_ANY_PRECISE})", f"4-D {shape_of(k)}",
                  "the operator rejects the call (561002)")
        view.cache_broken = True
        return
    if k.dim() == 3:
        d, h = view.head_dim, unpacked(k)
        if d and h != kv * d:
            call.fail("KV112", roles.kv_heads_arg, f"the paged cache's hidden size / the query's head dim = "
                      f"{h} / {d} = {h / d:g} (cache (num_blocks, block_size, N_kv*D))", str(kv),
                      "the paged read splits the cache into the wrong heads")
            view.cache_broken = True
    elif ks[1] != kv:
        form = "(nb, N_kv, bs, D)" if k.dim() == 4 else "NZ (nb, N_kv, D/D0, bs, D0)"
        call.fail("KV112", roles.kv_heads_arg, f"the paged cache's head count {ks[1]} (cache {form})", str(kv),
                  "the paged read strides over the wrong heads")
        view.cache_broken = True


@contract(*FA_OPS, pure=True)
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
    hidden = base == "BSH" or base == "SBH"  # heads folded into H
    if hidden and view.q.shape[2] % n:
        call.fail("KV111", name, f"a divisor of the query's hidden size {int(view.q.shape[2])}", str(n),
                  "the operator cannot split H into heads")
        return
    k = view.k
    if roles.kv_heads is None and not view.paged:  # npu_fusion_attention: N2 from the key's shape
        d = view.head_dim
        if hidden and d and k.shape[2] % d:
            call.fail("KV112", "key", f"a hidden size that is a multiple of the query's head dim {d}",
                      str(k.shape[2]), "the key cannot be split into heads")
            return
        kv = k.shape[2] // d if hidden and d else (k.shape[HEAD_AXIS[base]] if base in HEAD_AXIS else n)
        if kv <= 0 or n % kv:
            call.fail("KV112", "key", f"a head count dividing {name}={n}", f"{kv} heads in {shape_of(k)}",
                      "grouped-query attention maps query heads to the wrong KV heads")
        return
    kv = view.kv_heads or n
    # G <= 64 without rope (IFA tiling_check.cpp CheckInputQKVTypeMatch), up to 128 in MLA
    group = GROUP_MAX_WITH_ROPE if view.query_rope is not None else DATA.max_group
    if n % kv or n // kv > group:
        call.fail("KV112", roles.kv_heads_arg, f"a divisor of {name}={n} with {name}/kv_heads <= {group}", str(kv),
                  "grouped-query attention maps query heads to the wrong KV heads")
        return
    if view.paged:
        _paged_heads(call, view, kv)
        return
    if hidden:
        if view.head_dim and unpacked(k) != kv * view.head_dim:
            call.fail("KV112", roles.kv_heads_arg,
                      f"key hidden size / head dim = {unpacked(k) / view.head_dim:g}", str(kv),
                      "the key is split into the wrong number of heads")
        return
    axis = HEAD_AXIS.get(base)  # NSD / NTD: dim 0, TND: dim 1 (key.shape[1])
    if axis is not None and int(k.shape[axis]) != kv:
        call.fail("KV112", roles.kv_heads_arg, f"the key's head count {int(k.shape[axis])}", str(kv),
                  "grouped-query attention maps query heads to the wrong KV heads")


_BATCH_FIRST = frozenset(("BSH", "BSND", "BNSD"))


@contract(*FA_OPS, pure=True)
def key_value_shapes(call: Call) -> None:
    """The value equals the key except in D, and D_v <= D_qk (equal with query_rope): FIA
    tiling_info_parser.cpp GetRopeMode, tiling_check_consistency.cpp CheckKVShapeFor*."""
    view = call.view
    if view is None or view.cache_broken:
        return
    q, k, v = view.q, view.k, view.v
    rope = view.query_rope
    ks, vs = k.shape, v.shape  # plain ints: traced calls arrive concrete (kvlint.runtime.tracing)
    if ks == vs:
        dk = dv = ks[2] * ks[4] if len(ks) == 5 else unpacked(k)
    else:
        nz = view.paged and len(ks) == 5
        if len(ks) != len(vs) or ks[:-1] != vs[:-1] and not (nz and ks[:2] == vs[:2] and ks[3] == vs[3]):
            call.fail("KV113", "value", f"the key's shape {shape_of(k)} except in the head dim", shape_of(v),
                      "the operator errors out or reads past the value tensor")
            return
        dk = ks[2] * ks[4] if nz else unpacked(k)
        dv = vs[2] * vs[4] if nz else unpacked(v)
        if dv > dk or rope is not None:
            call.fail("KV113", "value", f"a head dim {'equal to' if rope is not None else '<='} the key's ({dk})"
                      + (" with query_rope" if rope is not None else ""), f"{dv} in {shape_of(v)}",
                      "the operator rejects the call")
            return
    d = view.head_dim
    if view.paged:
        if k.dim() in (4, 5) and d and dk != d:
            call.fail("KV113", "key", f"head dim {d} like the query", f"{dk} in {shape_of(k)}",
                      "Q.K^T is undefined")
        return
    if view.base != "BSH" and view.base != "SBH" and d and dk != d:
        call.fail("KV113", "key", f"head dim {d} like the query", str(dk), "Q.K^T is undefined")
        return
    if view.base in _BATCH_FIRST and ks[0] != q.shape[0] or view.base == "SBH" and ks[1] != q.shape[1]:
        b = 1 if view.base == "SBH" else 0
        call.fail("KV113", "key", f"batch {q.shape[b]} like the query", str(ks[b]),
                  "requests attend to other requests' keys")


@contract(*NOT_FUSION_OPS, pure=True)
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


@contract(*NOT_FUSION_OPS, pure=True)
def dtypes(call: Call) -> None:
    view = call.view
    if view is None:
        return
    q, k, v = view.q, view.k, view.v
    qd, kd = q.dtype, k.dtype
    if sets_dtype_override(call) or any(dtype_name(t.dtype).startswith(UNJUDGED_DTYPES) for t in (q, k, v)):
        return  # other dtypes than the tensors', or dtypes newer than the operator source
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
    # MLA decode / MTP with an int8 query pages an NZ cache (IFA tiling.cpp SetQuantFlag l.531-535):
    # quant_in.py mla_full_quant checks it
    elif qd == torch.int8 and view.paged and not (view.query_rope is not None and view.key_rope is not None
                                                 and (view.q_seq or 0) <= MLA_FULL_QUANT_MAX_QUERY):
        call.fail("KV115", "query", "float16 or bfloat16 with a block_table (paged attention)", "int8",
                  "paged attention does not take an int8 query")


@contract(*FA_OPS, pure=True)
def scale(call: Call) -> None:
    view = call.view
    if view is None or view.scale is None:
        return
    warn_unscaled(call, view.roles.scale, view.scale, view.head_dim)


def warn_unscaled(call: Call, name: str, value, head_dim: Optional[int]) -> None:
    """KV103 (warning): the softmax scale `name` is 1.0 (the schema default) with a head dim > 1.
    Also the fusion contracts' check for npu_fusion_attention_v2 / _v3."""
    if float(value) == 1.0 and (head_dim or 0) > 1:
        call.fail("KV103", name, f"1/sqrt(head_dim) = {head_dim ** -0.5:.4g}",
                  "1.0" + ("" if call.passed(name) else " (the default)"),
                  "scores are not scaled: softmax is far too sharp", severity="warning")


def _rope_dim(view: FaView, qr) -> Optional[int]:
    """query_rope's D: it has the query's layout (BSH: (B, S, N*Dr))."""
    if view.base == "BSH":
        h = int(qr.shape[-1])
        return h // view.num_heads if view.num_heads > 0 and h % view.num_heads == 0 else None
    return int(qr.shape[-1])


def _key_rope_expected(view: FaView, dr: int, kv: int, kr) -> tuple:
    """The key_rope shape the key implies: the key's layout with D = the rope dim (FIA
    tiling_check_consistency.cpp CheckKVShapeForBatchContinuous / CheckKVShapeForPageAttention)."""
    ks = [int(s) for s in view.k.shape]
    if view.k.dim() == 5:  # NZ: D0 = 32 / sizeof(key_rope dtype)
        d0 = NZ_BYTES // kr.element_size()
        return (ks[0], ks[1], dr // d0, ks[3], d0)
    if view.base == "BSH" or (view.paged and view.k.dim() == 3):
        return tuple(ks[:-1]) + (kv * dr,)
    return tuple(ks[:-1]) + (dr,)


@contract("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2", pure=True)
def mla_rope(call: Call) -> None:
    view = call.view
    if view is None or view.cache_broken:
        return
    qr, kr = view.query_rope, view.key_rope
    if qr is None and kr is None:
        return
    if (qr is None) != (kr is None):
        given, missing = ("query_rope", "key_rope") if qr is not None else ("key_rope", "query_rope")
        call.fail("KV510", missing, f"passed together with {given}", "None",
                  "the rope half of the scores is dropped or the operator errors out")
        return
    q = view.q
    qrs, qs = [int(s) for s in qr.shape], [int(s) for s in q.shape]
    if len(qrs) != len(qs) or qrs[:-1] != qs[:-1]:
        call.fail("KV510", "query_rope", f"the query's batch, sequence and heads {tuple(qs[:-1])} "
                  f"(input_layout {view.layout!r})", shape_of(qr), "rope scores are added to the wrong rows")
        return
    dr = _rope_dim(view, qr)
    if dr != DATA.mla_rope_dim:
        call.fail("KV510", "query_rope", f"head dim {DATA.mla_rope_dim}"
                  + (f" (last dim num_heads * {DATA.mla_rope_dim} = {view.num_heads * DATA.mla_rope_dim} "
                     "in BSH)" if view.base == "BSH" else ""), f"{dr} in {shape_of(qr)}",
                  "the operator rejects the call")
        return
    kv = view.kv_heads or view.num_heads
    expected = _key_rope_expected(view, dr, kv, kr)
    if tuple(int(s) for s in kr.shape) != expected:
        call.fail("KV510", "key_rope", f"{expected}: the key's layout {shape_of(view.k)} with head dim {dr}",
                  shape_of(kr), "rope keys are read from the wrong tokens or heads")
        return
    d = view.head_dim
    if d not in DATA.mla_query_dims:
        call.fail("KV510", "query", f"head dim in {list(DATA.mla_query_dims)} with rope", str(d),
                  "the MLA kernel does not exist for this size")
        return
    if d == DATA.mla_latent_dim:
        if kv != MLA["kv_heads"]:
            call.fail("KV510", view.roles.kv_heads_arg, "1 for the 512-wide latent (MLA absorb)", str(kv),
                      "the operator rejects the call")
        else:
            # A contiguous (not paged) cache is accepted. The sources disagree by version:
            # ops-transformer @c29bc10 (CheckFeatureMlaNoquantPa) and torch_npu 2.14.0's docs
            # (_op_plugin_docs.py l.8182: "必须开启PageAttention") require paging outside
            # sparse_mode 4; a later CheckFeatureMlaNoquant (the cann-ops-transformer mirror
            # @003a52c) no longer runs that check, and op-plugin's docs @517f2e7 ("支持
            # PageAttention") show a BNSD example without block_table. Rejecting would break
            # programs on the newer stack; on the older one the operator raises by itself.
            _mla_features(call, view)


def _mla_sliding(call: Call, view: FaView) -> None:
    """MLA with sparse_mode 4 = sliding attention (FIA tiling_info_parser.cpp slidingFlag), FIA
    tiling_check_feature.cpp CheckFeatureMlaNoQuantLayout / Shape / Pa, consistency CheckAttentionMask."""
    roles, k, m = view.roles, view.k, view.mask
    why = "the operator rejects the call (sliding attention: MLA with sparse_mode 4)"
    if view.layout not in MLA["sliding_layouts"]:
        call.fail("KV110", roles.layout, f"one of {', '.join(MLA['sliding_layouts'])} in MLA with sparse_mode 4",
                  repr(view.layout), why)
        return
    group = view.num_heads // (view.kv_heads or view.num_heads)
    if group != MLA["sliding_group"]:
        call.fail("KV112", roles.num_heads, f"{MLA['sliding_group']} query heads per KV head in MLA with "
                  "sparse_mode 4", f"{group}", why)
        return
    if view.paged and k.dim() == 5:
        call.fail("KV110", "key", "an ND (3-D or 4-D) paged cache in MLA with sparse_mode 4", f"NZ {shape_of(k)}", why)
        return
    if view.paged and view.block_size not in MLA["sliding_block_sizes"]:
        call.fail("KV311", roles.block_size, f"one of {list(MLA['sliding_block_sizes'])} in MLA with sparse_mode 4",
                  str(view.block_size), why)
        return
    if m is not None and tuple(m.shape) != tuple(MLA["tnd_mask_shape"]):
        call.fail("KV206", roles.mask_arg, f"exactly {tuple(MLA['tnd_mask_shape'])} in MLA with sparse_mode 4",
                  shape_of(m), why)


def _mla_features(call: Call, view: FaView) -> None:
    """MLA without quantization (head dim 512, both ropes, fp16/bf16 query and key of one dtype:
    FIA tiling_v3.cpp RouteToFia), FIA tiling_check_feature.cpp CheckFeatureMlaNoquant*."""
    q, k, roles, get = view.q, view.k, view.roles, call.get
    if q.dtype != k.dtype or q.dtype not in MLA_DTYPES:
        return  # quantized MLA: other checks
    layout, bs = view.layout, view.block_size
    if layout not in MLA["layouts"]:
        call.fail("KV110", roles.layout, f"one of {', '.join(MLA['layouts'])} in MLA", repr(layout),
                  "the operator rejects the call (CheckFeatureMlaNoQuantLayout)")
        return
    if k.dim() == 5 and layout not in MLA["nz_layouts"]:
        call.fail("KV110", roles.layout, f"one of {', '.join(MLA['nz_layouts'])} with an NZ cache", repr(layout),
                  "the operator rejects the call (CheckFeatureMlaNoQuantLayout)")
        return
    if view.paged and k.dim() == 4 and view.base not in MLA["bnnbsd_query_bases"]:
        call.fail("KV110", "key", f"a 3-D (num_blocks, block_size, N_kv*D) cache with input_layout {layout!r} "
                  f"(MLA reads a 4-D cache only with BNSD or TND queries)", f"4-D {shape_of(k)}",
                  "the operator rejects the call (CheckFeatureMlaNoQuantLayout)")
        return
    if view.sparse == MLA["sliding_mode"]:
        _mla_sliding(call, view)
        return
    if k.dim() == 5 and bs != MLA["block_size_nz"]:
        call.fail("KV311", roles.block_size, f"{MLA['block_size_nz']} with an NZ cache (MLA)", str(bs),
                  "the operator rejects the block size (CheckFeatureMlaNoquantPa)")
        return
    lse = get(roles.lse_flag) if roles.lse_flag else None
    if lse:
        call.fail("KV510", roles.lse_flag, "False in MLA (no softmax_lse output)", repr(lse),
                  "the operator rejects the call (CheckFeatureMlaNoquantUnsupported)")
        return
    precise = get(roles.inner_precise)
    if precise is not None and int(precise) not in MLA["inner_precise"]:
        call.fail("KV510", roles.inner_precise, f"one of {list(MLA['inner_precise'])} in MLA", str(precise),
                  "the operator rejects the call (CheckFeatureMlaNoquantUnsupported)")
        return
    if not view.tnd and roles.q_lens and get(roles.q_lens) is not None:
        call.fail("KV316", roles.q_lens, f"None with input_layout {layout!r} in MLA (query lengths only in TND)",
                  "a length list", "the operator rejects the call (CheckFeatureActualSeqLensExistence)")
        return
    sparse, m = view.sparse, view.mask
    if view.tnd:
        allowed, when = MLA["sparse_tnd"], "input_layout TND"
    elif (view.q_seq or 1) > 1:
        allowed, when = MLA["sparse_prefill"], f"Q_S = {view.q_seq} > 1"
    else:
        allowed, when = MLA["sparse_decode"], "Q_S = 1"
    if sparse not in allowed:
        call.fail("KV213", roles.sparse_mode, f"one of {list(allowed)} in MLA with {when}", str(sparse),
                  "the operator rejects the call (CheckFeatureMlaNoquantMask)")
        return
    if sparse == 0 and m is not None:
        call.fail("KV213", roles.sparse_mode, "3 or 4 with an atten_mask in MLA (sparse_mode 0 takes no mask)",
                  "0 with a mask", "the operator rejects the call (CheckFeatureMlaNoquantMask)")
        return
    if view.tnd and m is not None and tuple(int(s) for s in m.shape) != tuple(MLA["tnd_mask_shape"]):
        call.fail("KV206", roles.mask_arg, f"exactly {tuple(MLA['tnd_mask_shape'])} in MLA with input_layout TND",
                  shape_of(m), "the operator rejects the mask (CheckAttentionMask)")
        return
    if view.tnd and roles.q_lens:
        view.mla_tokens = True  # the query lengths' values: mla_query_tokens, on every call


def _mla_tokens_work(call: Call) -> bool:
    """Has mla_query_tokens anything to check (its shape checks passed in MLA with TND)?"""
    view = call.view
    return view is not None and view.mla_tokens


@contract("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2", works=_mla_tokens_work,
          detached=True)
def mla_query_tokens(call: Call) -> None:
    """At most 16 query tokens per request in MLA with TND (FIA tiling_check_feature.cpp
    CheckFeatureActualSeqLensQData): reads the lengths, so not part of the cached shape verdict."""
    if not _mla_tokens_work(call):
        return
    view = call.view
    q_arg = view.roles.q_lens
    values = call.int_list(call.get(q_arg))
    if values:
        per_request = [b - a for a, b in zip([0] + values[:-1], values)]
        if max(per_request) > MLA["tnd_max_query_tokens"]:
            call.fail("KV315", q_arg, f"at most {MLA['tnd_max_query_tokens']} query tokens per request "
                      "in MLA with input_layout TND", f"{per_request} per request",
                      "the operator rejects the call (CheckFeatureActualSeqLensQData)")


# ------------------------------------------------------------------------------ quantization
QUANT = CONTRACTS["quant"]
_RENAMES = FACTS.versions.v1_to_v2


def _quant_names(name: str, keywords) -> tuple:
    """The v1 keywords in `keywords`, spelled for operator `name` (v2 through the renames)."""
    v2 = name == FACTS.versions.v2
    return tuple(_RENAMES.get(k, k) if v2 else k for k in keywords)


_QUANT_MODES = {name: tuple(zip(_quant_names(name, ("key_antiquant_mode", "value_antiquant_mode")),
                                (QUANT["key_antiquant_mode"], QUANT["value_antiquant_mode"])))
                for name in FACTS.family("fa")}
_SPLIT_SCALE = {name: _quant_names(name, ("key_antiquant_scale",))[0] for name in FACTS.family("fa")}
_MLA_ABSENT = {name: _quant_names(name, QUANT["mla_noquant_absent"]) for name in FACTS.family("fa")}
_MLA_DEFAULT_MODES = {name: _quant_names(name, QUANT["mla_noquant_default_modes"]) for name in FACTS.family("fa")}


def _ifa_route(call: Call, view: FaView) -> bool:
    """Is this call tiled by the IFA tiling (npu_incre_flash_attention; FIA decode: Q_S 1, no
    query_rope, BSH/BSND/BNSD(_NBSD), no NZ cache: FIA tiling.cpp IsUsingIFA), not by its ATB
    branch (an FIA paged int8 cache with inner_precise 2 and query lengths: IFA tiling.cpp
    AtbCheckFlag / AtbCheckFlag910, which skips the IFA checks)?"""
    if call.name == "npu_incre_flash_attention":
        return True
    if not (view.layout in _IFA_LAYOUTS and view.q_seq == 1 and view.query_rope is None and view.k.dim() != 5):
        return False
    if view.paged and view.k.dtype == torch.int8 and call.get(view.roles.inner_precise) == ANTIQUANT["atb_precise"]:
        q_lens = call.get(view.roles.q_lens)
        return not (q_lens is not None and (q_lens.numel() if isinstance(q_lens, _Tensor) else len(q_lens)) > 0)
    return True


def sets_dtype_override(call: Call) -> bool:
    """Does this v2 call set one of its dtype overrides (`query_dtype`, `key_dtype`, ...), which
    hand the operator other dtypes than the tensors'?"""
    return any(call.args.get(name) is not None for name in DTYPE_OVERRIDES)


def ifa_rolls_back(view: FaView) -> bool:
    """Does the IFA tiling hand this call to its old tiling before its quantization checks run
    (a non-paged call with D >= 1024: PreProcess l.141-149, incre_flash_attention_tiling_check.cpp
    CheckIfRollBack l.582-604)? Its other rollback, an in/out dtype pair outside CanChangeToNew,
    is the caller's to test."""
    return (view.head_dim or 0) >= ANTIQUANT["rollback_head_dim"] and view.block_table is None


@contract(*FACTS.family("fa"), pure=True)
def quantization(call: Call) -> None:
    """Separate key/value antiquant modes in range where they are read: KV int8 with a float
    query on the IFA tiling path, key_antiquant_scale given (IFA tiling.cpp CheckKVAntiQuantMode
    l.1227-1243; FIA's own CheckSinglePara*AntiquantMode runs only for MLA without
    quantization: tiling_v3.cpp RouteToFia); MLA without quantization given no quant parameter
    (tiling_check_existence.cpp CheckParaExistenceMlaNoquant)."""
    args = call.args
    view = call.view
    if view is None:
        return
    if (args.get(_SPLIT_SCALE[call.name]) is not None and view.q.dtype in _FLOATS and view.k.dtype == torch.int8
            and _ifa_route(call, view)):
        for arg, allowed in _QUANT_MODES[call.name]:
            mode = args.get(arg)
            if mode is not None and mode not in allowed:
                call.fail("KV518", arg, f"one of {list(allowed)}", str(mode),
                          "the operator rejects the call (IFA CheckKVAntiQuantMode)")
                return
    if view.query_rope is None or view.key_rope is None or view.head_dim != MLA["head_dim"]:
        return
    if view.q.dtype != view.k.dtype or view.q.dtype not in MLA_DTYPES:
        return  # quantized MLA
    for arg in _MLA_ABSENT[call.name]:
        if args.get(arg) is not None:
            call.fail("KV518", arg, "None in MLA without quantization (fp16/bf16 query and cache)", "a tensor",
                      "the operator rejects the call (CheckParaExistenceMlaNoquant)")
            return
    for arg in _MLA_DEFAULT_MODES[call.name]:
        if args.get(arg, 0):
            call.fail("KV518", arg, "0 (the default) in MLA without quantization", str(args.get(arg)),
                      "the operator rejects the call (CheckParaExistenceMlaNoquant)")
            return


ANTIQUANT = CONTRACTS["antiquant"]
_ANTIQUANT_OPS = frozenset(ANTIQUANT["operators"])
_IFA_LAYOUTS = frozenset(ANTIQUANT["ifa_layouts"])
_FLOATS = frozenset((torch.float16, torch.bfloat16))
_PER_TOKEN_DTYPE = getattr(torch, ANTIQUANT["per_token_dtype"])
_ANTIQUANT_ARGS = ("antiquant_scale", "antiquant_offset")


def _antiquant_shapes(view: FaView, kv: int) -> list:
    """The per-channel / per-tensor shapes CheckKVAntiQuantParaShapeLegal accepts."""
    n2, d = ANTIQUANT["stacked"], view.head_dim
    return [(n2,), (n2, kv, 1, d), (n2, 1, kv, d), (n2, kv, d), (n2, kv * d)]


@contract(*ANTIQUANT["operators"], pure=True)
def antiquant_params(call: Call) -> None:
    """KV int8 antiquant's combined antiquant_scale / antiquant_offset on the IFA tiling path
    (rules/facts/fa_contracts.toml [fa_contracts.antiquant]: IFA tiling CheckAntiQuantParam,
    CheckKVAntiQuantParaShapeLegal, CheckKVAntiQuantPerChannel / PerToken)."""
    view = call.view
    if view is None or view.cache_broken:
        return
    args = call.args
    scale, offset = args.get("antiquant_scale"), args.get("antiquant_offset")
    q, k = view.q, view.k
    if q.dtype not in _FLOATS:
        return  # full quantization (int8 query): other checks
    if not _ifa_route(call, view):
        return  # the PFA tiling (prefill), FIA's own (MLA), TND, NZ: not these checks
    if ifa_rolls_back(view):
        return  # the old tiling, whose checks are not in the source
    if any(args.get(name) is not None for name in ANTIQUANT["split_keywords"]):
        return  # key / value parameters given separately: the split mode's own checks
    if k.dtype == q.dtype:
        for name, t in zip(_ANTIQUANT_ARGS, (scale, offset)):
            if t is not None:
                call.fail("KV518", name, f"None with a {dtype_name(k.dtype)} cache (antiquant needs an int8 key and "
                          "value)", f"a tensor {shape_of(t)}",
                          "the operator rejects the call (IFA ProcessAntiQuant: KV antiquant is unenabled, but "
                          "antiquant parameters exist)")
                return
        return
    if k.dtype != torch.int8:
        return  # int4 and others: not checked here
    mode = args.get("antiquant_mode") or 0
    why = "the operator rejects the call (IFA CheckAntiQuantParam)"
    if mode not in ANTIQUANT["modes"]:
        call.fail("KV518", "antiquant_mode", f"one of {ANTIQUANT['modes']}", str(mode), why)
        return
    if scale is None:
        call.fail("KV518", "antiquant_scale", "a tensor: an int8 cache with a float query is dequantized with it",
                  "None", why + ": KV antiquant is enabled, but the antiquant scale is NULL")
        return
    if offset is not None and offset.dim() != scale.dim():
        call.fail("KV518", "antiquant_offset", f"{scale.dim()}-D like antiquant_scale {shape_of(scale)}",
                  f"{offset.dim()}-D {shape_of(offset)}", why + ": antiquant params have different layouts")
        return
    kv = view.kv_heads or view.num_heads
    for name, t in zip(_ANTIQUANT_ARGS, (scale, offset)):
        if t is None:
            continue
        shape = tuple(t.shape)
        if mode == ANTIQUANT["per_token"]:
            seq = kv_seq(view)  # seqSize_: S >= it (0: not checked, the empty-tensor path reads 1024)
            if len(shape) != ANTIQUANT["per_token_rank"] or shape[0] != ANTIQUANT["stacked"] or (
                    view.batch is not None and shape[1] != view.batch) or (seq and shape[2] < seq):
                call.fail("KV518", name, f"({ANTIQUANT['stacked']}, {view.batch}, S >= {seq}) in per-token mode "
                          "(antiquant_mode 1: key and value stacked, per request and KV token)", shape_of(t),
                          "the operator rejects the call (IFA CheckKVAntiQuantPerToken)")
                return
        elif view.head_dim:  # modes 0 and 2 (CheckKVAntiQuantParaShapeLegal: not per-token)
            allowed = _antiquant_shapes(view, kv)
            if shape not in allowed:
                call.fail("KV518", name, "one of " + ", ".join(str(list(s)) for s in allowed) + " (per-tensor, or "
                          "per-channel with key and value stacked on dim 0)", shape_of(t),
                          "the operator rejects the call (IFA CheckKVAntiQuantParaShapeLegal / PerChannel)")
                return
    if mode == ANTIQUANT["per_channel"] and scale.dtype != q.dtype:
        call.fail("KV518", "antiquant_scale", f"{dtype_name(q.dtype)} like the query in per-channel mode",
                  dtype_name(scale.dtype), why + ": illegal datatype of antiquant scale")
    elif mode == ANTIQUANT["per_token"] and scale.dtype != _PER_TOKEN_DTYPE:
        call.fail("KV518", "antiquant_scale", f"{ANTIQUANT['per_token_dtype']} in per-token mode",
                  dtype_name(scale.dtype), why + ": per-token mode needs a float32 scale")
    elif offset is not None and offset.dtype != scale.dtype:
        call.fail("KV518", "antiquant_offset", f"{dtype_name(scale.dtype)} like antiquant_scale",
                  dtype_name(offset.dtype), "the operator rejects the call (IFA CheckAntiquantOffsetType)")


# ------------------------------------------------------------------------------ mask
_OWN_MASK_FORMS = frozenset(("npu_fusion_attention",))


@contract(*FA_OPS, pure=True)
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
    if view.tnd and roles.sparse_mode and call.name not in FUSION_OPS:
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
    if m is None or sparse not in (0, 1) or view.tnd or call.name in _OWN_MASK_FORMS:
        return  # npu_fusion_attention's exact forms: fusion/contracts.py
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
        return
    if (view.paged and q_seq == 1 and sparse == 0 and m.dtype == torch.bool and dims[:-1] == SILENT_MASK_LEAD
            and kv is not None and kv > SILENT_MASK_KV):
        call.fail("KV211", name, f"(B, KV_S) or (B, 1, KV_S) for a paged decode with KV_S = {kv} > {SILENT_MASK_KV}",
                  f"a bool mask {shape_of(m)} broadcast over batch and heads",
                  "attention is silently wrong (vllm-ascend issue 15503: paged decode, sparse_mode 0, "
                  "bool [1, 1, 1, S] mask, KV > 512)", severity="warning")


# ------------------------------------------------------------------------------ length lists
def _lengths_work(call: Call) -> bool:
    """Has `lengths` anything to check? TND lists and non-paged per-batch lists (paged ones:
    paged.py; npu_fusion_attention's: fusion_values in TND, fusion_shapes outside it)."""
    view = call.view
    return view is not None and call.name not in FUSION_OPS and (view.tnd or not view.paged)


@contract(*FA_OPS, works=_lengths_work)
def lengths(call: Call) -> None:
    if not _lengths_work(call):
        return
    view = call.view
    roles = view.roles
    q_arg, kv_arg = roles.q_lens, roles.kv_lens
    if view.tnd:
        _tnd_lengths(call, view, q_arg, kv_arg)
        return
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
