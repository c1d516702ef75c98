"""MLA-only operator contracts (npu_ring_mla). MLA calls of fused_infer_attention_score are
checked in families/fa/contracts.py."""
from __future__ import annotations

import torch

from kvlint.facts import load_facts
from kvlint.runtime.call import Call, shape_of
from kvlint.runtime.registry import contract

RING = load_facts().table("ring_mla")


@contract("npu_ring_mla")
def ring_mla_mask(call: Call) -> None:
    """A triangular (compressed) mask must be exactly (512, 512): the kernel indexes it as one
    512x512 tile whatever the sequence lengths (rules/facts/mla.toml [ring_mla])."""
    mask, mask_type = call.get("mask"), call.get("mask_type")
    if mask_type not in RING["compressed_mask_types"] or not isinstance(mask, torch.Tensor):
        return
    expected = tuple(RING["compressed_mask_shape"])
    if tuple(int(s) for s in mask.shape) != expected:
        call.fail("KV206", "mask", f"exactly {expected} with mask_type={mask_type!r} (the compressed triangle)",
                  shape_of(mask), "rows past the 512x512 tile are read out of bounds or masked wrongly")
