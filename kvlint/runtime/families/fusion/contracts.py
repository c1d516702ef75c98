"""npu_fusion_attention contracts (flash_attention_score), mirrored from the operator's tiling
and aclnn checks (rules/facts/fusion.toml cites each). The FA-family checks it shares with
fused_infer_attention_score (layout, heads, key/value shapes, compressed masks, TND lengths) are
registered for npu_fusion_attention in families/fa/contracts.py; `_v2` and `_v3` are not in
that family, so the fusion contracts run the same shape checks for them, and for all three
what the FA family does not check: dtypes (fp32 too, one dtype for q/k/v), head dim <= 768,
keep_prob, atten_mask dtype and exact forms, sparse_mode per layout, the pre/next token window
per sparse_mode, prefix lists, pse, dropout_mask and TND length counts.

Three contracts: `fusion_shapes` reads shapes, dtypes and scalars only (pure: its verdict is
cached per call signature; outside TND it also judges the length lists by their lengths),
`fusion_values` what needs a list's entries (TND lengths, prefix), `fusion_scale` KV103 for
_v2 / _v3 (pure).
Both derive the sizes as Analyze3DimLayout / Analyze4DimLayout do (`_dims`) and stop at the
first error."""
from __future__ import annotations

from typing import Any, List, Optional

import torch

from kvlint.facts import load_facts
from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.call import dtypes as _dtypes
from kvlint.runtime.families.fa.contracts import warn_unscaled
from kvlint.runtime.registry import contract

FACTS = load_facts()
F = FACTS.table("fusion")
SPARSE, PSE, ROPE = F["sparse"], F["pse"], F["rope"]
OPS = tuple(FACTS.family("fusion_attention"))
FA_SEES = frozenset(FACTS.family("fa_layout"))  # the FA family already checks shapes for these
NOT_FA_SEES = tuple(op for op in OPS if op not in FA_SEES)  # _v2, _v3: no FA-family contract
VARLEN_LAYOUT = F["lengths"]["varlen_layout"]
LAYOUTS = dict(FACTS.table("fa_contracts")["fusion"]["layouts"])  # shared with the FA family
DTYPES = _dtypes(F["dtypes"])
MASK_DTYPES = _dtypes(F["mask_dtypes"])
DROP_DTYPE = getattr(torch, F["drop_mask_dtype"])
PSE_INNER_DTYPE = getattr(torch, PSE["inner_dtype"])
ROPE_DTYPE = getattr(torch, ROPE["dtype"])
MODES_NOT_TND, MODES_TND = frozenset(SPARSE["modes_not_tnd"]), frozenset(SPARSE["modes_tnd"])
COMPRESSED = frozenset(SPARSE["compressed_modes"])
PREFIX_MODES = frozenset((SPARSE["prefix_mode"], SPARSE["prefix_compress_mode"]))
ROLES = {name: FACTS.operator(name) for name in OPS}
_Tensor = torch.Tensor
REJECTS = "the operator rejects the call"


class Dims:
    """Sizes of one call, as the tiling reads them. TND: `s1`/`s2` are the longest request,
    `q_lens`/`kv_lens` the per-request lengths (None when the lists cannot be read)."""

    __slots__ = ("layout", "tnd", "b", "n1", "n2", "s1", "s2", "d", "dv", "q_lens", "kv_lens")
    layout: str
    tnd: bool
    n1: int
    n2: int
    d: int
    dv: int
    # in TND None until the lengths are read (fusion_values), then ints / per-request lists
    b: Any
    s1: Any
    s2: Any
    q_lens: Any
    kv_lens: Any


def _per_request(ends: Optional[List[int]]) -> Optional[List[int]]:
    """Per-request lengths from cumulative ends, negative steps clamped to 0
    (GEN GetActualSeqLenData l.1104-1130)."""
    if ends is None:
        return None
    return [ends[0]] + [max(0, b - a) for a, b in zip(ends, ends[1:])] if ends else []


def _dims(call: Call, q, k, v, layout: str, checked: bool, quiet: bool = False) -> Optional[Dims]:
    """The sizes, or None after a finding (or, for a call the FA family checks, silently: it
    reports the broken shape itself; `quiet`: never reports). GEN Analyze3DimLayout
    l.1133-1262, Analyze4DimLayout l.1265-1313, AnalyzeLayout l.1080-1101; API AnalysisAxis
    l.172-217."""
    checked = checked or quiet
    name = "head_num"
    rank = LAYOUTS.get(layout)
    if rank is None:
        if not checked:
            call.fail("KV110", "input_layout", f"one of {', '.join(LAYOUTS)}", repr(layout), REJECTS)
        return None
    for arg, t in (("query", q), ("key", k), ("value", v)):
        if t.dim() != rank:
            if not checked:
                call.fail("KV110", arg, f"{rank}-D for input_layout {layout!r}", f"{t.dim()}-D {shape_of(t)}",
                          REJECTS + " (AnalyzeLayout: 'Invalid layout')")
            return None
    n1 = int(call.get(name) or 0)
    if n1 <= 0:
        if not checked:
            call.fail("KV111", name, "> 0", str(n1), REJECTS + " (aclnn AnalysisInput)")
        return None
    qs, ks, vs = [int(s) for s in q.shape], [int(s) for s in k.shape], [int(s) for s in v.shape]
    dims = Dims()
    dims.layout, dims.tnd, dims.n1, dims.q_lens, dims.kv_lens = layout, layout == "TND", n1, None, None
    if layout in ("BSH", "SBH"):
        if qs[2] % n1:
            if not checked:
                call.fail("KV111", name, f"a divisor of the query's hidden size {qs[2]}", str(n1),
                          REJECTS + " (Analyze3DimLayout: h1 should be a multiple of n1)")
            return None
        d = qs[2] // n1
        if ks[2] % d or not ks[2]:
            if not checked:
                call.fail("KV112", "key", f"a hidden size that is a multiple of the query's head dim {d}", str(ks[2]),
                          "the key cannot be split into heads")
            return None
        n2 = ks[2] // d
        b_axis, s_axis = (0, 1) if layout == "BSH" else (1, 0)
        dims.b, dims.s1, dims.s2, dims.n2, dims.d = qs[b_axis], qs[s_axis], ks[s_axis], n2, d
        dims.dv = vs[2] // n2
        kb = ks[b_axis]
    else:
        head, seq = {"BSND": (2, 1), "BNSD": (1, 2), "TND": (1, 0)}[layout]  # TND: no sequence axis
        if qs[head] != n1:
            if not checked:
                call.fail("KV111", name, f"the query's head count {qs[head]} (input_layout {layout!r})", str(n1),
                          REJECTS + " (Analyze*DimLayout: head_num vs the query's N)")
            return None
        dims.n2, dims.d, dims.dv = ks[head], qs[-1], vs[-1]
        if layout == "TND":
            dims.b = kb = None
            dims.s1 = dims.s2 = None
        else:
            dims.b, dims.s1, dims.s2, kb = qs[0], qs[seq], ks[seq], ks[0]
    if dims.n2 <= 0 or n1 % dims.n2:
        if not checked:
            call.fail("KV112", "key", f"a head count dividing head_num={n1}", f"{dims.n2} heads in {shape_of(k)}",
                      REJECTS + " (AnalyzeLayout: n1 should be a multiple of n2)")
        return None
    if not checked:
        kd = dims.d if layout in ("BSH", "SBH") else ks[-1]
        if kb is not None and kb != dims.b:
            call.fail("KV113", "key", f"batch {dims.b} like the query", str(kb), REJECTS + " (tiling CheckParams)")
            return None
        if kd != dims.d:
            call.fail("KV113", "key", f"head dim {dims.d} like the query", str(kd), REJECTS + " (aclnn AnalysisAxis)")
            return None
        if ks[:-1] != vs[:-1]:
            call.fail("KV113", "value", f"the key's shape {shape_of(k)} except in the last dim", shape_of(v),
                      REJECTS)
            return None
        if dims.dv > dims.d:
            call.fail("KV113", "value", f"a head dim <= the key's ({dims.d})", f"{dims.dv} in {shape_of(v)}",
                      REJECTS + " (aclnn AnalysisAxis: only support kD >= vD)")
            return None
    if not 0 < dims.d <= F["head_dim_max"]:
        if not quiet:
            call.fail("KV116", "query", f"a head dim in (0, {F['head_dim_max']}]", f"{dims.d} in {shape_of(q)}",
                      REJECTS + " (AnalyzeLayout, aclnn AnalysisInput: Head dim must <= 768)")
        return None
    return dims


def _dtypes_ok(call: Call, q, k, v) -> bool:
    """GEN AnalyzeDtype l.977-1007 (fp16/bf16/fp32), API InputDtypeCheck l.395-401 (one dtype)."""
    if q.dtype not in DTYPES:
        call.fail("KV115", "query", " or ".join(F["dtypes"]), dtype_name(q.dtype),
                  REJECTS + " (AnalyzeDtype: not support input dtype)")
        return False
    for name, t in (("key", k), ("value", v)):
        if t.dtype != q.dtype:
            call.fail("KV115", name, f"{dtype_name(q.dtype)} like the query", dtype_name(t.dtype),
                      REJECTS + " (aclnn InputDtypeCheck: query, key, value dtypes not equal)")
            return False
    return True


def _tnd_lengths(call: Call, dims: Dims, q, k) -> bool:
    """Both lists given, of one length (GEN Analyze3DimLayout l.1174-1176: 'VarLen scene, q is
    not equal kv'), cumulative and within the tokens (l.1179-1186: T >= sum)."""
    roles = ROLES[call.name]
    q_arg, kv_arg = str(roles.keyword("q_lens")), str(roles.keyword("kv_lens"))  # every fusion op has both
    lists = []
    for arg in (q_arg, kv_arg):
        raw = call.get(arg)
        if raw is None:
            call.fail("KV315", arg, "a length list (mandatory for input_layout TND)", "None",
                      "the operator cannot split the packed tokens into requests")
            return False
        lists.append(call.int_list(raw))
    ends_q, ends_kv = lists
    if ends_q is None or ends_kv is None:
        return True  # device tensors in meta mode: not read
    if len(ends_q) != len(ends_kv):
        call.fail("KV315", kv_arg, f"{len(ends_q)} entries, one per request like {q_arg}", f"{len(ends_kv)} entries",
                  REJECTS + " (Analyze3DimLayout: 'VarLen scene, q is not equal kv')")
        return False
    for arg, ends, total in ((q_arg, ends_q, int(q.shape[0])), (kv_arg, ends_kv, int(k.shape[0]))):
        if not ends or min(ends) < 0:
            call.fail("KV315", arg, "non-negative entries", str(ends), REJECTS)
            return False
        offsets = _without_trailing_zeros(ends)
        if any(b < a for a, b in zip(offsets, offsets[1:])):
            call.fail("KV315", arg, "cumulative (non-decreasing) end offsets for TND (trailing zeros for requests "
                      "left out)", str(ends),
                      "requests are cut at the wrong tokens: per-request lengths are read as offsets")
            return False
        if offsets and offsets[-1] > total:
            call.fail("KV315", arg, f"a last offset <= the token count {total}", str(offsets[-1]),
                      REJECTS + " (Analyze3DimLayout: T must be >= the sum of the lengths)")
            return False
    dims.q_lens, dims.kv_lens = _per_request(ends_q), _per_request(ends_kv)
    dims.b = len(ends_q)
    dims.s1 = max(dims.q_lens) if dims.q_lens else 0
    dims.s2 = max(dims.kv_lens) if dims.kv_lens else 0
    return True


def _without_trailing_zeros(ends: List[int]) -> List[int]:
    """The cumulative offsets before a run of trailing zeros (requests left out of the
    computation: rules/facts/fusion.toml [fusion.lengths])."""
    last = len(ends)
    while last and ends[last - 1] == 0:
        last -= 1
    return ends[:last]


def _given(value) -> bool:
    """A length list torch_npu counts as given: a non-empty list, or (_v3) a tensor with elements."""
    if value is None:
        return False
    return value.numel() > 0 if isinstance(value, _Tensor) else len(value) > 0


def _lengths_outside_tnd(call: Call, dims: Dims) -> bool:
    """Length lists outside TND (rules/facts/fusion.toml [fusion.lengths]): both given route the
    call to a varlen aclnn entry, which rejects the layout; one alone never reaches the kernel.
    Reads the lists' lengths only (pure). False after an error."""
    roles = ROLES[call.name]
    q_arg, kv_arg = str(roles.keyword("q_lens")), str(roles.keyword("kv_lens"))
    given = [arg for arg in (q_arg, kv_arg) if _given(call.get(arg))]
    if len(given) == 2:
        call.fail("KV316", q_arg, f"None with input_layout {dims.layout!r}: length lists are for input_layout "
                  f"{VARLEN_LAYOUT!r} only", f"{q_arg} and {kv_arg} both given",
                  REJECTS + f" (with both lists torch_npu calls aclnnFlashAttentionVarLenScore, which rejects it: "
                  f"'Layout {dims.layout} is not TND, invalid shape')")
        return False
    if given:
        call.fail("KV316", given[0], f"None with input_layout {dims.layout!r} (a length list is read only with "
                  f"input_layout {VARLEN_LAYOUT!r} and both lists)", "a length list",
                  f"the list is ignored: every request attends over the full S1={dims.s1}, S2={dims.s2}",
                  severity="warning")
    return True


def _mask_form(call: Call, dims: Dims, m, sparse: int, checked: bool) -> bool:
    """mask dtype (GEN l.1500-1504), sparse_mode per layout (SparseModeProcess l.768,
    VarLenSparseModeProcess l.4098), compressed shapes (l.1564-1577): shapes only."""
    if m.dtype not in MASK_DTYPES and not any(f.code == "KV205" for f in call.findings):
        call.fail("KV205", "atten_mask", " or ".join(F["mask_dtypes"]), dtype_name(m.dtype),
                  REJECTS + " (AnalyzeOptionalInput: only support bool or uint8)")
        return False
    modes = MODES_TND if dims.tnd else MODES_NOT_TND
    if sparse not in modes:
        where = "input_layout TND" if dims.tnd else f"input_layout {dims.layout!r} (7 and 8 need TND)"
        call.fail("KV213", "sparse_mode", f"one of {sorted(modes)} with an atten_mask and {where}", str(sparse),
                  REJECTS + (" (VarLenSparseModeProcess: 'Var len not support sparse mode')" if dims.tnd
                             else " (SparseModeProcess: 'Not support sparse mode')"))
        return False
    if sparse == SPARSE["prefix_compress_mode"]:
        expected = tuple(SPARSE["prefix_compress_shape"])
    elif sparse in COMPRESSED and (not checked or sparse not in (2, 3, 4)):
        expected = tuple(SPARSE["compressed_shape"])  # the FA family checks 2/3/4 for npu_fusion_attention
    else:
        return True
    if m.dim() not in (2, 4):
        call.fail("KV206", "atten_mask", f"a 2-D or 4-D mask, last two dims {expected} for sparse_mode={sparse}",
                  f"{m.dim()}-D {shape_of(m)}", REJECTS + " (AnalyzeOptionalInput: atten mask dim should be 2 or 4)")
        return False
    if tuple(int(s) for s in m.shape[-2:]) != expected:
        call.fail("KV206", "atten_mask", f"last two dims {expected} for sparse_mode={sparse} (the compressed mask)",
                  shape_of(m), REJECTS + " (AnalyzeOptionalInput: atten_mask compression)")
        return False
    return True


def _mask_shape(call: Call, dims: Dims, m, sparse: int) -> bool:
    """The mask forms the tiling classifies (GEN AnalyzeOptionalInput l.1511-1560): 4-D
    (1, 1, S1, S2), (B, 1, S1, S2) or (B, N1, S1, S2) exactly, in every mode; 2-D (S1, S2) (TND:
    (max S1, max S2) or (sum S1, sum S2)), or any 2-D with a compressed mode (its size is checked
    next); no other rank (KV206 for a compressed mode, else KV211). Reported once: not when the
    FA family already reported the mask. TND sizes come from the lengths (fusion_values)."""
    if any(f.argument == "atten_mask" for f in call.findings):
        return False
    ms = tuple(int(s) for s in m.shape)
    b, n1, s1, s2 = dims.b, dims.n1, dims.s1, dims.s2
    compressed = sparse in COMPRESSED or sparse == SPARSE["prefix_compress_mode"]
    code = "KV206" if compressed else "KV211"
    if m.dim() == 4:
        if ms in ((1, 1, s1, s2), (b, 1, s1, s2), (b, n1, s1, s2)):
            return True
        forms = f"exactly (1, 1, {s1}, {s2}), ({b}, 1, {s1}, {s2}) or ({b}, {n1}, {s1}, {s2})"
        if compressed:
            forms += " (a compressed mask is 2-D)"
    elif m.dim() == 2:
        if ms == (s1, s2) or compressed:
            return True
        if dims.tnd and ms == (sum(dims.q_lens), sum(dims.kv_lens)):
            return True
        forms = f"exactly ({s1}, {s2})" + (
            f" (max S1, max S2) or ({sum(dims.q_lens)}, {sum(dims.kv_lens)}) (sum S1, sum S2)" if dims.tnd else "")
    else:
        forms = "a 2-D or 4-D mask"
    call.fail(code, "atten_mask", f"{forms} for sparse_mode={sparse} (input_layout {dims.layout!r})", shape_of(m),
              REJECTS + " (AnalyzeOptionalInput: get unsupported atten_mask shape)")
    return False


def _prefix_mask(call: Call, dims: Dims, m, sparse: int) -> bool:
    """sparse_mode 5 with a valid prefix list and B > 1 takes a (B, 1|N1, S1, S2) mask
    (GEN SparseModeProcess l.785-790)."""
    b, n1, s1, s2 = dims.b, dims.n1, dims.s1, dims.s2
    if (sparse != SPARSE["prefix_mode"] or dims.tnd or b == 1 or call.get("prefix") is None
            or tuple(int(s) for s in m.shape) in ((b, 1, s1, s2), (b, n1, s1, s2)) or _prefix_problem(call, dims)):
        return True
    call.fail("KV211", "atten_mask", f"({b}, 1, {s1}, {s2}) or ({b}, {n1}, {s1}, {s2}) for sparse_mode=5 with a "
              "prefix list (one mask per request)", shape_of(m),
              REJECTS + " (SparseModeProcess: 'Prefix mode get invalid atten_mask shape')")
    return False


def _prefix_problem(call: Call, dims: Dims) -> Optional[str]:
    """What is wrong with the prefix list (one N per request, each in [max(S2 - S1, 0), S2]),
    or None (also when it cannot be read). GEN GetPrefixNList l.1316-1363, TND
    VarLenGetPrefixNList l.4038-4095."""
    prefix = call.get("prefix")
    if prefix is None:
        return "no prefix list (one N per request)"
    values = call.int_list(prefix)
    if values is None or dims.b is None or (dims.tnd and dims.q_lens is None):
        return None
    if len(values) != dims.b:
        return f"{len(values)} prefix entries for {dims.b} requests"
    pairs = list(zip(dims.q_lens, dims.kv_lens)) if dims.tnd else [(dims.s1, dims.s2)] * dims.b
    for i, (p, (a, b)) in enumerate(zip(values, pairs)):
        low = max(b - a, 0)
        if not low <= p <= b:
            return f"prefix[{i}] = {p} outside [{low}, {b}] (S1={a}, S2={b})"
    return None


def _band_ok(pre: int, nxt: int, s1: int, s2: int) -> bool:
    """GEN SparseBandModeCheck l.700-764: some key left to attend to."""
    if pre >= 0 and nxt >= 0:
        return True
    if pre < 0 and nxt < 0:
        return False
    if pre < 0:
        return nxt >= -pre and -pre < s2
    return -nxt <= pre and -nxt < s1


def _window(call: Call, dims: Dims, sparse: int) -> Optional[str]:
    """What is wrong with pre/next tokens for this sparse mode (with a mask), or None.
    Outside TND: GEN GetSparseInfo l.795-825, PretokenAndNexttokenAdjustment l.637-698 (mode 4
    counts from the bottom-right corner). TND: varlen GetSparseInfo l.4116-4145,
    CheckPretokenAndNexttoken l.3900-3993, SparseNoMaskModeCheck l.3995-4036."""
    roles = ROLES[call.name]
    pre, nxt = call.get(roles.keyword("pre_tokens")), call.get(roles.keyword("next_tokens"))
    if not isinstance(pre, int) or not isinstance(nxt, int):
        return None  # not an int: the dispatcher rejects it
    if not dims.tnd:
        s1, s2 = dims.s1, dims.s2
        if sparse == 0:
            if pre >= s1 and (nxt == 0 or nxt >= s2):
                return None
        elif sparse == 4:
            if s1 != s2:
                pre, nxt = s1 - s2 + pre, s2 - s1 + nxt
        else:
            return None  # modes 1, 2, 3, 5, 6 ignore the window
        return None if _band_ok(pre, nxt, s1, s2) else f"no key to attend to with S1={s1}, S2={s2}"
    ql, kl = dims.q_lens, dims.kv_lens
    if ql is None or kl is None:
        return None
    pairs = [(a, b) for a, b in zip(ql, kl) if a and b]
    if sparse == 0:
        if nxt < 0:
            return "next_tokens < 0 leaves no valid block (TND)"
        if pre >= dims.s1 and nxt >= dims.s2:
            return None
        if pre >= dims.s1 and nxt == 0:
            return None
        for i, (a, b) in enumerate(zip(ql, kl)):
            if a and b and b + pre < a:
                return f"request {i} (S1={a}, S2={b}) has rows with no key: S2 + pre_tokens < S1"
        if pre < 0 and nxt < -pre:
            return "pre_tokens < 0 and next_tokens < |pre_tokens|: no valid block"
    elif sparse == 3:
        for i, (a, b) in enumerate(zip(ql, kl)):
            if a > b:
                return f"request {i} has S1={a} > S2={b}: right-down causal leaves rows with no key"
    elif sparse == 4:
        if pre < 0:
            return "pre_tokens < 0 in band mode (TND)"
        if nxt < 0 and pre + nxt < 0:
            return "pre_tokens + next_tokens < 0: no valid block"
        for i, (a, b) in enumerate(zip(ql, kl)):
            if a and b and a - nxt > b:
                return f"request {i} (S1={a}, S2={b}): S1 - next_tokens > S2 leaves rows with no key"
    elif sparse == 7:
        band = max((i for i, a in enumerate(ql) if a), default=len(ql) - 1)
        last = kl[band]
        if pre < last or nxt > 0:
            return f"pre_tokens >= the last request's S2 ({last}) and next_tokens <= 0 for sparse_mode 7"
        for a, b in pairs:
            if a > b:
                return f"a request with S1={a} > S2={b} (sparse_mode 7)"
        if ql[band] and kl[band] and ql[band] - nxt > kl[band]:
            return f"the last request (S1={ql[band]}, S2={kl[band]}): S1 - next_tokens > S2"
    elif sparse == 8:
        band = min((i for i, a in enumerate(ql) if a), default=0)
        if ql[band] - nxt > kl[band]:
            return f"the first request (S1={ql[band]}, S2={kl[band]}): S1 - next_tokens > S2"
        if pre < kl[band]:
            return f"pre_tokens >= the first request's S2 ({kl[band]}) for sparse_mode 8"
    return None


def _pse(call: Call, dims: Dims, q, masked_mode: Optional[int]) -> Optional[tuple]:
    """(argument, expected, given, why) for a pse the operator rejects, or None. GEN AnalyzeAttrs
    l.1061-1065, AnalyzeOptionalInput l.1414-1488, SetPseAlibiParams (every template: base
    l.827-856, l.3299-3337, l.3576-3614, varlen l.3738-3795); API InputDtypeCheck l.403-424.
    `masked_mode`: the sparse_mode when a mask is given (without one the mode takes no effect)."""
    pse = call.get("pse")
    ptype = call.args.get("pse_type", PSE["default_type"])
    if not isinstance(ptype, int):
        return None
    if ptype not in PSE["types"]:
        return ("pse_type", f"one of {list(PSE['types'])}", str(ptype), "AnalyzeAttrs: pseType out of range")
    if not isinstance(pse, _Tensor):
        if ptype != PSE["default_type"]:
            return ("pse", f"a tensor with pse_type={ptype}", "None", "AnalyzeOptionalInput: pse is nullptr")
        return None
    if ptype in PSE["inner_types"]:
        if pse.dim() not in (1, 2):
            return ("pse", f"(N1,) or (B, N1) slopes with pse_type={ptype}", shape_of(pse),
                    "AnalyzeOptionalInput: pse inner mode, unsupported pse shape")
        if pse.dtype != PSE_INNER_DTYPE:
            return ("pse", f"{PSE['inner_dtype']} with pse_type={ptype}", dtype_name(pse.dtype),
                    "aclnn InputDtypeCheck: pse type 2 or 3 must be float32")
        if not dims.tnd and dims.s1 != dims.s2:
            return ("pse", f"None, or S1 == S2 for pse_type={ptype} (inner alibi slopes)",
                    f"S1={dims.s1}, S2={dims.s2}", "SetPseAlibiParams: INNER Pse alibi only when s1 and s2 are equal")
        if dims.tnd and masked_mode == PSE["inner_not_tnd_mode"]:
            return ("pse", f"None with sparse_mode={masked_mode} and pse_type={ptype} (inner alibi slopes)",
                    "a tensor", "SetPseAlibiParams: INNER Pse does not support sparse mode 7")
        if dims.tnd and masked_mode == PSE["inner_tnd_equal_mode"] and dims.q_lens is not None:
            return _inner_pse_band(call, dims, ptype)
        return None
    if pse.dtype != q.dtype:
        return ("pse", f"{dtype_name(q.dtype)} like the query", dtype_name(pse.dtype),
                "aclnn InputDtypeCheck: pse dtype not equal to the query's")
    ps, n1, rows = [int(s) for s in pse.shape], dims.n1, PSE["alibi_rows"]
    if dims.tnd:
        if dims.q_lens is None or dims.kv_lens is None:
            return None
        per_key = n1 * sum(dims.kv_lens)
        per_score = n1 * sum(a * b for a, b in zip(dims.q_lens, dims.kv_lens))
        if ps and ps[0] in (per_key, per_score):
            return None
        if len(ps) == 4 and ps[0] in (1, dims.b) and ps[1:] == [n1, rows, dims.s2]:
            if dims.q_lens != dims.kv_lens:
                return ("pse", f"per-request S1 == S2 with a ({rows}, S2) alibi pse (TND)",
                        f"S1 {dims.q_lens}, S2 {dims.kv_lens}",
                        "SetPseAlibiParams: Pse alibi only when actualSeqQLen and actualSeqKvLen are equal")
            return None
        return ("pse", f"dim 0 = N1 * sum(S2) = {per_key} or N1 * sum(S1*S2) = {per_score}, or "
                f"(1|{dims.b}, {n1}, {rows}, {dims.s2}) (TND)", shape_of(pse),
                "AnalyzeOptionalInput: get unsupported pse shape")
    s1, s2, b = dims.s1, dims.s2, dims.b
    forms = f"(1|{b}, {n1}, {s1}, {s2}), (1|{b}, {n1}, 1, {s2})" + (
        f" or (1|{b}, {n1}, {rows}, {s2})" if s1 >= rows else "")
    if len(ps) != 4 or ps[0] not in (1, b) or ps[1] != n1 or ps[3] != s2 or not (
            ps[2] in (s1, 1) or ps[2] == rows and s1 >= rows):
        return ("pse", forms, shape_of(pse), "AnalyzeOptionalInput: get unsupported pse shape")
    if ps[2] == rows and s1 > rows and s1 != s2:
        return ("pse", f"S1 == S2 with a ({rows}, S2) alibi pse and S1 > {rows}", f"S1={s1}, S2={s2}",
                "SetPseAlibiParams: Pse alibi only support same S1 S2 when S1 larger than 1024")
    return None


def _inner_pse_band(call: Call, dims: Dims, ptype: int) -> Optional[tuple]:
    """Inner alibi slopes with TND sparse_mode 8 (varlen SetPseAlibiParams l.3750-3765): request 0
    has S1 - S2 + q_start_idx - kv_start_idx == 0, every later request S1 == S2. The start
    indices are the lists' first entries, 0 when absent (SetQKVStartIdx l.1366-1410)."""
    q_lens, kv_lens = dims.q_lens, dims.kv_lens
    q_raw, kv_raw = call.get("q_start_idx"), call.get("kv_start_idx")
    q_start = call.int_list(q_raw) if q_raw is not None else []
    kv_start = (call.int_list(kv_raw) if kv_raw is not None else []) if q_start else []  # read after q's
    if q_start is None or kv_start is None:
        return None  # not readable in this mode
    q0, kv0 = (q_start or [0])[0], (kv_start or [0])[0]
    offset = q_lens[0] - kv_lens[0] + q0 - kv0
    unequal = [i for i in range(1, len(q_lens)) if q_lens[i] != kv_lens[i]]
    if offset == 0 and not unequal:
        return None
    if offset:
        given = f"request 0: S1 {q_lens[0]} - S2 {kv_lens[0]} + q_start_idx {q0} - kv_start_idx {kv0} = {offset}"
        why = "actualSeqLenData[0] + qStartIdx - actualSeqLenKvData[0] - kvStartIdx == 0"
    else:
        i = unequal[0]
        given = f"request {i}: S1 {q_lens[i]} != S2 {kv_lens[i]}"
        why = f"actualSeqQLen[{i}] and actualSeqKvLen[{i}] are equal"
    return ("pse", f"None with sparse_mode=8 and pse_type={ptype} (inner alibi slopes), unless request 0 has "
            "S1 - S2 + q_start_idx - kv_start_idx == 0 and every later request S1 == S2", given,
            f"SetPseAlibiParams: INNER Pse sparse mode 8 is only supported when {why}")


def _drop_mask(call: Call, dims: Dims, keep_prob: float) -> Optional[tuple]:
    """GEN AnalyzeOptionalInput l.1581-1611: uint8, one bit per score. Checked only with
    keep_prob < 1, where the mask is certainly applied."""
    drop = call.get("dropout_mask")
    if not isinstance(drop, _Tensor) or keep_prob >= 1.0:
        return None
    if drop.dtype != DROP_DTYPE:
        return (F["drop_mask_dtype"], dtype_name(drop.dtype), "AnalyzeOptionalInput: dropMask only support uint8")
    if dims.tnd:
        if dims.q_lens is None or dims.kv_lens is None:
            return None
        scores = dims.n1 * sum(a * b for a, b in zip(dims.q_lens, dims.kv_lens))
        what = f"N1 * sum(S1*S2) / 8 = {dims.n1} * {scores // dims.n1} / 8"
    else:
        scores = dims.b * dims.n1 * dims.s1 * dims.s2
        what = f"B*N1*S1*S2 / 8 = {dims.b}*{dims.n1}*{dims.s1}*{dims.s2} / 8"
    bits = F["drop_mask_bits"]
    need = -(-scores // bits)
    if drop.numel() < need:
        return (f"at least {need} elements ({what}, one bit per score)", f"{drop.numel()} in {shape_of(drop)}",
                "AnalyzeOptionalInput: dropMask shapeSize is invalid")
    return None


def _sized(call: Call, quiet: bool):
    """(dims, query, mask, sparse_mode) of a call with three tensors and a usable shape, else None."""
    args = call.args
    q, k, v = args.get("query"), args.get("key"), args.get("value")
    if not (isinstance(q, _Tensor) and isinstance(k, _Tensor) and isinstance(v, _Tensor)):
        return None
    layout = args.get("input_layout")
    if isinstance(layout, str):
        layout = layout.upper()  # op-plugin and the infershape upper-case it
    if not isinstance(layout, str):
        return None  # the dispatcher rejects a non-string layout
    dims = _dims(call, q, k, v, layout, call.name in FA_SEES, quiet)
    if dims is None:
        return None
    m = args.get("atten_mask")
    return dims, q, k, m if isinstance(m, _Tensor) else None, int(args.get("sparse_mode") or 0)


def _report_window(call: Call, dims: Dims, sparse: int) -> bool:
    problem = _window(call, dims, sparse)
    if problem:
        roles = ROLES[call.name]
        pre, nxt = str(roles.keyword("pre_tokens")), str(roles.keyword("next_tokens"))
        call.fail("KV117", pre, f"a {pre}/{nxt} window that leaves every query row a key to attend to "
                  f"(sparse_mode={sparse})", f"{pre}={call.get(pre)}, {nxt}={call.get(nxt)}: {problem}",
                  REJECTS + " (sparse band check: 'there is no valid data block' / 'has invalid row')")
    return not problem


def _optional_inputs(call: Call, dims: Dims, q, m, sparse: int) -> None:
    bad = _pse(call, dims, q, sparse if m is not None else None)
    if bad:
        arg, expected, given, why = bad
        call.fail("KV116", arg, expected, given, f"{REJECTS} ({why})")
        return
    keep = call.args.get("keep_prob", 1.0)
    bad = _drop_mask(call, dims, float(keep if keep is not None else 1.0))
    if bad:
        expected, given, why = bad
        call.fail("KV116", "dropout_mask", expected, given, f"{REJECTS} ({why})")


def _rope(call: Call, dims: Dims, q, k, v, m, sparse: int) -> Optional[tuple]:
    """(argument, expected, given, why) for query_rope/key_rope (`_v2`) the operator rejects, or
    None. API aclnnFlashAttentionVarLenScoreV3GetWorkspaceSize l.1125-1130 (TND only) and
    isSupportMultiInput l.710-768."""
    args = call.args
    qr, kr = args.get("query_rope"), args.get("key_rope")
    if qr is None and kr is None:
        return None
    if (qr is None) != (kr is None):
        given, missing = ("query_rope", "key_rope") if qr is not None else ("key_rope", "query_rope")
        return (missing, f"a tensor, passed together with {given}", "None", "isSupportMultiInput: rope pair")
    if not (isinstance(qr, _Tensor) and isinstance(kr, _Tensor)):
        return None
    if not dims.tnd:
        return ("query_rope", "None outside input_layout 'TND' (rope is supported for TND only)",
                f"a tensor with input_layout {dims.layout!r}", "isSupportMultiInput: only support rope for layout TND")
    for name, t in (("query_rope", qr), ("key_rope", kr)):
        if t.dim() != 3 or int(t.shape[2]) > dims.d:
            return (name, f"(T, N, Dr) with Dr <= the query's head dim {dims.d}", shape_of(t),
                    "isSupportMultiInput: rope head dim larger than the query's")
    for name, t in (("query", q), ("key", k), ("value", v), ("query_rope", qr), ("key_rope", kr)):
        if t.dtype != ROPE_DTYPE:
            return (name, f"{ROPE['dtype']} with query_rope/key_rope", dtype_name(t.dtype),
                    "isSupportMultiInput: query, key, value and ropes must be BFloat16")
    if sparse == SPARSE["prefix_compress_mode"]:
        return ("sparse_mode", f"not {sparse} with query_rope/key_rope", str(sparse),
                "isSupportMultiInput: rope not supported with sparse_mode 6")
    if m is None:
        return ("atten_mask", "a mask with query_rope/key_rope", "None",
                "isSupportMultiInput: only support rope when attentionMask is given")
    if isinstance(args.get("pse"), _Tensor):
        return ("pse", "None with query_rope/key_rope", "a tensor", "isSupportMultiInput: rope needs pseShift None")
    keep = args.get("keep_prob", 1.0)
    if keep is not None and float(keep) < 1.0:
        return ("keep_prob", "1 with query_rope/key_rope (no dropout)", repr(keep),
                "isSupportMultiInput: rope needs keepProb = 1")
    return None


@contract(*OPS, pure=True)
def fusion_shapes(call: Call) -> None:
    """Shapes, dtypes and scalars: everything outside TND but the prefix list; in TND what
    needs no length."""
    sized = _sized(call, quiet=False)
    if sized is None:
        return
    dims, q, k, m, sparse = sized
    if not dims.tnd and not _lengths_outside_tnd(call, dims):
        return
    if not _dtypes_ok(call, q, k, call.args["value"]):
        return
    keep = call.args.get("keep_prob", 1.0)
    if keep is not None and not 0.0 < float(keep) <= F["keep_prob_max"]:
        call.fail("KV116", "keep_prob", "in (0, 1] (the probability of keeping an element)", repr(keep),
                  REJECTS + " (AnalyzeAttrs: keepProb value must be in range of (0, 1])")
        return
    bad = _rope(call, dims, q, k, call.args["value"], m, sparse)
    if bad:
        arg, expected, given, why = bad
        call.fail("KV116", arg, expected, given, f"{REJECTS} ({why})")
        return
    if m is not None and not _mask_form(call, dims, m, sparse, call.name in FA_SEES):
        return
    if dims.tnd:
        return  # the rest needs the lengths: fusion_values
    if m is not None and not (_mask_shape(call, dims, m, sparse) and _report_window(call, dims, sparse)):
        return
    _optional_inputs(call, dims, q, m, sparse)


@contract(*NOT_FA_SEES, pure=True)
def fusion_scale(call: Call) -> None:
    """KV103 (warning) for _v2 and _v3: `scale` left at 1.0 (the FA family's `scale` contract
    warns for npu_fusion_attention)."""
    value = call.args.get("scale")
    if value is None or isinstance(value, bool) or float(value) != F["scale_default"]:
        return
    sized = _sized(call, quiet=True)
    if sized is not None:
        warn_unscaled(call, "scale", value, sized[0].d)


@contract(*OPS)
def fusion_values(call: Call) -> None:
    """What reads a list's entries: TND lengths (and the mask, window, pse and dropout_mask
    sizes they give), the prefix list of sparse_mode 5 and 6."""
    args = call.args
    layout = args.get("input_layout")
    if not (isinstance(layout, str) and layout.upper() == "TND") and args.get("sparse_mode") not in PREFIX_MODES:
        return  # nothing here reads a list outside TND but the prefix of sparse_mode 5/6
    if any(f.severity == "error" for f in call.findings):
        return  # the call is already stopped
    sized = _sized(call, quiet=True)
    if sized is None:
        return
    dims, q, k, m, sparse = sized
    if dims.tnd:
        if not _tnd_lengths(call, dims, q, k) or dims.q_lens is None:
            return
        if m is not None and not (_mask_shape(call, dims, m, sparse) and _report_window(call, dims, sparse)):
            return
    if m is not None:
        problem = _prefix_problem(call, dims) if sparse == SPARSE["prefix_compress_mode"] else None
        if problem:
            call.fail("KV117", "prefix", "one prefix N per request, within [max(S2 - S1, 0), S2], for sparse_mode 6",
                      repr(call.get("prefix")), f"{REJECTS} (GetPrefixNList: {problem})")
            return
        if not _prefix_mask(call, dims, m, sparse):
            return
    if dims.tnd:
        _optional_inputs(call, dims, q, m, sparse)
