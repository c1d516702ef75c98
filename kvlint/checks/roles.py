"""What a fused-attention call passes for one *role* (mask, sparse mode, window, scale, ...),
whatever the operator calls that parameter and whether it is passed by keyword or position.

FA v1 says `pre_tokens`, `npu_fusion_attention` says `pre_tockens` (sic) and takes its mask
at position 7; rules ask for the role and this module reads the spelling from the operator
facts and the position from the operator's schema (rules/operators.json).
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext

# role -> keyword, per operator base name. Operator facts (torch_npu 2.14.0 schemas in
# rules/operators.json; domain.md table 1.3).
_SPELLINGS = {
    "npu_fused_infer_attention_score": {
        "mask": "atten_mask", "sparse_mode": "sparse_mode", "pre_tokens": "pre_tokens",
        "next_tokens": "next_tokens", "scale": "scale", "heads": "num_heads", "layout": "input_layout",
        "q_lengths": "actual_seq_lengths", "kv_lengths": "actual_seq_lengths_kv",
        "block_size": "block_size", "block_table": "block_table",
    },
    "npu_fused_infer_attention_score_v2": {
        "mask": "atten_mask", "sparse_mode": "sparse_mode", "pre_tokens": "pre_tokens",
        "next_tokens": "next_tokens", "scale": "softmax_scale", "heads": "num_query_heads",
        "layout": "input_layout", "q_lengths": "actual_seq_qlen", "kv_lengths": "actual_seq_kvlen",
        "block_size": "block_size", "block_table": "block_table",
    },
    "npu_prompt_flash_attention": {
        "mask": "atten_mask", "sparse_mode": "sparse_mode", "pre_tokens": "pre_tokens",
        "next_tokens": "next_tokens", "scale": "scale_value", "heads": "num_heads",
        "layout": "input_layout", "q_lengths": "actual_seq_lengths", "kv_lengths": "actual_seq_lengths_kv",
    },
    "npu_incre_flash_attention": {
        "mask": "atten_mask", "scale": "scale_value", "heads": "num_heads", "layout": "input_layout",
        "kv_lengths": "actual_seq_lengths", "block_size": "block_size", "block_table": "block_table",
    },
    "npu_fusion_attention": {
        "mask": "atten_mask", "sparse_mode": "sparse_mode", "pre_tokens": "pre_tockens",
        "next_tokens": "next_tockens", "scale": "scale", "heads": "head_num", "layout": "input_layout",
        "q_lengths": "actual_seq_qlen", "kv_lengths": "actual_seq_kvlen", "keep_prob": "keep_prob",
    },
}


def spelling(op_name: str, role: str) -> Optional[str]:
    """The keyword `op_name` uses for `role`, or None when it has no such parameter."""
    return _SPELLINGS.get(op_name, {}).get(role)


def has_role(op_name: str, role: str) -> bool:
    return spelling(op_name, role) is not None


def role_values(oc: OperatorCall, ctx: FileContext, role: str) -> List[ast.expr]:
    """The expressions the call passes for `role`: by keyword (incl. resolved `**dicts`), or
    by position when the schema makes that parameter positional."""
    keyword = spelling(oc.name, role)
    if keyword is None:
        return []
    args = ctx.args(oc.call)
    values = args.values(keyword)
    if values:
        return values
    value = positional_value(oc, ctx, keyword)
    return [value] if value is not None else []


def positional_value(oc: OperatorCall, ctx: FileContext, keyword: str) -> Optional[ast.expr]:
    names = [p.name for p in oc.operator.positional_params]
    args = ctx.args(oc.call)
    if keyword in names and names.index(keyword) < len(args.positional):
        return args.positional[names.index(keyword)]
    return None


def role_node(oc: OperatorCall, ctx: FileContext, role: str) -> Optional[ast.AST]:
    """Where the call writes `role`: its keyword node, or the positional argument."""
    keyword = spelling(oc.name, role)
    if keyword is None:
        return None
    kws = ctx.args(oc.call).keywords.get(keyword, [])
    if kws:
        return kws[0].node
    return positional_value(oc, ctx, keyword)


def role_passed(oc: OperatorCall, ctx: FileContext, role: str) -> Tuple[bool, bool]:
    """(passed, conditional): whether the call passes `role`, and whether only on some paths
    (a key added to the `**dict` inside a branch)."""
    keyword = spelling(oc.name, role)
    if keyword is None:
        return False, False
    kws = ctx.args(oc.call).keywords.get(keyword, [])
    if kws:
        return True, any(k.conditional for k in kws)
    return positional_value(oc, ctx, keyword) is not None, False


def operators_with(*roles: str) -> Tuple[str, ...]:
    """The operators (base names) that have a parameter for every one of `roles`."""
    return tuple(op for op, table in _SPELLINGS.items() if all(r in table for r in roles))
