"""MLA-only operator contracts (npu_ring_mla). MLA calls of fused_infer_attention_score are
checked in families/fa/contracts.py."""
from __future__ import annotations
