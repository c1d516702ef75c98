"""Quantization parameters of the attention's inputs, as the tilings check them:

- KV int8 antiquant with separate key and value parameters (split mode): key_antiquant_scale /
  value_antiquant_scale, their offsets and key_antiquant_mode / value_antiquant_mode (v2:
  dequant_scale_key / dequant_scale_value, dequant_offset_*, key_quant_mode / value_quant_mode),
  as the IFA tiling checks them for FIA decode (npu_fused_infer_attention_score(_v2), Q_S 1 in
  BSH/BSND/BNSD: FIA tiling.cpp IsUsingIFA). The combined antiquant_scale / antiquant_offset are
  families/fa/contracts.py `antiquant_params`.
- The prefill path (the PFA tiling: npu_prompt_flash_attention, FIA prefill): an int8 query's
  BMM dequant / quant factors, none of them with an fp16 query and an int8 output, and what FIA
  prefill refuses (antiquant_mode, v2's query dequant). `pfa_route` tells which FIA calls.
- Quantized MLA on the IFA tiling (`mla_ifa_route`): no KV antiquant, and an int8 query's full
  quantization (NZ paged cache, the query's / key's / value's dequant scales and modes), then no
  kv padding, pse_shift, softmax LSE or shared prefix. Its output side (no int8 output) is
  quant_out.py's.
- TND prefill on the PFA tiling (`pfa_tnd_route`, `tnd_io_reject`; reported by quant_out.py
  tnd_prefill_io): no all-int8 query/key/value, no int8 output, no KV antiquant.
- GQA with an int8 NZ cache on the IFA tiling (`gqa_nz_route`, gqa_kv_nz) and KV int4 packed in
  int32 (int4_cache).

Reads only shapes, dtypes and scalar arguments (the call's signature): the query's, key's, value's
and rope tensors' dtype, rank and element count, the view's heads, head dim, batch, query length,
sparse_mode and layout, the key's and the block table's shapes, block_size, inner_precise, the
query length list's length, the quantization tensors' shapes and dtypes, the modes and v2's dtype
overrides. Data and source lines: rules/facts/fa_contracts.toml [fa_contracts.antiquant_split],
[fa_contracts.prefill_quant], [fa_contracts.mla_quant], [fa_contracts.mla_full_quant],
[fa_contracts.mla_quant_misc], [fa_contracts.tnd_prefill], [fa_contracts.gqa_kv_nz], [fa_contracts.int4]."""
from __future__ import annotations

from typing import Optional

import torch

from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.families.fa.contracts import CONTRACTS, _ifa_route, _quant_names, kv_seq, sets_dtype_override
from kvlint.runtime.registry import contract

SPLIT = CONTRACTS["antiquant_split"]
PREFILL = CONTRACTS["prefill_quant"]
MLA_QUANT = CONTRACTS["mla_quant"]
FULL = CONTRACTS["mla_full_quant"]
ATB_PRECISE = CONTRACTS["antiquant"]["atb_precise"]
_FLOATS = frozenset((torch.float16, torch.bfloat16))
_PER_TOKEN_DTYPE = getattr(torch, SPLIT["per_token_dtype"])
_MIXED = tuple(SPLIT["mixed_modes"])
_MODES = frozenset(SPLIT["mode_range"])
_PER_CHANNEL = frozenset(SPLIT["per_channel"])
_PAGED_MODES = {int(mode): form for mode, form in SPLIT["paged_modes"].items()}
_Tensor = torch.Tensor


class _Names:
    """One operator's spelling of the split-mode keywords (v2 through the renames)."""

    __slots__ = ("key_scale", "value_scale", "key_offset", "value_offset", "key_mode", "value_mode", "absent")

    def __init__(self, name: str):
        self.key_scale, self.value_scale = _quant_names(name, SPLIT["scales"])
        self.key_offset, self.value_offset = _quant_names(name, SPLIT["offsets"])
        self.key_mode, self.value_mode = _quant_names(name, SPLIT["modes"])
        self.absent = _quant_names(name, SPLIT["float_cache_absent"])


NAMES = {name: _Names(name) for name in SPLIT["operators"]}


def _tensor(value) -> Optional[_Tensor]:
    return value if isinstance(value, _Tensor) else None


def _why(check: str, detail: str = "") -> str:
    return f"the operator rejects the call (IFA {check}{': ' + detail if detail else ''})"


@contract(*SPLIT["operators"], pure=True)
def antiquant_split(call: Call) -> None:
    """IFA tiling ProcessAntiQuant's split-mode checks on FIA decode: parameters on a float
    cache, key/value pairing, equal shapes and dtypes, the mode pair, the key's parameters'
    shapes and dtypes per mode, modes 4/5 against the paged cache."""
    view = call.view
    if view is None or view.cache_broken:
        return
    names = NAMES[call.name]
    args = call.args
    get = args.get
    ks, vs = _tensor(get(names.key_scale)), _tensor(get(names.value_scale))
    ko, vo = _tensor(get(names.key_offset)), _tensor(get(names.value_offset))
    if ks is None and vs is None and ko is None and vo is None and get(names.absent[-1]) is None:
        return  # the common call: no split-mode parameter
    if sets_dtype_override(call):
        return  # v2 hands the operator other dtypes than the tensors'
    q, k = view.q, view.k
    if q.dtype not in _FLOATS or not _ifa_route(call, view):
        return  # full quantization (int8 query), the PFA tiling (prefill), MLA, NZ: not these checks
    if k.dtype == q.dtype:
        for arg in names.absent:
            t = _tensor(get(arg))
            if t is not None:
                call.fail("KV518", arg, f"None with a {dtype_name(k.dtype)} cache (antiquant needs an int8 key and "
                          "value)", f"a tensor {shape_of(t)}",
                          _why("ProcessAntiQuant", "KV antiquant is unenabled, but antiquant parameters exist"))
                return
        return
    if k.dtype != torch.int8:
        return  # int4 (packed in int32) and others: not checked here
    why = "CheckKeyAndValueAntiquantScaleOffset"
    for given, given_arg, missing, missing_arg, what in (
            (ks, names.key_scale, vs, names.value_scale, "scale"),
            (vs, names.value_scale, ks, names.key_scale, "scale"),
            (ko, names.key_offset, vo, names.value_offset, "offset"),
            (vo, names.value_offset, ko, names.key_offset, "offset")):
        if given is not None and missing is None:
            call.fail("KV518", missing_arg, f"a tensor: {given_arg} is given (the key's and the value's antiquant "
                      f"{what}s go together)", "None", _why(why))
            return
    if ks is None:
        if ko is not None:
            call.fail("KV518", names.key_scale, f"a tensor: {names.key_offset} is given", "None",
                      _why(why, "the key's dequant scale is null, but the key's dequant offset exist"))
        return  # the combined antiquant_scale path
    k_mode, v_mode = int(get(names.key_mode) or 0), int(get(names.value_mode) or 0)
    mixed = (k_mode, v_mode) == _MIXED
    if not mixed:
        why = "CheckKeyAndValueAntiquantOffset"
        if ko is not None and ko.dtype != vo.dtype:
            call.fail("KV518", names.value_offset, f"{dtype_name(ko.dtype)} like {names.key_offset}",
                      dtype_name(vo.dtype), _why(why, "the key's and the value's dequant offset should have the "
                                                 "same data type"))
            return
        for key_t, value_t, value_arg, what in ((ko, vo, names.value_offset, "offset"),
                                                 (ks, vs, names.value_scale, "scale")):
            if key_t is not None and key_t.shape != value_t.shape:
                call.fail("KV518", value_arg, f"{shape_of(key_t)} like the key's dequant {what}", shape_of(value_t),
                          _why(why, f"the key's and the value's dequant {what} should have the same shape"))
                return
        if k_mode != v_mode:
            call.fail("KV518", names.value_mode, f"{k_mode} like {names.key_mode} (different modes only as "
                      f"{names.key_mode}={_MIXED[0]} with {names.value_mode}={_MIXED[1]})", str(v_mode),
                      _why("CheckKvAntiquant4SplitMode", "the key's quant mode and the value's quant mode should be "
                           "the same"))
            return
        if k_mode not in _MODES:
            return  # reported by contracts.quantization (IFA CheckKVAntiQuantMode)
        if k_mode in _PAGED_MODES and not view.paged:
            call.fail("KV518", names.key_mode, "a mode other than 4 and 5 without a block_table (modes 4 and 5 keep "
                      "scale and offset in the paged cache's blocks)", str(k_mode),
                      _why("CheckKVAntiQuantMode", "the key/value's quant mode 4 and 5 must be used in page "
                           "attention scene"))
            return
    else:
        for arg, t, want, role, check in (
                (names.key_scale, ks, q.dtype, f"the query's dtype (key per-channel, {names.key_mode}=0)",
                 "CheckAntiQuantParamKeyType"),
                (names.key_offset, ko, ks.dtype, "its scale's dtype", "CheckAntiquantOffsetType"),
                (names.value_scale, vs, _PER_TOKEN_DTYPE, f"per-token ({names.value_mode}=1)",
                 "CheckAntiQuantParamValueType"),
                (names.value_offset, vo, vs.dtype, "its scale's dtype", "CheckAntiquantOffsetType")):
            if t is not None and t.dtype != want:
                call.fail("KV518", arg, f"{dtype_name(want)}: {role}", dtype_name(t.dtype),
                          _why(f"ProcessAntiQuantMode / {check}"))
                return
    _key_params(call, view, names, ks, ko, k_mode, mixed)


def _key_params(call: Call, view, names: _Names, ks: _Tensor, ko: Optional[_Tensor], mode: int, mixed: bool) -> None:
    """CheckAntiQuantParam on the key's scale and offset (antiquantNum_ = 1), then the paged
    modes' shapes (ProcessBlockTable)."""
    why = "CheckAntiQuantParam"
    if ko is not None and ko.dim() != ks.dim():
        call.fail("KV518", names.key_offset, f"{ks.dim()}-D like {names.key_scale} {shape_of(ks)}",
                  f"{ko.dim()}-D {shape_of(ko)}", _why(why, "antiquant params have different layouts"))
        return
    kv = view.kv_heads or view.num_heads
    d, batch, seq = view.head_dim, view.batch, kv_seq(view)
    for arg, t in ((names.key_scale, ks), (names.key_offset, ko)):
        if t is None:
            continue
        expected = _expected(mode, mixed, tuple(t.shape), kv, d, batch, seq, view)
        if expected is not None:
            call.fail("KV518", arg, expected, shape_of(t), _why(
                "CheckKVAntiQuantParaShapeLegal" if mode not in _PAGED_MODES or mixed
                else "CheckKVAntiQuantParamsShapeInPagedAttention"))
            return
    if mixed:
        return  # dtypes checked by ProcessAntiQuantMode
    want = view.q.dtype if mode in _PER_CHANNEL else _PER_TOKEN_DTYPE
    if ks.dtype != want:
        kind = "per-channel" if mode in _PER_CHANNEL else "per-token"
        call.fail("KV518", names.key_scale, f"{dtype_name(want)} ({kind}: {names.key_mode}={mode})",
                  dtype_name(ks.dtype), _why(why, "illegal datatype of antiquant scale"))
    elif ko is not None and ko.dtype != ks.dtype:
        call.fail("KV518", names.key_offset, f"{dtype_name(ks.dtype)} like {names.key_scale}", dtype_name(ko.dtype),
                  _why("CheckAntiquantOffsetType", "datatype of antiquant scale and antiquant offset should be "
                       "the same"))


def _expected(mode: int, mixed: bool, shape: tuple, kv: int, d: Optional[int], batch, seq, view) -> Optional[str]:
    """What the key's parameter should be when `shape` is not it, else None."""
    if not mixed and mode == SPLIT["per_tensor_head"]:
        return None if shape == (kv,) else f"({kv},) per-tensor-head (one value per KV head)"
    if not mixed and mode == SPLIT["per_token_head"]:
        if len(shape) == 3 and shape[0] == batch and shape[1] == kv and (not seq or shape[2] >= seq):
            return None
        return f"({batch}, {kv}, S >= {seq}) per-token-head (batch, KV heads, KV tokens)"
    if not mixed and mode in _PAGED_MODES:
        nb, bs = int(view.k.shape[0]), view.block_size
        want = (nb, bs) if mode == 4 else (nb, kv, bs)
        if len(shape) < len(want) or shape[:len(want)] == want:
            return None  # a lower rank: not checked (the source reads dims it may not have)
        return f"{want} for mode {mode}: {_PAGED_MODES[mode]} of the paged key cache"
    if not mixed and mode == 1:
        if len(shape) == 3 and shape[0] == 1 and shape[1] == batch and (not seq or shape[2] >= seq):
            return None
        if len(shape) == 2 and shape[0] == batch and (not seq or shape[1] >= seq):
            return None
        return f"(1, {batch}, S >= {seq}) or ({batch}, S >= {seq}) per-token (batch, KV tokens)"
    allowed = [(1,)] + ([(1, kv, 1, d), (1, 1, kv, d), (1, kv, d), (1, kv * d)] if d else [])
    if shape in allowed or (not d and len(shape) != 1):
        return None
    return "(1,) per-tensor or per-channel " + ", ".join(str(s) for s in allowed[1:]) + f" (N_kv = {kv}, D = {d})"


# ------------------------------------------------------------------------------ the prefill path
_BMM = {name: tuple(names) for name, names in PREFILL["bmm_factors"].items()}
_QUERY_DEQUANT, _QUERY_QUANT_MODE = PREFILL["query_dequant"]["keyword"], PREFILL["query_dequant"]["mode"]
_POST_QUANT_SCALE = {"npu_prompt_flash_attention": "quant_scale2", "npu_fused_infer_attention_score": "quant_scale2"}


def pfa_route(call: Call, view) -> bool:
    """Is this call tiled by the PFA tiling? npu_prompt_flash_attention always; FIA when IsUsingIFA
    is certainly false: no query_rope, no 5-D cache, not TND/NTD, Q_S > 1 (FIA tiling.cpp
    l.687-734; the rest of FIA's prefill routes are not checked here)."""
    if call.name == "npu_prompt_flash_attention":
        return True
    return view.query_rope is None and view.k.dim() != 5 and not view.tnd and (view.q_seq or 0) > 1


TND_PREFILL = CONTRACTS["tnd_prefill"]
_TND = TND_PREFILL["layout"]
_TND_ANTIQUANT_DTYPE = getattr(torch, TND_PREFILL["ifa_antiquant_param_dtype"])


def pfa_tnd_route(call: Call, view) -> bool:
    """Is this a TND call ("TND" exactly) tiled by the PFA tiling ([fa_contracts.tnd_prefill])?
    npu_prompt_flash_attention always; FIA unless IsUsingIFA takes it (D 512, or a paged int8 cache
    with a float query and float32 antiquant_scale and antiquant_offset)."""
    if view.layout != _TND:
        return False
    if call.name == "npu_prompt_flash_attention":
        return True
    if view.head_dim == TND_PREFILL["ifa_head_dim"]:
        return False
    if view.paged and view.k.dtype == torch.int8 and view.q.dtype != torch.int8:
        get = call.args.get
        scale, offset = _tensor(get("antiquant_scale")), _tensor(get("antiquant_offset"))
        if scale is not None and offset is not None and scale.dtype == offset.dtype == _TND_ANTIQUANT_DTYPE:
            return False  # IFA's TND MTP antiquant
    return True


_OUT_SCALE = {name: pair[0] for name, pair in CONTRACTS["post_quant"]["keywords"].items()}
_OUT_DTYPE = CONTRACTS["post_quant"]["out_dtype_keyword"]


def tnd_io_reject(call: Call, view) -> Optional[tuple]:
    """(argument, expected, given, why) for a TND call on the PFA tiling that its input/output
    dtype checks reject ([fa_contracts.tnd_prefill]: FIA's D alignment with int8, then PFA
    CheckIOType), else None."""
    if view.cache_broken or not pfa_tnd_route(call, view) or sets_dtype_override(call):
        return None
    q, k, v = view.q.dtype, view.k.dtype, view.v.dtype
    get = call.args.get
    scale_arg = _OUT_SCALE.get(call.name)
    int8_out = scale_arg is not None and _tensor(get(scale_arg)) is not None and get(_OUT_DTYPE) is None
    int8 = torch.int8
    d, multiple = view.head_dim, TND_PREFILL["int8_d_multiple"]
    if call.name != "npu_prompt_flash_attention" and (int8 in (q, k) or int8_out) and d and d % multiple:
        return ("query", f"a head dim that is a multiple of {multiple} when int8 is involved (TND prefill)",
                f"D = {d}", "FIA TilingProcess4PFA: D should be 32 elements aligned when int8 is involved")
    if q == k == v == int8:
        return ("query", "a float16 / bfloat16 query, key and value with input_layout 'TND' (no full int8 "
                "quantization in TND prefill)", "int8 query, key and value",
                "PFA CheckIOType: When Layout is TND, not support QKV dataType is all int8")
    if int8_out:
        return (scale_arg, "None with input_layout 'TND' (no int8 output in TND prefill)", "a tensor (int8 output)",
                "PFA CheckIOType: When Layout is TND, not support attention out dataType is int8")
    if q != int8 and k == v == int8:
        return ("key", f"{dtype_name(q)} like the query with input_layout 'TND' (no KV antiquant in TND prefill)",
                "an int8 key and value", "PFA CheckIOType: When Layout is TND, not support KV Antiquant")
    return None


@contract(*PREFILL["fia_operators"], pure=True)
def fia_route_quant(call: Call) -> None:
    """What each FIA tiling route refuses of the query-side quantization: on the IFA tiling (decode)
    a query dequant scale with a float query (IFA ProcessQuant l.995-999); on the PFA tiling
    (prefill) antiquant_mode other than 0 and a query dequant without query_rope (FIA
    TilingProcess4PFA: CheckDequantParams, ConvertContextToParamsPFA)."""
    view = call.view
    if view is None or view.cache_broken:
        return
    get = call.args.get
    if _ifa_route(call, view):
        t = _tensor(get(_QUERY_DEQUANT))
        if t is not None and view.q.dtype in _FLOATS:
            call.fail("KV518", _QUERY_DEQUANT, f"None with a {dtype_name(view.q.dtype)} query (the query dequant scale "
                      "is for an int8 query)", f"a tensor {shape_of(t)}",
                      "the operator rejects the call (IFA ProcessQuant: when the dtype of query is not int8, the "
                      "query's dequant scale should be null)")
        return
    if not (pfa_route(call, view) or pfa_tnd_route(call, view)):
        return
    mode = get("antiquant_mode")
    if mode:
        call.fail("KV518", "antiquant_mode", "0 on the prefill path (Q_S > 1: FIA tiles it like npu_prompt_flash_"
                  "attention)", str(mode), _why_fia("CheckDequantParams", "antiquant_mode is not supported"))
        return
    t = _tensor(get(_QUERY_DEQUANT))
    if t is not None:
        call.fail("KV518", _QUERY_DEQUANT, "None on the prefill path without query_rope", f"a tensor {shape_of(t)}",
                  _why_fia("CheckDequantParams", "when qRope is null, not support dequantScaleQuery exist"))
        return
    mode = get(_QUERY_QUANT_MODE)
    if mode:
        call.fail("KV518", _QUERY_QUANT_MODE, "0 on the prefill path (Q_S > 1)", str(mode),
                  _why_fia("ConvertContextToParamsPFA", "PFA not support query dequant now"))


def _why_fia(check: str, detail: str) -> str:
    return f"the operator rejects the call (FIA {check}: {detail})"


@contract(*PREFILL["operators"], pure=True)
def prefill_bmm_factors(call: Call) -> None:
    """PFA RunBigKernelTilingWithParams: an int8 query's dequant_scale1 / quant_scale1 /
    dequant_scale2 (PFA deq_scale1 / quant_scale1 / deq_scale2) given and non-empty (l.4214-4223);
    none of them with an fp16 query and an int8 output (l.4779-4789); PFA: no quant_offset2 with
    an int8 query and an fp16 output (l.4104-4107)."""
    view = call.view
    if view is None or view.cache_broken or not pfa_route(call, view) or tnd_io_reject(call, view):
        return  # (a TND call CheckIOType rejects: tnd_prefill_io reports it)
    if view.q.numel() == 0 or view.k.numel() == 0 or view.v.numel() == 0:
        return  # the empty-tensor path returns first (l.4173-4206)
    get = call.args.get
    factors = _BMM[call.name]
    q = view.q.dtype
    int8_out = _tensor(get(_POST_QUANT_SCALE[call.name])) is not None
    why = "the operator rejects the call (PFA RunBigKernelTilingWithParams"
    if q == torch.int8:
        for arg in factors:
            t = _tensor(get(arg))
            if t is None or t.numel() == 0:
                call.fail("KV518", arg, "a non-empty tensor: an int8 query needs " + ", ".join(factors),
                          "None" if t is None else f"an empty tensor {shape_of(t)}",
                          why + ": dequant scale or first quant scale is nullptr / empty when input type is int8)")
                return
        if call.name == "npu_prompt_flash_attention" and not int8_out:
            t = _tensor(get("quant_offset2"))
            if t is not None:
                call.fail("KV518", "quant_offset2", "None without quant_scale2 (an int8 query without quant_scale2 "
                          "has an fp16 output)", f"a tensor {shape_of(t)}", why + ": when query dtype is int8 and "
                          "output dtype is fp16, the output's dequant scale and offset should be null)")
    elif q == torch.float16 and int8_out:
        for arg in factors:
            t = _tensor(get(arg))
            if t is not None:
                call.fail("KV518", arg, "None with an fp16 query and an int8 output (the BMM factors are for an "
                          "int8 query)", f"a tensor {shape_of(t)}", why + ": when input dtype is fp16 and output "
                          "dtype is int8, dequantScale1, quantScale1 and dequantScale2 should be null)")
                return


# ------------------------------------------------------------------------------ quantized MLA
_MLA_TND = frozenset(MLA_QUANT["tnd_layouts"])
_IFA_LAYOUTS = frozenset(CONTRACTS["antiquant"]["ifa_layouts"])


def mla_ifa_route(call: Call, view) -> bool:
    """Is this an MLA call (query_rope and key_rope) with a quantized cache or query (int8 key:
    RouteToFia keeps it in the IFA tiling) that FIA tiles with the IFA tiling (IsUsingIFA), not
    its ATB branch?"""
    if not (isinstance(view.query_rope, _Tensor) and isinstance(view.key_rope, _Tensor)):
        return False
    q, k = view.q.dtype, view.k.dtype
    if k != torch.int8 or q not in (torch.float16, torch.bfloat16, torch.int8):
        return False
    mla_d = view.head_dim == MLA_QUANT["head_dim"]
    if view.layout in _MLA_TND:
        ifa = mla_d
    else:
        s = view.q_seq or 0
        ifa = view.layout in _IFA_LAYOUTS and (s == 1 or (mla_d and (1 < s <= MLA_QUANT["mtp_max_query"] or
                                                                     view.sparse == MLA_QUANT["sliding_mode"])))
    if not ifa:
        return False
    if view.paged and call.get(view.roles.inner_precise) == ATB_PRECISE:
        q_lens = call.get(view.roles.q_lens)
        if q_lens is not None and (q_lens.numel() if isinstance(q_lens, _Tensor) else len(q_lens)) > 0:
            return False  # the ATB branch (AtbCheckFlag910)
    return True


@contract(*MLA_QUANT["operators"], pure=True)
def mla_antiquant(call: Call) -> None:
    """IFA CheckMlaMisc: no KV antiquant (a float query with an int8 cache) in MLA."""
    view = call.view
    if view is None or view.cache_broken or view.q.dtype == torch.int8 or not mla_ifa_route(call, view):
        return
    call.fail("KV518", "key", f"a {dtype_name(view.q.dtype)} cache like the query: MLA (query_rope / key_rope) takes "
              "no KV antiquant", f"an int8 cache {shape_of(view.k)} with a {dtype_name(view.q.dtype)} query",
              "the operator rejects the call (IFA ProcessMlaRope / CheckMlaMisc: antiquant is not supported in MLA)")


_FULL_ABSENT = {name: _quant_names(name, FULL["absent"]) for name in MLA_QUANT["operators"]}
_FULL_SCALES = {name: _quant_names(name, ("key_antiquant_scale", "value_antiquant_scale"))
                for name in MLA_QUANT["operators"]}
_FULL_MODES = {name: _quant_names(name, ("key_antiquant_mode", "value_antiquant_mode"))
               for name in MLA_QUANT["operators"]}
_ROPE_DTYPE = getattr(torch, FULL["rope_dtype"])
_SCALE_DTYPE = getattr(torch, FULL["scale_dtype"])


@contract(*MLA_QUANT["operators"], pure=True)
def mla_full_quant(call: Call) -> None:
    """MLA with an int8 query and cache on the IFA tiling: IFA SetQuantFlag, ProcessQuant,
    CheckQkvQuantParams4FullQuant ([fa_contracts.mla_full_quant])."""
    view = call.view
    if view is None or view.cache_broken or view.q.dtype != torch.int8 or not mla_ifa_route(call, view):
        return
    why = "the operator rejects the call (IFA "
    if not view.paged or view.k.dim() != 5:
        call.fail("KV518", "key", "a paged 5-D NZ cache (num_blocks, N_kv, D/32, block_size, 32) with a block_table: "
                  "an int8 query in MLA", f"{'a paged' if view.paged else 'a non-paged'} {view.k.dim()}-D cache "
                  f"{shape_of(view.k)}", why + "SetQuantFlag: when the dtype of query is int8 in MLA, PageAttention "
                  "should be enabled and KV layout must be NZ)")
        return
    # (ProcessQuant also rejects BNSD / BNSD_NBSD here, but vllm-ascend passes BNSD on Ascend 950, whose
    # kernels are not in this source: not reported)
    get = call.args.get
    for arg in _FULL_ABSENT[call.name]:
        t = _tensor(get(arg))
        if t is not None:
            call.fail("KV518", arg, "None with an int8 query in MLA (full quantization takes the query's, the key's "
                      "and the value's dequant scales only)", f"a tensor {shape_of(t)}", why + "ProcessQuant)")
            return
    key_arg, value_arg = _FULL_SCALES[call.name]
    if call.name != "npu_fused_infer_attention_score_v2":
        call.fail("KV518", "query", "a float query: an int8 query in MLA needs dequant_scale_query, which only "
                  "npu_fused_infer_attention_score_v2 takes", "int8", why + "CheckQkvQuantParams4FullQuant: the "
                  "query's dequant scale should not be null)")
        return
    scales = ((_QUERY_DEQUANT, _tensor(get(_QUERY_DEQUANT))), (key_arg, _tensor(get(key_arg))),
              (value_arg, _tensor(get(value_arg))))
    for arg, t in scales:
        if t is None:
            call.fail("KV518", arg, "a tensor: an int8 query in MLA needs " + ", ".join(a for a, _ in scales), "None",
                      why + "CheckQkvQuantParams4FullQuant)")
            return
    q_shape = tuple(view.q.shape)
    want_q = (q_shape[0], q_shape[1], view.num_heads) if view.layout in FULL["bsh_layouts"] else q_shape[:-1]
    for arg, t, want in ((scales[0][0], scales[0][1], want_q), (key_arg, scales[1][1], (1,)),
                         (value_arg, scales[2][1], (1,))):
        if tuple(t.shape) != want:
            call.fail("KV518", arg, str(want), shape_of(t), why + ("CheckQueryQuantParam4FullQuant)" if arg ==
                                                                   _QUERY_DEQUANT else "CheckKVQuantParam4FullQuant)"))
            return
    mode = int(get(_QUERY_QUANT_MODE) or 0)
    if mode != FULL["query_quant_mode"]:
        call.fail("KV518", _QUERY_QUANT_MODE, f"{FULL['query_quant_mode']} (per-token-head) with an int8 query",
                  str(mode), why + "CheckQkvQuantParams4FullQuant)")
        return
    for arg in _FULL_MODES[call.name]:
        if get(arg):
            call.fail("KV518", arg, "0 with an int8 query in MLA", str(get(arg)),
                      why + "CheckQkvQuantParams4FullQuant)")
            return
    for arg, t in scales:
        if t.dtype != _SCALE_DTYPE:
            call.fail("KV518", arg, FULL["scale_dtype"], dtype_name(t.dtype), why + "CheckQkvQuantParams4FullQuant)")
            return
    for arg, t in ((view.roles.query_rope, view.query_rope), (view.roles.key_rope, view.key_rope)):
        if t.dtype != _ROPE_DTYPE:
            call.fail("KV518", arg, f"{FULL['rope_dtype']} with an int8 query", dtype_name(t.dtype),
                      why + "ProcessQuant: query_rope and key rope dtype should be bf16)")
            return
    _mla_misc(call)


MISC = CONTRACTS["mla_quant_misc"]
_MISC = {name: tuple((kind, arg) for kind in ("nonempty", "absent", "flags", "shared_prefix")
                     for arg in _quant_names(name, MISC[kind])) for name in MLA_QUANT["operators"]}
_MISC_WHY = {"nonempty": "CheckSupportKVLeftPadding: kvPadding is not supported in MLA",
             "absent": "CheckDefaultMisc: PseShift is not supported in MLA",
             "flags": "CheckDefaultMisc: SoftmaxLse output is not supported in MLA",
             "shared_prefix": "SharedPrefixCheckBasic: shared prefix with page attention is not supported"}


def _mla_misc(call: Call) -> None:
    """What quantized MLA on the IFA tiling refuses besides its quantization
    ([fa_contracts.mla_quant_misc]): a non-empty kv_padding_size, a pse_shift, the softmax LSE
    output, a shared prefix (MLA there is always paged)."""
    get = call.args.get
    for kind, arg in _MISC[call.name]:
        value = get(arg)
        if kind == "flags":
            if value:
                call.fail("KV518", arg, "False in quantized MLA (no softmax LSE output)", repr(value),
                          "the operator rejects the call (IFA " + _MISC_WHY[kind] + ")")
                return
        elif isinstance(value, _Tensor) and (kind != "nonempty" or value.numel() > 0):
            call.fail("KV518", arg, "None in quantized MLA (query_rope / key_rope with an int8 query and cache)",
                      f"a tensor {shape_of(value)}", "the operator rejects the call (IFA " + _MISC_WHY[kind] + ")")
            return


# ------------------------------------------------------------------------------ GQA with an NZ cache
GQA_NZ = CONTRACTS["gqa_kv_nz"]
_GQA_ABSENT = {name: _quant_names(name, GQA_NZ["absent"]) for name in GQA_NZ["operators"]}
_GQA_QUERY = getattr(torch, GQA_NZ["query_dtype"])
_GQA_SCALE_DTYPES = tuple(getattr(torch, name) for name in GQA_NZ["scale_dtypes"])
_GQA_HEADS = frozenset(tuple(pair) for pair in GQA_NZ["heads"])
_GQA_MODES = frozenset(tuple(pair) for pair in GQA_NZ["mode_pairs"])
_GQA_MASK = tuple(GQA_NZ["mtp_mask_shape"])


def gqa_nz_route(call: Call, view) -> bool:
    """Is this a GQA call with a 5-D NZ paged cache (no query_rope / key_rope) that the IFA tiling's
    GQA KV NZ path takes ([fa_contracts.gqa_kv_nz]): npu_incre_flash_attention, or FIA with Q_S 1-16
    in an IFA layout, not its ATB branch?"""
    if not view.paged or view.k.dim() != 5 or view.query_rope is not None or view.key_rope is not None:
        return False
    if call.name == "npu_incre_flash_attention":
        return True
    if view.layout not in _IFA_LAYOUTS or not 1 <= (view.q_seq or 0) <= GQA_NZ["max_query"]:
        return False
    if view.k.dtype == torch.int8 and call.get(view.roles.inner_precise) == ATB_PRECISE:
        q_lens = call.get(view.roles.q_lens)
        if q_lens is not None and (q_lens.numel() if isinstance(q_lens, _Tensor) else len(q_lens)) > 0:
            return False  # the ATB branch (AtbCheckFlag910)
    return True


def _gqa_why(check: str, detail: str) -> str:
    return f"the operator rejects the call (IFA {check}: {detail} in IFA GQA with KV NZ)"


@contract(*GQA_NZ["operators"], pure=True)
def gqa_kv_nz(call: Call) -> None:
    """GQA with an int8 NZ cache on the IFA tiling ([fa_contracts.gqa_kv_nz]): ProcessPseShift,
    the split modes, CheckGqaTensor (IO dtypes, NZ dims, dequant scales, absent tensors) and
    CheckGqaAttribute (D, heads, layout, block_size, inner_precise, sparse_mode and mask, LSE,
    query_quant_mode), in the source's order."""
    view = call.view
    if view is None or view.cache_broken or not gqa_nz_route(call, view):
        return
    q, k, v = view.q, view.k, view.v
    if call.name == "npu_incre_flash_attention":
        call.fail("KV518", "key", "a 3-D or 4-D paged cache: a 5-D NZ cache needs the key's and value's dequant "
                  "scales, which only npu_fused_infer_attention_score(_v2) takes", f"5-D {shape_of(k)}",
                  _gqa_why("CheckGqaAntiquantTensor", "the key/value's dequant scale should not be null"))
        return
    names, get = NAMES[call.name], call.args.get
    pse = _tensor(get("pse_shift"))
    if pse is not None:
        call.fail("KV518", "pse_shift", "None with an NZ cache (GQA KV NZ)", f"a tensor {shape_of(pse)}",
                  _gqa_why("ProcessPseShift", "PseShift is not supported"))
        return
    modes = (int(get(names.key_mode) or 0), int(get(names.value_mode) or 0))
    if modes not in _GQA_MODES:
        call.fail("KV518", names.key_mode, f"{names.key_mode} / {names.value_mode} 0 / 0 (per-channel) or 1 / 1 "
                  "(per-token) with an NZ cache", f"{modes[0]} / {modes[1]}",
                  _gqa_why("CheckKVAntiQuantMode / CheckGqaAttribute", "antiquantMode should be 0 or 1"))
        return
    if k.dtype != torch.int8 or v.dtype != torch.int8:
        call.fail("KV518", "key", "an int8 key and value: the NZ cache without rope is the antiquant path",
                  f"{dtype_name(k.dtype)} / {dtype_name(v.dtype)}", _gqa_why("CheckGqaIOTensor", "only antiquant"))
        return
    if q.dtype != _GQA_QUERY:
        call.fail("KV518", "query", f"{GQA_NZ['query_dtype']} with an int8 NZ cache", dtype_name(q.dtype),
                  _gqa_why("CheckGqaIOTensor", "query type should be BFLOAT16"))
        return
    out_scale = _OUT_SCALE[call.name]
    if _tensor(get(out_scale)) is not None and get(_OUT_DTYPE) is None:
        call.fail("KV518", out_scale, "None with an NZ cache: the output stays bfloat16", "a tensor (int8 output)",
                  _gqa_why("CheckGqaIOTensor", "attenOut type should be BFLOAT16"))
        return
    d, block = view.head_dim, GQA_NZ["nz_block"]
    for name, t in (("key", k), ("value", v)):
        ts = tuple(t.shape)
        if not d or ts[2] * block != d or ts[4] != block:
            want = f"(num_blocks, N_kv, D/{block}, block_size, {block}) = ({ts[0]}, {ts[1]}, {(d or 0) // block}, " \
                   f"{ts[3]}, {block})"
            call.fail("KV518", name, f"{want} (the int8 NZ layout)", shape_of(t),
                      _gqa_why("CheckGqaIOTensor", f"the shape of {name[0].upper()} is not the expected one"))
            return
    scales = ((names.key_scale, _tensor(get(names.key_scale))), (names.value_scale, _tensor(get(names.value_scale))))
    for arg, t in scales:
        if t is None:
            call.fail("KV518", arg, f"a tensor: the NZ cache is dequantized with {scales[0][0]} and {scales[1][0]}",
                      "None", _gqa_why("CheckGqaAntiquantTensor", "the key/value's dequant scale should not be null"))
            return
    if modes[0] == modes[1]:
        want = _GQA_SCALE_DTYPES[modes[0]]
        for arg, t in scales:
            if t.dtype != want:
                call.fail("KV518", arg, f"{dtype_name(want)} in {'per-token' if modes[0] else 'per-channel'} mode",
                          dtype_name(t.dtype), _gqa_why("CheckGqaAntiquantType", "illegal dequant scale type"))
                return
    for arg in _GQA_ABSENT[call.name]:
        t = get(arg)
        if t is not None:
            call.fail("KV518", arg, "None with an NZ cache (GQA KV NZ)", "a tensor" if isinstance(t, _Tensor) else
                      "a list", _gqa_why("CheckGqaTensorEmpty", f"{arg} is not supported"))
            return
    _gqa_attributes(call, view)


def _gqa_attributes(call: Call, view) -> None:
    """CheckGqaAttribute's checks of the GQA KV NZ path ([fa_contracts.gqa_kv_nz])."""
    roles, get = view.roles, call.args.get
    why = "the operator rejects the call (IFA CheckGqaAttribute: "
    if view.head_dim != GQA_NZ["head_dim"]:
        call.fail("KV518", "query", f"head dim {GQA_NZ['head_dim']} with an NZ cache", str(view.head_dim),
                  why + "IFA GQA with KV NZ only support 128)")
        return
    heads = (view.num_heads, view.kv_heads or view.num_heads)
    if heads not in _GQA_HEADS:
        call.fail("KV112", roles.kv_heads_arg, "(query heads, KV heads) one of " + ", ".join(
                  str(p) for p in sorted(_GQA_HEADS)) + " with an NZ cache", str(heads), why + "CheckGqaHeadsNum)")
        return
    if view.layout not in GQA_NZ["layouts"]:
        call.fail("KV110", roles.layout, f"one of {', '.join(GQA_NZ['layouts'])} with an NZ cache", repr(view.layout),
                  why + "only BSH, BSND and BNSD layout are supported)")
        return
    if view.block_size not in GQA_NZ["block_sizes"]:
        call.fail("KV311", roles.block_size, f"one of {GQA_NZ['block_sizes']} with an NZ cache", str(view.block_size),
                  why + "blockSize only support 128 and 512 in GQA)")
        return
    precise = int(get(roles.inner_precise) or 0)
    if precise != GQA_NZ["inner_precise"]:
        call.fail("KV518", roles.inner_precise, f"{GQA_NZ['inner_precise']} (high performance) with an NZ cache",
                  str(precise), why + "precision mode only support 1 in GQA antiquant with KV NZ)")
        return
    m, sparse = view.mask, view.sparse
    if (view.q_seq or 0) == 1:
        if sparse != GQA_NZ["decode_sparse_mode"] or m is not None:
            call.fail("KV213", roles.sparse_mode or roles.mask_arg, "sparse_mode 0 and no atten_mask with an NZ cache "
                      "and Q_S 1", f"sparse_mode {sparse}" + (" with a mask" if m is not None else ""),
                      why + "CheckGqaSeqSize)")
            return
    elif sparse != GQA_NZ["mtp_sparse_mode"] or m is None or tuple(m.shape) != _GQA_MASK:
        call.fail("KV213", roles.sparse_mode or roles.mask_arg, f"sparse_mode 3 with a 2-D {_GQA_MASK} atten_mask with "
                  f"an NZ cache and Q_S {view.q_seq}", f"sparse_mode {sparse}, mask " +
                  (shape_of(m) if m is not None else "None"), why + "CheckGqaSeqSize)")
        return
    if roles.lse_flag and get(roles.lse_flag):
        call.fail("KV518", roles.lse_flag, "False with an NZ cache (no softmax LSE output)", "True",
                  why + "CheckDefaultMisc: SoftmaxLse output is not supported)")
        return
    if int(get(_QUERY_QUANT_MODE) or 0):
        call.fail("KV518", _QUERY_QUANT_MODE, "0 with an NZ cache", str(get(_QUERY_QUANT_MODE)),
                  why + "CheckGqaDefault: the query's quant mode should be the default)")


# ------------------------------------------------------------------------------ int4 caches
INT4 = CONTRACTS["int4"]
_INT4 = getattr(torch, CONTRACTS["int4_packed_dtype"])
_INT4_PAGED_BASES = frozenset(INT4["ifa_paged_bases"])


@contract(*INT4["operators"], pure=True)
def int4_cache(call: Call) -> None:
    """KV int4 packed in int32 ([fa_contracts.int4]): D a multiple of 64; on the IFA tiling no
    paged cache with a BNSD query, no int8 output, no non-empty kv_padding_size."""
    view = call.view
    if view is None or view.cache_broken or view.k.dtype != _INT4:
        return
    d, multiple = view.head_dim, INT4["head_dim_multiple"]
    why = "the operator rejects the call (IFA "
    if d and d % multiple:
        call.fail("KV518", "query", f"a head dim that is a multiple of {multiple} with an int4 (int32-packed) cache",
                  str(d), f"the operator rejects the call (D must be a multiple of {multiple} with an INT4 KV: IFA "
                  "GetRopeAndGqaFlag; aclnnFusedInferAttentionScoreV4.md D-axis limits for Q_S > 1)")
        return
    if not _ifa_route(call, view):
        return
    get = call.args.get
    if view.paged and view.base not in _INT4_PAGED_BASES:
        call.fail("KV110", view.roles.layout, f"one of {', '.join(sorted(_INT4_PAGED_BASES))} with a paged int4 cache",
                  repr(view.layout), why + "InputAttrsPreProcess: no PageAttention with an INT4 or INT32 KV unless the "
                  "layout is BSH_BSND)")
        return
    scale_arg = _OUT_SCALE[call.name]
    if _tensor(get(scale_arg)) is not None and get(_OUT_DTYPE) is None:
        call.fail("KV518", scale_arg, "None with an int4 (int32-packed) cache (no int8 output)", "a tensor",
                  why + "ProcessQuant2: PostQuant is not supported if Input Kv Dtype is INT4 or INT32)")
        return
    padding = _tensor(get("kv_padding_size"))
    if padding is not None and padding.numel() > 0:
        call.fail("KV518", "kv_padding_size", "None with an int4 (int32-packed) cache", f"a tensor {shape_of(padding)}",
                  why + "CheckSupportKVLeftPadding: KvLeftPadding is not supported with an INT4 or INT32 KV)")
