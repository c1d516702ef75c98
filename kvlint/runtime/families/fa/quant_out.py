"""Post-quantization of the attention output: quant_scale2 / quant_offset2 (v2: quant_scale_out /
quant_offset_out) as the IFA tiling (npu_incre_flash_attention, FIA decode on the IFA path), the
PFA tiling (npu_prompt_flash_attention, FIA prefill: quant_in.pfa_route) and, for quantized MLA,
the IFA tiling's MLA checks (quant_in.mla_ifa_route: no int8 output) check them. torch_npu makes
the output int8 exactly when the scale is given, so the tilings' int8-output branch is "a scale
was passed". Reads only shapes, dtypes and scalar arguments (the call's signature).
Data and source lines: rules/facts/fa_contracts.toml [fa_contracts.post_quant], [fa_contracts.mla_quant]."""
from __future__ import annotations

from typing import Optional

import torch

from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.families.fa.contracts import CONTRACTS, _ifa_route, ifa_rolls_back
from kvlint.runtime.families.fa.quant_in import (  # (quant_in's contracts register here)
    TND_PREFILL,
    mla_ifa_route,
    pfa_route,
    tnd_io_reject,
)
from kvlint.runtime.registry import contract

POST_QUANT = CONTRACTS["post_quant"]
_KEYWORDS = {name: tuple(pair) for name, pair in POST_QUANT["keywords"].items()}
_OUT_DTYPE = POST_QUANT["out_dtype_keyword"]
_IFA_DTYPES = frozenset(getattr(torch, name) for name in POST_QUANT["ifa_dtypes"])
_PFA_DTYPES = frozenset(getattr(torch, name) for name in POST_QUANT["pfa_dtypes"])
_IFA_RANKS = frozenset(POST_QUANT["ifa_checked_ranks"])
_PADDING = tuple(POST_QUANT["padding_keywords"])
_D_MULTIPLE = POST_QUANT["per_channel_d_multiple"]
_Tensor = torch.Tensor
_SIXTEEN_BIT = frozenset((torch.float16, torch.bfloat16))
_ROLL_FORWARD_Q = _SIXTEEN_BIT  # FP16_INT8 / BF16_INT8: CanChangeToNew


def _ifa_shapes(n: int, d: int) -> list:
    """IsQuant2ShapeValid (incre_flash_attention_tiling_check.cpp l.641-661)."""
    return [(1, n, 1, d), (n, 1, d), (n, d), (1, 1, n, d), (1, n, d), (1, n * d), (1, 1, n * d), (n * d,)]


def _dtypes(allowed) -> str:
    return " or ".join(dtype_name(t) for t in sorted(allowed, key=str))


def _tensor(value) -> Optional[_Tensor]:
    return value if isinstance(value, _Tensor) else None


def _dtypes_ok(call: Call, scale_pair, offset_pair, allowed, why: str, mismatch: str) -> bool:
    """The scale's dtype in `allowed`, the offset's (when given) the scale's; fails and returns
    False otherwise."""
    (scale_arg, scale), (offset_arg, offset) = scale_pair, offset_pair
    if scale.dtype not in allowed:
        call.fail("KV518", scale_arg, _dtypes(allowed), dtype_name(scale.dtype), why)
        return False
    if offset is not None and offset.dtype != scale.dtype:
        call.fail("KV518", offset_arg, f"{dtype_name(scale.dtype)} like {scale_arg}", dtype_name(offset.dtype),
                  why + mismatch)
        return False
    return True


@contract(*POST_QUANT["ifa_operators"], pure=True)
def post_quant_ifa(call: Call) -> None:
    """IFA tiling ProcessQuant2Dtype / ProcessQuant2 / CheckQuant2Shape on the call's
    quant_scale2 / quant_offset2 (v2: quant_scale_out / quant_offset_out)."""
    view = call.view
    if view is None or view.cache_broken or not _ifa_route(call, view):
        return
    args = call.args
    if args.get(_OUT_DTYPE) is not None:
        return  # v2's out_dtype sets the output type: not the int8 branch these checks assume
    scale_arg, offset_arg = _KEYWORDS[call.name]
    scale, offset = _tensor(args.get(scale_arg)), _tensor(args.get(offset_arg))
    if scale is None:
        if offset is not None:
            call.fail("KV518", offset_arg, f"None without {scale_arg} (the output is int8 only when {scale_arg} "
                      "is given)", f"a tensor {shape_of(offset)}",
                      "the operator rejects the call (IFA ProcessQuant2Dtype: the output's dequant offset exist, "
                      "output data type should be INT8)")
        return
    if view.k.dtype not in (torch.float16, torch.bfloat16, torch.int8) or view.q.dtype not in _ROLL_FORWARD_Q:
        return  # int4 caches; an int8 query with an int8 output (INT8_INT8) rolls back to the old tiling
    if ifa_rolls_back(view):
        return  # non-paged D >= 1024: the old tiling, whose checks are not in the source
    why = "the operator rejects the call (IFA ProcessQuant2Dtype)"
    if not _dtypes_ok(call, (scale_arg, scale), (offset_arg, offset), _IFA_DTYPES, why,
                      ": the output's dequant scale dtype and offset dtype are not the same"):
        return
    if scale.dtype == torch.bfloat16 and view.q.dtype != torch.bfloat16:
        call.fail("KV518", scale_arg, f"float32 with a {dtype_name(view.q.dtype)} query (bf16 only with a bf16 "
                  "query)", dtype_name(scale.dtype), why)
        return
    n, d = view.num_heads, view.head_dim
    if not n or not d:
        return
    allowed = _ifa_shapes(n, d)
    for name, t in ((scale_arg, scale), (offset_arg, offset)):
        if t is None or t.numel() == 1 or t.dim() not in _IFA_RANKS:
            continue
        if tuple(t.shape) not in allowed:
            call.fail("KV518", name, "one element (per-tensor) or per-channel " + ", ".join(
                str(list(s)) for s in allowed) + f" (N = {n} query heads, D = {d})", shape_of(t),
                "the operator rejects the call (IFA ProcessQuant2 / CheckQuant2Shape)")
            return


@contract(*TND_PREFILL["operators"], pure=True)
def tnd_prefill_io(call: Call) -> None:
    """TND prefill on the PFA tiling: no full int8 quantization, no int8 output, no KV antiquant
    (PFA CheckIOType, which runs before the other quantization checks; [fa_contracts.tnd_prefill])."""
    view = call.view
    if view is None:
        return
    bad = tnd_io_reject(call, view)
    if bad:
        arg, expected, given, why = bad
        call.fail("KV518", arg, expected, given, f"the operator rejects the call ({why})")


@contract(*POST_QUANT["pfa_operators"], pure=True)
def post_quant_pfa(call: Call) -> None:
    """PFA tiling CheckPostQuantParams on quant_scale2 / quant_offset2 (v2: quant_scale_out /
    quant_offset_out): npu_prompt_flash_attention, and FIA prefill on the PFA tiling path."""
    view = call.view
    if view is None or view.cache_broken or not pfa_route(call, view) or tnd_io_reject(call, view):
        return
    scale_arg, offset_arg = _KEYWORDS[call.name]
    args = call.args
    if args.get(_OUT_DTYPE) is not None:
        return  # v2's out_dtype sets the output type: not the int8 branch these checks assume
    scale, offset = _tensor(args.get(scale_arg)), _tensor(args.get(offset_arg))
    if scale is None:
        return  # no int8 output: CheckPostQuantParams reads nothing
    n, d = view.num_heads, view.head_dim
    if call.name != "npu_prompt_flash_attention" and d and d % _D_MULTIPLE:
        call.fail("KV518", scale_arg, f"None, or a head dim that is a multiple of {_D_MULTIPLE} (the output is int8 "
                  f"when {scale_arg} is given)", f"a tensor with D = {d}",
                  "the operator rejects the call (FIA TilingProcess4PFA: D should be 32 elements aligned when int8 "
                  "is involved)")
        return
    if view.q.numel() == 0 or view.k.numel() == 0 or view.v.numel() == 0:
        return  # the empty-tensor path returns before CheckPostQuantParams (RunBigKernelTilingWithParams l.4173)
    why = "the operator rejects the call (PFA CheckPostQuantParams)"
    size = scale.numel()
    if size == 0:
        call.fail("KV518", scale_arg, "a non-empty tensor", shape_of(scale), why + ": quant_scale2 is empty tensor")
        return
    if size != 1 and _per_channel_refused(call, view, scale_arg, scale, n, why):
        return
    if not _dtypes_ok(call, (scale_arg, scale), (offset_arg, offset), _PFA_DTYPES, why,
                      ": post quant scale dtype and offset dtype must be consistent"):
        return
    q = view.q.dtype
    if scale.dtype in _SIXTEEN_BIT and scale.dtype != q:
        call.fail("KV518", scale_arg, f"float32 or {dtype_name(q)} like the query" if q in _SIXTEEN_BIT else
                  f"float32 with a {dtype_name(q)} query", dtype_name(scale.dtype),
                  why + f": {dtype_name(scale.dtype)} post quant scale only with a {dtype_name(scale.dtype)} query")
        return
    if offset is not None and offset.numel() != size:
        call.fail("KV518", offset_arg, f"{size} elements like {scale_arg} {shape_of(scale)}",
                  f"{offset.numel()} elements {shape_of(offset)}", why)
        return
    if n and d and size not in (1, n * d):
        call.fail("KV518", scale_arg, f"1 element (per-tensor) or H = N*D = {n * d} (per-channel)",
                  f"{size} elements {shape_of(scale)}", why)


def _per_channel_refused(call: Call, view, scale_arg: str, scale: _Tensor, n: int, why: str) -> bool:
    """A per-channel scale's cross-feature limits (CheckPostQuantParams l.2654-2662): no left
    padding, no softmax LSE output, D = elements / N a multiple of 32. Fails and returns True."""
    args = call.args
    for arg in _PADDING:
        if _tensor(args.get(arg)) is not None:
            call.fail("KV518", scale_arg, f"one element (per-tensor) with {arg} (left padding)",
                      f"{scale.numel()} elements {shape_of(scale)}", why + ": post quant per-channel do not support "
                      "left padding")
            return True
    lse = view.roles.lse_flag
    if lse and args.get(lse):
        call.fail("KV518", scale_arg, f"one element (per-tensor) with {lse}=True", f"{scale.numel()} elements "
                  f"{shape_of(scale)}", why + ": post quant per-channel do not support ring attention (softmax LSE)")
        return True
    quant_d = scale.numel() // n if n > 0 else 0
    if n > 0 and quant_d % _D_MULTIPLE:
        call.fail("KV518", scale_arg, f"one element (per-tensor), or N*D elements with D a multiple of {_D_MULTIPLE}",
                  f"{scale.numel()} elements {shape_of(scale)} (D = {quant_d} per head)",
                  why + ": post quant per-channel do not support D non-32-byte aligned")
        return True
    return False


@contract(*CONTRACTS["mla_quant"]["operators"], pure=True)
def post_quant_mla(call: Call) -> None:
    """Quantized MLA on the IFA tiling: no int8 output (IFA CheckDefaultMisc via CheckMlaMisc),
    no output offset without a scale (ProcessQuant2Dtype)."""
    view = call.view
    if view is None or view.cache_broken or not mla_ifa_route(call, view):
        return
    args = call.args
    if args.get(_OUT_DTYPE) is not None:
        return  # v2's out_dtype sets the output type
    scale_arg, offset_arg = _KEYWORDS[call.name]
    scale, offset = _tensor(args.get(scale_arg)), _tensor(args.get(offset_arg))
    if scale is not None:
        call.fail("KV518", scale_arg, "None: MLA (query_rope / key_rope) has no int8 output (post-quant)",
                  f"a tensor {shape_of(scale)}", "the operator rejects the call (IFA CheckMlaMisc / CheckDefaultMisc: "
                  "PostQuant is not supported in MLA)")
    elif offset is not None:
        call.fail("KV518", offset_arg, f"None without {scale_arg} (the output is int8 only when {scale_arg} is given)",
                  f"a tensor {shape_of(offset)}", "the operator rejects the call (IFA ProcessQuant2Dtype: the output's "
                  "dequant offset exist, output data type should be INT8)")
