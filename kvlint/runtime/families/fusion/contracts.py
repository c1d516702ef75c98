"""npu_fusion_attention contracts (flash_attention_score). The FA-family checks it shares with
fused_infer_attention_score (layout, heads, dtypes, mask, lengths) are registered for it in
families/fa/contracts.py; its own tiling checks live here."""
from __future__ import annotations
