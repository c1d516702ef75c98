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


def operators_with(*roles: str) -> Tuple[str, ...]:
    """The operators (base names) that have a parameter for every one of `roles`."""
    return tuple(op for op in FACTS.operators if all(spelling(op, r) is not None for r in roles))
