"""What a fused-attention call passes for one *role* (mask, sparse mode, window, scale, ...),
whatever the operator calls that parameter and whether it is passed by keyword or position.

FA v1 says `pre_tokens`, `npu_fusion_attention` says `pre_tockens` (sic) and takes its mask
at position 7; rules ask for the role and this module reads the spelling from the operator
facts (rules/facts/operators.toml) and the position from the operator's schema
(rules/operators.json).
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext
from kvlint.facts import load_facts
from kvlint.helpers.args import param_values, positional_value

FACTS = load_facts()


def spelling(op_name: str, role: str) -> Optional[str]:
    """The keyword `op_name` uses for `role` (rules/facts/operators.toml), or None when it has
    no such parameter."""
    return FACTS.keyword(op_name, role)


def role_values(oc: OperatorCall, ctx: FileContext, role: str) -> List[ast.expr]:
    """The expressions the call passes for `role`: by keyword (incl. resolved `**dicts`), or
    by position when the schema makes that parameter positional."""
    keyword = spelling(oc.name, role)
    return param_values(oc, ctx, keyword) if keyword is not None else []


def role_node(oc: OperatorCall, ctx: FileContext, role: str) -> Optional[ast.AST]:
    """Where the call writes `role`: its keyword node, or the positional argument."""
    keyword = spelling(oc.name, role)
    if keyword is None:
        return None
    kws = ctx.args(oc.call).keywords.get(keyword, [])
    if kws:
        return kws[0].node
    return positional_value(oc, ctx, keyword)


def positional_index(oc: OperatorCall, keyword: str) -> Optional[int]:
    """The schema position of parameter `keyword` (npu_fusion_attention's atten_mask: 7)."""
    names = [p.name for p in oc.operator.positional_params]
    return names.index(keyword) if keyword in names else None


def operators_with(*roles: str) -> Tuple[str, ...]:
    """The operators (base names) that have a parameter for every one of `roles`."""
    return tuple(op for op in FACTS.operators if all(spelling(op, r) is not None for r in roles))


def positional_role_operators(role: str) -> Tuple[str, ...]:
    """The operators (names) whose schema takes `role` by position (npu_fusion_attention's
    mask is argument 7): a file may pass it without ever writing the keyword."""
    from kvlint.catalog import load_catalog

    out = set()
    for op in load_catalog().operators:
        keyword = spelling(op.name, role)
        param = op.param(keyword) if keyword is not None else None
        if param is not None and param.kind == "positional":
            out.add(op.name)
    return tuple(sorted(out))
