"""npu_fusion_attention contracts (flash_attention_score). The FA-family checks it shares with
fused_infer_attention_score (layout, heads, dtypes, mask, lengths) are registered for it in
families/fa/contracts.py; its own tiling checks live here (rules/facts/fa_contracts.toml
[fa_contracts.fusion]: flash_attention_score_tiling_general.cpp AnalyzeAttrs, AnalyzeLayout,
AnalyzeOptionalInput). TND masks and pse are not checked here."""
from __future__ import annotations

import torch

from kvlint.facts import load_facts
from kvlint.runtime.call import Call, dtype_name, shape_of
from kvlint.runtime.call import dtypes as _dtypes
from kvlint.runtime.families.fa.contracts import kv_seq  # noqa: F401  (fa_view, which sets call.view, registers first)
from kvlint.runtime.registry import contract

FACTS = load_facts()
FUSION = FACTS.table("fa_contracts")["fusion"]
OPS = ("npu_fusion_attention",)
MASK_DTYPES = _dtypes(FUSION["mask_dtypes"])
COMPRESSED = frozenset(FUSION["compressed_modes"])
UNCOMPRESSED = frozenset(FUSION["uncompressed_modes"])
_WHY = "the operator rejects the call (flash_attention_score tiling {})"


@contract(*OPS, pure=True)
def fusion_tiling(call: Call) -> None:
    view = call.view
    if view is None:
        return
    keep = call.get("keep_prob")
    low, high = FUSION["keep_prob"]
    if keep is not None and not low < float(keep) <= high:
        call.fail("KV116", "keep_prob", f"in ({low:g}, {high:g}] (the probability of keeping an element)",
                  repr(keep), _WHY.format("AnalyzeAttrs"))
        return
    d = view.head_dim
    if d is not None and not 0 < d <= FUSION["head_dim_max"]:
        call.fail("KV116", "query", f"a head dim in (0, {FUSION['head_dim_max']}]", str(d), _WHY.format("AnalyzeLayout"))
        return
    if any(f.argument in ("atten_mask", "pse") for f in call.findings):
        return  # the FA checks already explained the mask
    if _mask(call, view) and not view.tnd:
        _pse(call, view)


def _mask(call: Call, view) -> bool:
    m, sparse = view.mask, view.sparse
    if m is None:
        return True
    why = _WHY.format("AnalyzeOptionalInput")
    if m.dtype not in MASK_DTYPES:
        call.fail("KV205", "atten_mask", " or ".join(FUSION["mask_dtypes"]) + " for npu_fusion_attention",
                  dtype_name(m.dtype), why)
        return False
    if m.dim() not in FUSION["mask_ranks"]:
        call.fail("KV211" if sparse in UNCOMPRESSED else "KV206", "atten_mask",
                  "2-D or 4-D for npu_fusion_attention", f"{m.dim()}-D {shape_of(m)}", why)
        return False
    last = tuple(m.shape[-2:])
    if sparse in COMPRESSED or sparse == FUSION["prefix_compress_mode"]:
        expected = tuple(FUSION["compressed_shape" if sparse in COMPRESSED else "prefix_compress_shape"])
        if last != expected:
            call.fail("KV206", "atten_mask", f"last dims {expected} for sparse_mode={sparse}", shape_of(m), why)
            return False
        return True
    if sparse not in UNCOMPRESSED or view.tnd:
        return True
    b, n, s1, s2 = view.batch, view.num_heads, view.q_seq, kv_seq(view)
    if s1 is None or s2 is None:
        return True
    shape = tuple(m.shape)
    allowed = [(s1, s2)] if m.dim() == 2 else [(1, 1, s1, s2), (b, 1, s1, s2), (b, n, s1, s2)]
    if shape not in allowed:
        call.fail("KV211", "atten_mask", "exactly one of " + ", ".join(map(str, dict.fromkeys(allowed))) +
                  f" for sparse_mode={sparse}", shape_of(m), why)
        return False
    return True


def _pse(call: Call, view) -> None:
    pse = call.get("pse")
    if not isinstance(pse, torch.Tensor) or pse.dim() == 0:
        return
    b, n, s1, s2 = view.batch, view.num_heads, view.q_seq, kv_seq(view)
    if s1 is None or s2 is None:
        return
    why = _WHY.format("AnalyzeOptionalInput")
    rows = FUSION["pse_alibi_rows"]
    shape = tuple(pse.shape)
    forms = [(n, s1, s2), (n, 1, s2)] + ([(n, rows, s2)] if s1 >= rows else [])
    if pse.dim() != FUSION["pse_rank"] or shape[0] not in (1, b) or shape[1:] not in forms:
        call.fail("KV116", "pse", f"4-D (1|{b}, N1, S1, S2) with (N1, S1, S2) one of "
                  + ", ".join(map(str, dict.fromkeys(forms))), shape_of(pse), why)
